#include <catch2/catch.hpp>
#include <cmath>

#include "evolve_detail.hpp"
#include "evolved_variant.hpp"
#include "tune/engine/program_edit.hpp"
#include "tune/tune.hpp"

using namespace tune;
using tune::test::evolved_variant;

TEST_CASE("the front keeps non-dominated variants once per program and fastest first", "[facade][gevo]") {
  std::vector<trial_info> trials = {evolved_variant(0, 10, 0.05, 0), evolved_variant(1, 8, 0.06, 3),
                                    evolved_variant(2, 9, 0.07, 2), evolved_variant(3, 8, 0.06, 1),
                                    evolved_variant(4, 12, 0.04, 4)};
  auto front = detail::front_of(trials);
  REQUIRE(front.size() == 3);
  CHECK(front[0].seq == 3);  // (8, 0.06) twice: the one with one edit
  CHECK(front[1].seq == 0);
  CHECK(front[2].seq == 4);
  CHECK(detail::front_of({}).empty());
  CHECK(choose_variant(front, 0.05)->seq == 0);
  CHECK(choose_variant(front, 0.06)->seq == 3);
  CHECK(choose_variant(front, 0.01) == nullptr);
}

TEST_CASE("the chosen variant is judged by its validation error where it is known", "[facade][gevo]") {
  std::vector<trial_info> front = {evolved_variant(1, 8, 0.05, 2), evolved_variant(2, 9, 0.06, 1)};
  front[0].validation_error = 0.20;  // good on search, bad on validation
  front[1].validation_error = 0.07;
  CHECK(choose_variant(front, 0.08)->seq == 2);
  CHECK(choose_variant(front, 0.06) == nullptr);
}

TEST_CASE("the time to solution is the first variant 1.1x faster within +0.02 error", "[facade][gevo]") {
  run_report report;
  report.original = evolved_variant(0, 10, 0.10, 0);
  report.evolved = {*report.original, evolved_variant(1, 9.5, 0.10, 1), evolved_variant(2, 8, 0.15, 1),
                    evolved_variant(3, 9, 0.11, 2), evolved_variant(4, 5, 0.12, 3)};
  for (std::size_t i = 0; i < report.evolved.size(); ++i) report.evolved[i].finished_s = 10.0 * (5 - i);
  detail::add_search_counts(report, nullptr);
  // Trial 1 is too slow, 2 too wrong; 3 (at 20 s) and 4 (at 10 s) qualify: 4 came first.
  CHECK(report.solution_s == 10.0);
  CHECK(report.solution_seq == 4);
  report.evolved.pop_back();
  report.solution_s = std::nan("");
  detail::add_search_counts(report, nullptr);
  CHECK(report.solution_seq == 3);
  report.evolved.pop_back();
  report.solution_s = std::nan("");
  detail::add_search_counts(report, nullptr);
  CHECK(std::isnan(report.solution_s));
}

TEST_CASE("speed-ups count from the lower of the original's recorded and measured-again times", "[facade][gevo]") {
  run_report report;
  report.original = evolved_variant(0, 10, 0.10, 0);
  report.evolved = {*report.original, evolved_variant(1, 8.5, 0.10, 1)};
  report.evolved[1].finished_s = 5.0;
  // Not measured again: the recorded time. 10 / 8.5 = 1.18x: a solution.
  detail::add_search_counts(report, nullptr);
  CHECK(report.original_reference_ms() == 10.0);
  CHECK(report.solution_seq == 1);
  // Measured again slower: the recorded time stands (noise only slows).
  report.original_remeasured_ms = 12.0;
  detail::add_search_counts(report, nullptr);
  CHECK(report.original_reference_ms() == 10.0);
  CHECK(report.solution_s == 5.0);
  // Measured again at 9 ms: the recorded 10 ms was a slow moment, and
  // 9 / 8.5 = 1.06x is no solution.
  report.original_remeasured_ms = 9.0;
  report.solution_s = std::nan("");
  report.solution_seq = 0;
  detail::add_search_counts(report, nullptr);
  CHECK(report.original_reference_ms() == 9.0);
  CHECK(std::isnan(report.solution_s));
  CHECK(report.solution_seq == 0);
  // Without a backend: not measured again.
  detail::remeasure_original(report, nullptr, 5);
  CHECK(std::isnan(report.original_remeasured_ms));
}

TEST_CASE("a workload is evolved by gevo and needs LLVM 14", "[facade][gevo]") {
  session_options o;
  o.workload = "2fcnet:nothing";
  o.budget.trials = 2;
  CHECK_THROWS_AS(session(o), input_error);
  o.task = "matmul:64x64x64";
  CHECK_THROWS_WITH(session(o), Catch::Contains("give exactly one of"));
#ifdef TUNE_WITH_LLVM
  CHECK(evolution_workloads() ==
        std::vector<std::string>{"2fcnet:predict", "2fcnet:train", "cnn:predict", "cnn:train", "matmul:NxKxM"});
  session_options bad_shape;
  bad_shape.workload = "matmul:64x64";
  bad_shape.budget.trials = 2;
  CHECK_THROWS_WITH(session(bad_shape), Catch::Contains("workload: ") && Catch::Contains("matmul:NxKxM"));
  session_options g;
  g.workload = "2fcnet:train";
  g.strategy = "nsga2";
  CHECK_THROWS_WITH(session(g), Catch::Contains("evolved by gevo"));
#else
  CHECK(evolution_workloads().empty());
#endif
}

TEST_CASE("a variant is measured again in turn with the original", "[facade][gevo]") {
  session_options o;
  run_report report;
  CHECK_THROWS_WITH(confirm_variant(o, report, encode({}), 3), Catch::Contains("workload") && Catch::Contains("empty"));
  o.workload = "2fcnet:predict";
  CHECK_THROWS_WITH(confirm_variant(o, report, encode({}), 0), Catch::Contains("rounds must be at least 1"));
  measurement_protocol flushing;
  flushing.flush_cache = true;
  o.measurement = flushing;
  CHECK_THROWS_WITH(confirm_variant(o, report, encode({}), 3), Catch::Contains("flush_cache"));
  o.measurement.reset();
  // Without options of its own it measures as the run's topology said.
  storage::topology topo = storage::parse_topology(
      "measurement:\n  flush_cache: true\ndevices:\n  - {backend: cpu, id: 0}\n", "evolve-topology.yaml");
  o.topology = topo;
  CHECK_THROWS_WITH(confirm_variant(o, report, encode({}), 3),
                    Catch::Contains("evolve-topology.yaml: measurement.flush_cache"));
  o.topology.reset();
  o.topology_file = "/nonexistent/topology.yaml";
  CHECK_THROWS_AS(confirm_variant(o, report, encode({}), 3), input_error);
  o.topology_file.clear();
#ifdef TUNE_WITH_LLVM
  // An edit that does not apply leaves the original: the same program
  // against itself, whose ratio is about 1 in every round.
  auto same = encode({{edit_kind::remove, 999999, 0, 0, 0, 1}});
  auto c = confirm_variant(o, report, same, 3);
  CHECK(c.rounds == 3);
  CHECK(c.original_ms > 0);
  CHECK(c.variant_ms > 0);
  CHECK(c.min_speedup <= c.speedup);
  CHECK(c.speedup <= c.max_speedup);
  CHECK(c.speedup == Approx(1.0).margin(0.5));
  // A variant that does not build is named.
  CHECK_THROWS_WITH(confirm_variant(o, report, configuration{1, 2, 3}, 3),
                    Catch::Contains("the variant") && Catch::Contains("did not build"));
#else
  CHECK_THROWS_AS(confirm_variant(o, report, encode({}), 3), input_error);
#endif
}
