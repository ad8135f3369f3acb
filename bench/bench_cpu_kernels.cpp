// bench_cpu_kernels: tunes MM1 (matmul:512x1024x1024) and BMM1
// (bmm:960x128x128x64:nn) on the CPU backend and prints the best GFLOP/s after
// 100, 200 and 500 trials, and the ratio to OpenBLAS sgemm on the same cores.
//
//   bench_cpu_kernels [--tasks MM1,BMM1] [--trials 500] [--threads 1] [--seed 1]
//                     [--min-time 0.05] [--run-timeout 2] [--strategy opevo|builtin-random|…]
//                     [--user examples/user-kernel/launch.json]
//
// Trials are built and measured one at a time, so compile noise never lands on
// a measurement; the kernel runs pinned to cores 0 .. threads-1.
#include <fmt/format.h>
#include <sched.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>
#include <vector>

#include "tune/engine/strategy.hpp"
#include "tune/kernels/blas_reference.hpp"
#include "tune/kernels/task.hpp"
#include "tune/kernels/user_kernel.hpp"

namespace {

struct bench_options {
  std::string tasks = "MM1,BMM1";
  int trials = 500;
  int threads = 1;
  std::uint64_t seed = 1;
  double min_time = 0.05;
  double run_timeout = 2.0;
  std::string strategy = "opevo";
  std::string user;
};

void pin_to_first_cores(int count) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c = 0; c < count; ++c) CPU_SET(c, &set);
  sched_setaffinity(0, sizeof set, &set);
}

struct tuning_outcome {
  std::vector<std::pair<int, double>> best_at;  // (trials, GFLOP/s)
  std::string best_config;
  int ok = 0, failed = 0;
  double seconds = 0;
};

// The next configuration to try: from the strategy when there is one, else a
// uniformly drawn valid configuration never tried before.
class proposer {
 public:
  proposer(const std::string& strategy, tune::search_space_ptr space, std::uint64_t seed)
      : space_(space), rng_(tune::fork_seed(seed, 0)) {
    if (strategy != "builtin-random") {
      tune::strategy_options options;
      options.seed = seed;
      strategy_ = tune::make_strategy(strategy, space, options);
    }
  }
  std::optional<tune::configuration> next() {
    if (strategy_) {
      auto proposals = strategy_->propose(1);
      if (proposals.empty()) return std::nullopt;
      return proposals.front();
    }
    for (int tries = 0; tries < 1000; ++tries) {
      auto config = space_->draw_valid(rng_);
      if (config && seen_.insert(*config).second) return config;
    }
    return std::nullopt;
  }
  void tell(const tune::trial_result& result) {
    if (strategy_) strategy_->observe(result);
  }

 private:
  tune::search_space_ptr space_;
  tune::rng_type rng_;
  tune::configuration_set seen_;
  std::unique_ptr<tune::strategy> strategy_;
};

tuning_outcome tune_backend(tune::backend& backend, double flops, const bench_options& o) {
  tuning_outcome out;
  auto space = backend.space();
  proposer next(o.strategy, space, o.seed);
  double best_ms = INFINITY;
  auto start = std::chrono::steady_clock::now();
  for (int trial = 1; trial <= o.trials; ++trial) {
    auto config = next.next();
    if (!config) break;
    auto built = backend.build(*config, 120.0);
    auto measured = backend.run(*config, built, 0, o.run_timeout);
    tune::trial_result result;
    result.config = *config;
    result.state = measured.state;
    result.time_ms = measured.time_ms;
    next.tell(result);
    if (measured.state == tune::status::ok) {
      ++out.ok;
      if (measured.time_ms < best_ms) {
        best_ms = measured.time_ms;
        out.best_config = space->to_json(*config);
      }
    } else {
      ++out.failed;
    }
    if (trial == 100 || trial == 200 || trial == 500 || trial == o.trials)
      out.best_at.emplace_back(trial, std::isfinite(best_ms) ? flops / best_ms / 1e6 : 0.0);
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

void report(const std::string& label, const tuning_outcome& outcome, double reference_gflops) {
  for (auto [trials, gflops] : outcome.best_at) {
    std::string ratio = reference_gflops > 0 ? fmt::format("  {:.2f}x OpenBLAS", gflops / reference_gflops) : "";
    fmt::print("{:<6} after {:>4} trials: best {:8.1f} GFLOP/s{}\n", label, trials, gflops, ratio);
  }
  fmt::print("{:<6} {} ok, {} failed (instantiation, run timeout, ...), {:.0f} s; best {}\n", label, outcome.ok,
             outcome.failed, outcome.seconds, outcome.best_config);
  std::fflush(stdout);
}

}  // namespace

int run(const bench_options& o);

int main(int argc, char** argv) {
  bench_options o;
  CLI::App app{"Tunes MM1 and BMM1 on the CPU backend and compares with OpenBLAS sgemm"};
  app.add_option("--tasks", o.tasks, "Comma-separated: MM1, BMM1 or task strings");
  app.add_option("--trials", o.trials, "Trials per task");
  app.add_option("--threads", o.threads, "Threads (cores) per kernel");
  app.add_option("--seed", o.seed, "Seed of the search");
  app.add_option("--strategy", o.strategy, "A make_strategy name (opevo, random, ...) or builtin-random");
  app.add_option("--min-time", o.min_time, "Seconds of repeats per measurement");
  app.add_option("--run-timeout", o.run_timeout, "Seconds after which a measurement is a run_timeout");
  app.add_option("--user", o.user, "Tune a user kernel's launch description instead");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(o);
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_cpu_kernels: {}\n", e.what());
    return 2;
  }
}

int run(const bench_options& o) {
  pin_to_first_cores(o.threads);
  tune::task_backend_options options;
  options.threads = o.threads;
  options.min_time_s = o.min_time;
  // A slow configuration is timed once; fast ones repeat until min_time.
  options.min_repeats = 1;

  if (!o.user.empty()) {
    auto backend = tune::make_user_kernel_backend(o.user, "cpu", options);
    auto program = tune::read_user_kernel(o.user);
    report("user", tune_backend(*backend, program->flops, o), 0.0);
    return 0;
  }

  fmt::print("CPU: {} thread(s), seed {}, {} trials per task, strategy {}\n", o.threads, o.seed, o.trials, o.strategy);
  std::stringstream list(o.tasks);
  std::string name;
  while (std::getline(list, name, ',')) {
    std::string text = name == "MM1" ? "matmul:512x1024x1024" : name == "BMM1" ? "bmm:960x128x128x64:nn" : name;
    auto task = tune::parse_task(text);
    auto backend = tune::make_task_backend(task, "cpu", options);
    if (task.op == tune::operator_kind::conv2d) {  // no BLAS counterpart
      report(name, tune_backend(*backend, task.flops(), o), 0.0);
      continue;
    }
    // OpenBLAS is timed before and after the search and its better figure
    // kept, so that a burst of load on the machine does not flatter the ratio.
    double blas_before = tune::blas_reference_gflops(task, o.threads, 0.5);
    fmt::print("{:<6} {}: OpenBLAS sgemm {:.1f} GFLOP/s on {} thread(s)\n", name, text, blas_before, o.threads);
    std::fflush(stdout);
    auto outcome = tune_backend(*backend, task.flops(), o);
    double blas_after = tune::blas_reference_gflops(task, o.threads, 0.5);
    fmt::print("{:<6} OpenBLAS sgemm after the search {:.1f} GFLOP/s; ratios use {:.1f}\n", name, blas_after,
               std::max(blas_before, blas_after));
    report(name, outcome, std::max(blas_before, blas_after));
  }
  return 0;
}
