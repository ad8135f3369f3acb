// copy_runs (storage/src/copy.cpp): what db copy does between two stores.
#include <catch2/catch.hpp>
#include <cmath>
#include <thread>

#include "skip.hpp"
#include "store_kinds.hpp"
#include "tune/storage/copy.hpp"

using namespace tune::storage;

namespace {

trial_record trial_of(int x, double time_ms) {
  trial_record t;
  t.config_json = "{\"x\":" + std::to_string(x) + "}";
  t.state = tune::status::ok;
  t.time_ms = time_ms;
  t.compile_s = 0.1;
  t.device = "sim0";
  return t;
}

/// Run A starts first; run B after it; then A, resumed, reuses B's
/// measurement of x = 2: a trial reused from a run with a higher id.
void fill(const std::string& target) {
  results_db db(target);
  auto a = db.create_run({"gemm/64", "random", 1, "{}", "sim"});
  db.record_trial(a, trial_of(1, 3.0));
  auto b = db.create_run({"gemm/64", "random", 2, "{}", "sim"});
  db.record_trial(b, trial_of(2, 2.0));
  auto reused = trial_of(2, 2.0);
  reused.reused_from_run = b;
  db.record_trial(a, reused);
}

}  // namespace

TEMPLATE_TEST_CASE("copy_runs links a trial reused from a run copied after its own", "[storage]",
                   tune::test::sqlite_file, tune::test::postgres_database) {
  TestType to("tune-test-copy-links");
  if (!to.why_not().empty()) SKIP_TEST(to.why_not());
  tune::test::sqlite_file from("tune-test-copy-links-from");
  fill(from.target());
  results_db source(from.target(), results_db::open_mode::read_only);
  results_db destination(to.target());
  auto report = copy_runs(source, destination);
  CHECK(report.runs_added == 2);
  CHECK(report.trials_added == 3);
  auto runs = destination.runs();
  REQUIRE(runs.size() == 2);
  auto a = destination.trials(runs[0].id);
  REQUIRE(a.size() == 2);
  CHECK_FALSE(a[0].reused_from_run);
  REQUIRE(a[1].reused_from_run);
  CHECK(*a[1].reused_from_run == runs[1].id);
  // Copied again: nothing is added, the link stays.
  auto again = copy_runs(source, destination);
  CHECK(again.runs_unchanged == 2);
  CHECK(destination.trials(runs[0].id)[1].reused_from_run == runs[1].id);
}

TEMPLATE_TEST_CASE("copy_runs from two processes into one store at once adds every run once", "[storage]",
                   tune::test::sqlite_file, tune::test::postgres_database) {
  TestType to("tune-test-copy-twice");
  if (!to.why_not().empty()) SKIP_TEST(to.why_not());
  tune::test::sqlite_file from("tune-test-copy-twice-from");
  {
    results_db db(from.target());
    for (int r = 0; r < 20; ++r) {
      auto run = db.create_run({"task/" + std::to_string(r), "random", 1, "{}", "sim"});
      for (int i = 0; i < 5; ++i) db.record_trial(run, trial_of(i, 1.0 + i));
    }
  }
  results_db{to.target()};  // the tables made before the two start
  std::vector<std::thread> copies;
  std::vector<copy_report> reports(2);
  for (int c = 0; c < 2; ++c)
    copies.emplace_back([&, c] {
      results_db source(from.target(), results_db::open_mode::read_only);
      results_db destination(to.target());
      reports[c] = copy_runs(source, destination);
    });
  for (auto& t : copies) t.join();
  CHECK(reports[0].runs_added + reports[1].runs_added == 20);
  CHECK(reports[0].trials_added + reports[1].trials_added == 100);
  results_db destination(to.target(), results_db::open_mode::read_only);
  CHECK(destination.runs().size() == 20);
}
