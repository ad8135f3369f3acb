// Per-trial cost of a C++ objective tuned through the actor pipeline: the
// baseline bench_python_overhead.py compares a Python objective against.
//
//   build/bench/bench_objective_overhead [--trials N] [--repeats R] [--seed S]
//
// Prints one JSON object: medians over the repeats of the wall-clock
// microseconds per trial, of the engine's CPU microseconds per trial, and of
// the objective's own time as the measurer sees it (run_s of each trial:
// the call and what wraps it).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_text.hpp"
#include "tune/engine/median.hpp"
#include "tune/tune.hpp"

int main(int argc, char** argv) {
  std::uint64_t trials = 3000;
  int repeats = 5;
  std::uint64_t seed = 1;
  CLI::App app{
      "Per-trial cost of a C++ objective tuned through the actor pipeline (one JSON object: medians over "
      "the repeats); the baseline of bench_python_overhead.py"};
  tune::bench::last_value_wins(app);
  app.add_option("--trials", trials, "Trials of each run")->capture_default_str()->check(tune::bench::more_than_zero());
  app.add_option("--repeats", repeats, "Runs, of which the medians are printed")
      ->capture_default_str()
      ->check(tune::bench::more_than_zero());
  app.add_option("--seed", seed, "Seed of the search")->capture_default_str();
  if (auto rc = tune::bench::parse_options(app, argc, argv)) return *rc;
  // The same space and objective as bench_python_overhead.py: 10^6
  // configurations, cost x / 1000 + y.
  std::vector<double> values(1000);
  for (int v = 0; v < 1000; ++v) values[v] = v;
  auto space = std::make_shared<tune::search_space>(std::vector<tune::parameter_ptr>{
      tune::make_discrete_parameter("x", values), tune::make_discrete_parameter("y", values)});

  std::vector<double> wall_us;
  std::vector<double> engine_us;
  std::vector<double> call_us;
  // Each repeat runs twice: without callbacks for the wall and CPU figures,
  // then with a trial callback that collects the objective's call times.
  for (int r = 0; r < 2 * repeats; ++r) {
    std::vector<double> run_us;
    tune::session_options o;
    bool timing_calls = r % 2 == 1;
    if (timing_calls) o.on_trial = [&run_us](const tune::trial_info& t) { run_us.push_back(t.run_s * 1e6); };
    o.space = space;
    o.objective = [space](const tune::configuration& config) {
      auto x = std::get<double>(space->parameters()[0]->value(config[0]));
      auto y = std::get<double>(space->parameters()[1]->value(config[1]));
      return x / 1000.0 + y;
    };
    o.strategy = "random";
    o.budget.trials = trials;
    o.seed = seed + r / 2;
    auto report = tune::tune_once(std::move(o));
    if (timing_calls) {
      call_us.push_back(tune::median(run_us));
    } else {
      wall_us.push_back(report.wall_s * 1e6 / static_cast<double>(report.new_trials));
      engine_us.push_back(report.engine_cpu_us_per_trial);
    }
  }
  nlohmann::json out{{"objective", "c++"},
                     {"trials", trials},
                     {"repeats", repeats},
                     {"wall_us_per_trial", tune::median(wall_us)},
                     {"engine_cpu_us_per_trial", tune::median(engine_us)},
                     {"call_us", tune::median(call_us)}};
  std::cout << out.dump() << "\n";
  return 0;
}
