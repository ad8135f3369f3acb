// Time to solution on replayed datasets: simulated seconds until f = optimum /
// best found reaches 0.90, 0.95 and 0.99, for one strategy scheduled three
// ways on the virtual clock of replay_scheduled_search:
//   steady        the pipeline's steady state on the topology's compile
//                 workers and devices (default data/topologies/replay_8x4.yaml)
//   generational  the same workers and devices, batches of --batch
//   serial        one compile worker, one device, compile then measure, one
//                 evaluation at a time (Kernel Tuner's simulation mode's accounting)
// and, as the peer's anchor, the evaluations the best of Kernel Tuner 1.0's
// strategies needed for that mean f (the first of 20 / 50 / 100 / 200 / 500
// evaluations at which its published mean f reaches it) times the space's
// mean compile + run time.
//
//   bench_time_to_solution [--strategy bo] [--runs R] [--seed S] [--budget N]
//                          [--topology FILE] [--prefetch P] [--batch B] [--threads T] [--out DIR]
//                          [--kinds KINDS.json] DATASET …
//
// --prefetch replaces every device's prefetch of the topology (the steady
// state then keeps compile workers + devices × (1 + P) in flight).
// Writes DIR/time_to_solution.md (the tables) and DIR/time_to_solution.csv
// (one row per dataset, schedule and seed).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "bench_replay.hpp"
#include "bench_text.hpp"
#include "tune/kernels/replay.hpp"
#include "tune/kernels/replay_schedule.hpp"
#include "tune/kernels/replay_stats.hpp"
#include "tune/storage/topology.hpp"

namespace {

using namespace tune;
using bench::dataset_label;
using bench::find_peer;
using bench::peer_row;

constexpr double targets[] = {0.90, 0.95, 0.99};
constexpr std::size_t n_targets = std::size(targets);
constexpr double inf = std::numeric_limits<double>::infinity();

/// One run: per target, simulated seconds and evaluations to reach it
/// (infinite when never reached within the budget).
struct run_result {
  double time_s[n_targets];
  double evals[n_targets];
  double makespan_s = 0;
  std::size_t steps = 0;
  double wall_s = 0;  ///< real seconds the replay took (the strategy's own work, mostly)
};

run_result measure(const replay_run_result& run, double optimum_ms) {
  run_result r;
  for (std::size_t t = 0; t < n_targets; ++t) {
    auto i = first_step_reaching(run, optimum_ms, targets[t]);
    r.time_s[t] = i ? run.steps[*i].sim_time_s : inf;
    r.evals[t] = i ? static_cast<double>(*i + 1) : inf;
  }
  r.makespan_s = run.steps.empty() ? 0 : run.steps.back().sim_time_s;
  r.steps = run.steps.size();
  r.wall_s = run.wall_s;
  return r;
}

/// The q-quantile (linear between order statistics) of values that may be
/// infinite (not reached): infinite when it falls among those.
double quantile(std::vector<double> xs, double q) {
  std::sort(xs.begin(), xs.end());
  double pos = q * static_cast<double>(xs.size() - 1);
  auto lo = static_cast<std::size_t>(std::floor(pos));
  auto hi = static_cast<std::size_t>(std::ceil(pos));
  if (!std::isfinite(xs[hi])) return inf;
  return xs[lo] + (pos - static_cast<double>(lo)) * (xs[hi] - xs[lo]);
}

std::string fmt_s(double s) {
  if (!std::isfinite(s)) return "n.r.";
  if (s >= 100) return fmt::format("{:.0f}", s);
  if (s >= 10) return fmt::format("{:.1f}", s);
  if (s >= 0.1) return fmt::format("{:.2f}", s);
  return fmt::format("{:.2g}", s);
}

std::size_t reached(const std::vector<run_result>& runs, std::size_t t) {
  std::size_t n = 0;
  for (const auto& r : runs) n += std::isfinite(r.time_s[t]) ? 1 : 0;
  return n;
}

std::vector<double> column(const std::vector<run_result>& runs, std::size_t t, bool time) {
  std::vector<double> xs;
  for (const auto& r : runs) xs.push_back(time ? r.time_s[t] : r.evals[t]);
  return xs;
}

/// "median (p25–p75)" of the time to target t, n.r. = not reached.
std::string cell_text(const std::vector<run_result>& runs, std::size_t t) {
  auto xs = column(runs, t, true);
  std::string text =
      fmt::format("{} ({}–{})", fmt_s(quantile(xs, 0.5)), fmt_s(quantile(xs, 0.25)), fmt_s(quantile(xs, 0.75)));
  std::size_t missed = runs.size() - reached(runs, t);
  if (missed) text += fmt::format(", {} n.r.", missed);
  return text;
}

std::string ratio_text(double num, double den) {
  if (!std::isfinite(num) || !std::isfinite(den) || den <= 0) return "–";
  return fmt::format("{:.2f}", num / den);
}

/// The first published budget at which the peer's mean f reaches `target`,
/// and the budget before it (0 for the first): the peer needed more than the
/// one and at most the other.
std::optional<std::pair<std::size_t, std::size_t>> peer_evals(const peer_row& p, double target) {
  const std::pair<std::size_t, double> grid[] = {{20, p.f20}, {50, p.f50}, {100, p.f100}, {200, p.f200}, {500, p.f500}};
  std::size_t before = 0;
  for (auto [evals, f] : grid) {
    if (f >= target) return std::pair{before, evals};
    before = evals;
  }
  return std::nullopt;
}

const char* peer_strategy(const peer_row& p, std::size_t evals) {
  switch (evals) {
    case 20:
      return p.s20;
    case 50:
      return p.s50;
    case 100:
      return p.s100;
    case 200:
      return p.s200;
    default:
      return p.s500;
  }
}

/// Mean simulated seconds of one evaluation chosen uniformly from the
/// dataset, as Kernel Tuner's simulation mode charges it.
double mean_cost_s(const replay_dataset& d) {
  double sum = 0;
  for (const auto& r : d.records) sum += r.compile_s + r.benchmark_s + r.verification_s;
  return sum / static_cast<double>(d.records.size());
}

struct schedule_case {
  std::string name;
  replay_schedule schedule;
};

/// The topology's compile workers, devices, prefetch and timeouts; every
/// device must have the same prefetch.
replay_schedule schedule_of(const storage::topology& topo) {
  if (topo.devices.empty() || !topo.nodes.empty())
    throw std::invalid_argument(topo.origin + ": give local devices only (no nodes) to replay on");
  replay_schedule s;
  s.compile_workers = topo.compile_workers;
  s.devices = topo.devices.size();
  s.prefetch = topo.devices.front().prefetch;
  for (const auto& dev : topo.devices)
    if (dev.prefetch != s.prefetch)
      throw std::invalid_argument(topo.origin + ": every device needs the same prefetch to replay on");
  s.compile_timeout_s = topo.timeouts.compile_s;
  s.run_timeout_s = topo.timeouts.run_s;
  return s;
}

int run(int argc, char** argv) {
  bench::replay_bench_args args;
  args.runs = 30;
  std::size_t batch = 8;
  std::optional<std::size_t> prefetch;
  unsigned threads = 2;
  std::string strategy_name = default_strategy_name();
  std::string topology_file = "data/topologies/replay_8x4.yaml";
  std::size_t prefetch_value = 0;
  CLI::App app{
      "Time to solution on replayed datasets: evaluations and simulated time to reach targets, steady "
      "state against generations against one at a time, on a topology's devices"};
  bench::last_value_wins(app);
  args.add_to(app);
  app.add_option("--strategy", strategy_name, "Strategy")->capture_default_str();
  app.add_option("--topology", topology_file, "The topology of replay devices and compile workers")
      ->capture_default_str();
  auto* prefetch_option =
      app.add_option("--prefetch", prefetch_value, "Candidates each device holds ahead (default: the topology's)");
  app.add_option("--batch", batch, "The generational schedule's batch")
      ->capture_default_str()
      ->check(bench::more_than_zero());
  app.add_option("--threads", threads, "Threads running the replays")
      ->capture_default_str()
      ->check(bench::more_than_zero());
  if (auto rc = tune::bench::parse_options(app, argc, argv)) return *rc;
  args.finish(app);
  if (prefetch_option->count() > 0) prefetch = prefetch_value;
  const std::size_t runs = args.runs, budget = args.budget;
  const std::uint64_t seed = args.seed;
  const std::string& out_dir = args.out_dir;

  auto topo = storage::load_topology(topology_file);
  if (prefetch)
    for (auto& dev : topo.devices) dev.prefetch = *prefetch;
  std::vector<schedule_case> cases;
  cases.push_back({"steady", schedule_of(topo)});
  cases.push_back({"generational", schedule_of(topo)});
  cases.back().schedule.generational = true;
  cases.back().schedule.batch = batch;
  cases.push_back({"serial", replay_schedule::serial()});
  const auto& wide = cases.front().schedule;

  std::filesystem::create_directories(out_dir);
  std::ofstream csv(out_dir + "/time_to_solution.csv");
  csv << "dataset,schedule,strategy,seed";
  for (double t : targets) csv << fmt::format(",evals_to_{0:.2f},time_to_{0:.2f}_s", t);
  csv << ",evaluations,makespan_s,wall_s\n";

  std::ostringstream md, cost_md;
  md << fmt::format(
      "Simulated seconds until f = optimum / best found reaches the target: median (25th–75th percentile) over {} "
      "runs (seeds {}..{}) of `{}`, at most {} evaluations each; n.r. = runs that did not reach it within the "
      "budget (counted as slower than every run that did, never dropped). steady = the pipeline's steady state "
      "on {} compile workers and {} devices (prefetch {}, {} in flight; {}{}), generational = the same in batches "
      "of {}, serial = one compile worker and one device, compile then measure, one evaluation at a time "
      "(Kernel Tuner's simulation mode's accounting). All on the virtual clock of `replay_scheduled_search`: "
      "recorded compile and run times only, the strategy's own time not counted. Kernel Tuner = the best of "
      "Kernel Tuner 1.0's strategies: the first of 20 / 50 / 100 / 200 / 500 evaluations at which its published "
      "mean f reaches the target (it needed more than the grid point before), times the space's mean compile + "
      "run time; its ratio to steady is given at both grid points.\n\n",
      runs, seed, seed + runs - 1, strategy_name, budget, wide.compile_workers, wide.devices, wide.prefetch,
      wide.capacity(), topology_file, prefetch ? " with --prefetch " + std::to_string(*prefetch) : "", batch);
  md << "| space | f | steady s | generational s | serial s | gen. / steady | serial / steady | evals steady / "
        "serial | Kernel Tuner evals (strategy) | Kernel Tuner s | Kernel Tuner / steady |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|\n";
  cost_md << "| space | mean compile s | mean run s | 500 evaluations: steady s | generational s | serial s | serial "
             "/ steady | strategy's own time per run (real s, median) |\n"
             "|---|---|---|---|---|---|---|---|\n";
  // Per ratio and target, one value per space where both medians are finite.
  constexpr std::size_t n_ratios = 6;
  const char* ratio_names[n_ratios] = {"generational / steady",         "serial / steady",
                                       "Kernel Tuner (lower) / serial", "Kernel Tuner (upper) / serial",
                                       "Kernel Tuner (lower) / steady", "Kernel Tuner (upper) / steady"};
  std::vector<double> ratios[n_ratios][n_targets];
  auto add_ratio = [&](std::size_t k, std::size_t t, double num, double den) {
    if (std::isfinite(num) && std::isfinite(den) && num > 0 && den > 0) ratios[k][t].push_back(num / den);
  };

  for (const auto& [path, kinds_file] : args.datasets) {
    auto label = dataset_label(path);
    auto dataset = read_replay_dataset(path, kinds_file.empty() ? kind_overrides{} : read_kind_overrides(kinds_file));
    replay_run_options options;
    options.strategy = strategy_name;
    options.budget = budget;
    options.seed = seed;
    std::vector<std::vector<run_result>> results;
    for (const auto& c : cases) {
      auto start = std::chrono::steady_clock::now();
      std::vector<run_result> measured;
      for (const auto& run : replay_scheduled_searches(dataset, options, c.schedule, runs, threads))
        measured.push_back(measure(run, dataset.best_time_ms()));
      results.push_back(std::move(measured));
      fmt::print(stderr, "{} {}: {:.1f} s\n", label, c.name,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      for (std::size_t r = 0; r < runs; ++r) {
        const auto& x = results.back()[r];
        csv << fmt::format("{},{},{},{}", label, c.name, strategy_name, seed + r);
        for (std::size_t t = 0; t < n_targets; ++t) {
          if (std::isfinite(x.time_s[t]))
            csv << fmt::format(",{:.0f},{:.4f}", x.evals[t], x.time_s[t]);
          else
            csv << ",,";
        }
        csv << fmt::format(",{},{:.4f},{:.4f}\n", x.steps, x.makespan_s, x.wall_s);
      }
    }
    const auto& steady = results[0];
    const auto& gen = results[1];
    const auto& serial = results[2];
    const double cost = mean_cost_s(dataset);
    const auto* peer = find_peer(label);
    for (std::size_t t = 0; t < n_targets; ++t) {
      double steady_med = quantile(column(steady, t, true), 0.5);
      double gen_med = quantile(column(gen, t, true), 0.5);
      double serial_med = quantile(column(serial, t, true), 0.5);
      add_ratio(0, t, gen_med, steady_med);
      add_ratio(1, t, serial_med, steady_med);
      std::string peer_evals_text = "–", peer_s = "–", peer_ratio = "–";
      if (peer) {
        if (auto e = peer_evals(*peer, targets[t])) {
          double hi = static_cast<double>(e->second) * cost, lo = static_cast<double>(e->first) * cost;
          peer_evals_text = fmt::format("{}–{} ({})", e->first, e->second, peer_strategy(*peer, e->second));
          peer_s = fmt::format("{}–{}", fmt_s(lo), fmt_s(hi));
          peer_ratio = fmt::format("{}–{}", ratio_text(lo, steady_med), ratio_text(hi, steady_med));
          add_ratio(2, t, lo, serial_med);
          add_ratio(3, t, hi, serial_med);
          add_ratio(4, t, lo, steady_med);
          add_ratio(5, t, hi, steady_med);
        } else {
          peer_evals_text = "> 500";
          peer_s = fmt::format("> {}", fmt_s(500 * cost));
        }
      }
      md << fmt::format("| {} | {:.2f} | {} | {} | {} | {} | {} | {} / {} | {} | {} | {} |\n", label, targets[t],
                        cell_text(steady, t), cell_text(gen, t), cell_text(serial, t), ratio_text(gen_med, steady_med),
                        ratio_text(serial_med, steady_med), fmt_s(quantile(column(steady, t, false), 0.5)),
                        fmt_s(quantile(column(serial, t, false), 0.5)), peer_evals_text, peer_s, peer_ratio);
    }
    double mean_compile = 0, mean_run = 0;
    for (const auto& r : dataset.records) {
      mean_compile += r.compile_s;
      mean_run += r.benchmark_s + r.verification_s;
    }
    mean_compile /= static_cast<double>(dataset.records.size());
    mean_run /= static_cast<double>(dataset.records.size());
    auto median_of = [](const std::vector<run_result>& rs, double run_result::*field) {
      std::vector<double> xs;
      for (const auto& r : rs) xs.push_back(r.*field);
      return quantile(xs, 0.5);
    };
    double ms = median_of(steady, &run_result::makespan_s), mg = median_of(gen, &run_result::makespan_s),
           mser = median_of(serial, &run_result::makespan_s);
    cost_md << fmt::format("| {} | {:.3f} | {:.3f} | {} | {} | {} | {} | {:.2f} |\n", label, mean_compile, mean_run,
                           fmt_s(ms), fmt_s(mg), fmt_s(mser), ratio_text(mser, ms),
                           median_of(steady, &run_result::wall_s));
  }
  md << "\nGeometric means of the ratios of medians over the spaces where both reach the target (Kernel Tuner at "
        "the lower and the upper grid point):\n\n| ratio | f = 0.90 | f = 0.95 | f = 0.99 |\n|---|---|---|---|\n";
  for (std::size_t k = 0; k < n_ratios; ++k) {
    md << "| " << ratio_names[k];
    for (std::size_t t = 0; t < n_targets; ++t) {
      const auto& xs = ratios[k][t];
      double log_sum = 0;
      for (double x : xs) log_sum += std::log(x);
      md << (xs.empty() ? std::string(" | –")
                        : fmt::format(" | {:.2f} ({} space{})", std::exp(log_sum / static_cast<double>(xs.size())),
                                      xs.size(), xs.size() == 1 ? "" : "s"));
    }
    md << " |\n";
  }
  md << "\nThroughput (median over the runs; evaluations as many as the budget, or as the space holds):\n\n"
     << cost_md.str();
  std::ofstream(out_dir + "/time_to_solution.md") << md.str();
  fmt::print("{}", md.str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return tune::bench::guarded_main("bench_time_to_solution", run, argc, argv); }
