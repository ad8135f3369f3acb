// tune-engine tune: parses the options into tune::session_options and runs
// one session of the library facade (tune/tune.hpp); SIGINT and SIGTERM stop
// it the way request_stop() does.
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "tune/engine/strategy.hpp"
#include "tune/storage/event_stream.hpp"
#include "tune/tune.hpp"

namespace tune::cli {
namespace {

struct tune_args {
  std::string topology;
  std::string backend;
  std::string task;
  std::string space;
  std::string dataset;
  std::string kinds;
  std::string kernel;
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
  std::string dashboard;
  bool dashboard_given = false;
  std::string dashboard_token;
  std::string publish_key;
  std::string summary_json;
  std::string mode = "steady";
  std::uint32_t batch = 8;
  double time_scale = 1.0;
  int threads = 1;
  std::vector<std::string> hyper;
  std::vector<std::string> priors;
  bool no_auto_prior = false;
  bool quiet = false;
  bool compare_vendor = false;
};

session_options to_options(const tune_args& a) {
  int sources = !a.task.empty() + !a.space.empty() + !a.dataset.empty() + !a.kernel.empty();
  if (sources != 1) throw input_error("give exactly one of --task, --dataset, --kernel (or --space through the API)");
  if (!a.space.empty())
    throw input_error("--space " + a.space +
                      ": a search space alone has no kernel to build and measure; tune a built-in kernel with --task, "
                      "a user kernel with --kernel, or replay measurements with --dataset (an objective function over "
                      "a space is tuned through the library: tune::session, the C API or the Python module)");
  session_options o;
  // The library checks the values; its messages name the options as typed here.
  o.option_names = session_option_names();
  o.topology_file = a.topology;
  o.backend_name = a.backend;
  o.task = a.task;
  o.dataset = a.dataset;
  o.kinds_file = a.kinds;
  o.kernel = a.kernel;
  o.time_scale = a.time_scale;
  o.strategy = a.strategy;
  o.hyper = parse_hyper(a.hyper);
  o.budget = a.budget;
  o.time_budget_s = a.time_budget_s;
  o.seed = a.seed;
  o.priors = a.priors;
  o.auto_prior = !a.no_auto_prior;
  o.mode = a.mode == "generational" ? run_mode::generational : run_mode::steady;
  o.batch = a.batch;
  o.db_path = a.db;
  o.resume = a.resume;
  o.use_cache = !a.no_cache;
  if (a.publish_given) o.publish_endpoint = a.publish.empty() ? storage::default_event_endpoint : a.publish;
  o.publish_wait = a.publish_wait;
  if (a.dashboard_given) o.dashboard_listen = a.dashboard.empty() ? "127.0.0.1:8080" : a.dashboard;
  o.dashboard_token = a.dashboard_token;
  o.on_dashboard = [](const std::string& url) { std::fprintf(stderr, "dashboard: serving %s\n", url.c_str()); };
  if (!a.publish_key.empty()) o.publish_key = storage::read_curve_key(a.publish_key, "--publish-key");
  o.progress_line = !a.quiet;
  o.threads = a.threads;
  o.compare_vendor = a.compare_vendor;
  return o;
}

int run_tune(const tune_args& a) {
  auto options = to_options(a);
  stop_source stop = options.stop;  // shares its flag with the session's copy
  session s(std::move(options));
  std::ofstream summary_out;
  if (!a.summary_json.empty()) {
    summary_out.open(a.summary_json);
    if (!summary_out) throw input_error("--summary-json " + a.summary_json + ": cannot write this file");
  }
  auto report = run_until_signal(s, stop);
  std::fputs(report.to_text().c_str(), stdout);
  if (summary_out.is_open()) summary_out << report.to_json().dump(2) << "\n";
  return exit_code_of(report);
}

}  // namespace

void add_tune_command(CLI::App& app, command_list& commands) {
  auto args = std::make_shared<tune_args>();
  auto* sub = app.add_subcommand(
      "tune",
      "Tune one kernel through the pipeline: generator, compile pool, one measurer per device, population.\n"
      "What to tune: --task (a built-in kernel), --kernel (your own: launch.json or its folder) or --dataset\n"
      "(replay measurements). Where: --topology FILE, else one --backend device with the other cores compiling.");
  sub->add_option("--topology", args->topology,
                  "YAML file: compile workers, devices, nodes, timeouts (default: one device of --backend)")
      ->check(CLI::ExistingFile);
  sub->add_option("--backend", args->backend, "without --topology: cpu (default), cuda or hip; replay for --dataset");
  auto* task = sub->add_option("--task", args->task, "built-in kernel and shape, e.g. matmul:512x1024x1024");
  auto* space = sub->add_option("--space", args->space, "search-space file: only with an objective, through the API");
  auto* dataset = sub->add_option("--dataset", args->dataset, "replay a measured dataset (Kernel Tuner cache, T4, KTT)")
                      ->check(CLI::ExistingFile);
  auto* kernel = sub->add_option("--kernel", args->kernel, "user kernel: launch.json or the folder holding it")
                     ->check(CLI::ExistingPath);
  task->excludes(space)->excludes(dataset)->excludes(kernel);
  space->excludes(dataset)->excludes(kernel);
  dataset->excludes(kernel);
  sub->add_option("--kinds", args->kinds, "--dataset: JSON {\"parameter\": \"discrete\"|\"categorical\"} overrides")
      ->check(CLI::ExistingFile);
  sub->add_option("--strategy", args->strategy, strategy_help())->default_val(default_strategy_name());
  sub->add_option("--budget", args->budget, "trials in all (recorded ones included on --resume)")->required();
  sub->add_option("--time-budget", args->time_budget_s, "stop handing out work after this many (simulated) seconds");
  sub->add_option("--seed", args->seed, "the run's seed: every random choice flows from it")->required();
  sub->add_option("--db", args->db, "SQLite results database (created if missing); without it nothing is recorded");
  sub->add_flag("--resume", args->resume, "continue the latest unfinished run with this task, strategy and seed");
  sub->add_flag("--no-cache", args->no_cache, "measure again what earlier runs of this task measured");
  auto* publish =
      sub->add_option("--publish", args->publish, "publish JSON events on a ZeroMQ endpoint")->expected(0, 1);
  sub->add_option("--publish-wait", args->publish_wait, "wait up to 10 s for this many event subscribers first");
  auto* dashboard = sub->add_option("--dashboard", args->dashboard,
                                    "serve the live web dashboard during the run on HOST:PORT (default 127.0.0.1:8080)")
                        ->expected(0, 1);
  sub->add_option("--dashboard-token", args->dashboard_token,
                  "--dashboard: required on its page, /api and /ws (?token=T); set it off loopback");
  sub->add_option("--publish-key", args->publish_key,
                  "CURVE secret key of the event stream (a file from 'tune-engine keys', or the key); needed off "
                  "loopback");
  sub->add_option("--summary-json", args->summary_json, "write the final summary as JSON to this file");
  sub->add_option("--mode", args->mode, "steady (demand-driven) or generational (synchronous batches)")
      ->check(CLI::IsMember({"steady", "generational"}));
  sub->add_option("--batch", args->batch, "--mode generational: candidates per generation (default 8)")
      ->check(CLI::PositiveNumber);
  auto* scale = sub->add_option("--time-scale", args->time_scale,
                                "--dataset: sleep this many times the recorded latencies (default 1)");
  sub->add_option("--threads", args->threads, "CPU threads one kernel uses (default 1)")->check(CLI::PositiveNumber);
  sub->add_option("--hyper", args->hyper, "strategy hyperparameter name=value (repeatable)");
  sub->add_option("--prior", args->priors,
                  "transfer from a measured dataset or a results database holding runs of the same task (e.g. on "
                  "another GPU); repeatable; used by bo")
      ->check(CLI::ExistingFile);
  sub->add_flag("--no-auto-prior", args->no_auto_prior,
                "do not take the runs of this task on other device kinds in --db as a prior");
  sub->add_flag("--quiet", args->quiet, "no progress line on stderr");
  sub->add_flag("--compare-vendor,--compare-blas", args->compare_vendor,
                "--task: after the run, time the vendor kernels (oneDNN; OpenBLAS sgemm with its default and its "
                "fastest core type) on the same problem, cores and threads and print the ratios (--compare-blas: "
                "the same)");
  commands.emplace_back(sub, [args, publish, dashboard, scale] {
    args->publish_given = publish->count() > 0;
    args->dashboard_given = dashboard->count() > 0;
    if (scale->count() > 0 && args->dataset.empty())
      throw input_error("--time-scale applies to --dataset (replayed latencies) only; drop it for --task or --kernel");
    return run_tune(*args);
  });
}

}  // namespace tune::cli
