#include <sqlite3.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "actors/scratch_dir.hpp"
#include "dashboard_client.hpp"
#include "postgres_server.hpp"
#include "skip.hpp"
#include "tune/dashboard/server.hpp"
#include "tune/model.hpp"
#include "tune/storage/event_stream.hpp"
#include "tune/storage/results_db.hpp"
#include "tune/tune.hpp"

using namespace tune;
using namespace tune::test;
using Catch::Matchers::Contains;
using namespace std::chrono_literals;

namespace {

/// A database with one run of three trials: ok 2 ms, a compile error, ok 1.5 ms.
std::int64_t write_run(const std::string& path) {
  storage::results_db db(path);
  storage::run_spec spec;
  spec.task_key = "demo/task";
  spec.strategy = "random";
  spec.seed = 18446744073709551615ull;
  spec.device_kind = "sim";
  auto run = db.create_run(spec);
  storage::trial_record t;
  t.config_json = R"({"variant":"plain"})";
  t.state = status::ok;
  t.time_ms = 2.0;
  t.device = "sim0";
  db.record_trial(run, t);
  t.config_json = R"({"variant":"broken"})";
  t.state = status::compile_error;
  db.record_trial(run, t);
  t.config_json = R"({"variant":"<script>alert(1)</script>"})";
  t.state = status::ok;
  t.time_ms = 1.5;
  db.record_trial(run, t);
  db.finish_run(run, end_reason::budget);
  return run;
}

dashboard::server_options loopback_options() {
  dashboard::server_options o;
  o.listen = "127.0.0.1:0";
  return o;
}

nlohmann::json trial_event(std::int64_t seq, std::size_t padding = 0) {
  storage::trial_finished_event e;
  e.trial.seq = seq;
  e.trial.config_json = nlohmann::json{{"x", seq}, {"pad", std::string(padding, 'p')}}.dump();
  e.trial.state = status::ok;
  e.trial.time_ms = 1.0 + static_cast<double>(seq);
  e.trial.device = "sim0";
  return storage::make_event(e);
}

}  // namespace

TEST_CASE("the dashboard serves its page and assets and refuses what it does not serve") {
  scratch_dir dir("dashboard-routes");
  auto db = (dir / "runs.db").string();
  write_run(db);
  auto o = loopback_options();
  o.databases = {db};
  dashboard::server board(o);
  board.start();
  auto port = board.port();

  auto page = http_request(port, "/");
  CHECK(page.status == 200);
  CHECK(page.content_type == "text/html; charset=utf-8");
  CHECK_THAT(page.body, Contains("<script src=\"app.js\"") && Contains("<script src=\"chart.js\""));
  auto app = http_request(port, "/app.js");
  CHECK(app.status == 200);
  CHECK_THAT(app.body, Contains("textContent"));
  CHECK(http_request(port, "/style.css").status == 200);
  auto chart = http_request(port, "/chart.js");
  CHECK(chart.status == 200);
  CHECK(chart.body.size() > 100000);
  CHECK_THAT(chart.body, Contains("Chart"));
  CHECK(http_request(port, "/", http::verb::head).status == 200);

  CHECK(http_request(port, "/no-such-page").status == 404);
  CHECK(http_request(port, "/../etc/passwd").status == 404);
  CHECK(http_request(port, "/", http::verb::post).status == 405);
  CHECK(http_request(port, "/api/runs/0").status == 400);
  CHECK(http_request(port, "/api/runs/zero/1").status == 400);
  CHECK(http_request(port, "/api/runs/0/999").status == 404);
  CHECK(http_request(port, "/api/runs/5/1").status == 404);
}

TEST_CASE("the dashboard lists runs and one run's trials from its databases") {
  scratch_dir dir("dashboard-api");
  auto db = (dir / "runs.db").string();
  auto run = write_run(db);
  auto o = loopback_options();
  o.databases = {db};
  dashboard::server board(o);
  board.start();

  auto list = http_request(board.port(), "/api/runs");
  REQUIRE(list.status == 200);
  CHECK(list.content_type == "application/json");
  auto runs = nlohmann::json::parse(list.body);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0]["id"] == run);
  CHECK(runs[0]["task"] == "demo/task");
  CHECK(runs[0]["seed"] == "18446744073709551615");
  CHECK(runs[0]["trials"] == 3);
  CHECK(runs[0]["ok_trials"] == 2);
  CHECK(runs[0]["best_time_ms"] == 1.5);
  CHECK(runs[0]["state"] == "budget");

  auto one = http_request(board.port(), "/api/runs/0/" + std::to_string(run));
  REQUIRE(one.status == 200);
  auto details = nlohmann::json::parse(one.body);
  REQUIRE(details["trials"].size() == 3);
  for (int i = 0; i < 3; ++i) CHECK(details["trials"][i]["seq"] == i);
  CHECK(details["trials"][1]["status"] == "compile_error");
  CHECK(details["trials"][1]["time_ms"].is_null());
  CHECK(details["trials"][2]["config"]["variant"] == "<script>alert(1)</script>");
  CHECK(details["status_counts"] == nlohmann::json{{"ok", 2}, {"compile_error", 1}});
}

TEST_CASE("the dashboard reads a PostgreSQL results store as it reads a file") {
  auto& server = postgres_server::shared();
  if (!server.why_not().empty()) SKIP_TEST("PostgreSQL: " << server.why_not());
  auto team = server.new_database();
  auto run = write_run(team);
  auto o = loopback_options();
  o.databases = {team};
  dashboard::server board(o);
  board.start();
  auto runs = nlohmann::json::parse(http_request(board.port(), "/api/runs").body);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0]["trials"] == 3);
  CHECK(runs[0]["best_time_ms"] == 1.5);
  auto details = nlohmann::json::parse(http_request(board.port(), "/api/runs/0/" + std::to_string(run)).body);
  CHECK(details["database"] == team);  // postgresql://postgres@127.0.0.1:PORT/NAME: no password to hide
  REQUIRE(details["trials"].size() == 3);
  CHECK(details["trials"][2]["config"]["variant"] == "<script>alert(1)</script>");
}

TEST_CASE("the run list's counts and bests equal what each run's trials give") {
  scratch_dir dir("dashboard-run-totals");
  auto first = (dir / "first.db").string();
  auto second = (dir / "second.db").string();
  write_run(first);
  {
    // Runs of several sizes and outcomes, one of them without any trial.
    storage::results_db db(second);
    for (int r = 0; r < 4; ++r) {
      storage::run_spec spec;
      spec.task_key = "demo/task" + std::to_string(r % 2);
      spec.strategy = r % 2 ? "ga" : "random";
      spec.seed = static_cast<std::uint64_t>(r);
      spec.device_kind = "sim";
      auto run = db.create_run(spec);
      for (int i = 0; i < 40 * r; ++i) {
        storage::trial_record t;
        t.config_json = R"({"x":)" + std::to_string(i) + "}";
        t.state = (i + r) % 3 == 0 ? status::runtime_error : status::ok;
        t.time_ms = 5.0 + ((i * 17 + r) % 23) * 0.25;
        t.device = "sim0";
        db.record_trial(run, t);
      }
      if (r == 2) db.finish_run(run, end_reason::budget);
    }
  }
  auto o = loopback_options();
  o.databases = {first, second};
  dashboard::server board(o);
  board.start();
  auto reply = http_request(board.port(), "/api/runs");
  REQUIRE(reply.status == 200);
  auto runs = nlohmann::json::parse(reply.body);
  REQUIRE(runs.size() == 5);
  std::set<std::pair<int, std::int64_t>> seen;
  for (const auto& r : runs) {
    auto path = r["db"] == 0 ? first : second;
    storage::results_db db(path, storage::results_db::open_mode::read_only);
    auto id = r["id"].get<std::int64_t>();
    auto trials = db.trials(id);
    std::int64_t ok = 0;
    double best = 1e300;
    for (const auto& t : trials)
      if (t.ok()) {
        ++ok;
        best = std::min(best, t.time_ms);
      }
    INFO(r.dump());
    CHECK(r["trials"] == trials.size());
    CHECK(r["ok_trials"] == ok);
    if (ok == 0)
      CHECK(r["best_time_ms"].is_null());
    else
      CHECK(r["best_time_ms"].get<double>() == best);
    CHECK(r["task"] == db.find_run(id)->task_key);
    CHECK(r["state"] == storage::run_status_text(*db.find_run(id)));
    seen.insert({r["db"].get<int>(), id});
  }
  CHECK(seen.size() == 5);
  // Newest first.
  for (std::size_t i = 1; i < runs.size(); ++i)
    CHECK(runs[i - 1]["started_at"].get<double>() >= runs[i]["started_at"].get<double>());
}

TEST_CASE("the run list of a database of 200000 trials reads no trial row") {
  // list_runs takes each run's counts and best from one SQL aggregate
  // (results_db::all_run_totals). The failed trials' rows are then made
  // unreadable (a status no reader accepts): a run list that read a single
  // trial row would answer with an error, the aggregate does not care.
  scratch_dir dir("dashboard-big");
  auto path = (dir / "big.db").string();
  constexpr int count = 200000;
  std::int64_t run = 0;
  double best = 1e300;
  std::int64_t ok = 0;
  {
    storage::results_db db(path);
    storage::run_spec spec;
    spec.task_key = "demo/big";
    spec.strategy = "random";
    spec.device_kind = "sim";
    run = db.create_run(spec);
    std::vector<storage::trial_record> batch(count);
    for (int i = 0; i < count; ++i) {
      auto& t = batch[i];
      t.config_json = R"({"x":)" + std::to_string(i) + R"(,"tile":"t)" + std::to_string(i % 97) + R"("})";
      t.state = i % 7 == 0 ? status::runtime_error : status::ok;
      t.time_ms = t.state == status::ok ? 1.0 + ((i * 7919) % 100003) * 1e-4 : std::nan("");
      t.device = "sim0";
      if (t.ok()) {
        ++ok;
        best = std::min(best, t.time_ms);
      }
    }
    db.record_trials(run, batch);
    db.finish_run(run, end_reason::budget);
  }
  {
    sqlite3* raw = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &raw) == SQLITE_OK);
    REQUIRE(sqlite3_exec(raw, "UPDATE trials SET status = 'okay' WHERE status <> 'ok'", nullptr, nullptr, nullptr) ==
            SQLITE_OK);
    sqlite3_close(raw);
  }
  {
    storage::results_db db(path, storage::results_db::open_mode::read_only);
    CHECK_THROWS_WITH(db.trials(run), Catch::Contains("'okay' is not a known status"));
  }
  auto o = loopback_options();
  o.databases = {path};
  dashboard::server board(o);
  board.start();
  auto reply = http_request(board.port(), "/api/runs");
  REQUIRE(reply.status == 200);
  auto runs = nlohmann::json::parse(reply.body);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0]["trials"] == count);
  CHECK(runs[0]["ok_trials"] == ok);
  CHECK(runs[0]["best_time_ms"].get<double>() == best);
  // The run's own page reads its trials, and says it cannot.
  CHECK(http_request(board.port(), "/api/runs/0/" + std::to_string(run)).status != 200);
}

TEST_CASE("catch-up from the database and the live events give a scaled replay's trials the same wall clock") {
  scratch_dir dir("dashboard-clock");
  auto db_path = (dir / "runs.db").string();
  auto events = "ipc://" + (dir / "events.ipc").string();
  session_options o;
  o.dataset = std::string(TUNE_DATA_DIR) + "/replay/conv_a100_slice.json.gz";
  o.time_scale = 0.02;  // 50 simulated seconds per wall second
  o.budget.trials = 30;
  o.seed = 3;
  o.strategy = "random";
  o.db_path = db_path;
  o.publish_endpoint = events;
  o.publish_wait = 1;
  storage::event_subscriber subscriber(events);
  session s(o);
  std::thread run([&] { s.run(); });
  std::map<std::int64_t, nlohmann::json> live;
  nlohmann::json last_progress;
  for (;;) {
    auto e = subscriber.receive(60s);
    REQUIRE(e);
    if ((*e)["type"] == "trial_finished") live[(*e)["seq"].get<std::int64_t>()] = *e;
    if ((*e)["type"] == "progress") last_progress = *e;
    if ((*e)["type"] == "run_finished") break;
  }
  run.join();
  REQUIRE(live.size() == 30);

  dashboard::server_options bo = loopback_options();
  bo.databases = {db_path};
  dashboard::server board(bo);
  board.start();
  auto runs = nlohmann::json::parse(http_request(board.port(), "/api/runs").body);
  REQUIRE(runs.size() == 1);
  auto reply = http_request(board.port(), "/api/runs/0/" + runs[0]["id"].dump());
  REQUIRE(reply.status == 200);
  auto details = nlohmann::json::parse(reply.body);
  REQUIRE(details["trials"].size() == 30);
  for (const auto& t : details["trials"]) {
    const auto& e = live.at(t["seq"].get<std::int64_t>());
    INFO(t.dump() << " vs " << e.dump());
    // The page's clock for both: the same number, from the same stored time.
    CHECK(t["wall_elapsed_s"].get<double>() == e["wall_elapsed_s"].get<double>());
    CHECK(t["time_ms"] == e["time_ms"]);
  }
  // The backend's clock runs 50 times faster here: mixing the two would show.
  const auto& first = live.begin()->second;
  const auto& last = live.rbegin()->second;
  auto simulated = last["elapsed_s"].get<double>() - first["elapsed_s"].get<double>();
  auto wall = last["wall_elapsed_s"].get<double>() - first["wall_elapsed_s"].get<double>();
  CHECK(simulated > 10 * wall);
  if (!last_progress.is_null()) {  // a run shorter than a progress tick (250 ms) has none
    CHECK(last_progress["wall_elapsed_s"].is_number());
    CHECK(last_progress["in_flight"].is_number_unsigned());
  }
}

TEST_CASE("bad requests get HTTP errors") {
  auto o = loopback_options();
  o.max_header_bytes = 4096;
  dashboard::server board(o);
  board.start();
  auto port = board.port();
  SECTION("an oversized header: 431") {
    CHECK(raw_request_status(port, "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(8000, 'a') + "\r\n\r\n") ==
          431);
  }
  SECTION("a malformed request: 400") { CHECK(raw_request_status(port, "NOT HTTP AT ALL\r\n\r\n") == 400); }
  SECTION("/ws without an upgrade: 426") { CHECK(http_request(port, "/ws").status == 426); }
  SECTION("an upgrade without a WebSocket key: 400") {
    CHECK(raw_request_status(port,
                             "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                             "Sec-WebSocket-Version: 13\r\n\r\n") == 400);
  }
  SECTION("the server still serves afterwards") {
    raw_request_status(port, "NOT HTTP AT ALL\r\n\r\n");
    CHECK(http_request(port, "/").status == 200);
  }
}

TEST_CASE("a token is required on the page the api and the WebSocket but not on the assets") {
  auto o = loopback_options();
  o.token = "s3cret/+";
  dashboard::server board(o);
  board.start();
  auto port = board.port();
  CHECK(board.url() == "http://127.0.0.1:" + std::to_string(port) + "/?token=s3cret/+");
  CHECK(http_request(port, "/").status == 401);
  CHECK(http_request(port, "/?token=wrong").status == 401);
  CHECK(http_request(port, "/?token=s3cret%2F%2B").status == 200);
  CHECK(http_request(port, "/api/runs").status == 401);
  CHECK(http_request(port, "/api/status?token=s3cret").status == 401);
  CHECK(http_request(port, "/api/status", http::verb::get, {{"Authorization", "Bearer s3cret/+"}}).status == 200);
  CHECK(http_request(port, "/app.js").status == 200);
  auto upgrade = [&](const std::string& target) {
    return raw_request_status(port,
                              "GET " + target +
                                  " HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                                  "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n");
  };
  CHECK(upgrade("/ws") == 401);
  CHECK(upgrade("/ws?token=wrong") == 401);
  CHECK(upgrade("/ws?token=s3cret%2f%2b") == 101);
}

TEST_CASE("off loopback without a token the server warns that there is no authentication") {
  auto o = loopback_options();
  CHECK(dashboard::server(o).warnings().empty());
  o.listen = "0.0.0.0:0";
  {
    dashboard::server open(o);
    REQUIRE(open.warnings().size() == 1);
    CHECK_THAT(open.warnings()[0], Contains("no authentication") && Contains("--token"));
  }
  o.token = "t";
  CHECK(dashboard::server(o).warnings().empty());
}

TEST_CASE("bad options are refused naming the option") {
  auto refused = [](dashboard::server_options o) {
    try {
      dashboard::server board(o);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  auto o = loopback_options();
  o.listen = "8080";
  CHECK_THAT(refused(o), Contains("--listen 8080") && Contains("HOST:PORT"));
  o.listen = "127.0.0.1:99999";
  CHECK_THAT(refused(o), Contains("port"));
  o.listen = "example.org:80";
  CHECK_THAT(refused(o), Contains("not an IP address"));
  o = loopback_options();
  o.event_endpoints = {"http://x"};
  CHECK_THAT(refused(o), Contains("--events"));
  o = loopback_options();
  o.flush_interval = -1ms;
  CHECK_THAT(refused(o), Contains("flush_interval"));
  o = loopback_options();
  o.max_frame_bytes = 0;
  CHECK_THAT(refused(o), Contains("max_frame_bytes"));
  o = loopback_options();
  o.databases = {"/nonexistent/runs.db"};
  CHECK_THAT(refused(o), Contains("--db /nonexistent/runs.db"));
  dashboard::server first(loopback_options());
  o = loopback_options();
  o.listen = "127.0.0.1:" + std::to_string(first.port());
  CHECK_THAT(refused(o), Contains("cannot listen"));
}

TEST_CASE("WebSocket clients receive a run's events in order after a hello") {
  storage::event_publisher publisher("tcp://127.0.0.1:*");
  auto o = loopback_options();
  o.event_endpoints = {publisher.endpoint()};
  dashboard::server board(o);
  board.start();
  ws_client first(board.port());
  ws_client second(board.port());
  auto hello = first.receive();
  CHECK(hello["type"] == "hello");
  CHECK(hello["sources"][0]["endpoint"] == publisher.endpoint());
  CHECK(second.receive()["type"] == "hello");
  REQUIRE(publisher.wait_for_subscribers(1, 10s) == 1);

  storage::run_started_event started;
  started.run_id = 7;
  started.task = "demo/task";
  publisher.publish(storage::make_event(started));
  const int trials = 300;
  for (int i = 0; i < trials; ++i) publisher.publish(trial_event(i));
  storage::run_finished_event finished;
  finished.trials = trials;
  finished.reason = end_reason::budget;
  publisher.publish(storage::make_event(finished));

  for (auto* client : {&first, &second}) {
    auto e = client->receive();
    CHECK(e["type"] == "run_started");
    CHECK(e["source"] == 0);
    CHECK(e["db"].is_null());
    for (int i = 0; i < trials; ++i) {
      e = client->receive();
      REQUIRE(e["type"] == "trial_finished");
      REQUIRE(e["seq"] == i);
    }
    CHECK(client->receive()["type"] == "run_finished");
  }
  CHECK(board.statistics().dropped == 0);

  // A browser opened now learns about the run from its hello.
  ws_client late(board.port());
  auto late_hello = late.receive();
  CHECK(late_hello["sources"][0]["run_started"]["run_id"] == 7);
  CHECK(late_hello["sources"][0]["run_finished"]["reason"] == "budget");
}

TEST_CASE("the events of one flush interval reach a client in one frame one per line in order") {
  auto o = loopback_options();
  o.flush_interval = 2s;  // far longer than forwarding the events takes
  dashboard::server board(o);
  board.start();
  ws_client client(board.port());
  CHECK(client.receive()["type"] == "hello");
  CHECK(client.frames() == 1);
  const int events = 40;
  for (int i = 0; i < events; ++i) board.forward(trial_event(i));
  for (int i = 0; i < events; ++i) {
    auto e = client.receive();
    REQUIRE(e["type"] == "trial_finished");
    REQUIRE(e["seq"] == i);
  }
  // The hello went alone; the forty events started within one interval of
  // it, so they waited for its end and went together.
  CHECK(client.frames() == 2);
  // The server counts a frame once its write has completed, which may be
  // after the client has read it.
  REQUIRE(board.wait_until([&](const auto& st) { return st.sent == events + 1; }, 10s));
  CHECK(board.statistics().frames == 2);
}

TEST_CASE("with no flush interval events still go in order and the server counts the frames the client read") {
  auto o = loopback_options();
  o.flush_interval = 0ms;
  dashboard::server board(o);
  board.start();
  ws_client client(board.port());
  CHECK(client.receive()["type"] == "hello");
  const int events = 500;
  for (int i = 0; i < events; ++i) board.forward(trial_event(i, 100));
  for (int i = 0; i < events; ++i) {
    auto e = client.receive();
    REQUIRE(e["type"] == "trial_finished");
    REQUIRE(e["seq"] == i);
  }
  REQUIRE(board.wait_until([&](const auto& st) { return st.sent == events + 1; }, 10s));
  CHECK(board.statistics().frames == client.frames());
}

TEST_CASE("a frame holds at most max_frame_bytes of events") {
  auto o = loopback_options();
  o.flush_interval = 2s;
  o.max_frame_bytes = 4096;
  dashboard::server board(o);
  board.start();
  ws_client client(board.port());
  CHECK(client.receive()["type"] == "hello");
  const int events = 40;  // about 1.2 KB each: three to a frame
  for (int i = 0; i < events; ++i) board.forward(trial_event(i, 1000));
  for (int i = 0; i < events; ++i) REQUIRE(client.receive()["seq"] == i);
  CHECK(client.frames() >= 1 + events / 3);
}

TEST_CASE("a stalled client loses events and is told how many while a fast one gets them all") {
  auto o = loopback_options();
  o.client_queue = 64;
  o.flush_interval = 10ms;
  o.socket_send_buffer = 4096;
  dashboard::server board(o);
  board.start();
  ws_client stalled(board.port(), "/ws", 4096);
  ws_client fast(board.port());
  CHECK(stalled.receive()["type"] == "hello");
  CHECK(fast.receive()["type"] == "hello");

  const int total = 6000;
  std::atomic<int> fast_trials{0};
  std::atomic<bool> fast_in_order{true}, fast_saw_drop{false};
  std::thread reader([&] {
    for (;;) {
      auto e = fast.receive();
      if (e["type"] == "dropped") fast_saw_drop = true;
      if (e["type"] == "run_finished") return;
      if (e["type"] != "trial_finished") continue;
      if (e["seq"] != fast_trials.load()) fast_in_order = false;
      ++fast_trials;
    }
  });
  // Bursts smaller than half an outbox, each read by the fast client before
  // the next, while the stalled one reads nothing.
  const int burst = 25;
  for (int sent = 0; sent < total; sent += burst) {
    for (int i = sent; i < sent + burst; ++i) board.forward(trial_event(i, 400));
    auto deadline = std::chrono::steady_clock::now() + 20s;
    while (fast_trials < sent + burst && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    REQUIRE(fast_trials == sent + burst);
  }
  storage::run_finished_event finished;
  finished.trials = total;
  finished.reason = end_reason::budget;
  board.forward(storage::make_event(finished));
  reader.join();
  CHECK(fast_trials == total);
  CHECK(fast_in_order);
  CHECK_FALSE(fast_saw_drop);

  // The stalled client now reads what it still has: fewer trials, in order,
  // and a notice counting exactly the ones it lost.
  int received = 0;
  std::int64_t last_seq = -1;
  std::uint64_t dropped = 0;
  for (;;) {
    auto e = stalled.receive();
    if (e["type"] == "run_finished") break;
    if (e["type"] == "dropped") dropped = e["dropped"].get<std::uint64_t>();
    if (e["type"] != "trial_finished") continue;
    CHECK(e["seq"].get<std::int64_t>() > last_seq);
    last_seq = e["seq"];
    ++received;
  }
  CHECK(received < total / 2);
  CHECK(dropped > 0);
  CHECK(received + dropped == total);
  CHECK(board.statistics().dropped == dropped);
}

namespace {
nlohmann::json model_event(std::int64_t trials, std::optional<std::int64_t> task, std::optional<end_reason> reason) {
  storage::model_progress_event e;
  e.model = "m";
  e.trials = trials;
  e.budget_trials = 32;
  e.task = task;
  e.reason = reason;
  storage::model_task_state t;
  t.label = "only";
  t.target = "matmul:8x8x8";
  t.trials = trials;
  if (trials > 0) t.best_ms = 10.0 / static_cast<double>(trials);
  e.tasks = {t};
  if (trials > 0) e.latency_ms = t.best_ms;
  return storage::make_event(e);
}
}  // namespace

TEST_CASE("a page opened late gets the model run's progress events in its hello, a new model starting afresh") {
  storage::event_publisher publisher("tcp://127.0.0.1:*");
  auto o = loopback_options();
  o.event_endpoints = {publisher.endpoint()};
  dashboard::server board(o);
  board.start();
  REQUIRE(publisher.wait_for_subscribers(1, 10s) == 1);
  publisher.publish(model_event(0, std::nullopt, std::nullopt));
  publisher.publish(model_event(16, 0, std::nullopt));
  publisher.publish(model_event(32, 0, std::nullopt));
  publisher.publish(model_event(32, std::nullopt, end_reason::budget));
  REQUIRE(board.wait_until([](const dashboard::server_statistics& st) { return st.models_finished == 1; }, 10s));
  auto live = nlohmann::json::parse(http_request(board.port(), "/api/live").body);
  auto model = live["sources"][0]["model"];
  REQUIRE(model.size() == 4);
  CHECK(model[0]["task"].is_null());
  CHECK(model[2]["latency_ms"] == 10.0 / 32);
  CHECK(model[3]["reason"] == "budget");
  ws_client late(board.port());
  CHECK(late.receive()["sources"][0]["model"] == model);

  // The next model on the stream replaces the finished one's events.
  publisher.publish(model_event(0, std::nullopt, std::nullopt));
  REQUIRE(board.wait_until([](const dashboard::server_statistics& st) { return st.events == 5; }, 10s));
  nlohmann::json again;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  do {  // forwarded, then kept on the server's thread
    again = nlohmann::json::parse(http_request(board.port(), "/api/live").body)["sources"][0]["model"];
  } while (again.size() != 1 && std::chrono::steady_clock::now() < deadline);
  REQUIRE(again.size() == 1);
  CHECK(again[0]["trials"] == 0);
}

TEST_CASE("a model run's own dashboard serves the model's progress while it runs") {
  scratch_dir dir("dashboard-model");
  std::ofstream(dir / "m.yaml") << "name: two\ntasks:\n"
                                << "  - name: conv\n    dataset: " << TUNE_DATA_DIR
                                << "/datasets/convolution/A100.json.gz\n    count: 4\n"
                                << "  - name: gemm\n    dataset: " << TUNE_DATA_DIR
                                << "/datasets/gemm_clblast/RTX_3090.json.gz\n";
  auto m = read_model((dir / "m.yaml").string());
  model_options o;
  o.session.db_path = (dir / "r.db").string();
  o.session.seed = 3;
  o.session.strategy = "random";
  o.session.time_scale = 0.001;
  o.session.dashboard_listen = "127.0.0.1:0";
  o.budget_trials = 40;
  o.round_trials = 8;
  std::uint16_t port = 0;
  o.session.on_dashboard = [&](const std::string& url) {
    port = static_cast<std::uint16_t>(std::stoi(url.substr(url.rfind(':') + 1)));
  };
  std::vector<std::size_t> seen;  // the model events the page had after each round
  std::vector<double> latencies;
  o.on_round = [&](const model_progress& p) {
    REQUIRE(port != 0);
    nlohmann::json model;
    auto deadline = std::chrono::steady_clock::now() + 10s;
    do {  // the round's event is on its way to the dashboard
      model = nlohmann::json::parse(http_request(port, "/api/live").body)["sources"][0]["model"];
    } while (model.size() < seen.size() + 2 && std::chrono::steady_clock::now() < deadline);
    seen.push_back(model.size());
    if (!model.empty() && model.back()["latency_ms"].is_number())
      latencies.push_back(model.back()["latency_ms"].get<double>());
    else
      latencies.push_back(std::nan(""));
    CHECK((std::isfinite(p.latency_ms) ? latencies.back() == p.latency_ms : std::isnan(latencies.back())));
    // The round's run, which the event names, is in the page's run list (the model's database).
    REQUIRE(!model.empty());
    auto run_id = model.back()["tasks"][p.task]["run_id"];
    auto runs = nlohmann::json::parse(http_request(port, "/api/runs").body);
    CHECK(std::any_of(runs.begin(), runs.end(), [&](const nlohmann::json& run) { return run["id"] == run_id; }));
  };
  auto r = tune_model(m, o);
  REQUIRE(!seen.empty());
  CHECK(seen.size() == r.trace.size());
  for (std::size_t i = 0; i < seen.size(); ++i) CHECK(seen[i] == i + 2);  // the start and each round so far
}
