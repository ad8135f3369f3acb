// Soak: long runs through the whole pipeline, results database included, with
// the default strategy and with opevo+knn. Two legs per strategy:
//   replay     the GEMM RTX 3090 dataset (17,956 configurations, the largest
//              vendored one) on 8 compile workers and 4 simulated devices at a
//              small time scale, until the budget or the space is spent;
//   objective  a synthetic objective over the OpEvo MatMul space (4,152,720
//              configurations), so that a run reaches the full budget.
// Sampled during each run, in the population's thread (the trial callback):
// the process's CPU time every 10th trial (all threads: actors, strategy,
// SQLite, CAF; less the sampling's own; reading it sums every thread's clock,
// about a microsecond with the run's twenty threads), its resident memory and
// live heap (malloc's bytes in use) and the database's size on disk every
// 250th. Printed: process CPU per trial over the
// `--window` trials ending at 1k, 10k and 20k observations (or the last
// trial), the engine CPU per trial the run reports (the actors' handlers and
// the dispatch between them, whole run), resident memory and live heap
// at fixed points and their growth per trial after warm-up, and the database's
// bytes per trial.
// Usage: bench_soak [--trials 20000] [--strategies default,opevo+knn]
//                   [--legs replay,objective] [--time-scale 0.0001]
//                   [--window 500] [--seed 1] [--dir DIR]
#include <fmt/core.h>
#include <malloc.h>
#include <time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_text.hpp"
#include "synthetic_objective.hpp"
#include "tune/engine/readers.hpp"
#include "tune/engine/strategy.hpp"
#include "tune/tune.hpp"

using namespace tune;
namespace fs = std::filesystem;

namespace {

// Trials between two CPU samples; windows begin and end on multiples of it.
constexpr std::uint64_t cpu_stride = 10;

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double resident_mib() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

std::uintmax_t file_bytes(const fs::path& path) {
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  return ec ? 0 : size;
}

/// Bytes the allocator has handed out and not had back (all arenas): the
/// live heap, without the allocator's free space and the mapped files that
/// resident memory also counts.
double heap_in_use_mib() { return static_cast<double>(mallinfo2().uordblks) / (1024.0 * 1024.0); }

/// The database and its write-ahead log.
std::uintmax_t db_bytes(const fs::path& db) { return file_bytes(db) + file_bytes(db.string() + "-wal"); }

struct sample {
  std::uint64_t trials = 0;
  double cpu_s = 0.0;
  double rss_mib = 0.0;
  double heap_mib = 0.0;
  std::uintmax_t db_bytes = 0;
};

struct leg_result {
  std::vector<sample> samples;  // trials 0, 10, 20, …
  run_report report;
  std::uintmax_t db_bytes_closed = 0;
};

leg_result run_leg(const std::string& leg, const std::string& strategy, std::uint64_t trials, double time_scale,
                   std::uint64_t seed, const fs::path& dir) {
  session_options o;
  if (leg == "replay") {
    o.dataset = std::string(TUNE_DATA_DIR) + "/datasets/gemm_clblast/RTX_3090.json.gz";
    o.topology_file = std::string(TUNE_DATA_DIR) + "/topologies/replay_8x4.yaml";
    o.time_scale = time_scale;
  } else if (leg == "objective") {
    auto space = std::make_shared<const search_space>(
        read_space_file(std::string(TUNE_DATA_DIR) + "/specs/opevo_mm_N512K1024M1024_search_space.json"));
    o.space = space;
    o.objective = [space](const configuration& config) { return bench::synthetic_ms(*space, config); };
    o.task_name = "soak:opevo_mm";
  } else {
    throw std::invalid_argument("unknown leg " + leg + " (replay or objective)");
  }
  o.strategy = strategy == "default" ? "" : strategy;
  o.budget.trials = trials;
  o.seed = seed;
  fs::path db = dir / ("soak_" + leg + "_" + (strategy == "opevo+knn" ? "opevo_knn" : strategy) + ".db");
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(db.string() + suffix);
  o.db_path = db.string();

  leg_result out;
  out.samples.reserve(trials / cpu_stride + 1);
  out.samples.push_back({0, process_cpu_seconds(), resident_mib(), heap_in_use_mib(), db_bytes(db)});
  std::uint64_t seen = 0;
  // CPU spent reading /proc, malloc's statistics (a walk over the heap) and
  // the file sizes: taken out of the CPU samples, which count the run's work.
  double sampling_s = 0.0;
  o.on_trial = [&](const trial_info&) {
    if (++seen % cpu_stride != 0) return;
    sample s{seen, process_cpu_seconds() - sampling_s, 0.0, 0.0, 0};
    // /proc and stat() every 250 trials: cheap, and enough for a curve.
    if (seen % 250 == 0) {
      double from = process_cpu_seconds();
      s.rss_mib = resident_mib();
      s.heap_mib = heap_in_use_mib();
      s.db_bytes = db_bytes(db);
      sampling_s += process_cpu_seconds() - from;
    }
    out.samples.push_back(s);
  };
  {
    session run(o);
    out.report = run.run();
  }
  out.db_bytes_closed = db_bytes(db);
  return out;
}

}  // namespace

int main(int argc, char** argv) try {
  std::uint64_t trials = 20000;
  std::vector<std::string> strategies = {"default", "opevo+knn"};
  std::vector<std::string> legs = {"replay", "objective"};
  double time_scale = 1e-4;
  std::size_t window = 500;
  std::uint64_t seed = 1;
  fs::path dir = fs::temp_directory_path() / "tune-soak";
  CLI::App app{
      "Soak: long runs through the whole pipeline, results database included: CPU per trial at 1k, 10k "
      "and the end, resident memory and live heap and their growth, database bytes per trial"};
  bench::last_value_wins(app);
  app.add_option("--trials", trials, "Trials of each run")->capture_default_str()->check(bench::more_than_zero());
  bench::add_list(app, "--strategies", strategies, "Strategies ('default': the default strategy)");
  bench::add_list(app, "--legs", legs, "Legs: replay (the GEMM RTX 3090 dataset), objective (synthetic)")
      ->check(CLI::IsMember({"replay", "objective"}));
  app.add_option("--time-scale", time_scale, "The replay leg's wall seconds per simulated second")
      ->capture_default_str()
      ->check(bench::more_than_zero());
  app.add_option("--window", window, "Trials of each CPU window")->capture_default_str();
  app.add_option("--seed", seed, "Seed of every run")->capture_default_str();
  std::string dir_text = dir.string();
  app.add_option("--dir", dir_text, "Folder of the runs' databases")->capture_default_str();
  if (auto rc = tune::bench::parse_options(app, argc, argv)) return *rc;
  dir = dir_text;
  if (window < cpu_stride || window % cpu_stride != 0)
    throw std::invalid_argument("--window must be a positive multiple of " + std::to_string(cpu_stride));
  fs::create_directories(dir);
  fmt::print("soak: {} trials per run, seed {}, replay time scale {}, CPU windows of {} trials, databases in {}\n",
             trials, seed, time_scale, window, dir.string());
  fmt::print("default strategy: {}\n\n", default_strategy_name());
  fmt::print("{:<10} {:<10} {:>7} {:>8} {:>9} {:>11} {:>11} {:>11} {:>12} {:>9} {:>10}\n", "leg", "strategy", "trials",
             "wall_s", "end", "cpu_us@1k", "cpu_us@10k", "cpu_us@end", "engine_us/t", "db_B/t", "best_ms");
  struct curve {
    std::string name;
    std::vector<std::pair<std::uint64_t, double>> rss, heap;
    double growth_b_per_trial = 0.0, heap_growth_b_per_trial = 0.0;
  };
  // Growth after warm-up: least squares slope of MiB over trials from 2,000
  // on, in bytes per trial.
  auto growth = [](const std::vector<std::pair<std::uint64_t, double>>& points) {
    double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (auto [t, mib] : points) {
      if (t < 2000) continue;
      double x = static_cast<double>(t), y = mib * 1024.0 * 1024.0;
      n += 1;
      sx += x;
      sy += y;
      sxx += x * x;
      sxy += x * y;
    }
    return n >= 2 ? (n * sxy - sx * sy) / (n * sxx - sx * sx) : 0.0;
  };
  std::vector<curve> curves;
  for (const auto& leg : legs) {
    for (const auto& strategy : strategies) {
      auto r = run_leg(leg, strategy, trials, time_scale, seed, dir);
      const auto& s = r.samples;
      std::uint64_t done = r.report.trials;
      // Over the `window` trials ending at `end` (or at the last sample).
      auto cpu_us = [&](std::uint64_t end) -> double {
        std::size_t to = std::min<std::size_t>(end / cpu_stride, s.size() - 1);
        std::size_t from = to > window / cpu_stride ? to - window / cpu_stride : 0;
        if (to <= from) return NAN;
        return (s[to].cpu_s - s[from].cpu_s) * 1e6 / static_cast<double>(s[to].trials - s[from].trials);
      };
      fmt::print("{:<10} {:<10} {:>7} {:>8.1f} {:>9} {:>11.1f} {:>11.1f} {:>11.1f} {:>12.1f} {:>9.0f} {:>10.4f}\n", leg,
                 strategy, done, r.report.wall_s, std::string(to_string(r.report.reason)), cpu_us(1000), cpu_us(10000),
                 cpu_us(done), r.report.engine_cpu_us_per_trial,
                 done ? static_cast<double>(r.db_bytes_closed) / static_cast<double>(done) : 0.0,
                 r.report.best ? r.report.best->time_ms : NAN);
      std::fflush(stdout);
      curve c;
      c.name = leg + " " + strategy;
      for (const auto& x : s)
        if (x.trials > 0 && x.trials % 250 == 0) {
          c.rss.push_back({x.trials, x.rss_mib});
          c.heap.push_back({x.trials, x.heap_mib});
        }
      c.growth_b_per_trial = growth(c.rss);
      c.heap_growth_b_per_trial = growth(c.heap);
      curves.push_back(std::move(c));
    }
  }
  auto print_curves = [&](const char* what, auto points, auto slope) {
    fmt::print(
        "\n{} (MiB) at 1k / 2k / 5k / 10k / 15k / 20k trials (or the last sample), and its growth per trial "
        "from 2k on:\n",
        what);
    for (const auto& c : curves) {
      std::string line;
      for (std::uint64_t at : {1000, 2000, 5000, 10000, 15000, 20000}) {
        double value = NAN;
        for (auto [t, mib] : c.*points)
          if (t <= at) value = mib;
        line += fmt::format(" {:>7.1f}", value);
      }
      fmt::print("{:<22}{}   {:+.0f} B/trial\n", c.name, line, c.*slope);
    }
  };
  print_curves("resident memory", &curve::rss, &curve::growth_b_per_trial);
  print_curves("heap in use (malloc's live bytes)", &curve::heap, &curve::heap_growth_b_per_trial);
  return 0;
} catch (const std::exception& e) {
  fmt::print(stderr, "bench_soak: {}\n", e.what());
  return 2;
}
