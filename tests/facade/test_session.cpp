// tune::session end to end: objectives, datasets, callbacks, stop, the
// database and resume, and every kind of bad option.
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>

#include "actors/scratch_dir.hpp"
#include "facade/input_error_of.hpp"
#include "facade/small_task.hpp"
#include "objective_backend.hpp"
#include "tune/kernels/device_lease.hpp"
#include "tune/storage/results_db.hpp"
#include "tune/storage/topology.hpp"
#include "tune/tune.hpp"

using namespace tune;
using tune::test::scratch_dir;

namespace {

/// 8 x 8 = 64 configurations; the objective has its unique minimum at x = 5, y = 2.
search_space_ptr grid_space() {
  std::vector<parameter_ptr> p;
  p.push_back(make_discrete_parameter("x", {0, 1, 2, 3, 4, 5, 6, 7}));
  p.push_back(make_discrete_parameter("y", {0, 1, 2, 3, 4, 5, 6, 7}));
  return std::make_shared<const search_space>(std::move(p), "grid");
}

double bowl(const configuration& c) {
  double x = static_cast<double>(c[0]), y = static_cast<double>(c[1]);
  return 1.0 + (x - 5) * (x - 5) + 2 * (y - 2) * (y - 2);
}

session_options objective_options(std::uint64_t budget, const std::string& strategy = "random") {
  session_options o;
  o.objective = bowl;
  o.space = grid_space();
  o.strategy = strategy;
  o.budget.trials = budget;
  o.seed = 7;
  return o;
}

std::string message_of(session_options o) {
  return test::input_error_of([&] { session s(std::move(o)); }, "(no error)");
}

}  // namespace

TEST_CASE("session: an objective over the whole space finds its minimum", "[facade]") {
  auto o = objective_options(64);
  std::vector<trial_info> seen, bests;
  o.on_trial = [&](const trial_info& t) { seen.push_back(t); };
  o.on_new_best = [&](const trial_info& t) { bests.push_back(t); };
  auto report = tune_once(o);
  CHECK(report.trials == 64);
  CHECK(report.new_trials == 64);
  REQUIRE(report.best);
  CHECK(report.best->config == configuration{5, 2});
  CHECK(report.best->time_ms == 1.0);
  CHECK(report.best->config_json == R"({"x": 5, "y": 2})");
  CHECK(seen.size() == 64);
  std::set<configuration> distinct;
  for (const auto& t : seen) distinct.insert(t.config);
  CHECK(distinct.size() == 64);
  REQUIRE(!bests.empty());
  for (std::size_t i = 1; i < bests.size(); ++i) CHECK(bests[i].time_ms < bests[i - 1].time_ms);
  CHECK(bests.back().time_ms == 1.0);
  CHECK(report.trace.size() == bests.size());
}

TEST_CASE("session: start configurations are measured, once, and the run goes on knowing them", "[facade]") {
  auto o = objective_options(6, "opevo+knn");
  o.start = {R"({"x": 5, "y": 2})", R"({"y": 7, "x": 0})"};
  std::vector<trial_info> seen;
  o.on_trial = [&](const trial_info& t) { seen.push_back(t); };
  auto report = tune_once(o);
  REQUIRE(seen.size() == 6);
  // Handed out first (the order they finish in depends on the compile workers).
  std::set<configuration> distinct;
  for (const auto& t : seen) distinct.insert(t.config);
  CHECK(distinct.size() == 6);
  CHECK(distinct.count(configuration{5, 2}) == 1);
  CHECK(distinct.count(configuration{0, 7}) == 1);
  REQUIRE(report.best);
  CHECK(report.best->config == configuration{5, 2});

  auto bad = objective_options(6);
  bad.start = {R"({"x": 9, "y": 2})"};
  CHECK_THAT(message_of(bad), Catch::StartsWith("start: ") && Catch::Contains("x"));
  bad.start = {"x = 1"};
  CHECK_THAT(message_of(bad), Catch::StartsWith("start: "));
  auto constrained = std::make_shared<search_space>(grid_space()->parameters(), "grid");
  constrained->add_constraints({"x + y <= 6"});
  bad.space = constrained;
  bad.start = {R"({"x": 5, "y": 2})"};
  CHECK_THAT(message_of(bad), Catch::Contains("the search space's constraints exclude it"));
}

TEST_CASE("session: the default strategy gets near the minimum of a small bowl", "[facade]") {
  auto o = objective_options(40, "");
  auto report = tune_once(o);
  CHECK(report.strategy == "bo");
  REQUIRE(report.best);
  CHECK(report.trials == 40);
  CHECK(report.best->time_ms <= 3.0);  // within the two best rings of 64 after 40 trials
}

TEST_CASE("session: a throwing or non-finite objective makes failed trials and the run goes on", "[facade]") {
  auto o = objective_options(64);
  o.objective = [](const configuration& c) -> double {
    if (c[0] == 0) throw std::runtime_error("x = 0 is not supported");
    if (c[0] == 1) return std::nan("");
    return bowl(c);
  };
  std::size_t thrown = 0, nans = 0;
  o.on_trial = [&](const trial_info& t) {
    if (t.config[0] == 0) {
      CHECK(t.state == status::runtime_error);
      CHECK(t.message == "x = 0 is not supported");
      ++thrown;
    } else if (t.config[0] == 1) {
      CHECK(t.state == status::runtime_error);
      CHECK(t.message.find("NaN") != std::string::npos);
      ++nans;
    } else {
      CHECK(t.ok());
    }
  };
  auto report = tune_once(o);
  CHECK(report.trials == 64);
  CHECK(thrown == 8);
  CHECK(nans == 8);
  REQUIRE(report.best);
  CHECK(report.best->config == configuration{5, 2});
}

TEST_CASE("session: request_stop from a callback drains and ends the run as stopped", "[facade]") {
  auto o = objective_options(64);
  std::atomic<int> calls{0};
  stop_source stop = o.stop;
  o.on_trial = [&](const trial_info&) {
    if (++calls == 5) stop.request_stop();
  };
  session s(o);
  auto report = s.run();
  CHECK(report.reason == end_reason::stopped);
  CHECK(report.trials >= 5);
  CHECK(report.trials < 64);
  CHECK(static_cast<std::uint64_t>(calls.load()) == report.trials);
}

TEST_CASE("session: request_stop from another thread ends a run", "[facade]") {
  auto o = objective_options(1000000);
  std::vector<double> values(1000);
  for (int i = 0; i < 1000; ++i) values[i] = i;
  std::vector<parameter_ptr> p;
  p.push_back(make_discrete_parameter("x", values));
  p.push_back(make_discrete_parameter("y", values));
  o.space = std::make_shared<const search_space>(std::move(p), "big");
  // Each call stands for a millisecond of work; the stop is requested once
  // the run has measured 10 configurations, however fast the machine.
  std::atomic<int> calls{0};
  o.objective = [&](const configuration&) {
    ++calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return 1.0;
  };
  session s(o);
  std::thread stopper([&] {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (calls < 10 && std::chrono::steady_clock::now() < give_up)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    s.request_stop();
  });
  auto report = s.run();
  stopper.join();
  CHECK(report.reason == end_reason::stopped);
  CHECK(calls >= 10);
  CHECK(report.trials < 1000000);
}

TEST_CASE("session: an exception thrown by a callback stops the run and comes out of run()", "[facade]") {
  auto o = objective_options(64);
  int calls = 0;
  o.on_trial = [&](const trial_info&) {
    if (++calls == 3) throw std::domain_error("embedder gave up");
  };
  session s(o);
  CHECK_THROWS_MATCHES(s.run(), std::domain_error, Catch::Matchers::Message("embedder gave up"));
  CHECK(calls >= 3);
  CHECK(calls < 64);
}

TEST_CASE("session: trials go to the database and a stopped run resumes to its budget", "[facade]") {
  scratch_dir dir("facade-resume");
  auto db = (dir / "runs.db").string();
  auto o = objective_options(30);
  o.db_path = db;
  o.task_name = "bowl";
  int calls = 0;
  stop_source stop = o.stop;
  o.on_trial = [&](const trial_info&) {
    if (++calls == 10) stop.request_stop();
  };
  auto first = tune_once(o);
  REQUIRE(first.reason == end_reason::stopped);
  CHECK(first.task_key == "bowl");

  auto again = objective_options(30);
  again.db_path = db;
  again.task_name = "bowl";
  again.resume = true;
  auto second = tune_once(again);
  CHECK(second.resumed);
  CHECK(second.run_id == first.run_id);
  CHECK(second.reason == end_reason::budget);
  CHECK(second.trials == 30);
  CHECK(second.new_trials == 30 - first.trials);

  storage::results_db read(db, storage::results_db::open_mode::read_only);
  auto rows = read.trials(first.run_id);
  CHECK(rows.size() == 30);
  std::set<std::string> configs;
  for (const auto& r : rows) configs.insert(r.config_json);
  CHECK(configs.size() == 30);
}

TEST_CASE("session: without a database the run is kept in memory", "[facade]") {
  auto o = objective_options(10);
  auto report = tune_once(o);
  CHECK(report.run_id >= 1);
  CHECK(report.trials == 10);
  CHECK_FALSE(std::filesystem::exists(":memory:"));
}

TEST_CASE("session: generational batches of one give the same trials for the same seed", "[facade]") {
  auto run = [](std::uint64_t seed) {
    auto o = objective_options(20, "opevo");
    o.seed = seed;
    o.mode = run_mode::generational;
    o.batch = 1;
    std::vector<configuration> order;
    o.on_trial = [&](const trial_info& t) { order.push_back(t.config); };
    tune_once(o);
    return order;
  };
  auto a = run(3), b = run(3), c = run(4);
  CHECK(a.size() == 20);
  CHECK(a == b);
  CHECK(a != c);
}

TEST_CASE("session: a replayed dataset through the pipeline", "[facade]") {
  session_options o;
  o.dataset = std::string(TUNE_DATA_DIR) + "/datasets/ktt/coulomb3d_RTX_2080_Ti_KTT_profiling.json.gz";
  o.time_scale = 0.0001;
  o.budget.trials = 25;
  o.seed = 2;
  o.strategy = "random";
  std::vector<double> times;
  o.on_trial = [&](const trial_info& t) {
    CHECK(t.device == "replay0");
    if (t.ok()) times.push_back(t.time_ms);
  };
  session s(o);
  CHECK(s.space()->dimension() > 0);
  auto report = s.run();
  CHECK(report.trials == 25);
  REQUIRE(report.best);
  REQUIRE(!times.empty());
  CHECK(report.best->time_ms == *std::min_element(times.begin(), times.end()));
  auto json = report.to_json();
  CHECK(json["trials"] == 25);
  CHECK(json["reason"] == "budget");
  CHECK(json["busy"]["devices"].contains("replay0"));
}

TEST_CASE("session: progress callbacks carry the budget and the trial count", "[facade]") {
  auto o = objective_options(60);
  o.objective = [](const configuration& c) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return bowl(c);
  };
  std::vector<progress_info> reports;
  o.on_progress = [&](const progress_info& p) { reports.push_back(p); };
  tune_once(o);
  REQUIRE(!reports.empty());
  for (const auto& p : reports) {
    CHECK(p.budget == 60);
    CHECK(p.trials <= 60);
  }
}

TEST_CASE("session: bad options are refused before anything runs and name the option", "[facade]") {
  session_options none;
  CHECK_THAT(message_of(none), Catch::Matchers::Contains("nothing to tune"));

  auto two = objective_options(10);
  two.task = "matmul:64x64x64";
  CHECK_THAT(message_of(two), Catch::Matchers::Contains("exactly one"));

  auto negative = objective_options(10);
  negative.budget.seconds = -1;
  CHECK_THAT(message_of(negative), Catch::Matchers::Contains("time_budget"));

  auto unknown = objective_options(10, "no-such-strategy");
  CHECK_THAT(message_of(unknown), Catch::Matchers::Contains("no-such-strategy"));

  auto hyper = objective_options(10, "opevo");
  hyper.hyper["no_such_knob"] = 1;
  CHECK_THAT(message_of(hyper), Catch::Matchers::Contains("no_such_knob"));

  auto resume = objective_options(10);
  resume.resume = true;
  CHECK_THAT(message_of(resume), Catch::Matchers::Contains("db_path"));

  auto nospace = objective_options(10);
  nospace.space = nullptr;
  CHECK_THAT(message_of(nospace), Catch::Matchers::Contains("space"));

  session_options space_alone;
  space_alone.task = "matmul:64x64x64";
  space_alone.space = grid_space();
  CHECK_THAT(message_of(space_alone), Catch::Matchers::Contains("brings its own space"));

  auto vendor = objective_options(10);
  vendor.compare_vendor = true;
  CHECK_THAT(message_of(vendor), Catch::Matchers::Contains("compare_vendor"));

  auto scale = objective_options(10);
  scale.time_scale = 0.5;
  CHECK_THAT(message_of(scale), Catch::Matchers::Contains("time_scale"));

  auto kinds = objective_options(10);
  kinds.kinds_file = "kinds.json";
  CHECK_THAT(message_of(kinds), Catch::Matchers::Contains("kinds_file"));

  auto batch = objective_options(10);
  batch.mode = run_mode::generational;
  batch.batch = 0;
  CHECK_THAT(message_of(batch), Catch::Matchers::Contains("batch"));

  session_options bad_task;
  bad_task.task = "matmul:64x64";
  CHECK_THROWS_AS(session(bad_task), std::invalid_argument);

  auto topology = objective_options(10);
  topology.topology_file = "/nonexistent/topology.yaml";
  CHECK_THROWS_WITH(session(topology), Catch::Matchers::Contains("/nonexistent/topology.yaml"));

  session_options replay_on_cpu;
  replay_on_cpu.dataset = std::string(TUNE_DATA_DIR) + "/datasets/ktt/coulomb3d_RTX_2080_Ti_KTT_profiling.json.gz";
  replay_on_cpu.topology = storage::default_topology("cpu");
  CHECK_THAT(message_of(replay_on_cpu), Catch::Matchers::Contains("backend: replay"));
}

TEST_CASE("session: option_names name the fields as the caller's users know them", "[facade]") {
  auto negative = objective_options(10);
  negative.budget.seconds = -2;
  CHECK(message_of(negative) == "time_budget: must be >= 0 seconds (0: no time budget)");
  negative.option_names = {{"time_budget", "--time-budget"}};
  CHECK(message_of(negative) == "--time-budget: must be >= 0 seconds (0: no time budget)");

  auto resume = objective_options(10);
  resume.resume = true;
  resume.option_names = {{"resume", "--resume"}, {"db_path", "--db"}};
  CHECK_THAT(message_of(resume), Catch::Matchers::StartsWith("--resume needs --db,"));

  auto token = objective_options(10);
  token.dashboard_token = "secret";
  token.option_names = {{"dashboard_token", "token="}};
  CHECK_THAT(message_of(token), Catch::Matchers::StartsWith("token=: applies with dashboard_listen only"));
}

TEST_CASE("session: a session runs once", "[facade]") {
  session s(objective_options(3));
  s.run();
  CHECK_THROWS_AS(s.run(), std::logic_error);
}

namespace {
const std::string dedisp = std::string(TUNE_DATA_DIR) + "/datasets/dedispersion/";

session_options dedispersion_run(const std::string& device, std::uint64_t budget) {
  session_options o;
  o.dataset = dedisp + device + ".json.gz";
  o.time_scale = 0.00001;
  o.budget.trials = budget;
  o.seed = 4;
  o.strategy = "random";
  return o;
}
}  // namespace

TEST_CASE("session: a dataset of another device is a prior", "[facade]") {
  auto o = dedispersion_run("A4000", 5);
  o.strategy = "bo";
  o.priors = {dedisp + "A6000.json.gz"};
  auto report = tune_once(o);
  CHECK(report.prior_configurations == 11130);
  REQUIRE(report.prior_sources.size() == 1);
  CHECK(report.prior_sources[0] == dedisp + "A6000.json.gz");
  CHECK(report.to_json()["prior"]["configurations"] == 11130);
  CHECK_THAT(report.to_text(), Catch::Matchers::Contains("prior " + dedisp + "A6000.json.gz"));
}

TEST_CASE("session: runs of the same task on another device in the database are a prior unless switched off",
          "[facade]") {
  tune::test::scratch_dir dir("facade-auto-prior");
  auto db = (dir / "runs.db").string();
  auto first = dedispersion_run("A6000", 15);
  first.db_path = db;
  auto a6000 = tune_once(first);
  CHECK(a6000.prior_sources.empty());

  auto second = dedispersion_run("A4000", 5);
  second.db_path = db;
  auto a4000 = tune_once(second);
  REQUIRE(a4000.prior_sources.size() == 1);
  CHECK_THAT(a4000.prior_sources[0], Catch::Matchers::Contains("NVIDIA RTX A6000"));
  CHECK(a4000.prior_configurations == 15);
  CHECK(a4000.task_key == a6000.task_key);

  auto off = dedispersion_run("A4000", 5);
  off.db_path = db;
  off.auto_prior = false;
  CHECK(tune_once(off).prior_sources.empty());

  // The same database named as a prior takes every run of the task.
  auto named = dedispersion_run("W6600", 3);
  named.priors = {db};
  auto w6600 = tune_once(named);
  REQUIRE(w6600.prior_sources.size() == 1);
  CHECK_THAT(w6600.prior_sources[0], Catch::Matchers::Contains("run 1") && Catch::Matchers::Contains("run 2"));
}

TEST_CASE("session: a database file another process has made but not yet filled is no prior and takes the run",
          "[facade]") {
  // What a second tune finds when it starts while the first is creating the
  // same new file: an SQLite file in the WAL journal, without tables yet.
  tune::test::scratch_dir dir("facade-auto-prior-new-file");
  auto db = (dir / "runs.db").string();
  {
    sqlite3* raw = nullptr;
    REQUIRE(sqlite3_open(db.c_str(), &raw) == SQLITE_OK);
    CHECK(sqlite3_exec(raw, "PRAGMA journal_mode = WAL", nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(raw);
  }
  REQUIRE(std::filesystem::file_size(db) > 0);
  auto o = dedispersion_run("A4000", 5);
  o.db_path = db;
  auto report = tune_once(o);
  CHECK(report.prior_sources.empty());
  CHECK(report.trials == 5);
  storage::results_db read(db, storage::results_db::open_mode::read_only);
  CHECK(read.trials(report.run_id).size() == 5);
}

TEST_CASE("session: a database of the former schema is migrated by the next run, which says so", "[facade]") {
  tune::test::scratch_dir dir("facade-migrate");
  auto db = (dir / "runs.db").string();
  auto run = [&](bool auto_prior) {
    auto o = objective_options(6);
    o.db_path = db;
    o.task_name = "bowl";
    o.auto_prior = auto_prior;
    return tune_once(o);
  };
  auto first = run(true);
  CHECK_FALSE(first.db_migrated_from.has_value());
  auto downgrade = [&](const char* sql) {
    sqlite3* raw = nullptr;
    REQUIRE(sqlite3_open(db.c_str(), &raw) == SQLITE_OK);
    CHECK(sqlite3_exec(raw, sql, nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(raw);
  };
  // Back to version 1's table, without the configuration hash; migrated by a
  // run with the automatic prior (which opens the file first) and without.
  downgrade(
      "CREATE TABLE old AS SELECT id, run_id, seq, config, status, time_ms, compile_s, run_s, device, finished_at, "
      "objectives, reused_from_run FROM trials; DROP TABLE trials; ALTER TABLE old RENAME TO trials; "
      "UPDATE schema_version SET version = 1;");
  auto second = run(true);
  CHECK(second.db_migrated_from == 1);
  CHECK_THAT(second.to_text(), Catch::Matchers::Contains("migrated from schema version 1 to " +
                                                         std::to_string(storage::results_db::schema_version)));
  downgrade("UPDATE schema_version SET version = 1");
  CHECK(run(false).db_migrated_from == 1);
  // Told once: the next run finds it current.
  auto last = run(true);
  CHECK_FALSE(last.db_migrated_from.has_value());
  storage::results_db read(db, storage::results_db::open_mode::read_only);
  for (auto id : {first.run_id, second.run_id, last.run_id}) CHECK(read.trials(id).size() == 6);
}

TEST_CASE("session: the runs of other tasks named in prior_tasks are a prior", "[facade]") {
  tune::test::scratch_dir dir("facade-prior-tasks");
  auto db = (dir / "runs.db").string();
  auto first = objective_options(8);
  first.db_path = db;
  first.task_name = "bowl-a";
  auto a = tune_once(first);

  auto second = objective_options(3, "bo");
  second.db_path = db;
  second.task_name = "bowl-b";
  second.prior_tasks = {a.task_key, "no-such-task"};  // a task without runs gives nothing
  auto b = tune_once(second);
  REQUIRE(b.prior_sources.size() == 1);
  CHECK_THAT(b.prior_sources[0], Catch::Matchers::Contains("run 1") && Catch::Matchers::Contains("of task bowl-a"));
  CHECK(b.prior_configurations == 8);

  second.prior_tasks = {"no-such-task"};
  CHECK(tune_once(second).prior_sources.empty());
  second.db_path.clear();
  CHECK_THAT(message_of(second), Catch::Matchers::Contains("prior_tasks reads the runs of other tasks in db_path"));
}

TEST_CASE("session: a prior that is not of this task is refused", "[facade]") {
  tune::test::scratch_dir dir("facade-bad-prior");
  auto db = (dir / "other.db").string();
  auto bowl_run = objective_options(3);
  bowl_run.db_path = db;
  bowl_run.task_name = "bowl";
  tune_once(bowl_run);

  auto o = dedispersion_run("A4000", 3);
  o.priors = {db};
  CHECK_THAT(message_of(o), Catch::Matchers::Contains("holds no run of task"));
  o.priors = {std::string(TUNE_DATA_DIR) + "/datasets/ktt/coulomb3d_RTX_2080_Ti_KTT_profiling.json.gz"};
  CHECK_THAT(message_of(o), Catch::Matchers::Contains("no configuration of the prior"));
  o.priors = {(dir / "absent.json").string()};
  CHECK_THAT(message_of(o), Catch::Matchers::Contains("no such file"));
}

TEST_CASE("session: trials measured while the device slowed down are flagged, in the report and the database",
          "[facade]") {
  tune::test::scratch_dir dir("facade-drift");
  std::atomic<int> calls{0};
  session_options o;
  // A backend of the user's whose every configuration takes its bowl time;
  // the 31st to the 60th run (trials and probes alike) take half as long
  // again.
  o.custom_backend = detail::make_objective_backend(
      [&](const configuration& c) {
        int n = ++calls;
        return bowl(c) * (n > 30 && n <= 60 ? 1.5 : 1.0);
      },
      grid_space(), "drift");
  o.strategy = "random";
  o.budget.trials = 80;
  o.seed = 4;
  o.db_path = (dir / "drift.db").string();
  o.drift.every_trials = 5;
  o.drift.every_s = 0;
  o.confirm.top = 0;
  auto report = session(o).run();
  REQUIRE(report.device_drifts.size() == 1);
  const auto& [device, drift] = report.device_drifts.front();
  CHECK(device == "objective0");
  CHECK(drift.max_ratio == Approx(1.5));
  CHECK(drift.flagged > 0);
  CHECK(report.drift_flagged.size() == drift.flagged);
  CHECK_THAT(report.to_text(), Catch::Matchers::Contains("objective0 drift probe:") &&
                                   Catch::Matchers::Contains("trials flagged") &&
                                   Catch::Matchers::Contains(", drift probes "));
  // What probing cost is its own part of the device's time.
  CHECK(report.to_json()["time"]["devices"]["objective0"]["probe_s"].get<double>() > 0);
  storage::results_db read(o.db_path, storage::results_db::open_mode::read_only);
  std::vector<std::uint64_t> flagged_in_db;
  for (const auto& t : read.trials(report.run_id))
    if (t.drift_flagged) flagged_in_db.push_back(static_cast<std::uint64_t>(t.seq));
  CHECK(flagged_in_db == report.drift_flagged);
  // The first and the last trials were measured at the device's normal pace.
  CHECK(std::find(flagged_in_db.begin(), flagged_in_db.end(), 0) == flagged_in_db.end());
  CHECK(std::find(flagged_in_db.begin(), flagged_in_db.end(), 79) == flagged_in_db.end());

  // A user's function is called once per trial, never to probe or confirm:
  // its calls are the budget.
  std::atomic<int> function_calls{0};
  session_options f;
  f.space = grid_space();
  f.objective = [&](const configuration& c) {
    ++function_calls;
    return bowl(c);
  };
  f.budget.trials = 40;
  f.seed = 4;
  f.drift.every_trials = 5;
  auto plain = session(f).run();
  CHECK(function_calls == 40);
  CHECK(plain.device_drifts.empty());
  CHECK(plain.confirmation.empty());
}

TEST_CASE("session: a trial measured while its device had slowed down is measured again at the end, and can win",
          "[facade]") {
  std::atomic<int> calls{0}, slow_from{0};
  const configuration optimum = {5, 2};
  session_options o;
  // Every run takes its bowl time, except the fifteen from the optimum's
  // first run on (trials and probes alike): ten times as long. Measured then,
  // the optimum looks slower than the run's five fastest.
  o.custom_backend = detail::make_objective_backend(
      [&](const configuration& c) {
        int n = ++calls;
        if (c == optimum && slow_from == 0) slow_from = n;
        return bowl(c) * (slow_from > 0 && n < slow_from + 15 ? 10.0 : 1.0);
      },
      grid_space(), "slowed");
  o.strategy = "random";
  o.budget.trials = 64;
  o.seed = 4;
  o.drift.every_trials = 5;
  o.drift.every_s = 0;
  o.confirm.top = 5;
  o.confirm.rounds = 3;
  o.confirm.duel_rounds = 0;
  std::optional<std::uint64_t> optimum_seq;
  o.on_trial = [&](const trial_info& t) {
    if (t.config == optimum) optimum_seq = t.seq;
  };
  auto report = session(o).run();
  REQUIRE(optimum_seq);
  INFO("the optimum was trial " << *optimum_seq << ", first run " << slow_from << " of " << calls);
  REQUIRE(std::find(report.drift_flagged.begin(), report.drift_flagged.end(), *optimum_seq) !=
          report.drift_flagged.end());
  // Measured again with the five fastest (and at most five flagged ones), at
  // the device's own pace: it wins.
  CHECK(report.confirmation.size() > 5);
  CHECK(report.confirmation.size() <= 10);
  REQUIRE_FALSE(report.confirmation.empty());
  CHECK(report.confirmation.front().seq == *optimum_seq);
  CHECK(report.confirmation.front().time_ms == 1.0);
  REQUIRE(report.best);
  CHECK(report.best->config == optimum);
}

TEST_CASE(
    "session: a device another process has leased: fail names the holder, free measures on the others, "
    "lease_devices false measures anyway",
    "[facade]") {
  scratch_dir dir("facade-lease");
  auto o = tune::test::small_task_options(dir.path(), 4, 3);
  o.topology = storage::parse_topology(
      "compile_workers: 1\ndevices:\n  - {backend: cpu, id: 0, name: a}\n  - {backend: cpu, id: 1, name: b}\n");
  // This process holds device a's core, as another run would.
  auto held = try_lease({"cpu-core-0"});
  REQUIRE(held);
  o.device_wait = device_wait_policy::fail;
  try {
    session(o).run();
    FAIL("a leased device was measured on");
  } catch (const std::runtime_error& e) {
    CHECK_THAT(e.what(), Catch::Matchers::Contains("a (cpu-core-0) is leased by pid " + std::to_string(::getpid())));
    CHECK_THAT(e.what(), Catch::Matchers::Contains("device_wait wait waits for it"));
  }
  o.device_wait = device_wait_policy::free;
  std::set<std::string> devices;
  o.on_trial = [&](const trial_info& t) { devices.insert(t.device); };
  auto report = session(o).run();
  CHECK(report.trials == 4);
  CHECK(devices == std::set<std::string>{"b"});
  // The run gave back what it leased: core 1 is free again, core 0 still ours.
  CHECK(try_lease({"cpu-core-1"}));
  CHECK_FALSE(try_lease({"cpu-core-0"}));
  o.lease_devices = false;
  o.device_wait = device_wait_policy::fail;
  devices.clear();
  CHECK(session(o).run().trials == 4);
  CHECK(devices.count("a") + devices.count("b") == devices.size());
}
