// Replayed searches scheduled on simulated compile workers and devices: the
// virtual clock against schedules worked out by hand, and against
// replay_search's serial clock.
#include <catch2/catch.hpp>
#include <deque>

#include "replay_fixtures.hpp"
#include "tune/kernels/replay_schedule.hpp"
#include "tune/kernels/replay_stats.hpp"

using namespace tune;
using tune::test::conv_slice;
using tune::test::scripted_strategy;

namespace {

/// The first `n` records with status `s`.
std::vector<std::size_t> indices_with(const replay_dataset& d, status s, std::size_t n) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < d.records.size() && out.size() < n; ++i)
    if (d.records[i].state == s) out.push_back(i);
  REQUIRE(out.size() == n);
  return out;
}

double compile_of(const replay_dataset& d, std::size_t i) { return d.records[i].compile_s; }
double run_of(const replay_dataset& d, std::size_t i) { return d.records[i].benchmark_s + d.records[i].verification_s; }

}  // namespace

TEST_CASE("a steady schedule compiles the next candidate while the device measures", "[kernels]") {
  const auto& d = conv_slice();
  auto ok = indices_with(d, status::ok, 2);
  std::size_t a = ok[0], b = ok[1];
  scripted_strategy s({d.configs[a], d.configs[b]});
  replay_schedule one;
  one.compile_workers = 1;
  one.devices = 1;
  one.prefetch = 0;  // capacity 2: one building, one measured
  replay_run_options options;
  options.budget = 2;
  auto run = replay_scheduled_search(d, s, options, one);
  REQUIRE(run.steps.size() == 2);
  CHECK(run.steps[0].config == d.configs[a]);
  CHECK(run.steps[0].sim_time_s == Approx(compile_of(d, a) + run_of(d, a)));
  // b is built while a is measured and waits for the device.
  double b_built = compile_of(d, a) + compile_of(d, b);
  double b_start = std::max(b_built, compile_of(d, a) + run_of(d, a));
  CHECK(run.steps[1].sim_time_s == Approx(b_start + run_of(d, b)));
  CHECK(s.asked.front() == 2);
}

TEST_CASE("a generational schedule waits for the slowest of a batch", "[kernels]") {
  const auto& d = conv_slice();
  auto ok = indices_with(d, status::ok, 4);
  std::deque<configuration> script;
  for (auto i : ok) script.push_back(d.configs[i]);
  scripted_strategy s(script);
  replay_schedule gen;
  gen.compile_workers = 2;
  gen.devices = 2;
  gen.prefetch = 0;
  gen.generational = true;
  gen.batch = 2;
  replay_run_options options;
  options.budget = 4;
  auto run = replay_scheduled_search(d, s, options, gen);
  REQUIRE(run.steps.size() == 4);
  double first = std::max(compile_of(d, ok[0]) + run_of(d, ok[0]), compile_of(d, ok[1]) + run_of(d, ok[1]));
  CHECK(run.steps[1].sim_time_s == Approx(first));
  // Each of the second batch starts when the first has drained, on its own worker and device.
  double second = first + std::max(compile_of(d, ok[2]) + run_of(d, ok[2]), compile_of(d, ok[3]) + run_of(d, ok[3]));
  CHECK(run.steps[3].sim_time_s == Approx(second));
  CHECK(s.asked == std::vector<std::size_t>{2, 2});
  // The same candidates in the steady state are never later.
  scripted_strategy s2(script);
  gen.generational = false;
  auto steady = replay_scheduled_search(d, s2, options, gen);
  CHECK(steady.steps.back().sim_time_s <= run.steps.back().sim_time_s + 1e-12);
}

TEST_CASE("a failed build costs its compile time only and arrives first", "[kernels]") {
  const auto& d = conv_slice();
  auto ok = indices_with(d, status::ok, 1)[0];
  auto failed = indices_with(d, status::compile_error, 1)[0];
  scripted_strategy s({d.configs[ok], d.configs[failed]});
  replay_schedule two;
  two.compile_workers = 2;
  two.devices = 1;
  replay_run_options options;
  options.budget = 2;
  auto run = replay_scheduled_search(d, s, options, two);
  REQUIRE(run.steps.size() == 2);
  CHECK(run.steps[0].state == status::compile_error);
  CHECK(run.steps[0].sim_time_s == Approx(compile_of(d, failed)));
  CHECK(std::isnan(run.steps[0].best_ms));
  CHECK(run.steps[1].sim_time_s == Approx(compile_of(d, ok) + run_of(d, ok)));
  CHECK(run.steps[1].best_ms == d.records[ok].time_ms);
  REQUIRE(s.told.size() == 2);
  CHECK(s.told[0].state == status::compile_error);
}

TEST_CASE("a recorded duration beyond the timeout costs the timeout and fails", "[kernels]") {
  const auto& d = conv_slice();
  auto ok = indices_with(d, status::ok, 1)[0];
  scripted_strategy s({d.configs[ok]});
  auto sched = replay_schedule::serial();
  sched.run_timeout_s = run_of(d, ok) / 2;
  replay_run_options options;
  options.budget = 1;
  auto run = replay_scheduled_search(d, s, options, sched);
  REQUIRE(run.steps.size() == 1);
  CHECK(run.steps[0].state == status::run_timeout);
  CHECK(run.steps[0].sim_time_s == Approx(compile_of(d, ok) + sched.run_timeout_s));
}

TEST_CASE("the serial schedule is replay_search's clock: compile, then measure, one at a time", "[kernels]") {
  const auto& d = conv_slice();
  for (std::string name : {"random", "ga", "bo"}) {
    replay_run_options options;
    options.strategy = name;
    options.budget = 60;
    options.seed = 7;
    auto serial = replay_search(d, options);
    auto scheduled = replay_scheduled_search(d, options, replay_schedule::serial());
    INFO(name);
    REQUIRE(scheduled.steps.size() == serial.steps.size());
    for (std::size_t i = 0; i < serial.steps.size(); ++i) {
      CHECK(scheduled.steps[i].config == serial.steps[i].config);
      CHECK(scheduled.steps[i].sim_time_s == Approx(serial.steps[i].sim_time_s));
    }
    double optimum = d.best_time_ms();
    CHECK(sim_time_to_reach(scheduled, optimum, 0.9) == sim_time_to_reach(serial, optimum, 0.9));
  }
}

TEST_CASE("a scheduled search is reproducible by seed, fills the pipeline and beats the serial clock", "[kernels]") {
  const auto& d = conv_slice();
  replay_run_options options;
  options.strategy = "random";
  options.budget = 100;
  options.seed = 11;
  replay_schedule wide;  // 8 compile workers, 4 devices, prefetch 2
  CHECK(wide.capacity() == 20);
  auto a = replay_scheduled_search(d, options, wide);
  auto b = replay_scheduled_search(d, options, wide);
  REQUIRE(a.steps.size() == 100);
  REQUIRE(b.steps.size() == 100);
  configuration_set seen;
  double previous = 0, compile = 0, measure = 0;
  for (std::size_t i = 0; i < a.steps.size(); ++i) {
    CHECK(a.steps[i].config == b.steps[i].config);
    CHECK(a.steps[i].sim_time_s == b.steps[i].sim_time_s);
    CHECK(seen.insert(a.steps[i].config).second);
    CHECK(a.steps[i].sim_time_s >= previous);
    previous = a.steps[i].sim_time_s;
    const auto* rec = d.find(a.steps[i].config);
    compile += rec->compile_s;
    if (rec->state != status::compile_error) measure += rec->benchmark_s + rec->verification_s;
  }
  double makespan = a.steps.back().sim_time_s;
  // No faster than the workers and devices allow, and far faster than one after the other.
  CHECK(makespan >= compile / 8 - 1e-9);
  CHECK(makespan >= measure / 4 - 1e-9);
  auto serial = replay_scheduled_search(d, options, replay_schedule::serial());
  CHECK(makespan < serial.steps.back().sim_time_s / 4);

  // Several seeds on two threads: run r is the search with seed + r.
  auto runs = replay_scheduled_searches(d, options, wide, 3, 2);
  REQUIRE(runs.size() == 3);
  REQUIRE(runs[0].steps.size() == a.steps.size());
  for (std::size_t i = 0; i < a.steps.size(); ++i) CHECK(runs[0].steps[i].sim_time_s == a.steps[i].sim_time_s);
  options.seed += 2;
  auto third = replay_scheduled_search(d, options, wide);
  REQUIRE(runs[2].steps.size() == third.steps.size());
  for (std::size_t i = 0; i < third.steps.size(); ++i) CHECK(runs[2].steps[i].config == third.steps[i].config);
}

TEST_CASE("time to reach a fraction of the optimum", "[kernels]") {
  replay_run_result run;
  run.steps.push_back({{}, status::runtime_error, std::nan(""), 1.0, std::nan("")});
  run.steps.push_back({{}, status::ok, 2.0, 3.0, 2.0});
  run.steps.push_back({{}, status::ok, 1.1, 4.5, 1.1});
  CHECK(sim_time_to_reach(run, 1.0, 0.4) == 3.0);
  CHECK(sim_time_to_reach(run, 1.0, 0.9) == 4.5);
  CHECK_FALSE(sim_time_to_reach(run, 1.0, 0.95).has_value());
  CHECK(first_step_reaching(run, 1.0, 0.4) == 1u);
  CHECK(first_step_reaching(run, 1.0, 0.9) == 2u);
  CHECK_FALSE(first_step_reaching(run, 1.0, 0.95).has_value());
}

TEST_CASE("a schedule without workers or devices is an error", "[kernels]") {
  const auto& d = conv_slice();
  replay_run_options options;
  replay_schedule none;
  none.devices = 0;
  CHECK_THROWS_AS(replay_scheduled_search(d, options, none), std::invalid_argument);
}
