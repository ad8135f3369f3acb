// The page in a real browser: headless Chromium (Debian's chromium) opens the
// dashboard while a replay run publishes, and again once it has ended; the
// DOM it dumps must show what the database holds, with a configuration value
// holding <script> shown as text. Skipped when chromium is not installed.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "actors/scratch_dir.hpp"
#include "skip.hpp"
#include "tune/dashboard/server.hpp"
#include "tune/model.hpp"
#include "tune/storage/event_stream.hpp"
#include "tune/storage/results_db.hpp"
#include "tune/tune.hpp"

using namespace tune;
using Catch::Matchers::Contains;
using namespace std::chrono_literals;
using tune::test::scratch_dir;

namespace {

const std::string injected = "<script>document.body.dataset.injected=1</script>";

std::string find_chromium() {
  if (const char* given = std::getenv("TUNE_CHROMIUM")) return given;
  for (const char* path : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (::access(path, X_OK) == 0) return path;
  return "";
}

/// Runs chromium headless on `url` with `extra` arguments, stdout into
/// `out_file` and stderr into `out_file`.err; returns its exit status (-1
/// when killed after 60 s).
int run_chromium_once(const std::string& chromium, const std::filesystem::path& profile, const std::string& url,
                      std::vector<std::string> extra, const std::filesystem::path& out_file) {
  std::vector<std::string> args = {chromium,
                                   "--headless",
                                   "--no-sandbox",
                                   "--disable-gpu",
                                   "--disable-quic",
                                   "--no-first-run",
                                   "--disable-background-networking",
                                   "--disable-component-update",
                                   "--disable-sync",
                                   "--disable-dev-shm-usage",
                                   "--user-data-dir=" + profile.string(),
                                   "--window-size=1400,1900",
                                   "--hide-scrollbars",
                                   "--virtual-time-budget=8000"};
  args.insert(args.end(), extra.begin(), extra.end());
  args.push_back(url);
  pid_t pid = fork();
  if (pid == 0) {
    int out = ::open(out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = ::open((out_file.string() + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    // Nothing of this process (the servers' sockets) may live on in the browser.
    for (int fd = 3; fd < 1024; ++fd) ::close(fd);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(chromium.c_str(), argv.data());
    _exit(127);
  }
  auto deadline = std::chrono::steady_clock::now() + 60s;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(20ms);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// Chromium's own lines on why a page was not dumped ("Page load failed:
/// net::ERR_…"), from the stderr of the run that wrote `out_file`; the
/// D-Bus complaints of a machine without a session bus left out.
std::string chromium_errors(const std::filesystem::path& out_file) {
  std::ifstream in(out_file.string() + ".err");
  std::string line, kept;
  while (std::getline(in, line))
    if (line.find("ERROR:") != std::string::npos && line.find("dbus") == std::string::npos) kept += line + "\n";
  return kept;
}

/// For a page chromium could not load from 127.0.0.1: whether a plain
/// connect() to its port is accepted now, and whether a socket listens on
/// that port (/proc/net/tcp) and is this process's (/proc/self/fd).
std::string listener_state(const std::string& url) {
  std::smatch m;
  if (!std::regex_search(url, m, std::regex(R"(^http://127\.0\.0\.1:([0-9]+)/)"))) return "";
  const int port = std::stoi(m[1]);
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<std::uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int connected = ::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to);
  const int error = errno;
  ::close(fd);
  std::string state = "connect() to port " + std::to_string(port) +
                      " now: " + (connected == 0 ? std::string("accepted") : std::string(std::strerror(error)));
  // /proc/net/tcp: "sl local_address rem_address st ... inode", addresses
  // as hex IP:port, state 0A for LISTEN.
  char local[32];
  std::snprintf(local, sizeof local, "0100007F:%04X", port);
  std::ifstream tcp("/proc/net/tcp");
  std::string line, inode;
  while (std::getline(tcp, line)) {
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string field; fields >> field;) f.push_back(field);
    if (f.size() > 9 && f[1] == local && f[3] == "0A") inode = f[9];
  }
  if (inode.empty()) return state + "; no socket listens on it";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec))
    if (std::filesystem::read_symlink(entry.path(), ec).string() == "socket:[" + inode + "]")
      return state + "; this process's socket (inode " + inode + ") listens on it";
  return state + "; another process's socket (inode " + inode + ") listens on it";
}

/// Headless chromium, run again (with a fresh profile) when it exits 0 having
/// printed nothing, which is how it reports a page that failed to load: on a
/// loaded 2-core machine it sometimes does, a DOM dump being never empty
/// otherwise. Three empty dumps in a row return -2, with chromium's reasons
/// for each and the port's state (listener_state) as a message of the
/// failed check.
int run_chromium(const std::string& chromium, const std::filesystem::path& profile, const std::string& url,
                 const std::vector<std::string>& extra, const std::filesystem::path& out_file) {
  int rc = -1;
  std::string reasons;
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto attempt_profile = profile;
    if (attempt > 0) attempt_profile += "-again" + std::to_string(attempt);
    rc = run_chromium_once(chromium, attempt_profile, url, extra, out_file);
    std::error_code ec;
    if (rc != 0 || std::filesystem::file_size(out_file, ec) > 0) return rc;
    reasons += "attempt " + std::to_string(attempt + 1) + ", empty dump of " + url + ":\n" + chromium_errors(out_file);
  }
  UNSCOPED_INFO(reasons << listener_state(url));
  return -2;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string attribute(const std::string& dom, const std::string& id, const std::string& name) {
  std::smatch m;
  if (std::regex_search(dom, m, std::regex("id=\"" + id + "\"[^>]*" + name + "=\"([^\"]*)\""))) return m[1];
  return "";
}

/// The state a runs-table row shows for run `key` ("DB/ID").
std::string row_state(const std::string& dom, const std::string& key) {
  std::smatch m;
  if (std::regex_search(dom, m, std::regex("<tr data-key=\"" + key + "\" data-state=\"([^\"]*)\""))) return m[1];
  return "";
}

/// Whether the element `id` carries the hidden attribute.
bool hidden(const std::string& dom, const std::string& id) {
  return std::regex_search(dom, std::regex("id=\"" + id + "\"[^>]*hidden"));
}

/// The status counts of the run panel: status -> count.
std::map<std::string, std::int64_t> panel_counts(const std::string& dom) {
  std::map<std::string, std::int64_t> counts;
  static const std::regex row(R"re(<tr data-status="([^"]+)" data-count="([0-9]+)")re");
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), row); it != std::sregex_iterator(); ++it)
    counts[(*it)[1]] = std::stoll((*it)[2]);
  return counts;
}

double unix_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

/// The latest-trials rows of a dumped page: seq and wall-clock seconds.
std::vector<std::pair<std::size_t, double>> trial_rows(const std::string& dom) {
  std::vector<std::pair<std::size_t, double>> rows;
  static const std::regex row(R"re(<tr data-seq="([0-9]+)" data-s="([^"]+)")re");
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), row); it != std::sregex_iterator(); ++it)
    rows.emplace_back(std::stoul((*it)[1]), std::stod((*it)[2]));
  return rows;
}

/// A Kernel Tuner cache of 12 x `y_count` configurations (y = 1 ..
/// y_count); the
/// variant whose value holds a <script> is the fastest.
std::string write_cache(const std::filesystem::path& dir, int y_count = 4) {
  nlohmann::json cache = nlohmann::json::object();
  std::vector<int> xs = {1, 2, 4, 8, 16, 32}, ys;
  for (int y = 1; y <= y_count; ++y) ys.push_back(y);
  std::vector<std::string> variants = {"plain", injected};
  for (int x : xs)
    for (int y : ys)
      for (const auto& v : variants) {
        double time = 1.0 + std::abs(x - 8) * 0.1 + y * 0.05 + (v == "plain" ? 0.5 : 0.0);
        cache[std::to_string(x) + "," + std::to_string(y) + "," + v] = {{"x", x},
                                                                        {"y", y},
                                                                        {"variant", v},
                                                                        {"time", time},
                                                                        {"compile_time", 1000.0},
                                                                        {"benchmark_time", 60.0},
                                                                        {"verification_time", 0.0}};
      }
  nlohmann::json file = {{"kernel_name", "escape_demo"},
                         {"device_name", "sim"},
                         {"objective", "time"},
                         {"tune_params_keys", {"x", "y", "variant"}},
                         {"tune_params", {{"x", xs}, {"y", ys}, {"variant", variants}}},
                         {"cache", cache}};
  auto path = (dir / "cache.json").string();
  std::ofstream(path) << file.dump();
  return path;
}

}  // namespace

TEST_CASE("a browser shows a replay run live and from the database with run strings as text") {
  auto chromium = find_chromium();
  if (chromium.empty()) SKIP_TEST("chromium not found (Debian's chromium; bash scripts/test.sh installs it)");
  scratch_dir dir("dashboard-browser");
  auto db_path = (dir / "runs.db").string();
  auto events = "ipc://" + (dir / "events.ipc").string();

  // An older run in another database: a page showing the latest run must
  // not show this one.
  auto older_path = (dir / "older.db").string();
  {
    storage::results_db older(older_path);
    storage::run_spec spec;
    spec.task_key = "older/task";
    spec.strategy = "random";
    spec.device_kind = "sim";
    auto run = older.create_run(spec);
    storage::trial_record t;
    t.config_json = R"({"x":1})";
    t.state = status::ok;
    t.time_ms = 0.001;
    t.device = "sim0";
    older.record_trial(run, t);
    older.finish_run(run, end_reason::budget);
  }
  std::this_thread::sleep_for(50ms);  // so the replay's run starts later

  // Chromium's first start on a cold, loaded machine can take longer than a
  // replay run of 48 trials (12 s): its page then came after the run had
  // ended and closed its dashboard (ERR_CONNECTION_REFUSED). So chromium
  // starts once first on a page of its own, and the run would take about
  // 36 s (144 configurations, 72 s simulated): stopped once the browser
  // has looked.
  run_chromium(chromium, dir / "profile-warm", "data:text/html,<p>warm</p>", {"--dump-dom"}, dir / "warm.html");
  session_options o;
  o.dataset = write_cache(dir.path(), 12);
  o.budget.trials = 144;
  // Scaled: the events' backend clock runs twice as fast as the wall clock
  // the page shows, so a page mixing the two clocks fails the checks below.
  o.time_scale = 0.5;
  o.seed = 5;
  o.strategy = "random";
  o.db_path = db_path;
  o.publish_endpoint = events;
  o.publish_wait = 1;  // this test's own subscriber, besides the dashboard's
  o.dashboard_listen = "127.0.0.1:0";
  std::promise<std::string> url_promise;
  o.on_dashboard = [&](const std::string& url) { url_promise.set_value(url); };
  storage::event_subscriber recorded(events);
  session s(o);
  std::thread run([&] { s.run(); });
  auto url_future = url_promise.get_future();
  REQUIRE(url_future.wait_for(60s) == std::future_status::ready);
  auto url = url_future.get();

  // While the run goes: the page shows a prefix of the run, consistent with
  // the database (its best is the best of the trials it counts).
  auto live_file = dir / "live.html";
  CHECK(run_chromium(chromium, dir / "profile-live", url, {"--dump-dom"}, live_file) == 0);
  auto live_seen_at = unix_now();
  s.request_stop();
  run.join();
  auto live = read_file(live_file);
  storage::results_db db(db_path, storage::results_db::open_mode::read_only);
  auto runs = db.runs();
  REQUIRE(runs.size() == 1);
  REQUIRE(runs[0].reason);
  const auto run_key = "0/" + std::to_string(runs[0].id);
  auto trials = db.trials(runs[0].id);
  REQUIRE(!trials.empty());
  auto wall_of = [&](std::size_t seq) { return trials[seq].finished_at - runs[0].started_at; };
  auto best_of_first = [&](std::size_t n) {
    double best = 1e300;
    for (std::size_t i = 0; i < n; ++i)
      if (trials[i].ok()) best = std::min(best, trials[i].time_ms);
    return best;
  };
  {
    INFO(live);
    CHECK(attribute(live, "live", "data-mode") == "live");
    auto live_count = std::stoul("0" + attribute(live, "trials", "data-count"));
    CHECK(live_count > 0);
    CHECK(live_count <= trials.size());
    if (live_count > 0) CHECK(std::stod(attribute(live, "best", "data-ms")) == Approx(best_of_first(live_count)));
    // Each latest trial's time on the page, whether it came from a live event
    // or from catching up, is the database's: finished_at - started_at.
    auto rows = trial_rows(live);
    for (const auto& [seq, at] : rows) {
      REQUIRE(seq < trials.size());
      CHECK(at == Approx(wall_of(seq)).margin(1e-6));
    }
    CHECK(rows.size() == std::min<std::size_t>(live_count, 15));
    // The time chart ends at the newest trial's wall clock, and the elapsed
    // time is no later than the wall clock when the browser was done: the
    // replay's own clock, twice as fast, would be.
    if (!rows.empty()) {
      CHECK(attribute(live, "chart-time", "data-clock") == "wall");
      CHECK(std::stod("0" + attribute(live, "chart-time", "data-x-last")) ==
            Approx(wall_of(rows.front().first)).margin(1e-6));
      auto elapsed = std::stod("0" + attribute(live, "elapsed", "data-s"));
      CHECK(elapsed >= wall_of(rows.front().first) - 1e-6);
      CHECK(elapsed <= live_seen_at - runs[0].started_at + 0.5);
    }
    // One state for the run in the panel and in the runs table.
    auto state = attribute(live, "live-state", "data-state");
    CHECK((state == "running" || attribute(live, "live-state", "data-finished") == "true"));
    CHECK(row_state(live, run_key) == state);
  }

  // Afterwards, a dashboard holding the database and the run's events: the
  // whole run, equal to the database.
  nlohmann::json started, progress, finished;
  std::set<std::string> in_flight_published;
  while (finished.is_null()) {
    auto e = recorded.receive(10s);
    REQUIRE(e);
    if ((*e)["type"] == "run_started") started = *e;
    if ((*e)["type"] == "progress") {
      progress = *e;
      in_flight_published.insert((*e)["in_flight"].dump());
    }
    if ((*e)["type"] == "run_finished") finished = *e;
  }
  // The run was stopped (or, on a very slow machine, spent its budget): the
  // page says so in the words of stateText in app.js.
  CHECK(finished["reason"] == std::string(to_string(*runs[0].reason)));
  const std::string ended_state =
      *runs[0].reason == end_reason::stopped ? "stopped (resumable)" : std::string(to_string(*runs[0].reason));
  // Trials in flight as the run's progress events said, or none once it ended.
  auto live_in_flight = attribute(live, "in-flight", "data-count");
  if (attribute(live, "live-state", "data-finished") == "true")
    CHECK(live_in_flight == "0");
  else
    CHECK(in_flight_published.count(live_in_flight) == 1);
  {
    dashboard::server_options bo;
    bo.listen = "127.0.0.1:0";
    bo.databases = {db_path};
    dashboard::server board(bo);
    board.start();
    for (const auto* e : {&started, &progress, &finished})
      if (!e->is_null()) board.forward(*e);
    // One visit dumps the DOM and takes the screenshot (the README's is
    // scripts/dashboard_screenshot.sh's, of a real run).
    std::filesystem::create_directories(TUNE_TEST_OUTPUT_DIR);
    auto png = std::filesystem::path(TUNE_TEST_OUTPUT_DIR) / "dashboard.png";
    std::filesystem::remove(png);
    auto after_file = dir / "after.html";
    CHECK(run_chromium(chromium, dir / "profile-after", board.url(), {"--dump-dom", "--screenshot=" + png.string()},
                       after_file) == 0);
    auto after = read_file(after_file);
    INFO(after);
    CHECK(attribute(after, "live", "data-mode") == "live");
    CHECK(attribute(after, "trials", "data-count") == std::to_string(trials.size()));
    CHECK(std::stod("0" + attribute(after, "best", "data-ms")) == Approx(best_of_first(trials.size())));
    CHECK(attribute(after, "live-state", "data-finished") == "true");
    CHECK(attribute(after, "live-state", "data-state") == ended_state);
    CHECK(row_state(after, run_key) == ended_state);
    CHECK(attribute(after, "in-flight", "data-count") == "0");
    for (const auto& [seq, at] : trial_rows(after)) {
      REQUIRE(seq < trials.size());
      CHECK(at == Approx(wall_of(seq)).margin(1e-6));
    }
    CHECK(std::stod("0" + attribute(after, "chart-time", "data-x-last")) ==
          Approx(wall_of(trials.size() - 1)).margin(1e-6));
    CHECK(std::stod("0" + attribute(after, "elapsed", "data-s")) <= *runs[0].finished_at - runs[0].started_at + 1e-3);
    // The fastest configurations hold the <script> value: shown as text.
    CHECK_THAT(after, Contains("&lt;script&gt;document.body.dataset.injected=1&lt;/script&gt;"));
    CHECK_THAT(after, !Contains(injected));
    CHECK_THAT(after, !Contains("data-injected"));

    REQUIRE(std::filesystem::exists(png));
    CHECK(std::filesystem::file_size(png) > 10000);
  }

  // A dashboard over the databases alone, its stream silent (as
  // `tune-engine dashboard --db` listens on the default endpoint): the panel
  // shows the latest run from the database, without the live-only parts.
  {
    dashboard::server_options bo;
    bo.listen = "127.0.0.1:0";
    bo.databases = {older_path, db_path};
    bo.event_endpoints = {"ipc://" + (dir / "silent.ipc").string()};
    dashboard::server board(bo);
    board.start();
    auto db_file = dir / "database.html";
    CHECK(run_chromium(chromium, dir / "profile-database", board.url(), {"--dump-dom"}, db_file) == 0);
    auto page = read_file(db_file);
    INFO(page);
    const auto latest_key = "1/" + std::to_string(runs[0].id);
    CHECK(attribute(page, "live", "data-mode") == "database");
    CHECK_THAT(page, Contains(runs[0].task_key) && !Contains("older/task · "));
    CHECK(attribute(page, "trials", "data-count") == std::to_string(trials.size()));
    CHECK(std::stod("0" + attribute(page, "best", "data-ms")) == Approx(best_of_first(trials.size())));
    CHECK(attribute(page, "live-state", "data-state") == ended_state);
    CHECK(row_state(page, latest_key) == ended_state);
    CHECK(row_state(page, "0/1") == "budget");
    CHECK(hidden(page, "stat-in-flight"));
    CHECK(hidden(page, "stat-rate"));
    CHECK(hidden(page, "busy"));
    std::map<std::string, std::int64_t> expected_counts;
    for (const auto& t : trials) ++expected_counts[std::string(to_string(t.state))];
    CHECK(panel_counts(page) == expected_counts);
    CHECK(std::stod("0" + attribute(page, "chart-time", "data-x-last")) ==
          Approx(wall_of(trials.size() - 1)).margin(1e-6));
    CHECK(std::stod("0" + attribute(page, "elapsed", "data-s")) ==
          Approx(*runs[0].finished_at - runs[0].started_at).margin(1e-6));
    for (const auto& [seq, at] : trial_rows(page)) {
      REQUIRE(seq < trials.size());
      CHECK(at == Approx(wall_of(seq)).margin(1e-6));
    }
    // The best configuration holds the <script> value: text here too.
    CHECK_THAT(page, Contains("&lt;script&gt;document.body.dataset.injected=1&lt;/script&gt;"));
    CHECK_THAT(page, !Contains(injected));
    CHECK_THAT(page, !Contains("data-injected"));
  }
}

TEST_CASE("a browser shows a run's drift-flagged trials and its duels, and judges the best as the engine does") {
  auto chromium = find_chromium();
  if (chromium.empty()) SKIP_TEST("chromium not found (Debian's chromium; bash scripts/test.sh installs it)");
  scratch_dir dir("dashboard-browser-drift");
  auto db_path = (dir / "runs.db").string();
  {
    storage::results_db db(db_path);
    storage::run_spec spec;
    spec.task_key = "matmul:64x64x64";
    spec.strategy = "bo";
    spec.device_kind = "cpu";
    auto run = db.create_run(spec);
    auto ok = [](int x, double ms) {
      storage::trial_record t;
      t.config_json = "{\"x\":" + std::to_string(x) + "}";
      t.state = status::ok;
      t.time_ms = ms;
      t.device = "cpu0";
      return t;
    };
    db.record_trial(run, ok(0, 10.0));
    auto lucky = ok(1, 8.5);  // lost its duel: never the best
    lucky.duel_ms = 10.5;
    lucky.duel_best_ms = 10.0;
    db.record_trial(run, lucky);
    auto drifted = ok(2, 9.0);
    drifted.drift_flagged = true;
    db.record_trial(run, drifted);
    auto early = ok(3, 5.0);  // timing stopped early: not a full measurement
    early.stopped_early = true;
    db.record_trial(run, early);
    db.finish_run(run, end_reason::budget);
  }
  dashboard::server_options bo;
  bo.listen = "127.0.0.1:0";
  bo.databases = {db_path};
  bo.event_endpoints = {"ipc://" + (dir / "silent.ipc").string()};
  dashboard::server board(bo);
  board.start();
  auto file = dir / "drift.html";
  CHECK(run_chromium(chromium, dir / "profile-drift", board.url(), {"--dump-dom"}, file) == 0);
  auto page = read_file(file);
  INFO(page);
  CHECK(attribute(page, "trials", "data-count") == "4");
  CHECK(attribute(page, "best", "data-seq") == "2");
  CHECK(std::stod("0" + attribute(page, "best", "data-ms")) == 9.0);
  CHECK(attribute(page, "drift", "data-flagged") == "1");
  CHECK(attribute(page, "duels", "data-count") == "1");
  CHECK(attribute(page, "duels", "data-lost") == "1");
  CHECK(std::regex_search(page, std::regex("data-seq=\"2\"[^>]*data-drift=\"true\"")));
  CHECK(std::regex_search(page, std::regex("data-seq=\"0\"[^>]*data-drift=\"false\"")));
  CHECK_THAT(page, Contains("duel 10.500 ms vs 10.000 ms lost"));
}

TEST_CASE("a browser shows a model run's latency and tasks from its progress events, names as text") {
  auto chromium = find_chromium();
  if (chromium.empty()) SKIP_TEST("chromium not found (Debian's chromium; bash scripts/test.sh installs it)");
  scratch_dir dir("dashboard-browser-model");
  auto db_path = (dir / "runs.db").string();
  auto events = "ipc://" + (dir / "events.ipc").string();
  // A task named with a <script>: the page must show it as text.
  std::ofstream(dir / "m.yaml") << "name: escaped\ntasks:\n"
                                << "  - name: '" << injected << "'\n    dataset: " << write_cache(dir.path())
                                << "\n    count: 3\n"
                                << "  - name: gemm\n    dataset: " << TUNE_DATA_DIR
                                << "/datasets/gemm_clblast/RTX_3090.json.gz\n";
  auto m = read_model((dir / "m.yaml").string());
  dashboard::server_options bo;
  bo.listen = "127.0.0.1:0";
  bo.event_endpoints = {events};
  dashboard::server board(bo);
  board.add_databases({db_path});  // made by the model's first round
  board.start();
  model_options o;
  o.session.db_path = db_path;
  o.session.seed = 4;
  o.session.strategy = "random";
  o.session.time_scale = 0.001;
  o.session.publish_endpoint = events;
  o.session.publish_wait = 1;  // the dashboard's subscriber
  o.budget_trials = 48;
  o.round_trials = 8;
  auto r = tune_model(m, o);
  REQUIRE(std::isfinite(r.latency_ms));
  REQUIRE(board.wait_until([](const dashboard::server_statistics& st) { return st.models_finished == 1; }, 10s));

  auto file = dir / "model.html";
  CHECK(run_chromium(chromium, dir / "profile-model", board.url(), {"--dump-dom"}, file) == 0);
  auto page = read_file(file);
  INFO(page);
  CHECK_FALSE(hidden(page, "model"));
  CHECK(attribute(page, "model", "data-model") == "escaped");
  CHECK(attribute(page, "model-state", "data-state") == "budget");
  CHECK(attribute(page, "model-trials", "data-count") == std::to_string(r.trials));
  CHECK(std::stod("0" + attribute(page, "model-latency", "data-ms")) == Approx(r.latency_ms).epsilon(1e-12));
  // One row per task, with its best; the chart drawn up to the model's last round.
  static const std::regex row(R"re(<tr data-target="[^"]*" data-trials="([0-9]+)" data-best-ms="([^"]*)")re");
  std::vector<std::pair<std::uint64_t, double>> rows;
  for (auto it = std::sregex_iterator(page.begin(), page.end(), row); it != std::sregex_iterator(); ++it)
    rows.emplace_back(std::stoull((*it)[1]), std::stod("0" + (*it)[2].str()));
  REQUIRE(rows.size() == 2);
  for (std::size_t t = 0; t < 2; ++t) {
    CHECK(rows[t].first == r.tasks[t].trials);
    CHECK(rows[t].second == Approx(r.tasks[t].best->time_ms).epsilon(1e-12));
  }
  CHECK(attribute(page, "chart-model", "data-x-last") == std::to_string(r.trials));
  CHECK_THAT(page, Contains("&lt;script&gt;document.body.dataset.injected=1&lt;/script&gt;"));
  CHECK_THAT(page, !Contains(injected));
  CHECK_THAT(page, !Contains("data-injected"));
}
