// bench_cpu_kernels: tunes MM1 (matmul:512x1024x1024) and BMM1
// (bmm:960x128x128x64:nn) on the CPU backend and prints the best GFLOP/s after
// 100, 200 and 500 trials, and the ratio to OpenBLAS sgemm on the same cores.
//
//   bench_cpu_kernels [--tasks MM1,BMM1] [--trials 500] [--threads 1] [--seed 1]
//                     [--min-time 0.05] [--run-timeout 2] [--strategy opevo|random|bo|…]
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

#include "tune/kernels/blas_reference.hpp"
#include "tune/kernels/task.hpp"
#include "tune/kernels/user_kernel.hpp"
#include "tune/tune.hpp"

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

// One search through the library's session: one compile worker and one CPU
// device without prefetch, in generational batches of one, so a trial is built
// and then measured with nothing compiling beside it.
tuning_outcome tune_backend(tune::backend_ptr backend, double flops, const bench_options& o) {
  tuning_outcome out;
  tune::session_options so;
  so.custom_backend = std::move(backend);
  so.strategy = o.strategy;
  so.budget = static_cast<std::uint64_t>(o.trials);
  so.seed = o.seed;
  so.mode = tune::run_mode::generational;
  so.batch = 1;
  tune::storage::topology topo;
  topo.origin = "<bench_cpu_kernels>";
  topo.compile_workers = 1;
  topo.compile_timeout_s = 120.0;
  topo.run_timeout_s = o.run_timeout;
  topo.devices.push_back({"cpu", 0, "cpu0", 0});
  so.topology = topo;
  double best_ms = INFINITY;
  int trials = 0;
  so.on_trial = [&](const tune::trial_info& t) {
    ++trials;
    if (t.ok()) {
      ++out.ok;
      if (t.time_ms < best_ms) {
        best_ms = t.time_ms;
        out.best_config = t.config_json;
      }
    } else {
      ++out.failed;
    }
    if (trials == 100 || trials == 200 || trials == 500 || trials == o.trials)
      out.best_at.emplace_back(trials, std::isfinite(best_ms) ? flops / best_ms / 1e6 : 0.0);
  };
  auto report = tune::tune_once(std::move(so));
  out.seconds = report.wall_s;
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
  app.add_option("--strategy", o.strategy, "A strategy name (opevo, random, bo, ...)");
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
    report("user", tune_backend(backend, program->flops, o), 0.0);
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
      report(name, tune_backend(backend, task.flops(), o), 0.0);
      continue;
    }
    // OpenBLAS is timed before and after the search and its better figure
    // kept, so that a burst of load on the machine does not flatter the ratio.
    double blas_before = tune::blas_reference_gflops(task, o.threads, 0.5);
    fmt::print("{:<6} {}: OpenBLAS sgemm {:.1f} GFLOP/s on {} thread(s)\n", name, text, blas_before, o.threads);
    std::fflush(stdout);
    auto outcome = tune_backend(backend, task.flops(), o);
    double blas_after = tune::blas_reference_gflops(task, o.threads, 0.5);
    fmt::print("{:<6} OpenBLAS sgemm after the search {:.1f} GFLOP/s; ratios use {:.1f}\n", name, blas_after,
               std::max(blas_before, blas_after));
    report(name, outcome, std::max(blas_before, blas_after));
  }
  return 0;
}
