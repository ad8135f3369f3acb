#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "actors/scratch_dir.hpp"
#include "skip.hpp"
#include "store_kinds.hpp"
#include "tune/storage/results_db.hpp"

using namespace tune::storage;
using Catch::Matchers::Contains;
using tune::end_reason;
using tune::status;

namespace {

run_spec spec(const std::string& task = "gemm/1024", const std::string& strategy = "random", std::uint64_t seed = 7,
              const std::string& kind = "replay:test") {
  run_spec s;
  s.task_key = task;
  s.strategy = strategy;
  s.seed = seed;
  s.options_json = R"({"budget": 100})";
  s.device_kind = kind;
  return s;
}

std::string config(int x, int y = 1) {
  return "{\"tile_x\":" + std::to_string(x) + ",\"tile_y\":" + std::to_string(y) + "}";
}

trial_record ok_trial(const std::string& config_json, double time_ms, const std::string& device = "sim0") {
  trial_record t;
  t.config_json = config_json;
  t.state = status::ok;
  t.time_ms = time_ms;
  t.compile_s = 0.5;
  t.run_s = 0.25;
  t.device = device;
  return t;
}

trial_record failed_trial(const std::string& config_json, status state) {
  trial_record t;
  t.config_json = config_json;
  t.state = state;
  t.compile_s = 0.1;
  t.device = "sim1";
  return t;
}

using tune::test::open_error;

void raw_sql(const std::filesystem::path& file, const std::string& sql) { tune::test::sqlite_exec(file, sql); }
std::int64_t raw_count(const std::filesystem::path& file, const std::string& sql) {
  return tune::test::sqlite_count(file, sql);
}

}  // namespace

TEMPLATE_TEST_CASE("results db writes each trial of a run exactly once", "[storage]", tune::test::sqlite_file,
                   tune::test::postgres_database) {
  TestType store("tune-test-db-once");
  if (!store.why_not().empty()) SKIP_TEST(store.why_not());
  results_db db(store.target());
  auto run = db.create_run(spec());
  REQUIRE(run >= 1);

  auto first = db.record_trial(run, ok_trial(config(4), 2.5));
  CHECK(first.inserted);
  CHECK(first.seq == 0);
  auto second = db.record_trial(run, failed_trial(config(8), status::compile_error));
  CHECK(second.inserted);
  CHECK(second.seq == 1);

  // The same configuration again, even with another result: reported, not written.
  auto again = db.record_trial(run, ok_trial(config(4), 1.0));
  CHECK_FALSE(again.inserted);
  CHECK(again.seq == 0);
  CHECK(db.trial_count(run) == 2);
  auto trials = db.trials(run);
  REQUIRE(trials.size() == 2);
  CHECK(trials[0].time_ms == Approx(2.5));

  // Another run may measure the same configuration.
  auto other = db.create_run(spec());
  CHECK(db.record_trial(other, ok_trial(config(4), 2.4)).inserted);

  // Fields round-trip; time_ms is stored only for ok.
  CHECK(trials[0].state == status::ok);
  CHECK(trials[0].config_json == config(4));
  CHECK(trials[0].compile_s == Approx(0.5));
  CHECK(trials[0].run_s == Approx(0.25));
  CHECK(trials[0].device == "sim0");
  CHECK(trials[0].finished_at > 1.6e9);
  CHECK(trials[1].state == status::compile_error);
  CHECK(std::isnan(trials[1].time_ms));
  CHECK(store.count("SELECT count(*) FROM trials WHERE time_ms IS NULL") == 1);

  // Objectives and cache provenance round-trip too.
  auto with_objectives = ok_trial(config(16), 3.0);
  with_objectives.objectives = {3.0, 0.001};
  with_objectives.reused_from_run = other;
  with_objectives.repeats = 2;
  with_objectives.stopped_early = true;
  with_objectives.kernel_s = 0.125;
  db.record_trial(run, with_objectives);
  auto last = db.trials(run).back();
  CHECK(last.objectives == std::vector<double>{3.0, 0.001});
  CHECK(last.reused_from_run == other);
  CHECK(last.repeats == 2);
  CHECK(last.stopped_early);
  CHECK(last.kernel_s == 0.125);
  CHECK(trials[0].repeats == 0);
  CHECK_FALSE(trials[0].stopped_early);
  auto negative_kernel = ok_trial(config(17), 3.0);
  negative_kernel.kernel_s = -1;
  CHECK_THROWS_WITH(db.record_trial(run, negative_kernel), Contains("kernel_s"));
}

TEMPLATE_TEST_CASE("results db rejects invalid trials", "[storage]", tune::test::sqlite_file,
                   tune::test::postgres_database) {
  TestType store("tune-test-db-invalid");
  if (!store.why_not().empty()) SKIP_TEST(store.why_not());
  results_db db(store.target());
  auto run = db.create_run(spec());
  CHECK_THROWS_WITH(db.record_trial(run + 1, ok_trial(config(1), 1.0)), Contains("no run with id"));
  CHECK_THROWS_WITH(db.record_trial(run, ok_trial(config(1), std::nan(""))), Contains("finite time"));
  CHECK_THROWS_WITH(db.record_trial(run, ok_trial(config(1), -1.0)), Contains("finite time"));
  CHECK_THROWS_WITH(db.record_trial(run, ok_trial("[1, 2]", 1.0)), Contains("JSON object"));
  CHECK_THROWS_WITH(db.record_trial(run, ok_trial("{tile", 1.0)), Contains("JSON object"));
  auto negative = ok_trial(config(1), 1.0);
  negative.compile_s = -1;
  CHECK_THROWS_AS(db.record_trial(run, negative), std::invalid_argument);
  for (double when : {std::nan(""), -1.0, HUGE_VAL}) {
    auto bad_time = ok_trial(config(1), 1.0);
    bad_time.finished_at = when;
    CHECK_THROWS_WITH(db.record_trial(run, bad_time), Contains("finished_at"));
  }
  auto bad_options = spec();
  bad_options.options_json = "[]";
  CHECK_THROWS_WITH(db.create_run(bad_options), Contains("JSON object"));
  CHECK_THROWS_WITH(db.finish_run(run + 5, end_reason::budget), Contains("no run with id"));
  CHECK_THROWS_WITH(db.reopen_run(run + 5), Contains("no run with id"));
  CHECK(db.trial_count(run) == 0);
}

TEMPLATE_TEST_CASE("results db records a group larger than one statement holds, each configuration once", "[storage]",
                   tune::test::sqlite_file, tune::test::postgres_database) {
  TestType store("tune-test-db-large-group");
  if (!store.why_not().empty()) SKIP_TEST(store.why_not());
  results_db db(store.target());
  auto run = db.create_run(spec());
  for (int i = 0; i < 30; ++i) db.record_trial(run, ok_trial(config(i), 1.0 + i));
  // 450 trials: configurations 0..449 with every third given twice, 0..29 recorded before.
  std::vector<trial_record> group;
  for (int i = 0; i < 450; ++i) {
    group.push_back(ok_trial(config(i), 100.0 + i));
    if (i % 3 == 0) group.push_back(ok_trial(config(i), 999.0));
  }
  auto outcomes = db.record_trials(run, group);
  REQUIRE(outcomes.size() == group.size());
  std::map<std::string, std::int64_t> seq_of;
  std::int64_t next = 30;
  for (std::size_t k = 0; k < group.size(); ++k) {
    const auto& config_json = group[k].config_json;
    bool before = std::stoi(config_json.substr(config_json.find(':') + 1)) < 30;
    bool again = seq_of.count(config_json) > 0;
    INFO("trial " << k << " " << config_json);
    CHECK(outcomes[k].inserted == (!before && !again));
    if (outcomes[k].inserted) {
      CHECK(outcomes[k].seq == next++);
      seq_of[config_json] = outcomes[k].seq;
    } else if (again) {
      CHECK(outcomes[k].seq == seq_of[config_json]);
    } else {
      CHECK(outcomes[k].seq == std::stoi(config_json.substr(config_json.find(':') + 1)));
    }
  }
  auto trials = db.trials(run);
  REQUIRE(trials.size() == 450);
  for (std::size_t i = 0; i < trials.size(); ++i) {
    CHECK(trials[i].seq == static_cast<std::int64_t>(i));
    CHECK(trials[i].time_ms == (i < 30 ? 1.0 + static_cast<double>(i) : 100.0 + static_cast<double>(i)));
  }
}

TEST_CASE("results db records a batch of trials in one transaction", "[storage]") {
  tune::test::scratch_dir dir("tune-test-db-batch");
  results_db db(dir / "results.db");
  auto run = db.create_run(spec());
  REQUIRE(db.record_trial(run, ok_trial(config(1), 1.0)).seq == 0);

  // New ones get the next seqs in order; one recorded before and one given
  // twice in the batch are reported with their seq and written once.
  auto outcomes = db.record_trials(run, {ok_trial(config(2), 2.0), ok_trial(config(1), 9.0),
                                         failed_trial(config(3), status::runtime_error), ok_trial(config(2), 7.0)});
  REQUIRE(outcomes.size() == 4);
  CHECK((outcomes[0].inserted && outcomes[0].seq == 1));
  CHECK((!outcomes[1].inserted && outcomes[1].seq == 0));
  CHECK((outcomes[2].inserted && outcomes[2].seq == 2));
  CHECK((!outcomes[3].inserted && outcomes[3].seq == 1));
  auto trials = db.trials(run);
  REQUIRE(trials.size() == 3);
  CHECK(trials[1].config_json == config(2));
  CHECK(trials[1].time_ms == Approx(2.0));
  CHECK(trials[2].state == status::runtime_error);
  CHECK(db.record_trials(run, {}).empty());

  // One invalid trial: nothing of the batch is written.
  CHECK_THROWS_WITH(db.record_trials(run, {ok_trial(config(4), 1.0), ok_trial("{\"tile_x\": ", 1.0)}),
                    Contains("JSON object"));
  CHECK_THROWS_WITH(db.record_trials(run + 1, {ok_trial(config(4), 1.0)}), Contains("no run with id"));
  CHECK(db.trial_count(run) == 3);

  // The statements kept between trials hold no snapshot: another connection
  // sees every trial at once and can write, and the next batch goes on after it.
  results_db other(dir / "results.db");
  CHECK(other.trial_count(run) == 3);
  CHECK(other.record_trial(run, ok_trial(config(5), 5.0)).seq == 3);
  CHECK(db.record_trials(run, {ok_trial(config(6), 6.0)}).front().seq == 4);
  raw_sql(db.path(), "PRAGMA wal_checkpoint(TRUNCATE)");
  CHECK(raw_count(db.path(), "SELECT count(*) FROM trials") == 5);
}

TEMPLATE_TEST_CASE("results db resume finds the run and returns trials in recorded order", "[storage]",
                   tune::test::sqlite_file, tune::test::postgres_database) {
  TestType store("tune-test-db-resume");
  if (!store.why_not().empty()) SKIP_TEST(store.why_not());
  const std::uint64_t big_seed = 18446744073709551615ull;  // all 64 bits survive
  std::int64_t run = 0;
  // Recorded in an order that is neither sorted by config nor by time.
  const std::vector<int> order{9, 3, 27, 1, 12, 5};
  {
    results_db db(store.target());
    db.create_run(spec("gemm/1024", "random", big_seed));  // an older unfinished run
    run = db.create_run(spec("gemm/1024", "random", big_seed));
    db.create_run(spec("gemm/1024", "opevo", big_seed));
    db.create_run(spec("gemm/1024", "random", 1));
    for (int x : order) db.record_trial(run, ok_trial(config(x), 10.0 / x));
  }  // closed as a crash would leave it: still "running"

  results_db db(store.target());
  auto found = db.latest_resumable_run("gemm/1024", "random", big_seed);
  REQUIRE(found);
  CHECK(found->id == run);
  CHECK(found->seed == big_seed);
  CHECK(found->running());
  CHECK_FALSE(found->reason);
  CHECK_FALSE(found->finished_at);
  CHECK(found->options_json == R"({"budget": 100})");
  CHECK(found->device_kind == "replay:test");
  CHECK_FALSE(db.latest_resumable_run("gemm/1024", "random", 2));
  CHECK_FALSE(db.latest_resumable_run("conv/1", "random", big_seed));

  auto trials = db.trials(run);
  REQUIRE(trials.size() == order.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    CHECK(trials[i].seq == static_cast<std::int64_t>(i));
    CHECK(trials[i].config_json == config(order[i]));
  }
  // Continuing the run appends after the recorded trials.
  CHECK(db.record_trial(run, ok_trial(config(100), 0.1)).seq == static_cast<std::int64_t>(order.size()));

  db.finish_run(run, end_reason::budget);
  auto finished = db.find_run(run);
  REQUIRE(finished);
  CHECK(finished->reason == end_reason::budget);
  CHECK_FALSE(finished->resumable());
  REQUIRE(finished->finished_at);
  CHECK(*finished->finished_at >= finished->started_at);
  // The older unfinished run is what remains to resume.
  auto older = db.latest_resumable_run("gemm/1024", "random", big_seed);
  REQUIRE(older);
  CHECK(older->id == run - 1);
  CHECK_FALSE(db.find_run(999));
  CHECK(db.runs().size() == 4);
}

TEMPLATE_TEST_CASE("results db reuses measurements across runs of the same task and device kind", "[storage]",
                   tune::test::sqlite_file, tune::test::postgres_database) {
  TestType store("tune-test-db-cache");
  if (!store.why_not().empty()) SKIP_TEST(store.why_not());
  results_db db(store.target());
  auto first = db.create_run(spec("gemm/1024", "random", 1, "cuda:sm90"));
  db.record_trial(first, ok_trial(config(1), 5.0));
  db.record_trial(first, failed_trial(config(2), status::compile_error));
  db.record_trial(first, failed_trial(config(3), status::run_timeout));  // luck: measure again
  db.record_trial(first, failed_trial(config(4), status::runtime_error));

  auto hit = db.find_cached("gemm/1024", "cuda:sm90", config(1));
  REQUIRE(hit);
  CHECK(hit->run_id == first);
  CHECK(hit->time_ms == Approx(5.0));
  auto failure = db.find_cached("gemm/1024", "cuda:sm90", config(2));
  REQUIRE(failure);
  CHECK(failure->state == status::compile_error);
  CHECK_FALSE(db.find_cached("gemm/1024", "cuda:sm90", config(3)));
  CHECK_FALSE(db.find_cached("gemm/1024", "cuda:sm90", config(4)));
  CHECK_FALSE(db.find_cached("gemm/1024", "cuda:sm80", config(1)));  // other device kind
  CHECK_FALSE(db.find_cached("gemm/2048", "cuda:sm90", config(1)));  // other task
  CHECK_FALSE(db.find_cached("gemm/1024", "cuda:sm90", config(99)));

  // A later measurement of the same configuration wins.
  auto second = db.create_run(spec("gemm/1024", "opevo", 2, "cuda:sm90"));
  db.record_trial(second, ok_trial(config(1), 4.0));
  auto newer = db.find_cached("gemm/1024", "cuda:sm90", config(1));
  REQUIRE(newer);
  CHECK(newer->run_id == second);

  auto cache = db.load_cache("gemm/1024", "cuda:sm90");
  CHECK(cache.size() == 2);
  REQUIRE(cache.count(config(1)) == 1);
  CHECK(cache.at(config(1)).run_id == second);
  CHECK(cache.count(config(2)) == 1);
  CHECK(db.load_cache("gemm/1024", "cpu").empty());
}

TEMPLATE_TEST_CASE("results db best trial of a task", "[storage]", tune::test::sqlite_file,
                   tune::test::postgres_database) {
  TestType store("tune-test-db-best");
  if (!store.why_not().empty()) SKIP_TEST(store.why_not());
  results_db db(store.target());
  CHECK(db.tasks().empty());
  CHECK_FALSE(db.best("gemm/1024"));

  auto a = db.create_run(spec("gemm/1024", "random", 1, "cuda:sm90"));
  db.record_trial(a, ok_trial(config(1), 5.0));
  db.record_trial(a, ok_trial(config(2), 3.0));
  db.record_trial(a, failed_trial(config(3), status::wrong_answer));
  auto b = db.create_run(spec("gemm/1024", "opevo", 1, "cuda:sm80"));
  db.record_trial(b, ok_trial(config(4), 2.0, "gpu1"));
  db.record_trial(b, ok_trial(config(5), 7.0));
  auto c = db.create_run(spec("conv/3x3", "random", 1, "cpu"));
  db.record_trial(c, failed_trial(config(1), status::compile_error));
  db.create_run(spec("empty/task"));

  CHECK(db.tasks() == std::vector<std::string>{"conv/3x3", "empty/task", "gemm/1024"});

  auto best = db.best("gemm/1024");
  REQUIRE(best);
  CHECK(best->runs == 2);
  CHECK(best->trials == 5);
  CHECK(best->ok_trials == 4);
  REQUIRE(best->best);
  CHECK(best->best->config_json == config(4));
  CHECK(best->best->time_ms == Approx(2.0));
  CHECK(best->best->device == "gpu1");
  REQUIRE(best->best_run);
  CHECK(best->best_run->id == b);
  CHECK(best->best_run->strategy == "opevo");

  auto sm90 = db.best("gemm/1024", std::string("cuda:sm90"));
  REQUIRE(sm90);
  CHECK(sm90->runs == 1);
  CHECK(sm90->best->time_ms == Approx(3.0));

  auto no_ok = db.best("conv/3x3");
  REQUIRE(no_ok);
  CHECK(no_ok->trials == 1);
  CHECK_FALSE(no_ok->best);
  auto empty = db.best("empty/task");
  REQUIRE(empty);
  CHECK(empty->trials == 0);
}

TEMPLATE_TEST_CASE("results db totals of every run equal what its trials give", "[storage]", tune::test::sqlite_file,
                   tune::test::postgres_database) {
  TestType store("tune-test-db-totals");
  if (!store.why_not().empty()) SKIP_TEST(store.why_not());
  results_db db(store.target());
  CHECK(db.all_run_totals().empty());
  auto a = db.create_run(spec("gemm/1024", "random", 1));
  db.record_trial(a, ok_trial(config(1), 5.0));
  db.record_trial(a, failed_trial(config(2), status::compile_error));
  db.record_trial(a, ok_trial(config(3), 3.0));
  auto b = db.create_run(spec("gemm/1024", "opevo", 2));
  db.record_trial(b, failed_trial(config(1), status::runtime_error));
  auto empty = db.create_run(spec("conv/3x3"));
  auto c = db.create_run(spec("conv/3x3", "random", 3));
  for (int i = 0; i < 50; ++i) db.record_trial(c, ok_trial(config(i), 10.0 + (i * 7) % 13));

  auto totals = db.all_run_totals();
  CHECK(totals.count(empty) == 0);  // no trials: no row
  REQUIRE(totals.size() == 3);
  for (auto run : {a, b, c}) {
    auto trials = db.trials(run);
    std::int64_t ok = 0;
    std::optional<double> best;
    for (const auto& t : trials)
      if (t.ok()) {
        ++ok;
        if (!best || t.time_ms < *best) best = t.time_ms;
      }
    INFO("run " << run);
    CHECK(totals[run].trials == static_cast<std::int64_t>(trials.size()));
    CHECK(totals[run].ok_trials == ok);
    CHECK(totals[run].best_time_ms == best);
  }
  CHECK(totals[a].best_time_ms == 3.0);
  CHECK_FALSE(totals[b].best_time_ms);
  CHECK(totals[c].trials == 50);
}

TEMPLATE_TEST_CASE("results db tells the recorder when a new trial finished, as stored", "[storage]",
                   tune::test::sqlite_file, tune::test::postgres_database) {
  TestType store("tune-test-db-finished-at");
  if (!store.why_not().empty()) SKIP_TEST(store.why_not());
  results_db db(store.target());
  auto run = db.create_run(spec());
  auto first = db.record_trial(run, ok_trial(config(1), 2.0));
  auto again = db.record_trial(run, ok_trial(config(1), 2.0));
  REQUIRE(first.inserted);
  CHECK_FALSE(again.inserted);
  CHECK(again.finished_at == 0.0);
  auto stored = db.trials(run);
  REQUIRE(stored.size() == 1);
  CHECK(first.finished_at == stored[0].finished_at);  // the same double, not just close
  CHECK(first.finished_at >= db.find_run(run)->started_at);

  // A trial recorded after waiting in a group keeps the time it finished.
  auto waited = ok_trial(config(2), 3.0);
  waited.finished_at = first.finished_at - 0.25;
  auto outcome = db.record_trial(run, waited);
  REQUIRE(outcome.inserted);
  CHECK(outcome.finished_at == waited.finished_at);
  CHECK(db.trials(run)[1].finished_at == waited.finished_at);
}

TEST_CASE("results db reports corrupt rows by file, table and row", "[storage]") {
  tune::test::scratch_dir dir("tune-test-db-corrupt");
  const auto file = dir / "results.db";
  std::int64_t run = 0;
  {
    results_db db(file);
    run = db.create_run(spec());
    db.record_trial(run, ok_trial(config(1), 1.0));
    db.record_trial(run, ok_trial(config(2), 2.0));
  }
  auto trials_error = [&] {
    try {
      results_db(file).trials(run);
    } catch (const db_error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  struct corruption {
    std::string sql, column, restore;
  };
  const std::vector<corruption> cases{
      {"UPDATE trials SET status = 'okay' WHERE seq = 1", "status: 'okay'", "UPDATE trials SET status = 'ok'"},
      {"UPDATE trials SET config = '{not json' WHERE seq = 1", "config", ""},
      {"UPDATE trials SET config = '[1]' WHERE seq = 1", "config", ""},
      {"UPDATE trials SET time_ms = NULL WHERE seq = 1", "time_ms", "UPDATE trials SET time_ms = 2"},
      {"UPDATE trials SET time_ms = -4 WHERE seq = 1", "time_ms", "UPDATE trials SET time_ms = 2"},
      {"UPDATE trials SET time_ms = 'fast' WHERE seq = 1", "time_ms", "UPDATE trials SET time_ms = 2"},
      {"UPDATE trials SET status = 'compile_error' WHERE seq = 1", "time_ms", "UPDATE trials SET status = 'ok'"},
      {"UPDATE trials SET compile_s = -1 WHERE seq = 1", "compile_s", "UPDATE trials SET compile_s = 0"},
      {"UPDATE trials SET objectives = '[1, \"x\"]' WHERE seq = 1", "objectives",
       "UPDATE trials SET objectives = NULL"},
      {"UPDATE trials SET device = x'00ff' WHERE seq = 1", "device", "UPDATE trials SET device = 'sim0'"},
      {"UPDATE trials SET seq = -1 WHERE seq = 1", "seq", "UPDATE trials SET seq = 1 WHERE seq = -1"},
  };
  for (const auto& c : cases) {
    INFO(c.sql);
    raw_sql(file, c.sql);
    auto message = trials_error();
    CHECK_THAT(message, Contains(file.string()) && Contains("table trials") && Contains("row id 2") &&
                            Contains("column " + c.column));
    raw_sql(file, c.restore.empty() ? "UPDATE trials SET config = '" + config(2) + "' WHERE seq = 1" : c.restore);
    CHECK(trials_error().empty());
  }

  raw_sql(file, "UPDATE runs SET seed = 'abc'");
  results_db db(file);
  CHECK_THROWS_WITH(db.find_run(run), Contains("table runs") && Contains("row id 1") && Contains("column seed"));
  raw_sql(file, "UPDATE runs SET seed = '7', status = 'paused'");
  CHECK_THROWS_WITH(db.runs(), Contains("column status: 'paused' is neither running nor an end reason (budget, time, "
                                        "exhausted, stopped, failed)"));
  raw_sql(file, "UPDATE runs SET status = 'running', options = 'x'");
  CHECK_THROWS_WITH(db.latest_resumable_run("gemm/1024", "random", 7), Contains("column options"));
  // best() validates the row it returns.
  raw_sql(file, "UPDATE runs SET options = '{}'; UPDATE trials SET time_ms = -1 WHERE seq = 0");
  CHECK_THROWS_AS(db.best("gemm/1024"), db_error);
}

TEST_CASE("results db gives clear errors for bad paths and foreign files", "[storage]") {
  tune::test::scratch_dir dir("tune-test-db-paths");
  CHECK_THAT(open_error(dir.path()), Contains(dir.path().string()) && Contains("is a directory"));
  CHECK_THAT(open_error(dir / "no/such/dir/results.db"), Contains("does not exist") && Contains("create it"));
  CHECK_THAT(open_error("/proc/tune-results.db"), Contains("/proc/tune-results.db") && Contains("cannot"));
  CHECK_THAT(open_error(dir / "missing.db", results_db::open_mode::read_only),
             Contains("missing.db") && Contains("does not exist"));
  CHECK_FALSE(std::filesystem::exists(dir / "missing.db"));

  std::ofstream(dir / "text.db") << "this is a text file, long enough to look like a header of something else\n";
  CHECK_THAT(open_error(dir / "text.db"), Contains("text.db") && Contains("not an SQLite database"));

  raw_sql(dir / "other.db", "CREATE TABLE photos (id INTEGER)");
  CHECK_THAT(open_error(dir / "other.db"), Contains("other.db") && Contains("not a tune-engine results DB"));

  {
    results_db fresh(dir / "empty-ro.db");  // creates the schema
  }
  raw_sql(dir / "empty-ro.db", "UPDATE schema_version SET version = 99");
  CHECK_THAT(open_error(dir / "empty-ro.db"),
             Contains("schema version 99") && Contains("newer") && Contains("use a newer tune-engine"));
  raw_sql(dir / "empty-ro.db", "UPDATE schema_version SET version = 1");
  CHECK(open_error(dir / "empty-ro.db", results_db::open_mode::read_only).empty());

  // A zero-byte file is an empty database: read-only says so, read-write initialises it.
  std::ofstream(dir / "zero.db").close();
  CHECK_THAT(open_error(dir / "zero.db", results_db::open_mode::read_only), Contains("is empty"));
  CHECK(open_error(dir / "zero.db").empty());
  CHECK(raw_count(dir / "zero.db", "SELECT version FROM schema_version") == results_db::schema_version);
}

TEST_CASE("results db uses WAL and reads while another connection writes", "[storage]") {
  tune::test::scratch_dir dir("tune-test-db-wal");
  results_db writer(dir / "results.db");
  auto run = writer.create_run(spec());
  writer.record_trial(run, ok_trial(config(1), 1.0));
  results_db reader(dir / "results.db", results_db::open_mode::read_only);
  CHECK(reader.trial_count(run) == 1);
  writer.record_trial(run, ok_trial(config(2), 1.0));
  CHECK(reader.trial_count(run) == 2);
  CHECK(std::filesystem::exists(dir / "results.db-wal"));
}

TEST_CASE("results db survives kill -9 at random moments", "[storage]") {
  tune::test::scratch_dir dir("tune-test-db-crash");
  const auto file = dir / "results.db";
  {
    results_db db(file);
    db.create_run(spec("crash/task", "random", 42));
  }
  std::mt19937_64 rng(2024);  // varies where the kills land; the checks do not depend on it
  std::set<std::int64_t> reported;
  const int kills = 24;
  for (int round = 0; round < kills; ++round) {
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      close(fds[0]);
      try {
        // What a resumed population does: find the run, replay it, continue.
        results_db db(file);
        auto run = db.latest_resumable_run("crash/task", "random", 42);
        if (!run) _exit(3);
        std::int64_t next = static_cast<std::int64_t>(db.trials(run->id).size());
        for (std::int64_t k = next;; ++k) {
          auto outcome = db.record_trial(run->id, ok_trial(config(static_cast<int>(k)), 1.0 + k));
          // Also retry the previous configuration: must never duplicate.
          if (k > 0) db.record_trial(run->id, ok_trial(config(static_cast<int>(k - 1)), 1.0));
          if (!outcome.inserted) _exit(4);
          if (write(fds[1], &k, sizeof k) != sizeof k) _exit(5);
        }
      } catch (...) {
        _exit(6);
      }
    }
    close(fds[1]);
    // Wait for the first commit of this round, then kill after a random delay.
    std::int64_t k = 0;
    REQUIRE(read(fds[0], &k, sizeof k) == sizeof k);
    reported.insert(k);
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 20000));
    REQUIRE(kill(child, SIGKILL) == 0);
    int wstatus = 0;
    REQUIRE(waitpid(child, &wstatus, 0) == child);
    // Killed, not exited on its own (which would mean an error in the child).
    REQUIRE(WIFSIGNALED(wstatus));
    while (read(fds[0], &k, sizeof k) == sizeof k) reported.insert(k);
    close(fds[0]);

    results_db db(file);
    auto run = db.latest_resumable_run("crash/task", "random", 42);
    REQUIRE(run);
    auto trials = db.trials(run->id);
    std::set<std::string> configs;
    for (const auto& t : trials) configs.insert(t.config_json);
    REQUIRE(configs.size() == trials.size());  // exactly once
    for (auto r : reported) REQUIRE(configs.count(config(static_cast<int>(r))) == 1);
    for (std::size_t i = 0; i < trials.size(); ++i) REQUIRE(trials[i].seq == static_cast<std::int64_t>(i));
  }
  CHECK(reported.size() >= static_cast<std::size_t>(kills));
  CHECK(raw_count(file, "SELECT count(*) FROM pragma_integrity_check WHERE integrity_check != 'ok'") == 0);
}

TEST_CASE("results db takes writes from two processes at once", "[storage]") {
  tune::test::scratch_dir dir("tune-test-db-two-writers");
  const auto file = dir / "results.db";
  { results_db create(file); }
  const int trials = 300;
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    try {
      results_db db(file);
      auto run = db.create_run(spec("task/child"));
      for (int i = 0; i < trials; ++i) db.record_trial(run, ok_trial(config(i), 1.0));
      _exit(0);
    } catch (...) {
      _exit(1);
    }
  }
  results_db db(file);
  auto run = db.create_run(spec("task/parent"));
  for (int i = 0; i < trials; ++i) db.record_trial(run, ok_trial(config(i), 2.0));
  int wstatus = 0;
  REQUIRE(waitpid(child, &wstatus, 0) == child);
  REQUIRE(WIFEXITED(wstatus));
  CHECK(WEXITSTATUS(wstatus) == 0);
  CHECK(db.trial_count(run) == trials);
  auto child_summary = db.best("task/child");
  REQUIRE(child_summary);
  CHECK(child_summary->trials == trials);
}

TEST_CASE("results db opened while another process writes the file waits to switch it to WAL", "[storage]") {
  // Two tune processes starting on one new file: while one writes it, the
  // other's switch to the WAL journal (a read transaction that must become
  // a write) answers "database is locked" at once, without SQLite's busy
  // handler. Here the writer is a connection that holds the write lock of a
  // file in the rollback journal for 300 ms.
  tune::test::scratch_dir dir("tune-test-db-wal-switch");
  const auto file = dir / "results.db";
  { results_db create(file); }
  sqlite3* writer = nullptr;
  REQUIRE(sqlite3_open_v2(file.c_str(), &writer, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK);
  auto exec = [&](const char* sql) { return sqlite3_exec(writer, sql, nullptr, nullptr, nullptr); };
  REQUIRE(exec("PRAGMA journal_mode = DELETE") == SQLITE_OK);
  REQUIRE(exec("BEGIN IMMEDIATE") == SQLITE_OK);
  // The writer's hold stands for another process's work; whatever the
  // machine's speed, the opener cannot have written before the COMMIT began.
  std::atomic<bool> committing{false};
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    committing = true;
    exec("COMMIT");
  });
  std::string error;
  bool written_after_commit = false;
  try {
    results_db db(file);
    db.create_run(spec());
    written_after_commit = committing;
  } catch (const std::exception& e) {
    error = e.what();
  }
  release.join();
  sqlite3_close(writer);
  CHECK(error.empty());
  CHECK(written_after_commit);  // it waited for the writer
  results_db db(file, results_db::open_mode::read_only);
  CHECK(db.runs().size() == 1);
}

TEMPLATE_TEST_CASE("results db lets one holder at a time claim a run until it closes or dies", "[storage]",
                   tune::test::sqlite_file, tune::test::postgres_database) {
  TestType store("tune-test-db-claim");
  if (!store.why_not().empty()) SKIP_TEST(store.why_not());
  const auto file = store.target();
  std::int64_t first = 0, second = 0;
  {
    results_db a(file);
    first = a.create_run(spec());
    second = a.create_run(spec("task/other"));
    REQUIRE(a.claim_run(first));
    CHECK(a.claim_run(first));  // its own claim again
    results_db b(file);
    CHECK_FALSE(b.claim_run(first));
    CHECK(b.claim_run(second));
    // The store's own locks are untouched: both still write.
    CHECK(b.record_trial(first, ok_trial(config(1), 1.0)).inserted);
    CHECK(a.record_trial(second, ok_trial(config(2), 1.0)).inserted);
  }
  {
    results_db c(file);
    CHECK(c.claim_run(first));  // the holders are gone
  }
  // A process killed while holding a claim leaves none behind.
  int ready[2];
  REQUIRE(pipe(ready) == 0);
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    results_db db(file);
    char ok = db.claim_run(second) ? 'y' : 'n';
    (void)!write(ready[1], &ok, 1);
    pause();
    _exit(0);
  }
  char answer = 0;
  REQUIRE(read(ready[0], &answer, 1) == 1);
  CHECK(answer == 'y');
  {
    results_db d(file);
    CHECK_FALSE(d.claim_run(second));
  }
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  close(ready[0]);
  close(ready[1]);
  // The system drops a file lock with its holder; a PostgreSQL server ends
  // the dead holder's session as soon as it sees the connection closed.
  results_db e(file);
  bool claimed = false;
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
       !claimed && std::chrono::steady_clock::now() < deadline;) {
    claimed = e.claim_run(second);
    if (!claimed) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(claimed);
  CHECK(results_db(":memory:").claim_run(1));
}

TEST_CASE("results db keeps each configuration's FNV-1a hash, fixed by the file format", "[storage]") {
  tune::test::scratch_dir dir("tune-test-db-hash");
  results_db db(dir / "results.db");
  auto run = db.create_run(spec());
  db.record_trial(run, ok_trial("{\"x\":1}", 1.0));
  db.record_trial(run, ok_trial("{}", 1.0));
  // FNV-1a 64 of the bytes, as a signed integer: {"x":1} -> 0xbdd3d53c3a0b3fd6, {} -> 0x08f44b07b5901a25.
  CHECK(raw_count(db.path(), "SELECT config_hash FROM trials WHERE config = '{\"x\":1}'") ==
        static_cast<std::int64_t>(0xbdd3d53c3a0b3fd6ULL));
  CHECK(raw_count(db.path(), "SELECT config_hash FROM trials WHERE config = '{}'") ==
        static_cast<std::int64_t>(0x08f44b07b5901a25ULL));
  // The hash finds, the text decides: a row whose hash collides with another
  // configuration's is not taken for it.
  raw_sql(db.path(),
          "UPDATE trials SET config_hash = (SELECT config_hash FROM trials WHERE config = '{}') "
          "WHERE config = '{\"x\":1}'");
  CHECK(db.find_cached("gemm/1024", "replay:test", "{}")->config_json == "{}");
  auto outcome = db.record_trial(run, ok_trial("{}", 2.0));
  CHECK_FALSE(outcome.inserted);
  CHECK(outcome.seq == 1);
  CHECK(db.record_trial(run, ok_trial("{\"x\":2}", 2.0)).inserted);
}

TEST_CASE("results db reads a version 1 file as it is and migrates it when opened for writing", "[storage]") {
  tune::test::scratch_dir dir("tune-test-db-v1");
  const auto file = dir / "v1.db";
  // The version 1 schema, as tune-engine wrote it: a unique key and an index
  // over the configuration text, no hash.
  raw_sql(file, R"sql(
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE runs (id INTEGER PRIMARY KEY, task_key TEXT NOT NULL, strategy TEXT NOT NULL, seed TEXT NOT NULL,
  options TEXT NOT NULL, device_kind TEXT NOT NULL, started_at REAL NOT NULL, finished_at REAL, status TEXT NOT NULL);
CREATE TABLE trials (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id), seq INTEGER NOT NULL,
  config TEXT NOT NULL, status TEXT NOT NULL, time_ms REAL, compile_s REAL NOT NULL, run_s REAL NOT NULL,
  device TEXT NOT NULL, finished_at REAL NOT NULL, objectives TEXT, reused_from_run INTEGER,
  UNIQUE (run_id, config), UNIQUE (run_id, seq));
CREATE INDEX trials_by_config ON trials(config);
CREATE INDEX runs_by_task ON runs(task_key, device_kind);
INSERT INTO schema_version VALUES (1);
INSERT INTO runs VALUES (1, 'gemm/1024', 'random', '7', '{}', 'replay:test', 1000.0, 1001.0, 'finished');
INSERT INTO trials VALUES (1, 1, 0, '{"tile_x":1,"tile_y":1}', 'ok', 2.5, 0.5, 0.25, 'sim0', 1000.5, NULL, NULL);
INSERT INTO trials VALUES (2, 1, 1, '{"tile_x":2,"tile_y":1}', 'compile_error', NULL, 0.1, 0.0, 'sim1', 1000.6,
  NULL, NULL);
INSERT INTO trials VALUES (3, 1, 2, '{"tile_x":3,"tile_y":1}', 'ok', 1.5, 0.5, 0.25, 'sim0', 1000.7, '[1.5,0.9]',
  NULL);
)sql");
  {
    results_db reader(file, results_db::open_mode::read_only);
    CHECK_FALSE(reader.migrated_from().has_value());
    auto trials = reader.trials(1);
    REQUIRE(trials.size() == 3);
    CHECK(trials[2].objectives == std::vector<double>{1.5, 0.9});
    CHECK(reader.find_cached("gemm/1024", "replay:test", config(1))->time_ms == 2.5);
    // Version 1 kept no reason: a finished run is read as its trials and budget tell.
    CHECK(reader.find_run(1)->reason == end_reason::exhausted);
    CHECK(reader.find_cached("gemm/1024", "replay:test", config(2))->state == status::compile_error);
    CHECK_FALSE(reader.find_cached("gemm/1024", "replay:test", config(4)));
  }
  CHECK(raw_count(file, "SELECT version FROM schema_version") == 1);

  std::vector<trial_record> before;
  {
    results_db reader(file, results_db::open_mode::read_only);
    before = reader.trials(1);
  }
  {
    results_db writer(file);
    CHECK(raw_count(file, "SELECT version FROM schema_version") == results_db::schema_version);
    CHECK(writer.migrated_from() == 1);
    CHECK(writer.find_run(1)->reason == end_reason::exhausted);
    auto after = writer.trials(1);
    REQUIRE(after.size() == before.size());
    for (std::size_t i = 0; i < after.size(); ++i) {
      CHECK(after[i].seq == before[i].seq);
      CHECK(after[i].config_json == before[i].config_json);
      CHECK(after[i].state == before[i].state);
      CHECK((after[i].time_ms == before[i].time_ms || (std::isnan(after[i].time_ms) && std::isnan(before[i].time_ms))));
      CHECK(after[i].finished_at == before[i].finished_at);
      CHECK(after[i].objectives == before[i].objectives);
    }
    CHECK(writer.find_cached("gemm/1024", "replay:test", config(3))->time_ms == 1.5);
    // Recorded once per run still: the migrated rows are found by their hash.
    auto again = writer.record_trial(1, ok_trial(config(2), 9.0));
    CHECK_FALSE(again.inserted);
    CHECK(again.seq == 1);
    auto added = writer.record_trial(1, ok_trial(config(4), 3.0));
    CHECK(added.inserted);
    CHECK(added.seq == 3);
  }
  CHECK(raw_count(file, "SELECT count(*) FROM sqlite_master WHERE name = 'trials_by_config'") == 0);
  CHECK(raw_count(file, "SELECT count(*) FROM sqlite_master WHERE name = 'trials_by_config_hash'") == 1);
  CHECK(raw_count(file, "SELECT count(*) FROM sqlite_master WHERE name = 'trials_v3'") == 0);
  CHECK(raw_count(file, "SELECT count(*) FROM pragma_integrity_check WHERE integrity_check != 'ok'") == 0);
  CHECK(raw_count(file, "SELECT count(*) FROM trials WHERE config_hash = 0") == 0);
  // Opened again: nothing left to migrate.
  results_db again(file);
  CHECK(again.trials(1).size() == 4);
  CHECK_FALSE(again.migrated_from().has_value());
}

TEMPLATE_TEST_CASE("results db records why each run ended, and a stopped run stays resumable", "[storage]",
                   tune::test::sqlite_file, tune::test::postgres_database) {
  TestType store("tune-test-db-reasons");
  if (!store.why_not().empty()) SKIP_TEST(store.why_not());
  results_db db(store.target());
  for (auto reason : tune::all_end_reasons) {
    INFO(tune::to_string(reason));
    auto run = db.create_run(spec("gemm/1024", "random", 3));
    db.finish_run(run, reason);
    auto found = db.find_run(run);
    REQUIRE(found);
    CHECK(found->reason == reason);
    CHECK(run_status_text(*found) == tune::to_string(reason));
    CHECK(store.count("SELECT count(*) FROM runs WHERE id = " + std::to_string(run) + " AND status = '" +
                      std::string(tune::to_string(reason)) + "'") == 1);
    CHECK(found->resumable() == (reason == end_reason::stopped));
    auto latest = db.latest_resumable_run("gemm/1024", "random", 3);
    CHECK((reason == end_reason::stopped) == (latest && latest->id == run));
    if (reason == end_reason::stopped) {
      // Resumed: running again until it ends once more.
      db.reopen_run(run);
      CHECK(db.find_run(run)->running());
      CHECK_FALSE(db.find_run(run)->finished_at);
      db.finish_run(run, end_reason::budget);
    }
  }
  CHECK(run_status_text(*db.find_run(db.create_run(spec()))) == "running");
}

TEMPLATE_TEST_CASE("results db keeps a trial's message, cut at a character boundary past its limit", "[storage]",
                   tune::test::sqlite_file, tune::test::postgres_database) {
  TestType store("tune-test-db-message");
  if (!store.why_not().empty()) SKIP_TEST(store.why_not());
  results_db db(store.target());
  auto run = db.create_run(spec());
  auto failed = failed_trial(config(1), status::compile_error);
  failed.message = "error: 'x' was not declared";
  db.record_trial(run, failed);
  db.record_trial(run, ok_trial(config(2), 1.0));  // no message: NULL
  // 2047 bytes of 'a' and then two-byte characters: the cut may not split one.
  auto flood = failed_trial(config(3), status::runtime_error);
  flood.message = std::string(2047, 'a');
  for (int i = 0; i < 100; ++i) flood.message += "\xc3\xa9";  // é
  db.record_trial(run, flood);
  auto trials = db.trials(run);
  REQUIRE(trials.size() == 3);
  CHECK(trials[0].message == failed.message);
  CHECK(trials[1].message.empty());
  CHECK(store.count("SELECT count(*) FROM trials WHERE message IS NULL") == 1);
  CHECK(trials[2].message == std::string(2047, 'a'));
}

TEST_CASE("results db migrates a version 2 file: each finished run gets the reason its trials and budget give",
          "[storage]") {
  tune::test::scratch_dir dir("tune-test-db-v2");
  const auto file = dir / "v2.db";
  // The version 2 schema, as tune-engine wrote it: "finished" for every way a
  // run ended, no messages, no confirmation rounds.
  std::string sql = R"sql(
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE runs (id INTEGER PRIMARY KEY, task_key TEXT NOT NULL, strategy TEXT NOT NULL, seed TEXT NOT NULL,
  options TEXT NOT NULL, device_kind TEXT NOT NULL, started_at REAL NOT NULL, finished_at REAL, status TEXT NOT NULL);
CREATE INDEX runs_by_task ON runs(task_key, device_kind);
CREATE TABLE trials (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id), seq INTEGER NOT NULL,
  config TEXT NOT NULL, config_hash INTEGER NOT NULL, status TEXT NOT NULL, time_ms REAL, compile_s REAL NOT NULL,
  run_s REAL NOT NULL, device TEXT NOT NULL, finished_at REAL NOT NULL, objectives TEXT, reused_from_run INTEGER,
  UNIQUE (run_id, seq));
CREATE INDEX trials_by_config_hash ON trials(config_hash, run_id);
INSERT INTO schema_version VALUES (2);
INSERT INTO runs VALUES (1, 'gemm/1024', 'random', '7', '{"budget": 100}', 'replay:test', 1000.0, 1001.0, 'finished');
INSERT INTO runs VALUES (2, 'gemm/1024', 'random', '7', '{"budget": 100}', 'replay:test', 1000.0, 1001.0, 'finished');
INSERT INTO runs VALUES (3, 'gemm/1024', 'random', '7', '{"budget": 100, "time_budget_s": 30}', 'replay:test', 1000.0,
  1001.0, 'finished');
INSERT INTO runs VALUES (4, 'gemm/1024', 'random', '7', '{"budget": 100}', 'replay:test', 1000.0, NULL, 'running');
INSERT INTO runs VALUES (5, 'gemm/1024', 'random', '7', '{"budget": 100}', 'replay:test', 1000.0, 1001.0, 'failed');
INSERT INTO trials VALUES (1, 2, 0, '{"tile_x":1,"tile_y":1}', 0, 'ok', 1.0, 0.5, 0.25, 'sim0', 1000.5, NULL, NULL);
INSERT INTO trials VALUES (2, 3, 0, '{"tile_x":1,"tile_y":1}', 0, 'ok', 1.0, 0.5, 0.25, 'sim0', 1000.5, NULL, NULL);
)sql";
  // Run 1 reached its budget of 100 trials.
  for (int i = 0; i < 100; ++i)
    sql +=
        "INSERT INTO trials (run_id, seq, config, config_hash, status, time_ms, compile_s, run_s, device, "
        "finished_at) VALUES (1, " +
        std::to_string(i) + ", '" + config(i) + "', 0, 'ok', " + std::to_string(1.0 + i) +
        ", 0.5, 0.25, 'sim0', 1000.5);\n";
  raw_sql(file, sql);
  {
    results_db reader(file, results_db::open_mode::read_only);  // read as it is
    CHECK(reader.find_run(1)->reason == end_reason::budget);
    CHECK(reader.find_run(2)->reason == end_reason::exhausted);
    CHECK(reader.find_run(3)->reason == end_reason::time);
    CHECK(reader.find_run(4)->running());
    CHECK(reader.find_run(5)->reason == end_reason::failed);
    CHECK(reader.trials(1).front().message.empty());
  }
  CHECK(raw_count(file, "SELECT version FROM schema_version") == 2);
  results_db writer(file);
  CHECK(writer.migrated_from() == 2);
  CHECK(raw_count(file, "SELECT version FROM schema_version") == results_db::schema_version);
  CHECK(raw_count(file, "SELECT count(*) FROM runs WHERE status = 'finished'") == 0);
  CHECK(writer.find_run(1)->reason == end_reason::budget);
  CHECK(writer.find_run(2)->reason == end_reason::exhausted);
  CHECK(writer.find_run(3)->reason == end_reason::time);
  CHECK(writer.find_run(4)->running());
  CHECK(writer.latest_resumable_run("gemm/1024", "random", 7)->id == 4);
  auto failed = failed_trial(config(7), status::compile_error);
  failed.message = "kept now";
  writer.record_trial(2, failed);
  CHECK(writer.trials(2).back().message == "kept now");
}

TEMPLATE_TEST_CASE("results db keeps a run's confirmation rounds, and best answers with the confirmed winner",
                   "[storage]", tune::test::sqlite_file, tune::test::postgres_database) {
  TestType store("tune-test-db-confirm");
  if (!store.why_not().empty()) SKIP_TEST(store.why_not());
  results_db db(store.target());
  auto run = db.create_run(spec());
  db.record_trial(run, ok_trial(config(1), 0.5));  // seq 0: lucky during the search
  db.record_trial(run, ok_trial(config(2), 1.0));  // seq 1
  CHECK(db.best("gemm/1024")->best->seq == 0);     // not confirmed: the fastest trial
  std::vector<confirmation_row> rows = {{0, 0, 2.0}, {1, 0, 1.0}, {0, 1, 2.1}, {1, 1, 1.1}, {0, 2, 1.9}, {1, 2, 0.9}};
  CHECK_THROWS_WITH(db.record_confirmation(run, rows, 7), Contains("winner") && Contains("trial 7"));
  CHECK_THROWS_WITH(db.record_confirmation(run + 1, rows, 1), Contains("no run with id"));
  auto bad = rows;
  bad[2].time_ms = -1;
  CHECK_THROWS_WITH(db.record_confirmation(run, bad, 1), Contains("finite and > 0"));
  auto stranger = rows;
  stranger.push_back({9, 0, 1.0});
  CHECK_THROWS_WITH(db.record_confirmation(run, stranger, 1), Contains("has no trial 9"));
  CHECK(db.confirmations(run).empty());  // nothing of a refused call stays
  db.record_confirmation(run, rows, 1);
  CHECK(db.find_run(run)->confirmed_seq == 1);
  auto kept = db.confirmations(run);
  REQUIRE(kept.size() == 6);
  CHECK(kept[0].seq == 0);
  CHECK(kept[3].seq == 1);
  CHECK(kept[3].round == 0);
  auto best = db.best("gemm/1024");
  REQUIRE(best->best);
  CHECK(best->best->seq == 1);
  CHECK(best->confirmed_ms == Approx(1.0));
  CHECK(best->confirmed_min_ms == 0.9);
  CHECK(best->confirmed_max_ms == 1.1);
  CHECK(best->confirmed_rounds == 3);
  // Recorded again (a resumed run confirmed at its end): the new rounds replace the old.
  db.record_confirmation(run, {{0, 0, 0.7}}, 0);
  CHECK(db.confirmations(run).size() == 1);
  CHECK(db.best("gemm/1024")->best->seq == 0);
}

TEMPLATE_TEST_CASE("results db: a run timed by the least of its runs counts its confirmed winner by its least round",
                   "[storage]", tune::test::sqlite_file, tune::test::postgres_database) {
  TestType store("tune-test-db-confirm-min");
  if (!store.why_not().empty()) SKIP_TEST(store.why_not());
  results_db db(store.target());
  auto timed_by_min = spec("gemm/min");
  timed_by_min.options_json = R"({"budget": 100, "measurement": {"statistic": "min"}})";
  auto by_min = db.create_run(timed_by_min);
  db.record_trial(by_min, ok_trial(config(1), 1.0));
  db.record_confirmation(by_min, {{0, 0, 1.3}, {0, 1, 0.8}, {0, 2, 1.2}}, 0);
  auto best = db.best("gemm/min");
  REQUIRE(best->confirmed_ms);
  CHECK(*best->confirmed_ms == 0.8);
  // The same rounds in a run timed by the median (the default, also when the
  // options do not say) count by their median.
  auto by_median = db.create_run(spec("gemm/median"));
  db.record_trial(by_median, ok_trial(config(1), 1.0));
  db.record_confirmation(by_median, {{0, 0, 1.3}, {0, 1, 0.8}, {0, 2, 1.2}}, 0);
  CHECK(*db.best("gemm/median")->confirmed_ms == 1.2);
}

TEMPLATE_TEST_CASE("results db keeps a trial's duel, and best passes over one that lost it", "[storage]",
                   tune::test::sqlite_file, tune::test::postgres_database) {
  TestType store("tune-test-db-duel");
  if (!store.why_not().empty()) SKIP_TEST(store.why_not());
  results_db db(store.target());
  auto run = db.create_run(spec());
  db.record_trial(run, ok_trial(config(1), 10.0));  // seq 0: the best before
  auto lucky = ok_trial(config(2), 8.5);            // seq 1: lost its duel, 10.5 against 10.0
  lucky.duel_ms = 10.5;
  lucky.duel_best_ms = 10.0;
  db.record_trial(run, lucky);
  auto trials = db.trials(run);
  REQUIRE(trials.size() == 2);
  CHECK(std::isnan(trials[0].duel_ms));
  CHECK(trials[1].duel_ms == 10.5);
  CHECK(trials[1].duel_best_ms == 10.0);
  CHECK(trials[1].duel_lost());
  CHECK(db.best("gemm/1024")->best->seq == 0);
  auto winner = ok_trial(config(3), 9.0);  // seq 2: won, 9.6 against 10.0 (a louder moment)
  winner.duel_ms = 9.6;
  winner.duel_best_ms = 10.0;
  db.record_trial(run, winner);
  CHECK(db.best("gemm/1024")->best->seq == 2);
  auto quiet = ok_trial(config(4), 9.4);  // seq 3: no duel, its own figure below 9.6
  db.record_trial(run, quiet);
  CHECK(db.best("gemm/1024")->best->seq == 3);
  // A duel's medians come together, as times, and only on an ok trial.
  auto half = ok_trial(config(5), 1.0);
  half.duel_ms = 1.0;
  CHECK_THROWS_WITH(db.record_trial(run, half), Contains("duel_ms and duel_best_ms"));
  half.duel_best_ms = -1.0;
  CHECK_THROWS_WITH(db.record_trial(run, half), Contains("duel_ms and duel_best_ms"));
  auto failed = failed_trial(config(6), status::runtime_error);
  failed.duel_ms = failed.duel_best_ms = 1.0;
  CHECK_THROWS_WITH(db.record_trial(run, failed), Contains("of an ok trial"));
  store.sql("UPDATE trials SET duel_best_ms = NULL WHERE seq = 1");
  CHECK_THROWS_WITH(results_db(store.target()).trials(run),
                    Contains("table trials") && Contains("duel_ms") && Contains("not both set"));
}

TEST_CASE("results db reads a version 3 file without duels and adds their columns when opened for writing",
          "[storage]") {
  tune::test::scratch_dir dir("tune-test-db-v3");
  auto file = dir / "v3.db";
  std::int64_t run = 0;
  {
    results_db db(file);
    run = db.create_run(spec());
    db.record_trial(run, ok_trial(config(1), 2.0));
  }
  raw_sql(file,
          "ALTER TABLE trials DROP COLUMN duel_ms; ALTER TABLE trials DROP COLUMN duel_best_ms; "
          "UPDATE schema_version SET version = 3");
  {
    results_db read_only(file, results_db::open_mode::read_only);
    auto trials = read_only.trials(run);
    REQUIRE(trials.size() == 1);
    CHECK(std::isnan(trials[0].duel_ms));
    CHECK(read_only.best("gemm/1024")->best->seq == 0);
  }
  CHECK(raw_count(file, "SELECT version FROM schema_version") == 3);
  results_db db(file);
  CHECK(db.migrated_from() == 3);
  CHECK(raw_count(file, "SELECT version FROM schema_version") == results_db::schema_version);
  CHECK(raw_count(file, "SELECT count(*) FROM pragma_table_info('trials') WHERE name LIKE 'duel%'") == 2);
  auto lost = ok_trial(config(2), 1.0);
  lost.duel_ms = 2.5;
  lost.duel_best_ms = 2.0;
  db.record_trial(run, lost);
  CHECK(db.best("gemm/1024")->best->seq == 0);
}
