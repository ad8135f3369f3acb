// bench_cpu_kernels: tunes OpEvo's CPU problems on the CPU backend, prints the
// best GFLOP/s after 100, 200 and 500 trials, and ends with one table: the
// measured single-core fp32 FMA peak (before and after the tasks, the better
// kept), each task's best GFLOP/s and fraction
// of peak (times the threads) and of the roofline (the lower of that peak and
// what the task's compulsory memory traffic allows at the streaming bandwidth
// measured on the same cores: every input read once, the output read for
// ownership and written once), the vendor kernels (oneDNN in its own and the
// plain layouts, OpenBLAS with its default and its fastest core type) on the
// same cores in the same run, each timed alternately with the best
// configuration (compare_with_vendors), the best configuration's median over
// those rounds, the median (min–max) of the per-round ratios to the vendor
// kernel it is least ahead of, trials and wall time.
//
//   bench_cpu_kernels [--tasks C1,C2,MM1] [--trials 500] [--threads 1] [--seed 1]
//                     [--conv-batch 8] [--own-layouts] [--rounds 5] [--min-time 0.05] [--run-timeout 2]
//                     [--strategy opevo|random|bo|…] [--user examples/user-kernel/launch.json]
//                     [--config '{"tile_n": …}']   (one task: time this configuration, no search)
//
// Task names: MM1-MM3, BMM1-BMM3, C1, C2 (batch --conv-batch; the paper's is
// 512; --own-layouts: in the kernel's own layouts, conversions outside the
// timed kernel, conv2d:…:own) or task strings. Trials are built and measured one at a time, so
// compile noise never lands on a measurement; the kernel runs pinned to cores
// --first-core (default 0) .. +threads-1. After each search the best configuration and each
// vendor kernel are timed alternately, in one process, for --rounds rounds
// (default 5), and each ratio is the median of the per-round ratios: load on a
// shared machine lands on both sides of each round alike.
#include <fmt/format.h>
#include <immintrin.h>
#include <sched.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>
#include <vector>

#include "bench_text.hpp"
#include "tune/kernels/task.hpp"
#include "tune/kernels/user_kernel.hpp"
#include "tune/kernels/vendor_reference.hpp"
#include "tune/tune.hpp"

namespace {

struct bench_options {
  std::string tasks = "C1,C2,MM1";
  long conv_batch = 8;
  bool own_layouts = false;  // C1 and C2 as conv2d:…:own
  int rounds = 5;
  int trials = 500;
  int threads = 1;
  int first_core = 0;
  std::uint64_t seed = 1;
  double min_time = 0.05;
  double run_timeout = 2.0;
  std::string strategy = "opevo";
  std::string user;
  std::string config;  // time this configuration (JSON) instead of searching
};

void pin_to_cores(int first, int count) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c = first; c < first + count; ++c) CPU_SET(c, &set);
  sched_setaffinity(0, sizeof set, &set);
}

struct tuning_outcome {
  std::vector<std::pair<int, double>> best_at;  // (trials, GFLOP/s)
  std::string best_config;
  tune::configuration best;
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
  so.budget.trials = static_cast<std::uint64_t>(o.trials);
  so.seed = o.seed;
  so.mode = tune::run_mode::generational;
  so.batch = 1;
  tune::storage::topology topo;
  topo.origin = "<bench_cpu_kernels>";
  topo.compile_workers = 1;
  topo.timeouts.compile_s = 120.0;
  topo.timeouts.run_s = o.run_timeout;
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
        out.best = t.config;
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

void report(const std::string& label, const tuning_outcome& outcome) {
  for (auto [trials, gflops] : outcome.best_at)
    fmt::print("{:<6} after {:>4} trials: best {:8.1f} GFLOP/s\n", label, trials, gflops);
  fmt::print("{:<6} {} ok, {} failed (instantiation, run timeout, ...), {:.0f} s; best {}\n", label, outcome.ok,
             outcome.failed, outcome.seconds, outcome.best_config);
  std::fflush(stdout);
}

// The fp32 FMA peak of one core: independent chains of vector FMAs, more
// than latency times pipes on current x86 cores (4-5 cycles x 2), and with
// their two operands no more than the register file holds: 16 of AVX-512's 32
// registers, 12 of AVX2's 16 (16 chains there spilled, and the loop ran at
// 0.6 of the core's peak, below what tuned kernels reached); best of five runs.
constexpr int avx512_chains = 16, avx2_chains = 12;
__attribute__((target("avx512f,fma"))) double fma_seconds_avx512(long iterations, float* sink) {
  __m512 acc[avx512_chains];
  for (int j = 0; j < avx512_chains; ++j) acc[j] = _mm512_set1_ps(static_cast<float>(j));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < iterations; ++i)
    for (int j = 0; j < avx512_chains; ++j) acc[j] = _mm512_fmadd_ps(acc[j], a, b);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (int j = 1; j < avx512_chains; ++j) acc[0] = _mm512_add_ps(acc[0], acc[j]);
  *sink = _mm512_reduce_add_ps(acc[0]);
  return s;
}
__attribute__((target("avx2,fma"))) double fma_seconds_avx2(long iterations, float* sink) {
  __m256 acc[avx2_chains];
  for (int j = 0; j < avx2_chains; ++j) acc[j] = _mm256_set1_ps(static_cast<float>(j));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < iterations; ++i)
    for (int j = 0; j < avx2_chains; ++j) acc[j] = _mm256_fmadd_ps(acc[j], a, b);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  alignas(32) float lanes[8];
  for (int j = 1; j < avx2_chains; ++j) acc[0] = _mm256_add_ps(acc[0], acc[j]);
  _mm256_store_ps(lanes, acc[0]);
  *sink = lanes[0];
  return s;
}

/// GFLOP/s of the FMA loop on the calling thread's core; 0 without AVX2 and FMA.
double fma_peak_gflops() {
  __builtin_cpu_init();
  const bool wide = __builtin_cpu_supports("avx512f");
  if (!wide && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) return 0.0;
  const long iterations = 20'000'000;
  const double lanes = wide ? 16 : 8;
  double best = INFINITY;
  float sink = 0;
  for (int run = 0; run < 5; ++run)
    best = std::min(best, wide ? fma_seconds_avx512(iterations, &sink) : fma_seconds_avx2(iterations, &sink));
  if (sink == 12345.0f) fmt::print("");  // keeps the result alive
  return 2.0 * lanes * (wide ? avx512_chains : avx2_chains) * static_cast<double>(iterations) / best / 1e9;
}

// Streaming bandwidth of `threads` threads (pinned to cores first .. first + threads - 1),
// each scaling a 64 MiB array into another (larger than the last-level cache
// of the machines at hand): bytes read, read for ownership and written back,
// per second, best of five passes, in GB/s.
double stream_gbps(int first, int threads) {
  const std::size_t n = (64u << 20) / sizeof(float);
  std::vector<std::vector<float>> src(threads), dst(threads);
  std::vector<double> best(threads, INFINITY);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(first + t, &set);
      sched_setaffinity(0, sizeof set, &set);
      src[t].assign(n, 1.0f);
      dst[t].assign(n, 0.0f);
      float* a = src[t].data();
      float* b = dst[t].data();
      for (int pass = 0; pass < 6; ++pass) {
        auto start = std::chrono::steady_clock::now();
        for (std::size_t i = 0; i < n; ++i) b[i] = 0.999f * a[i];
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (pass > 0) best[t] = std::min(best[t], s);  // the first pass also faults the pages in
        std::swap(a, b);
      }
    });
  for (auto& w : workers) w.join();
  double total = 0;
  for (int t = 0; t < threads; ++t) total += 3.0 * n * sizeof(float) / best[t] / 1e9;
  return total;
}

// Bytes a run must move at least: every input read once, the output read for
// ownership and written back once (fp32).
double compulsory_bytes(const tune::task_spec& t) {
  if (t.op == tune::operator_kind::conv2d)
    return 4.0 * (double(t.batch) * t.in_channels * t.height * t.width +
                  double(t.out_channels) * t.in_channels * t.kernel_h * t.kernel_w +
                  2.0 * t.batch * t.out_channels * t.out_height() * t.out_width());
  return 4.0 * t.batch * (double(t.n) * t.k + double(t.k) * t.m + 2.0 * t.n * t.m);
}

// GFLOP/s the compulsory traffic allows at the streaming bandwidth (the
// roofline is the lower of this and the FMA peak).
double traffic_gflops(const tune::task_spec& t, double gbps) {
  return gbps > 0 ? t.flops() * gbps / compulsory_bytes(t) : INFINITY;  // FLOP / (bytes / (1e9 B/s)) / 1e9
}

struct table_row {
  std::string name, task;
  double traffic_bound = 0;            // GFLOP/s the compulsory traffic allows at the streaming bandwidth
  double gflops = 0;                   // the search's best
  tune::vendor_comparison comparison;  // the best configuration timed alternately with each vendor
  std::string note;                    // why there is no comparison
  int trials = 0;
  double seconds = 0;
};

// GFLOP/s of one configuration of `task`, built (from the compile cache) and
// run with repeats for at least `min_time` seconds; 0 when it fails.
double gflops_of(const tune::task_spec& task, const tune::configuration& config, tune::task_backend_options options,
                 double min_time) {
  options.measurement.min_time_s = min_time;
  options.measurement.min_repeats = 3;
  auto backend = tune::make_task_backend(task, "cpu", options);
  auto built = backend->build(config, 300.0);
  if (built.state != tune::status::ok) return 0.0;
  auto measured = backend->run(config, built, 0, 300.0);
  return measured.state == tune::status::ok ? task.flops() / measured.time_ms / 1e6 : 0.0;
}

std::string figure(const tune::vendor_comparison& comparison, const std::string& library, bool own) {
  for (const auto& v : comparison.vendors) {
    if (v.library != library) continue;
    const bool is_own = library == "onednn" ? v.variant == "own layouts" : v.variant != "default";
    if (is_own == own) return v.available() ? fmt::format("{:.1f}", v.vendor_gflops) : "-";
  }
  return "-";
}

void print_table(const std::vector<table_row>& rows, double peak, int threads, double gbps) {
  fmt::print(
      "\nfp32 FMA peak of one core (FMA loop): {:.1f} GFLOP/s; {} thread(s): peak {:.1f}; streaming bandwidth "
      "of {} thread(s): {:.1f} GB/s\n",
      peak, threads, peak * threads, threads, gbps);
  fmt::print(
      "| task | tune-engine GFLOP/s (search / re-timed) | of peak | roofline (of it) | oneDNN own layouts | "
      "oneDNN plain | OpenBLAS default | OpenBLAS fastest core | tuned / best vendor (min–max, interleaved) | trials "
      "| wall s |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& r : rows) {
    const auto* best = r.comparison.best();
    const double retimed = r.comparison.tuned_gflops;
    const double roofline = std::min(peak * threads, r.traffic_bound);
    fmt::print("| {} `{}` | {:.1f} / {:.1f} | {:.0f}% | {:.0f} ({:.0f}%) | {} | {} | {} | {} | {} | {} | {:.0f} |\n",
               r.name, r.task, r.gflops, retimed, peak > 0 ? 100.0 * retimed / (peak * threads) : 0.0, roofline,
               roofline > 0 ? 100.0 * retimed / roofline : 0.0, figure(r.comparison, "onednn", true),
               figure(r.comparison, "onednn", false), figure(r.comparison, "openblas", false),
               figure(r.comparison, "openblas", true),
               best ? fmt::format("{:.2f} ({:.2f}–{:.2f}; {} {})", best->ratio.median, best->ratio.min, best->ratio.max,
                                  best->library, best->variant)
                    : "-",
               r.trials, r.seconds);
  }
  for (const auto& r : rows) {
    if (!r.note.empty()) fmt::print("{} vendor comparison: {}\n", r.name, r.note);
    for (const auto& v : r.comparison.vendors)
      fmt::print("{} {} ({}): {}\n", r.name, v.library, v.variant,
                 v.available() ? fmt::format("{}; tuned / vendor {:.2f}x ({:.2f}–{:.2f} over {} rounds)", v.detail,
                                             v.ratio.median, v.ratio.min, v.ratio.max, v.rounds.size())
                               : v.note);
  }
  std::fflush(stdout);
}

}  // namespace

int run(const bench_options& o);

int main(int argc, char** argv) {
  bench_options o;
  CLI::App app{"Tunes OpEvo's CPU problems and compares with the FMA peak, oneDNN and OpenBLAS"};
  tune::bench::last_value_wins(app);
  app.add_option("--tasks", o.tasks, "Comma-separated: MM1-MM3, BMM1-BMM3, C1, C2 or task strings");
  app.add_option("--rounds", o.rounds,
                 "Rounds of timing the best configuration and each vendor kernel alternately after a search")
      ->check(tune::bench::more_than_zero());
  app.add_option("--conv-batch", o.conv_batch, "Batch of C1 and C2 (the paper's: 512)")
      ->check(tune::bench::more_than_zero());
  app.add_flag("--own-layouts", o.own_layouts,
               "C1 and C2 in the kernel's own layouts: the conversions from and to NCHW run outside the timed "
               "kernel, as in oneDNN's own-layout figure");
  app.add_option("--trials", o.trials, "Trials per task")->check(tune::bench::more_than_zero());
  app.add_option("--threads", o.threads, "Threads (cores) per kernel")->check(tune::bench::more_than_zero());
  app.add_option("--first-core", o.first_core,
                 "The kernels, vendors and FMA loop run on cores first-core .. +threads-1")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--seed", o.seed, "Seed of the search");
  app.add_option("--strategy", o.strategy, "A strategy name (opevo, random, bo, ...)");
  app.add_option("--min-time", o.min_time, "Seconds of repeats per measurement")->check(tune::bench::more_than_zero());
  app.add_option("--run-timeout", o.run_timeout, "Seconds after which a measurement is a run_timeout")
      ->check(tune::bench::more_than_zero());
  app.add_option("--user", o.user, "Tune a user kernel's launch description instead");
  app.add_option("--config", o.config,
                 "A configuration (JSON) of the one task to time beside the vendors instead of searching");
  if (auto rc = tune::bench::parse_options(app, argc, argv)) return *rc;
  try {
    return run(o);
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_cpu_kernels: {}\n", e.what());
    return 2;
  }
}

int run(const bench_options& o) {
  pin_to_cores(o.first_core, o.threads);
  tune::task_backend_options options;
  options.threads = o.threads;
  options.first_core = o.first_core;
  options.measurement.min_time_s = o.min_time;
  // A slow configuration is timed once; fast ones repeat until min_time.
  options.measurement.min_repeats = 1;

  if (!o.user.empty()) {
    auto backend = tune::make_user_kernel_backend(o.user, "cpu", options);
    auto program = tune::read_user_kernel(o.user);
    report("user", tune_backend(backend, program->flops, o));
    return 0;
  }

  if (!o.config.empty() && o.tasks.find(',') != std::string::npos)
    throw std::invalid_argument("--config: give one task in --tasks (the configuration is of one task's space)");
  const double peak = fma_peak_gflops();
  const double gbps = stream_gbps(o.first_core, o.threads);
  fmt::print(
      "CPU: {} thread(s), seed {}, {} trials per task, strategy {}; FMA peak of one core {:.1f} GFLOP/s; streaming "
      "bandwidth {:.1f} GB/s\n",
      o.threads, o.seed, o.trials, o.strategy, peak, gbps);
  tune::vendor_options vendor;
  vendor.threads = o.threads;
  vendor.first_core = o.first_core;
  vendor.rounds = o.rounds;
  std::vector<table_row> rows;
  std::stringstream list(o.tasks);
  std::string name;
  while (std::getline(list, name, ',')) {
    std::string text = tune::bench::paper_task(name, o.conv_batch, o.own_layouts);
    auto task = tune::parse_task(text);
    auto backend = tune::make_task_backend(task, "cpu", options);
    tuning_outcome outcome;
    if (o.config.empty()) {
      outcome = tune_backend(backend, task.flops(), o);
      report(name, outcome);
    } else {
      outcome.best = backend->space()->from_json(o.config);
      outcome.best_config = o.config;
      outcome.best_at.emplace_back(0, gflops_of(task, outcome.best, options, o.min_time));
      outcome.ok = 1;
    }
    table_row row;
    row.name = name;
    row.task = task.to_string();
    row.traffic_bound = traffic_gflops(task, gbps);
    row.gflops = outcome.best_at.empty() ? 0.0 : outcome.best_at.back().second;
    // The best configuration and each vendor kernel, timed alternately in
    // one process (its shared object from the compile cache).
    if (row.gflops > 0) {
      try {
        row.comparison =
            tune::compare_with_vendors(task, tune::cpu_tuned_kernel(task, o.threads, *backend, outcome.best), vendor);
      } catch (const std::exception& e) {
        row.note = e.what();
      }
    } else {
      row.note = "no configuration ran";
    }
    fmt::print("{:<6} best configuration timed alternately with the vendors: {:.1f} GFLOP/s (median)\n", name,
               row.comparison.tuned_gflops);
    row.trials = outcome.ok + outcome.failed;
    row.seconds = outcome.seconds;
    rows.push_back(row);
  }
  // The FMA loop again: a burst of load at the start would make every
  // fraction of peak look better than it is; the better of the two is kept.
  print_table(rows, std::max(peak, fma_peak_gflops()), o.threads, gbps);
  return 0;
}
