// A model's tasks on many simulated devices: through one pipeline
// (model_options::one_pipeline) against one round at a time (each round a
// session of its own), alternated seed by seed, in this process: D replay
// devices and W compile workers, the model's tasks replayed datasets
// (examples/models/replayed_gpu.yaml by default), `bo` unless told.
//
//   bench_model_busy [--model FILE] [--devices D] [--workers W] [--prefetch P] [--budget B]
//                    [--time-scale X] [--seeds N] [--round R] [--strategy S] [--nodes K]
//                    [--alone] [--no-rounds] [--one-budget N] [--out FILE.md]
//
// With --nodes K the D devices are spread over K `tune-engine node` processes
// on loopback (D / K replay devices each), the compile workers stay in this
// process, and every run is measured on the nodes.
//
// Per run: the search's wall seconds (model_report::search_s), trials per
// second, the devices' busy share over the search — the trials' recorded run
// seconds × the time scale, summed over every task's run in the results
// database, over D × the search's seconds (start-up and drain included) —,
// for the one pipeline each device's and the compile workers' busy share in
// steady state (model_report::device_busy, compile_busy: from the moment every
// device had delivered a result to the last hand-out), and
// the same steady state computed from the recorded trials for every device,
// local or on a node (each trial busy for its run seconds × the time scale up
// to the moment it was recorded; the window from the moment every device had
// a trial recorded to the moment the budget less the pipeline's capacity was
// recorded, when the last candidate was about to be handed out), and
// the model's weighted latency over its optimum (every task at its dataset's
// fastest). With --alone, each task of the one-pipeline run is also tuned
// alone on all D devices with as many trials as the model gave it (same seed),
// and its best is compared with the model's: optimum / best for each, the
// question being whether a task loses anything by sharing the devices. With
// --one-budget N the one pipeline gets N trials, and the bench prints when its
// latency first reached the one rounds ended with (its progress, about four
// times a second), against the rounds' wall seconds.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "bench_node_child.hpp"
#include "bench_replay.hpp"
#include "bench_text.hpp"
#include "tune/engine/median.hpp"
#include "tune/kernels/replay.hpp"
#include "tune/model.hpp"
#include "tune/storage/results_db.hpp"
#include "tune/tune.hpp"

namespace {

using namespace tune;
namespace fs = std::filesystem;

struct options {
  std::string model = std::string(TUNE_DATA_DIR) + "/../examples/models/replayed_gpu.yaml";
  std::uint32_t devices = 64;
  std::uint32_t workers = 1024;
  std::uint32_t prefetch = 2;
  std::uint64_t budget = 6400;
  double time_scale = 0.5;
  std::size_t seeds = 3;
  std::uint32_t round = 16;
  std::string strategy;
  bool alone = false;
  bool rounds = true;  ///< --no-rounds: the one pipeline only
  /// --one-budget: the one pipeline's budget (0: --budget), for the wall time
  /// it takes to reach the latency rounds end with.
  std::uint64_t one_budget = 0;
  std::uint32_t nodes = 0;  ///< --nodes: the devices on this many node processes
  std::string out;
};

struct run_figures {
  double search_s = 0, trials_per_s = 0, busy = 0, latency = 0;
  double steady_min = std::nan(""), steady_median = std::nan("");  // one pipeline: after warm-up
  double compile_busy = std::nan("");                              // one pipeline: after warm-up
  double trials_min = std::nan(""), trials_median = std::nan("");  // steady state from the trials
  model_report report;
};

fs::path scratch() {
  auto dir = fs::temp_directory_path() / fmt::format("bench_model_busy_{}", ::getpid());
  fs::create_directories(dir);
  return dir;
}

/// The node processes of --nodes, started once for every run.
std::vector<node_child>& node_children() {
  static std::vector<node_child> children;
  return children;
}

void start_nodes(const options& o) {
  if (o.nodes == 0) return;
  if (o.devices % o.nodes != 0)
    throw std::invalid_argument(fmt::format("--devices {} is not a multiple of --nodes {}", o.devices, o.nodes));
  auto path = scratch() / "node.yaml";
  std::ofstream(path) << fmt::format(
      "run_timeout_s: 600\ncompile_timeout_s: 600\ndevices:\n  - {{backend: replay, id: 0, name: sim, count: {}}}\n"
      "network:\n  heartbeat_s: 0.5\n  connection_timeout_s: 30\n",
      o.devices / o.nodes);
  for (std::uint32_t k = 0; k < o.nodes; ++k) node_children().push_back(start_node(path.string()));
}

void stop_nodes() {
  for (auto& node : node_children()) stop_node(node);
  node_children().clear();
}

std::string topology(const options& o) {
  auto path = scratch() / "topology.yaml";
  std::ofstream out(path);
  out << fmt::format("compile_workers: {}\ncompile_timeout_s: 600\nrun_timeout_s: 600\n", o.workers);
  if (o.nodes == 0) {
    out << fmt::format("devices:\n  - {{backend: replay, id: 0, name: sim, prefetch: {}, count: {}}}\nhosts: []\n",
                       o.prefetch, o.devices);
    return path.string();
  }
  out << "network:\n  heartbeat_s: 0.5\n  connection_timeout_s: 30\n  lost_timeout_s: 60\nnodes:\n";
  for (const auto& node : node_children())
    out << fmt::format("  - {{host: 127.0.0.1, port: {}, prefetch: {}}}\n", node.port, o.prefetch);
  return path.string();
}

/// Each device's busy share in steady state from the recorded trials (see
/// the comment at the top); empty when the window is empty.
std::vector<double> steady_busy_from_trials(const options& o, std::vector<storage::trial_record> trials) {
  std::sort(trials.begin(), trials.end(), [](const auto& a, const auto& b) { return a.finished_at < b.finished_at; });
  const std::uint64_t capacity = o.workers + std::uint64_t{o.devices} * (1 + o.prefetch);
  if (trials.size() <= capacity) return {};
  std::map<std::string, double> first;
  for (const auto& t : trials)
    if (!t.device.empty() && !first.count(t.device)) first[t.device] = t.finished_at;
  double from = 0;
  for (const auto& [device, at] : first) from = std::max(from, at);
  const double to = trials[trials.size() - capacity - 1].finished_at;
  if (!(to > from)) return {};
  std::map<std::string, double> busy;
  for (const auto& [device, at] : first) busy[device] = 0;
  for (const auto& t : trials) {
    if (t.device.empty()) continue;
    const double begin = std::max(from, t.finished_at - t.run_s * o.time_scale), end = std::min(to, t.finished_at);
    if (end > begin) busy[t.device] += end - begin;
  }
  std::vector<double> out;
  for (const auto& [device, seconds] : busy) out.push_back(seconds / (to - from));
  return out;
}

session_options base_session(const options& o, std::uint64_t seed, const std::string& db) {
  session_options s;
  s.db_path = db;
  s.seed = seed;
  s.strategy = o.strategy;
  s.time_scale = o.time_scale;
  s.topology_file = topology(o);
  s.use_cache = false;
  s.lease_devices = false;
  return s;
}

run_figures run_model(const options& o, const model& m, double optimum, std::uint64_t seed, bool one) {
  const auto db = (scratch() / fmt::format("m{}_{}.db", seed, one ? "one" : "rounds")).string();
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(db + suffix);
  model_options mo;
  mo.session = base_session(o, seed, db);
  mo.budget_trials = one && o.one_budget ? o.one_budget : o.budget;
  mo.round_trials = o.round;
  mo.one_pipeline = one;
  run_figures f;
  f.report = tune_model(m, mo);
  f.search_s = f.report.search_s;
  f.trials_per_s = static_cast<double>(f.report.trials) / f.search_s;
  storage::results_db results(db, storage::results_db::open_mode::read_only);
  double run_s = 0;
  std::vector<storage::trial_record> all;
  for (const auto& run : results.runs())
    for (auto& t : results.trials(run.id)) {
      run_s += t.run_s;
      all.push_back(std::move(t));
    }
  if (auto steady = steady_busy_from_trials(o, std::move(all)); !steady.empty()) {
    f.trials_min = *std::min_element(steady.begin(), steady.end());
    f.trials_median = median(steady);
  }
  f.busy = run_s * o.time_scale / (o.devices * f.search_s);
  f.latency = f.report.latency_ms / optimum;
  if (!f.report.device_busy.empty()) {
    f.steady_min = *std::min_element(f.report.device_busy.begin(), f.report.device_busy.end());
    f.steady_median = median(f.report.device_busy);
    f.compile_busy = f.report.compile_busy;
  }
  return f;
}

/// The task's best alone on all devices with `trials` trials.
double run_alone(const options& o, const model_task& task, std::uint64_t seed, std::uint64_t trials) {
  const auto db = (scratch() / fmt::format("alone{}.db", seed)).string();
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(db + suffix);
  auto s = base_session(o, seed, db);
  s.dataset = task.dataset;
  s.budget.trials = trials;
  auto r = tune_once(s);
  return r.best ? r.best->time_ms : std::nan("");
}

int run(int argc, char** argv) {
  options o;
  CLI::App app{
      "A model's tasks on many simulated devices: through one pipeline against one round at a time, "
      "alternated seed by seed (the comment at the top of bench/bench_model_busy.cpp says what is printed)"};
  bench::last_value_wins(app);
  app.add_option("--model", o.model, "The model file (its tasks replayed datasets)")->capture_default_str();
  app.add_option("--devices", o.devices, "Replay devices")->capture_default_str()->check(bench::more_than_zero());
  app.add_option("--workers", o.workers, "Compile workers")->capture_default_str()->check(bench::more_than_zero());
  app.add_option("--prefetch", o.prefetch, "Candidates each device holds ahead")->capture_default_str();
  app.add_option("--budget", o.budget, "Trials of each run")->capture_default_str()->check(bench::more_than_zero());
  app.add_option("--time-scale", o.time_scale, "Wall seconds per simulated second")
      ->capture_default_str()
      ->check(bench::more_than_zero());
  app.add_option("--seeds", o.seeds, "Seeds 1..N")->capture_default_str()->check(bench::more_than_zero());
  app.add_option("--round", o.round, "Trials of a round")->capture_default_str()->check(bench::more_than_zero());
  app.add_option("--strategy", o.strategy, "Strategy (default: the default strategy)");
  app.add_option("--nodes", o.nodes, "Spread the devices over this many tune-engine node processes on loopback")
      ->capture_default_str();
  app.add_flag("--alone", o.alone, "Also tune each task alone on all the devices with the trials the model gave it");
  app.add_flag("!--no-rounds", o.rounds, "The one pipeline only");
  app.add_option("--one-budget", o.one_budget,
                 "The one pipeline's budget (0: --budget); prints when it reached the latency rounds ended with")
      ->capture_default_str();
  app.add_option("--out", o.out, "Also write the table to this Markdown file");
  if (auto rc = tune::bench::parse_options(app, argc, argv)) return *rc;
  if (o.strategy.empty()) o.strategy = default_strategy_name();
  const model m = read_model(o.model);
  std::vector<double> optima;
  double optimum = 0;
  for (const auto& t : m.tasks) {
    if (t.dataset.empty()) throw std::invalid_argument(o.model + ": task " + t.label() + " is not a dataset");
    optima.push_back(read_replay_dataset(t.dataset).best_time_ms());
    optimum += t.count * optima.back();
  }
  start_nodes(o);
  const auto where = o.nodes ? fmt::format(
                                   "on {} `tune-engine node` processes on loopback, {} compile workers in "
                                   "this process",
                                   o.nodes, o.workers)
                             : fmt::format("and {} compile workers in one process", o.workers);
  std::string md = fmt::format(
      "Model {} ({} tasks), `{}`, {} trials in rounds of {}, {} replay devices (prefetch {}) {}, time scale {}; "
      "seeds 1–{}, the two ways alternated per seed.\n\n"
      "| seed | way | search s | trials/s | devices busy over the search | after warm-up: least, median | "
      "the same from the trials | compile workers busy after warm-up | latency / optimum |\n"
      "|---:|---|---:|---:|---:|---:|---:|---:|---:|\n",
      m.name, m.tasks.size(), o.strategy, o.budget, o.round, o.devices, o.prefetch, where, o.time_scale, o.seeds);
  std::vector<double> busy[2], rate[2], latency[2];
  std::vector<std::vector<double>> f_model(m.tasks.size()), f_alone(m.tasks.size());
  std::vector<std::string> reach;  // per seed: when the one pipeline reached rounds' final latency
  for (std::size_t seed = 1; seed <= o.seeds; ++seed) {
    model_report reports[2];
    for (int k = 0; k < 2; ++k) {
      const bool one = k == 0;
      if (!one && !o.rounds) continue;
      auto f = run_model(o, m, optimum, seed, one);
      reports[k] = f.report;
      busy[k].push_back(f.busy);
      rate[k].push_back(f.trials_per_s);
      latency[k].push_back(f.latency);
      const bool steady_known = std::isfinite(f.steady_min);
      const auto steady =
          steady_known ? fmt::format("{:.1f}%, {:.1f}%", 100 * f.steady_min, 100 * f.steady_median) : std::string("—");
      const auto compile = steady_known ? fmt::format("{:.1f}%", 100 * f.compile_busy) : std::string("—");
      const auto from_trials = std::isfinite(f.trials_min)
                                   ? fmt::format("{:.1f}%, {:.1f}%", 100 * f.trials_min, 100 * f.trials_median)
                                   : std::string("—");
      md += fmt::format("| {} | {} | {:.2f} | {:.1f} | {:.1f}% | {} | {} | {} | {:.4f} |\n", seed,
                        one ? "one pipeline" : "rounds", f.search_s, f.trials_per_s, 100 * f.busy, steady, from_trials,
                        compile, f.latency);
      std::fprintf(stderr, "seed %zu %s: %.2f s, busy %.1f%%\n", seed, one ? "one pipeline" : "rounds", f.search_s,
                   100 * f.busy);
      if (one && o.alone)
        for (std::size_t t = 0; t < m.tasks.size(); ++t) {
          const auto& task = f.report.tasks[t];
          if (!task.best || task.trials == 0) continue;
          f_model[t].push_back(optima[t] / task.best->time_ms);
          f_alone[t].push_back(optima[t] / run_alone(o, m.tasks[t], seed, task.trials));
        }
    }
    if (!o.rounds) continue;
    // The one pipeline's progress (about four times a second) against the
    // latency rounds ended with: the first moment it was as low.
    const double target = reports[1].latency_ms;
    std::string when = "not reached";
    for (const auto& p : reports[0].trace)
      if (std::isfinite(p.latency_ms) && p.latency_ms <= target * (1 + 1e-12)) {
        when = fmt::format("{:.2f} s ({} trials) against rounds' {:.2f} s", p.wall_s, p.trials, reports[1].search_s);
        break;
      }
    reach.push_back(fmt::format("seed {}: {}", seed, when));
  }
  auto mean = [](const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / v.size(); };
  if (o.rounds)
    md += fmt::format(
        "\nMedians: one pipeline {:.1f}% busy, {:.1f} trials/s, latency {:.4f} × the optimum; rounds {:.1f}% busy, "
        "{:.1f} trials/s, latency {:.4f}.\n",
        100 * median(busy[0]), median(rate[0]), median(latency[0]), 100 * median(busy[1]), median(rate[1]),
        median(latency[1]));
  if (!reach.empty()) {
    md += "\nThe one pipeline at rounds' final latency:\n\n";
    for (const auto& r : reach) md += "- " + r + "\n";
  }
  if (o.alone) {
    md += "\n| task | f in the model (one pipeline) | f alone on every device, as many trials |\n|---|---:|---:|\n";
    for (std::size_t t = 0; t < m.tasks.size(); ++t)
      if (!f_model[t].empty())
        md += fmt::format("| {} | {:.4f} | {:.4f} |\n", m.tasks[t].label(), mean(f_model[t]), mean(f_alone[t]));
    md += "\nf = the dataset's fastest time / the best found (1: the optimum), mean over seeds.\n";
  }
  std::fputs(md.c_str(), stdout);
  if (!o.out.empty()) std::ofstream(o.out) << md;
  stop_nodes();
  std::error_code ec;
  fs::remove_all(scratch(), ec);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int rc = tune::bench::guarded_main("bench_model_busy", run, argc, argv);
  stop_nodes();  // also after a failure
  return rc;
}
