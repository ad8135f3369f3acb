// tune-engine tune: runs one tuning session through the actor pipeline and
// records every trial in the results database.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.hpp"
#include "tune/actors/pipeline.hpp"
#include "tune/actors/run_recorder.hpp"
#include "tune/storage/topology.hpp"
#include "tune/kernels/blas_reference.hpp"
#include "tune/kernels/replay.hpp"
#include "tune/kernels/task.hpp"

namespace tune::cli {
namespace {

struct tune_args {
  std::string topology;
  std::string task;
  std::string space;
  std::string dataset;
  std::string strategy;
  std::uint64_t budget = 0;
  double time_budget_s = 0.0;
  std::uint64_t seed = 0;
  std::string db;
  bool resume = false;
  bool no_cache = false;
  std::string publish;
  bool publish_given = false;
  std::size_t publish_wait = 0;
  std::string summary_json;
  std::string mode = "steady";
  double time_scale = 1.0;
  bool time_scale_given = false;
  std::vector<std::string> hyper;
  bool quiet = false;
  bool compare_blas = false;
};

std::atomic<bool> stop_signal{false};

extern "C" void on_stop_signal(int) { stop_signal = true; }

std::map<std::string, double> parse_hyper(const std::vector<std::string>& items) {
  std::map<std::string, double> out;
  for (const auto& item : items) {
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      throw input_error("--hyper " + item + ": expected name=value, e.g. --hyper rho=8");
    std::string name = item.substr(0, eq), text = item.substr(eq + 1);
    std::size_t used = 0;
    double value = 0.0;
    try {
      value = std::stod(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != text.size()) throw input_error("--hyper " + item + ": '" + text + "' is not a number");
    out[name] = value;
  }
  return out;
}

/// All devices of one run share a backend; returns its name.
std::string topology_backend(const storage::topology& topo) {
  const std::string& name = topo.devices.front().backend;
  for (std::size_t d = 1; d < topo.devices.size(); ++d)
    if (topo.devices[d].backend != name)
      throw input_error(topo.origin + ": devices[" + std::to_string(d) + "].backend is '" + topo.devices[d].backend +
                        "' but devices[0].backend is '" + name + "'; all devices of a run must use one backend");
  return name;
}

backend_ptr make_backend(const tune_args& a, const std::string& backend_name, const storage::topology& topo) {
  if (!a.dataset.empty()) {
    if (backend_name != "replay")
      throw input_error(topo.origin + ": devices[0].backend is '" + backend_name +
                        "'; --dataset replays recorded measurements and needs 'backend: replay' devices");
    replay_backend_options options;
    options.time_scale = a.time_scale;
    options.seed = a.seed;
    return make_replay_backend(std::make_shared<const replay_dataset>(read_replay_dataset(a.dataset)), options);
  }
  if (a.time_scale_given)
    throw input_error("--time-scale applies to --dataset (replayed latencies) only; drop it for --task");
  if (!a.task.empty()) {
    if (backend_name == "replay")
      throw input_error(topo.origin + ": devices[0].backend is 'replay'; --task " + a.task +
                        " measures real kernels: use cpu or cuda devices, or replay a --dataset");
    task_backend_options options;
    options.first_core = 0;
    return make_task_backend(a.task, backend_name, options);
  }
  throw input_error("--space " + a.space +
                    ": a search space alone has no kernel to build and measure; tune a built-in kernel with --task "
                    "or replay measurements with --dataset");
}

nlohmann::json summary_json(const actors::run_summary& s, const actors::run_recorder& recorder,
                            const search_space& space, const storage::topology& topo) {
  nlohmann::json best = {{"config", nullptr}, {"time_ms", nullptr}};
  if (s.best.ok()) {
    best["config"] = nlohmann::json::parse(space.to_json(s.best.config));
    best["time_ms"] = s.best.time_ms;
  }
  nlohmann::json devices = nlohmann::json::object();
  for (std::size_t d = 0; d < s.devices.size() && d < topo.devices.size(); ++d)
    devices[topo.devices[d].name] = s.devices[d].busy_fraction();
  nlohmann::json trace = nlohmann::json::array();
  for (const auto& p : s.trace) trace.push_back({p.at_s, p.trials, p.time_ms});
  std::uint64_t total = s.prior_trials + s.trials;
  return {
      {"best", best},
      {"trials", total},
      {"new_trials", s.trials},
      {"run_id", recorder.run_id()},
      {"resumed", recorder.resumed()},
      {"reason", s.reason},
      {"wall_s", s.wall_s},
      {"sim_s", s.sim_s},
      {"busy", {{"compile", s.compile.busy_fraction()}, {"devices", devices}}},
      {"steady_trials_per_s", s.steady_rate},
      {"engine_cpu_us_per_trial", s.trials ? 1e6 * s.engine_cpu_s / static_cast<double>(s.trials) : 0.0},
      {"trace", trace},
  };
}

void print_summary(const actors::run_summary& s, const actors::run_recorder& recorder, const search_space& space,
                   const storage::topology& topo) {
  std::printf("run %lld%s: %llu trials (%llu new) in %.2f s wall, %.2f s simulated; ended by %s\n",
              static_cast<long long>(recorder.run_id()), recorder.resumed() ? " (resumed)" : "",
              static_cast<unsigned long long>(s.prior_trials + s.trials), static_cast<unsigned long long>(s.trials),
              s.wall_s, s.sim_s, s.reason.c_str());
  if (s.best.ok())
    std::printf("best %.6g ms: %s\n", s.best.time_ms, space.to_json(s.best.config).c_str());
  else
    std::printf("best: none (no trial succeeded)\n");
  std::printf("busy after warm-up: compile %.1f%%", 100.0 * s.compile.busy_fraction());
  for (std::size_t d = 0; d < s.devices.size() && d < topo.devices.size(); ++d)
    std::printf(", %s %.1f%%", topo.devices[d].name.c_str(), 100.0 * s.devices[d].busy_fraction());
  std::printf("\nsteady state: %.3f trials per simulated second; engine CPU %.1f us per trial\n", s.steady_rate,
              s.trials ? 1e6 * s.engine_cpu_s / static_cast<double>(s.trials) : 0.0);
}

/// For a built-in task: GFLOP/s of the best configuration and, when asked,
/// OpenBLAS on the same problem and the same number of threads.
nlohmann::json task_throughput(const tune_args& a, const actors::run_summary& s) {
  if (a.task.empty() || !s.best.ok() || !(s.best.time_ms > 0)) return nullptr;
  task_spec spec = parse_task(a.task);
  double gflops = spec.flops() / s.best.time_ms / 1e6;
  nlohmann::json out = {{"flops", spec.flops()}, {"gflops", gflops}};
  std::printf("best throughput: %.1f GFLOP/s (%s, %.4g GFLOP per run)\n", gflops, spec.to_string().c_str(),
              spec.flops() / 1e9);
  if (a.compare_blas) {
    const int threads = 1;  // one CPU device = one core (task_backend_options::threads)
    if (spec.op == operator_kind::conv2d) {
      std::printf("OpenBLAS: no BLAS equivalent of a convolution; nothing to compare\n");
    } else if (!blas_reference_available()) {
      std::printf("OpenBLAS: not built in (install libopenblas-dev and rebuild); nothing to compare\n");
    } else {
      double blas = blas_reference_gflops(spec, threads, 0.5, 0);
      std::printf("OpenBLAS sgemm: %.1f GFLOP/s on %d thread(s); best found = %.2fx OpenBLAS\n", blas, threads,
                  gflops / blas);
      out["blas"] = {{"library", "openblas"}, {"gflops", blas}, {"threads", threads}, {"ratio", gflops / blas}};
    }
  }
  return out;
}

int run_tune(const tune_args& a) {
  int sources = !a.task.empty() + !a.space.empty() + !a.dataset.empty();
  if (sources != 1) throw input_error("give exactly one of --task, --space, --dataset");
  if (a.budget == 0) throw input_error("--budget must be at least 1 trial");
  if (a.compare_blas && a.task.empty())
    throw input_error("--compare-blas compares a built-in --task (matmul or bmm) with OpenBLAS; drop it here");
  if (a.time_budget_s < 0) throw input_error("--time-budget must be >= 0 seconds");
  if (!(a.time_scale > 0))
    throw input_error("--time-scale must be > 0 (wall seconds per recorded second, e.g. 0.01 to replay 100x faster)");

  auto topo = storage::load_topology(a.topology);
  auto backend_name = topology_backend(topo);
  auto backend = make_backend(a, backend_name, topo);
  auto space = backend->space();

  strategy_options so;
  so.seed = a.seed;
  so.hyper = parse_hyper(a.hyper);
  std::uint32_t batch = 8;
  if (auto it = so.hyper.find("rho"); it != so.hyper.end()) {
    if (!(it->second >= 1)) throw input_error("--hyper rho=" + std::to_string(it->second) + ": must be >= 1");
    batch = static_cast<std::uint32_t>(it->second);
  }
  auto search = make_strategy(a.strategy, space, so);

  actors::recorder_options ro;
  ro.db_path = a.db;
  ro.spec.task_key = backend->task_key();
  ro.spec.strategy = a.strategy;
  ro.spec.seed = a.seed;
  ro.spec.device_kind = backend->device_kind();
  nlohmann::json options_json = {
      {"budget", a.budget}, {"time_budget_s", a.time_budget_s}, {"mode", a.mode},
      {"hyper", so.hyper},  {"topology", topo.summary()},       {"time_scale", a.time_scale}};
  ro.spec.options_json = options_json.dump();
  ro.resume = a.resume;
  ro.use_cache = !a.no_cache;
  if (a.publish_given) ro.publish_endpoint = a.publish.empty() ? storage::default_event_endpoint : a.publish;
  ro.wait_for_subscribers = a.publish_wait;
  ro.space = space;
  ro.devices = topo.devices;
  ro.budget_trials = static_cast<std::int64_t>(a.budget);
  if (a.time_budget_s > 0) ro.budget_seconds = a.time_budget_s;
  ro.topology = topo.summary();
  auto recorder = std::make_shared<actors::run_recorder>(ro);

  actors::pipeline_options po;
  po.compile_workers = static_cast<std::uint32_t>(topo.compile_workers);
  po.devices.clear();
  for (const auto& d : topo.devices) po.devices.push_back({d.id, static_cast<std::uint32_t>(d.prefetch)});
  po.compile_timeout_s = topo.compile_timeout_s;
  po.run_timeout_s = topo.run_timeout_s;
  po.time_scale = a.time_scale;
  po.budget = a.budget;
  po.time_budget_s = a.time_budget_s;
  po.mode = a.mode == "generational" ? actors::pipeline_mode::generational : actors::pipeline_mode::steady;
  po.batch = batch;
  po.prior = recorder->prior();
  po.progress_line = !a.quiet;
  po.listener = recorder;
  po.cache = recorder->cache();
  po.stop_requested = [] { return stop_signal.load(); };

  stop_signal = false;
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  if (!a.quiet && recorder->resumed())
    std::fprintf(stderr, "resuming run %lld: %zu trials recorded\n", static_cast<long long>(recorder->run_id()),
                 po.prior.size());
  recorder->started();
  auto summary = actors::run_pipeline(backend, std::move(search), po);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  bool interrupted = summary.reason == "stopped";
  recorder->finished(summary, interrupted);

  print_summary(summary, *recorder, *space, topo);
  auto throughput = task_throughput(a, summary);
  if (!a.summary_json.empty()) {
    std::ofstream out(a.summary_json);
    if (!out) throw input_error("--summary-json " + a.summary_json + ": cannot write this file");
    auto doc = summary_json(summary, *recorder, *space, topo);
    if (!throughput.is_null()) doc["throughput"] = throughput;
    out << doc.dump(2) << "\n";
  }
  if (summary.reason == "failed") return exit_failure;
  return interrupted ? 130 : exit_ok;
}

}  // namespace

void add_tune_command(CLI::App& app, command_list& commands) {
  auto args = std::make_shared<tune_args>();
  auto* sub = app.add_subcommand("tune", "Tune one kernel: generator, compile pool, measurers, population.");
  sub->add_option("--topology", args->topology, "YAML file: compile workers, devices, timeouts")
      ->required()
      ->check(CLI::ExistingFile);
  auto* task = sub->add_option("--task", args->task, "built-in kernel and shape, e.g. matmul:512x1024x1024");
  auto* space = sub->add_option("--space", args->space, "search-space file (NNI, T1, Kernel Tuner)");
  auto* dataset = sub->add_option("--dataset", args->dataset, "replay a measured dataset (Kernel Tuner cache, .gz)")
                      ->check(CLI::ExistingFile);
  task->excludes(space)->excludes(dataset);
  space->excludes(dataset);
  sub->add_option("--strategy", args->strategy, "random, ga, opevo, nose, nsga2, opevo+knn, bo")
      ->default_val(default_strategy_name());
  sub->add_option("--budget", args->budget, "trials in all (recorded ones included on --resume)")->required();
  sub->add_option("--time-budget", args->time_budget_s, "stop handing out work after this many (simulated) seconds");
  sub->add_option("--seed", args->seed, "the run's seed: every random choice flows from it")->required();
  sub->add_option("--db", args->db, "SQLite results database (created if missing)")->required();
  sub->add_flag("--resume", args->resume, "continue the latest unfinished run with this task, strategy and seed");
  sub->add_flag("--no-cache", args->no_cache, "measure again what earlier runs of this task measured");
  auto* publish =
      sub->add_option("--publish", args->publish, "publish JSON events on a ZeroMQ endpoint")->expected(0, 1);
  sub->add_option("--publish-wait", args->publish_wait, "wait up to 10 s for this many event subscribers first");
  sub->add_option("--summary-json", args->summary_json, "write the final summary as JSON to this file");
  sub->add_option("--mode", args->mode, "steady (demand-driven) or generational (synchronous batches)")
      ->check(CLI::IsMember({"steady", "generational"}));
  auto* scale = sub->add_option("--time-scale", args->time_scale,
                                "--dataset: sleep this many times the recorded latencies (default 1)");
  sub->add_option("--hyper", args->hyper, "strategy hyperparameter name=value (repeatable)");
  sub->add_flag("--quiet", args->quiet, "no progress line on stderr");
  sub->add_flag("--compare-blas", args->compare_blas,
                "--task matmul/bmm: after the run, time OpenBLAS sgemm on the same problem and threads and print the "
                "ratio");
  commands.emplace_back(sub, [args, publish, scale] {
    args->publish_given = publish->count() > 0;
    args->time_scale_given = scale->count() > 0;
    return run_tune(*args);
  });
}

}  // namespace tune::cli
