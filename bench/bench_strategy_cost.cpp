// Engine CPU per trial of a strategy (propose(1) + observe) at 1k, 10k and 20k
// observations, on the OpEvo MatMul space (factorizations of 512 and 1024
// into 4 parts and of 1024 into 3: 4,152,720 configurations) with a smooth
// synthetic objective, and the share of a pipeline that measures on 4
// devices at 10 ms per measurement (one trial every 2.5 ms) it would take.
// Usage: bench_strategy_cost [--strategies bo,nose] [--sizes 1000,10000,20000]
//                            [--window 200] [--seed S] [--hyper strategy:name=value …]
// Times are this thread's CPU time (CLOCK_THREAD_CPUTIME_ID), so other load
// on the machine inflates them less than wall time, but does not vanish.
#include <fmt/core.h>
#include <time.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>

#include "bench_text.hpp"
#include "synthetic_objective.hpp"
#include "tune/engine/strategy.hpp"

using namespace tune;

namespace {
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// The synthetic objective as a trial result.
trial_result measure(const search_space& space, const configuration& config) {
  trial_result r;
  r.config = config;
  r.state = status::ok;
  r.time_ms = bench::synthetic_ms(space, config);
  return r;
}
}  // namespace

int main(int argc, char** argv) try {
  std::vector<std::string> strategies = {"bo", "nose", "opevo+knn", "opevo"};
  std::vector<std::size_t> sizes = {1000, 10000, 20000};
  std::size_t window = 200;
  std::uint64_t seed = 1;
  std::map<std::string, std::map<std::string, double>> hyper;
  std::vector<std::string> hypers;
  CLI::App app{
      "Engine CPU per trial of a strategy (propose(1) + observe) at 1k, 10k and 20k observations on the "
      "OpEvo MatMul space, and the share of a 4-device pipeline it would take"};
  bench::last_value_wins(app);
  bench::add_list(app, "--strategies", strategies, "Strategies");
  bench::add_list(app, "--sizes", sizes, "Observations at which to time")->check(bench::more_than_zero());
  app.add_option("--window", window, "Trials timed after each size")
      ->capture_default_str()
      ->check(bench::more_than_zero());
  app.add_option("--seed", seed, "Seed of the strategies and the objective")->capture_default_str();
  bench::add_repeatable(app, "--hyper", hypers, "A strategy's hyperparameter, strategy:name=value");
  if (auto rc = tune::bench::parse_options(app, argc, argv)) return *rc;
  std::sort(sizes.begin(), sizes.end());
  for (const auto& h : hypers) bench::add_hyper(h, hyper);
  auto space = std::make_shared<search_space>(std::vector<parameter_ptr>{make_factorization_parameter("m", 512, 4),
                                                                         make_factorization_parameter("k", 1024, 4),
                                                                         make_factorization_parameter("n", 1024, 3)});
  fmt::print("space: {} configurations; window {} trials after each size; seed {}\n", *space->cartesian_size(), window,
             seed);
  fmt::print("{:<10} {:>12} {:>14} {:>16} {:>10}\n", "strategy", "observations", "us_per_trial", "share_4x10ms_%",
             "best_ms");
  for (const auto& name : strategies) {
    strategy_options options;
    options.seed = seed;
    if (auto it = hyper.find(name); it != hyper.end()) options.hyper = it->second;
    double start = thread_cpu_seconds();
    auto search = make_strategy(name, space, options);
    double setup_s = thread_cpu_seconds() - start;
    std::size_t observed = 0;
    double best = INFINITY;
    auto step = [&] {
      auto next = search->propose(1);
      if (next.empty()) throw std::runtime_error(name + " proposed nothing");
      auto r = measure(*space, next[0]);
      best = std::min(best, r.time_ms);
      search->observe(r);
      ++observed;
    };
    fmt::print("{:<10} {:>12} {:>14.0f} {:>16} {:>10}\n", name, "(setup)", setup_s * 1e6, "", "");
    for (std::size_t size : sizes) {
      while (observed < size) step();
      double begin = thread_cpu_seconds();
      for (std::size_t i = 0; i < window; ++i) step();
      double us = (thread_cpu_seconds() - begin) * 1e6 / static_cast<double>(window);
      fmt::print("{:<10} {:>12} {:>14.1f} {:>16.1f} {:>10.4f}\n", name, size, us, us / 2500.0 * 100.0, best);
      std::fflush(stdout);
    }
  }
  return 0;
} catch (const std::exception& e) {
  fmt::print(stderr, "bench_strategy_cost: {}\n", e.what());
  return 2;
}
