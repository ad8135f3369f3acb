// tune-engine tune: parses the options into tune::session_options and runs
// one session of the library facade (tune/tune.hpp); SIGINT and SIGTERM stop
// it the way request_stop() does. The library checks every value; its
// messages name the options as declared here (field_options).
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "tune/engine/strategy.hpp"
#include "tune/model.hpp"
#include "tune/storage/event_stream.hpp"

namespace tune::cli {
namespace {

struct tune_args {
  session_options o;
  std::uint64_t seed = 0;
  std::vector<std::string> hyper;
  std::string publish;
  std::string dashboard;
  std::string publish_key;
  std::string mode = "steady";
  bool no_cache = false;
  bool no_auto_prior = false;
  bool quiet = false;
  bool no_early_stop = false;
  std::vector<std::string> early_stop;
  lease_options lease;
  std::string summary_json;
  std::string model_file;
  std::string scheduler = "gradient";
  std::uint32_t round_trials = model_options{}.round_trials;
  bool one_pipeline = false;
  std::map<std::string, std::string> names;
};

/// --model: the tasks of a model in scheduled rounds (tune/model.hpp).
int run_model(tune_args& a, session_options o, std::ofstream& summary_out) {
  auto m = read_model(a.model_file);
  model_options mo;
  mo.budget_trials = o.budget.trials;
  o.budget.trials = 0;
  o.progress_line = false;
  mo.round_trials = a.round_trials;
  mo.one_pipeline = a.one_pipeline;
  mo.scheduler.kind = *scheduler_kind_from_string(a.scheduler);
  const bool quiet = a.quiet;
  const bool one = a.one_pipeline;
  mo.on_round = [quiet, one, &m](const model_progress& p) {
    if (quiet) return;
    const auto latency = std::isfinite(p.latency_ms) ? fmt::format("{:.4f} ms", p.latency_ms)
                                                     : std::string("not known until every task has a best");
    const auto what = one ? std::string("one pipeline") : "round of " + m.tasks[p.task].label();
    std::fprintf(stderr, "%6llu trials  %7.1f s  %s: model latency %s\n", static_cast<unsigned long long>(p.trials),
                 p.wall_s, what.c_str(), latency.c_str());
  };
  if (!a.quiet) {
    std::fprintf(stderr, "model %s: %zu tasks (%zu entries, identical workloads merged)\n", m.name.c_str(),
                 m.tasks.size(), m.entries);
    for (const auto& u : m.unsupported) std::fprintf(stderr, "  not tuned, no built-in task: %s\n", u.c_str());
  }
  stop_source stop = o.stop;
  mo.session = std::move(o);
  model_report report;
  with_stop_signals(stop, [&] { report = tune_model(m, mo); });
  std::fputs(report.to_text().c_str(), stdout);
  if (summary_out.is_open()) summary_out << report.to_json().dump(2) << "\n";
  return exit_code_of(report.reason);
}

int run_tune(tune_args& a, bool seed_given, bool publish_given, bool dashboard_given) {
  auto o = a.o;
  o.option_names = a.names;
  if (seed_given) o.seed = a.seed;
  o.hyper = parse_hyper(a.hyper, a.names.at("hyper"));
  o.mode = a.mode == "generational" ? run_mode::generational : run_mode::steady;
  o.use_cache = !a.no_cache;
  o.auto_prior = !a.no_auto_prior;
  o.progress_line = !a.quiet;
  if (a.no_early_stop) o.early_stop = early_stop_policy::off();
  o.early_stop = parse_early_stop(a.early_stop, o.early_stop, a.names.at("early_stop"));
  a.lease.apply(o);
  if (publish_given) o.publish_endpoint = a.publish.empty() ? storage::default_event_endpoint : a.publish;
  if (dashboard_given) o.dashboard_listen = a.dashboard.empty() ? "127.0.0.1:8080" : a.dashboard;
  o.on_dashboard = [](const std::string& url) { std::fprintf(stderr, "dashboard: serving %s\n", url.c_str()); };
  if (!a.publish_key.empty()) o.publish_key = storage::read_curve_key(a.publish_key, a.names.at("publish_key"));
  if (!a.model_file.empty()) {
    auto summary_out = open_summary(a.summary_json);
    return run_model(a, std::move(o), summary_out);
  }
  stop_source stop = o.stop;  // shares its flag with the session's copy
  session s(std::move(o));
  if (!seed_given)
    std::fprintf(stderr, "seed %llu (drawn; --seed %llu repeats this run)\n", static_cast<unsigned long long>(s.seed()),
                 static_cast<unsigned long long>(s.seed()));
  auto summary_out = open_summary(a.summary_json);
  auto report = run_until_signal(s, stop);
  std::fputs(report.to_text().c_str(), stdout);
  if (summary_out.is_open()) summary_out << report.to_json().dump(2) << "\n";
  return exit_code_of(report);
}

std::string budget_help() {
  return "trials in all, recorded ones included on --resume (default: " + std::to_string(default_budget("task")) +
         " for --task and --kernel, " + std::to_string(default_budget("dataset")) + " for --dataset)";
}

}  // namespace

void add_tune_command(CLI::App& app, command_list& commands) {
  auto args = std::make_shared<tune_args>();
  auto& o = args->o;
  auto* sub = app.add_subcommand(
      "tune",
      "Tune one kernel through the pipeline: generator, compile pool, one measurer per device, population.\n"
      "What to tune: --task (a built-in kernel), --kernel (your own: launch.json or its folder), --dataset\n"
      "(replay measurements) or --model (a model's tasks, one budget, a task scheduler). Where: --topology FILE, else "
      "one --backend device with the other cores compiling (and its own core too, at idle priority, while it waits).\n"
      "Without --seed one is drawn (printed and recorded); without --budget the target's default.");
  field_options f(sub);
  f.option("topology_file", "--topology", o.topology_file,
           "YAML file: compile workers, devices, nodes, timeouts (default: one device of --backend)")
      ->check(CLI::ExistingFile);
  f.option("backend_name", "--backend", o.backend_name,
           "without --topology: cpu (default), cuda or hip; replay for --dataset");
  args->lease.declare(f);
  f.option("task", "--task", o.task, "built-in kernel and shape, e.g. matmul:512x1024x1024");
  sub->add_option("--model", args->model_file,
                  "a model file (YAML: tasks with their counts, see examples/models/, and `layouts: own` to tune "
                  "every convolution in its kernel's own layouts; or ONNX: its Conv, MatMul and Gemm nodes): its "
                  "tasks tuned in rounds, one budget for all, the next round to the task where the model's latency "
                  "(sum of count x best) is expected to fall most; docs/models.md")
      ->check(CLI::ExistingFile);
  sub->add_option("--scheduler", args->scheduler, "--model: gradient (Ansor's task scheduler, default) or round_robin")
      ->check(CLI::IsMember({"gradient", "round_robin", "round-robin"}));
  sub->add_option(
         "--round-trials", args->round_trials,
         "--model: trials of one task per round (default " + std::to_string(model_options{}.round_trials) + ")")
      ->check(at_least_one("trial"));
  sub->add_flag("--one-pipeline", args->one_pipeline,
                "--model: every task through one pipeline (the compile pool and the devices shared, in steady "
                "state; rounds handed out as the scheduler picks them) instead of one round at a time; tasks of "
                "one backend, on local devices or nodes; docs/models.md");
  f.option("space_file", "--space", o.space_file, "search-space file: only with an objective, through the API");
  f.option("dataset", "--dataset", o.dataset, "replay a measured dataset (Kernel Tuner cache, T4, KTT)")
      ->check(CLI::ExistingFile);
  f.option("kernel", "--kernel", o.kernel, "user kernel: launch.json or the folder holding it")
      ->check(CLI::ExistingPath);
  f.option("kinds_file", "--kinds", o.kinds_file,
           "--dataset: JSON {\"parameter\": \"discrete\"|\"categorical\"} overrides")
      ->check(CLI::ExistingFile);
  f.option("strategy", "--strategy", o.strategy, strategy_help())->default_str(default_strategy_name());
  f.option("budget", "--budget", o.budget.trials, budget_help())->check(at_least_one("trial"));
  f.option("time_budget", "--time-budget", o.budget.seconds,
           "stop handing out work after this many (simulated) seconds");
  auto* seed =
      f.option("seed", "--seed", args->seed, "the run's seed: every random choice flows from it (default: drawn)");
  f.option("db_path", "--db", o.db_path,
           "Results store: an SQLite file (created if missing) or a shared PostgreSQL database, "
           "postgresql://user@host:port/dbname (password from ~/.pgpass or PGPASSWORD; docs/storage.md); without it "
           "nothing is recorded");
  f.flag("resume", "--resume", o.resume, "continue the latest unfinished run with this task, strategy and seed");
  f.flag("use_cache", "--no-cache", args->no_cache, "measure again what earlier runs of this task measured");
  auto* publish = f.option("publish_endpoint", "--publish", args->publish, "publish JSON events on a ZeroMQ endpoint")
                      ->expected(0, 1);
  f.option("publish_wait", "--publish-wait", o.publish_wait, "wait up to 10 s for this many event subscribers first");
  auto* dashboard = f.option("dashboard_listen", "--dashboard", args->dashboard,
                             "serve the live web dashboard during the run on HOST:PORT (default 127.0.0.1:8080)")
                        ->expected(0, 1);
  f.option("dashboard_token", "--dashboard-token", o.dashboard_token,
           "--dashboard: required on its page, /api and /ws (?token=T); set it off loopback");
  f.option("publish_key", "--publish-key", args->publish_key,
           "CURVE secret key of the event stream (a file from 'tune-engine keys', or the key); needed off "
           "loopback");
  sub->add_option("--summary-json", args->summary_json, "write the final summary as JSON to this file");
  f.option("mode", "--mode", args->mode, "steady (demand-driven) or generational (synchronous batches)")
      ->check(CLI::IsMember({"steady", "generational"}));
  f.option("batch", "--batch", o.batch, "--mode generational: candidates per generation (default 8)");
  f.option("time_scale", "--time-scale", o.time_scale,
           "--dataset: sleep this many times the recorded latencies (default 1)");
  f.option("threads", "--threads", o.threads, "CPU threads one kernel uses (default 1)");
  f.option("confirm_top", "--confirm-top", o.confirm.top,
           "at the end, measure this many of the fastest configurations again against each other, in turn, and "
           "report the winner (default 5; 0: none)");
  f.option("confirm_rounds", "--confirm-rounds", o.confirm.rounds,
           "--confirm-top: rounds of that (default 5; the reported time is the winner's median)");
  f.option("duel_rounds", "--duel-rounds", o.confirm.duel_rounds,
           "before a configuration becomes the best, measure it against the best so far, in turn, this many rounds "
           "on the same device; it becomes the best only if its median is lower (default " +
               std::to_string(duel_policy{}.rounds) + "; 0: none; not when it is more than " +
               fmt::format("{:g}", 100 * duel_policy{}.margin) + "% faster)");
  f.option("drift", "--drift-every", o.drift.every_trials,
           "run the device's drift probe (a fixed configuration of the run, measured in full) before every this "
           "many trials, and at least every " +
               fmt::format("{:g}", drift_policy{}.every_s) +
               " s; trials measured while it is out of its noise band are flagged (default " +
               std::to_string(drift_policy{}.every_trials) + "; 0: no probe)");
  f.flag("early_stop", "--no-early-stop", args->no_early_stop,
         "measure every candidate in full: no stopping a run past " +
             fmt::format("{:g}", early_stop_policy{}.slow_factor) +
             "x the best time (too_slow) or, before any best is known, past " +
             fmt::format("{:g}", early_stop_policy{}.first_limit_ms) +
             " ms (doubled at each such stop), no stopping the timing of one whose fastest run is already " +
             fmt::format("{:g}", 100 * early_stop_policy{}.margin) +
             "% slower than the best, nor of one whose checked first run alone shows that, with an allowance for a "
             "first run's slowness; and every build may take up to the compile timeout, none is stopped past " +
             fmt::format("{:g}", early_stop_policy{}.build_factor) + "x the run's median build (at least " +
             fmt::format("{:g}", early_stop_policy{}.min_build_s) + " s)");
  {
    // The field's second flag, declared after --no-early-stop: the library's
    // messages about the field name this one.
    early_stop_policy d;
    f.option("early_stop", "--early-stop", args->early_stop,
             fmt::format("one early-stop setting, name=value (repeatable; after --no-early-stop, switches that rule "
                         "back on, with min_slow_ms or min_build_s at its default unless given): slow_factor ({:g}: a "
                         "run past this many times the best is too_slow), min_slow_ms "
                         "({:g}), margin ({:g}: timing stops once the fastest run is this much slower than the best), "
                         "first_limit_ms ({:g}: before any best is known), build_factor ({:g}: a build past this many "
                         "times the run's median build is stopped), min_build_s ({:g}: the least such limit); 0 "
                         "switches a rule off",
                         d.slow_factor, d.min_slow_ms, d.margin, d.first_limit_ms, d.build_factor, d.min_build_s));
  }
  f.option("hyper", "--hyper", args->hyper, "strategy hyperparameter name=value (repeatable)");
  f.option("priors", "--prior", o.priors,
           "transfer from a measured dataset or a results database holding runs of the same task (e.g. on "
           "another GPU); repeatable; used by bo")
      ->check(existing_store());
  f.option("prior_tasks", "--prior-task", o.prior_tasks,
           "also transfer from this other task's runs in --db (e.g. another shape of the same operator: the "
           "configurations that fit this task's space); repeatable; used by bo");
  f.option("start", "--start", o.start,
           "hand this configuration out first, a JSON object of the parameters' values (e.g. '{\"tile\": 64}'); "
           "repeatable; the strategy goes on knowing its result");
  f.flag("auto_prior", "--no-auto-prior", args->no_auto_prior,
         "do not take the runs of this task on other device kinds in --db as a prior (with --model: nor a task's "
         "family's runs, nor, with --one-pipeline, its family's trials so far in this run)");
  f.flag("progress_line", "--quiet", args->quiet, "no progress line on stderr");
  f.flag("compare_vendor", "--compare-vendor,--compare-blas", o.compare_vendor,
         "--task (or each task of --model): after the run, time the vendor kernels (oneDNN; OpenBLAS sgemm with "
         "its default and its fastest core type) alternately with the best on the same problem, cores and threads "
         "and print the ratios (--compare-blas: the same)");
  args->names = f.names();
  declare_option_names("tune", args->names);
  commands.emplace_back(sub, [args, seed, publish, dashboard] {
    return run_tune(*args, seed->count() > 0, publish->count() > 0, dashboard->count() > 0);
  });
}

}  // namespace tune::cli
