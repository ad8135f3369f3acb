// `tune-engine tune` as a user runs it: the real binary tuning a small CPU
// matmul, killed at random moments and resumed, watched by a subscriber, and
// fed malformed input.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "actors/scratch_dir.hpp"
#include "tune/storage/event_stream.hpp"
#include "tune/storage/results_db.hpp"

extern char** environ;

namespace {

const std::string small_task = "matmul:64x64x64";

/// A running tune-engine with stdout and stderr sent to files.
class cli_process {
 public:
  explicit cli_process(const std::vector<std::string>& args, const std::string& log_path) {
    std::vector<std::string> argv_text{TUNE_CLI_PATH};
    argv_text.insert(argv_text.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_text) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    int rc = posix_spawn(&pid_, TUNE_CLI_PATH, &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) throw std::runtime_error("cannot start " + std::string(TUNE_CLI_PATH));
  }
  ~cli_process() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }
  cli_process(const cli_process&) = delete;
  cli_process& operator=(const cli_process&) = delete;

  void kill_hard() {
    if (pid_ > 0) ::kill(pid_, SIGKILL);
  }
  /// False once the process has ended (it is reaped then).
  bool running() {
    if (pid_ <= 0) return false;
    if (::waitpid(pid_, &status_, WNOHANG) != pid_) return true;
    pid_ = -1;
    return false;
  }
  /// Exit code, or 128 + signal.
  int wait() {
    if (pid_ > 0) ::waitpid(pid_, &status_, 0);
    pid_ = -1;
    return WIFEXITED(status_) ? WEXITSTATUS(status_) : 128 + WTERMSIG(status_);
  }

 private:
  pid_t pid_ = -1;
  int status_ = 0;
};

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

int run_cli(const std::vector<std::string>& args, const std::filesystem::path& log) {
  cli_process p(args, log.string());
  return p.wait();
}

void write_topology(const std::filesystem::path& path, int workers, int devices, const char* backend = "cpu") {
  std::ofstream out(path);
  out << "compile_workers: " << workers << "\ncompile_timeout_s: 60\nrun_timeout_s: 10\ndevices:\n"
      << "  - backend: " << backend << "\n    id: 0\n    prefetch: 1\n    count: " << devices << "\n";
}

/// Compiled kernels are cached per test directory, shared by the resumed runs.
std::vector<std::string> tune_args(const tune::test::scratch_dir& dir, std::uint64_t budget) {
  ::setenv("TUNE_CACHE_DIR", (dir / "kernel-cache").c_str(), 1);
  return {"tune",
          "--topology",
          (dir / "topology.yaml").string(),
          "--task",
          small_task,
          "--strategy",
          "random",
          "--budget",
          std::to_string(budget),
          "--seed",
          "11",
          "--db",
          (dir / "results.db").string(),
          "--quiet"};
}

}  // namespace

TEST_CASE("tune: killed at random moments and resumed, every finished trial is recorded exactly once",
          "[actors][cli]") {
  tune::test::scratch_dir dir("tune-kill");
  write_topology(dir / "topology.yaml", 2, 1);
  // Each kill waits for 0-3 more recorded trials and then a random pause, so
  // kills land before the first trial, between trials and in the middle of
  // compiles and runs on a fast or a slow machine alike; 20 such kills record
  // at most 60 new trials, fewer than the budget. TUNE_KILLS=N (see
  // scripts/stress_kill.sh) makes it a stress run with N kills.
  int wanted_kills = 20;
  if (const char* env = std::getenv("TUNE_KILLS")) wanted_kills = std::max(20, std::atoi(env));
  const std::uint64_t budget = 40 + 3 * static_cast<std::uint64_t>(wanted_kills);
  auto args = tune_args(dir, budget);
  args.push_back("--resume");
  auto log = dir / "log.txt";

  std::mt19937_64 rng(20261122);
  std::uniform_int_distribution<std::size_t> more_trials(0, 3);
  std::uniform_int_distribution<int> pause_ms(0, 400);
  auto recorded_now = [&]() -> std::size_t {
    try {
      if (!std::filesystem::exists(dir / "results.db")) return 0;
      tune::storage::results_db db(dir / "results.db", tune::storage::results_db::open_mode::read_only);
      auto runs = db.runs();
      return runs.empty() ? 0 : db.trials(runs[0].id).size();
    } catch (const std::exception&) {
      return 0;  // the file is being created
    }
  };
  // (seq -> config) of everything recorded so far: a later kill must never
  // lose or change it.
  std::map<std::int64_t, std::string> recorded;
  int kills = 0;
  bool finished = false;
  for (; kills < wanted_kills && !finished; ++kills) {
    {
      cli_process p(args, log.string());
      std::size_t target = recorded.size() + more_trials(rng);
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (p.running() && recorded_now() < target && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(rng)));
      p.kill_hard();
      p.wait();
    }
    tune::storage::results_db db(dir / "results.db", tune::storage::results_db::open_mode::read_only);
    auto runs = db.runs();
    if (runs.empty()) continue;  // killed before the run was created
    REQUIRE(runs.size() == 1);
    INFO(read_text(log));
    finished = runs[0].state == tune::storage::run_state::finished;  // between two kills
    if (!finished) REQUIRE(runs[0].state == tune::storage::run_state::running);
    auto trials = db.trials(runs[0].id);
    REQUIRE(trials.size() >= recorded.size());
    REQUIRE(trials.size() <= budget);
    for (const auto& t : trials) {
      auto it = recorded.find(t.seq);
      if (it != recorded.end()) REQUIRE(it->second == t.config_json);
      recorded[t.seq] = t.config_json;
    }
  }
  INFO(read_text(log));
  CHECK(kills >= wanted_kills);
  if (!finished) REQUIRE(run_cli(args, log) == 0);

  tune::storage::results_db db(dir / "results.db", tune::storage::results_db::open_mode::read_only);
  auto runs = db.runs();
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].state == tune::storage::run_state::finished);
  auto trials = db.trials(runs[0].id);
  REQUIRE(trials.size() == budget);
  std::set<std::string> configs;
  for (std::size_t i = 0; i < trials.size(); ++i) {
    CHECK(trials[i].seq == static_cast<std::int64_t>(i));
    CHECK(configs.insert(trials[i].config_json).second);
  }
  for (const auto& [seq, config] : recorded) CHECK(trials[static_cast<std::size_t>(seq)].config_json == config);
  INFO(read_text(log));
  CHECK(recorded.size() > 0);
}

TEST_CASE("tune: a subscriber receives every event of a run, in order", "[actors][cli]") {
  tune::test::scratch_dir dir("tune-events");
  write_topology(dir / "topology.yaml", 2, 1);
  std::string endpoint = "ipc://" + (dir / "events.ipc").string();
  const std::uint64_t budget = 16;
  auto args = tune_args(dir, budget);
  for (const char* extra : {"--publish", endpoint.c_str(), "--publish-wait", "1", "--summary-json"})
    args.push_back(extra);
  args.push_back((dir / "summary.json").string());

  tune::storage::event_subscriber sub(endpoint);
  cli_process p(args, (dir / "log.txt").string());
  std::vector<nlohmann::json> events;
  for (;;) {
    auto e = sub.receive(std::chrono::seconds(60));
    REQUIRE(e);
    events.push_back(*e);
    if ((*e)["type"] == "run_finished") break;
  }
  REQUIRE(p.wait() == 0);
  CHECK(sub.skipped() == 0);
  REQUIRE(events.front()["type"] == "run_started");
  CHECK(events.front()["resumed"] == false);
  std::int64_t next_seq = 0;
  double best = 1e300;
  for (std::size_t i = 1; i + 1 < events.size(); ++i) {
    const auto& e = events[i];
    if (e["type"] == "trial_finished") {
      CHECK(e["seq"] == next_seq);
      ++next_seq;
    } else if (e["type"] == "new_best") {
      // Announced right after its trial, and better than every earlier best.
      CHECK(e["seq"] == next_seq - 1);
      CHECK(e["time_ms"].get<double>() < best);
      best = e["time_ms"].get<double>();
    } else {
      CHECK(e["type"] == "progress");
    }
  }
  CHECK(next_seq == static_cast<std::int64_t>(budget));
  CHECK(events.back()["trials"] == budget);
  CHECK(events.back()["best_time_ms"].get<double>() == best);

  auto summary = nlohmann::json::parse(read_text(dir / "summary.json"));
  CHECK(summary["trials"] == budget);
  CHECK(summary["best"]["time_ms"].get<double>() == best);
  CHECK(summary["best"]["config"].is_object());
  CHECK(summary["busy"]["devices"].size() == 1);
  CHECK(summary["new_trials"] == budget);
}

TEST_CASE("tune: malformed topology or command line exits with 2 and names the problem", "[actors][cli]") {
  tune::test::scratch_dir dir("tune-bad-input");
  write_topology(dir / "topology.yaml", 2, 1);
  auto log = dir / "log.txt";
  auto base = tune_args(dir, 10);

  SECTION("topology with an unknown backend") {
    std::ofstream(dir / "topology.yaml") << "compile_workers: 2\ndevices:\n  - backend: quantum\n";
    CHECK(run_cli(base, log) == 2);
    CHECK(read_text(log).find("devices[0].backend") != std::string::npos);
  }
  SECTION("topology that is not YAML") {
    std::ofstream(dir / "topology.yaml") << "compile_workers: [1, \n";
    CHECK(run_cli(base, log) == 2);
    CHECK(read_text(log).find("topology.yaml") != std::string::npos);
  }
  SECTION("a task needs real devices") {
    write_topology(dir / "topology.yaml", 2, 1, "replay");
    CHECK(run_cli(base, log) == 2);
    CHECK(read_text(log).find("measures real kernels") != std::string::npos);
  }
  SECTION("malformed task") {
    auto args = base;
    args[4] = "matmul:64x";
    CHECK(run_cli(args, log) == 2);
  }
  SECTION("time scale without a dataset") {
    auto args = base;
    args.push_back("--time-scale");
    args.push_back("0.5");
    CHECK(run_cli(args, log) == 2);
    CHECK(read_text(log).find("--time-scale") != std::string::npos);
  }
  SECTION("unknown strategy") {
    auto args = base;
    args[6] = "no-such-strategy";
    CHECK(run_cli(args, log) == 2);
    CHECK(read_text(log).find("no-such-strategy") != std::string::npos);
  }
  SECTION("zero budget") {
    auto args = base;
    args[8] = "0";
    CHECK(run_cli(args, log) == 2);
    CHECK(read_text(log).find("--budget") != std::string::npos);
  }
  SECTION("malformed hyperparameter") {
    auto args = base;
    args.push_back("--hyper");
    args.push_back("rho:8");
    CHECK(run_cli(args, log) == 2);
    CHECK(read_text(log).find("name=value") != std::string::npos);
  }
  SECTION("unknown mode") {
    auto args = base;
    args.push_back("--mode");
    args.push_back("sideways");
    CHECK(run_cli(args, log) == 2);
  }
  SECTION("two sources of configurations") {
    auto args = base;
    args.push_back("--space");
    args.push_back((dir / "topology.yaml").string());
    CHECK(run_cli(args, log) == 2);
  }
  SECTION("missing topology file") {
    auto args = base;
    args[2] = (dir / "absent.yaml").string();
    CHECK(run_cli(args, log) == 2);
    CHECK(read_text(log).find("absent.yaml") != std::string::npos);
  }
  // Nothing was recorded by any of these.
  CHECK_FALSE(std::filesystem::exists(dir / "results.db"));
}

TEST_CASE("tune: a user kernel through --kernel, without a topology file", "[actors][cli]") {
  tune::test::scratch_dir dir("tune-user-kernel");
  ::setenv("TUNE_CACHE_DIR", (dir / "kernel-cache").c_str(), 1);
  auto log = dir / "log.txt";
  auto summary = dir / "summary.json";
  std::vector<std::string> args{"tune",
                                "--kernel",
                                std::string(TUNE_SOURCE_DIR) + "/examples/user-kernel",
                                "--budget",
                                "3",
                                "--seed",
                                "5",
                                "--strategy",
                                "random",
                                "--db",
                                (dir / "results.db").string(),
                                "--summary-json",
                                summary.string(),
                                "--quiet"};
  REQUIRE(run_cli(args, log) == 0);
  auto doc = nlohmann::json::parse(read_text(summary));
  CHECK(doc["trials"] == 3);
  CHECK(doc["reason"] == "budget");
  CHECK(doc["busy"]["devices"].contains("cpu0"));
  tune::storage::results_db db(dir / "results.db", tune::storage::results_db::open_mode::read_only);
  auto runs = db.runs();
  REQUIRE(runs.size() == 1);
  CHECK(db.trials(runs.front().id).size() == 3);
  CHECK(read_text(log).find("best ") != std::string::npos);
}

TEST_CASE("tune: --space alone and --kinds without a dataset are refused with the fix", "[actors][cli]") {
  tune::test::scratch_dir dir("tune-space-alone");
  auto log = dir / "log.txt";
  auto space = std::string(TUNE_SOURCE_DIR) + "/examples/user-kernel/space.json";
  CHECK(run_cli({"tune", "--space", space, "--budget", "3", "--seed", "1"}, log) == 2);
  CHECK(read_text(log).find("through the library") != std::string::npos);
  CHECK(run_cli({"tune", "--task", small_task, "--kinds", space, "--budget", "3", "--seed", "1"}, log) == 2);
  CHECK(read_text(log).find("--kinds") != std::string::npos);
  CHECK(run_cli({"tune", "--task", small_task, "--resume", "--budget", "3", "--seed", "1"}, log) == 2);
  CHECK(read_text(log).find("--resume needs --db") != std::string::npos);
}
