// tune-engine evolve and tune-engine edits: program-edit evolution (GEVO-ML)
// of a workload's LLVM IR through the facade (docs/gevo.md).
#include <cstdio>
#include <memory>
#include <string>

#include "commands.hpp"
#include "tune/engine/program_edit.hpp"

namespace tune::cli {
namespace {

struct evolve_args {
  std::string workload;
  std::uint64_t budget = 0;
  std::uint64_t seed = 0;
  std::string db;
  std::string topology;
  double max_error = -1;  // < 0: the original's error + 0.02
  std::vector<std::string> hyper;
  bool quiet = false;
};

std::string workload_help() {
  std::string out;
  for (const auto& name : evolution_workloads()) out += (out.empty() ? "" : ", ") + name;
  return out.empty() ? "none in this build (it has no LLVM 14)" : out;
}

void print_front(const run_report& report, double max_error, const std::string& db) {
  double base = report.original ? report.original->time_ms : 0.0;
  if (report.original)
    std::printf("original: %.3f ms, error %.4f (trial %llu)\n", report.original->time_ms,
                report.original->objectives[1], static_cast<unsigned long long>(report.original->id));
  std::printf("Pareto front (%zu variants):\n  %6s %10s %9s %8s %6s\n", report.front.size(), "trial", "time ms",
              "speedup", "error", "edits");
  for (const auto& t : report.front)
    std::printf("  %6llu %10.3f %8.2fx %8.4f %6zu\n", static_cast<unsigned long long>(t.id), t.time_ms,
                base > 0 ? base / t.time_ms : 0.0, t.objectives[1], decode(t.config).size());
  const auto* chosen = choose_variant(report.front, max_error);
  if (!chosen) {
    std::printf("no variant has error <= %.4f\n", max_error);
    return;
  }
  std::printf("chosen (fastest with error <= %.4f): trial %llu, %.3f ms (%.2fx), error %.4f\n", max_error,
              static_cast<unsigned long long>(chosen->id), chosen->time_ms, base > 0 ? base / chosen->time_ms : 0.0,
              chosen->objectives[1]);
  for (const auto& e : decode(chosen->config)) std::printf("  %s\n", describe(e).c_str());
  if (!chosen->message.empty()) std::printf("  (%s)\n", chosen->message.substr(0, chosen->message.find('\n')).c_str());
  if (!db.empty())
    std::printf("its IR against the original: tune-engine edits --db %s --trial %llu\n", db.c_str(),
                static_cast<unsigned long long>(chosen->id));
}

int run_evolve(const evolve_args& a) {
  if (a.budget == 0) throw input_error("--budget must be at least 1 trial");
  session_options o;
  o.workload = a.workload;
  o.budget = a.budget;
  o.seed = a.seed;
  o.db_path = a.db;
  o.topology_file = a.topology;
  o.hyper = parse_hyper(a.hyper);
  o.progress_line = !a.quiet;
  stop_source stop = o.stop;  // shares its flag with the session's copy
  session s(std::move(o));
  auto report = run_until_signal(s, stop);
  std::printf("%llu trials in %.1f s (%.2f per second)\n", static_cast<unsigned long long>(report.trials),
              report.wall_s, report.wall_s > 0 ? report.new_trials / report.wall_s : 0.0);
  double max_error = a.max_error;
  if (max_error < 0) max_error = report.original ? report.original->objectives[1] + 0.02 : 1.0;
  print_front(report, max_error, a.db);
  return exit_code_of(report);
}

}  // namespace

void add_evolve_command(CLI::App& app, command_list& commands) {
  auto args = std::make_shared<evolve_args>();
  auto* sub = app.add_subcommand(
      "evolve",
      "Evolve edits to a workload's LLVM IR (GEVO-ML): NSGA-II over run time and error through the pipeline;\n"
      "prints the Pareto front and the fastest variant within --max-error.");
  sub->add_option("--workload", args->workload, workload_help())->required();
  sub->add_option("--budget", args->budget, "trials in all")->required();
  sub->add_option("--seed", args->seed, "the run's seed: every random choice flows from it")->required();
  sub->add_option("--db", args->db, "SQLite results database (created if missing); without it nothing is recorded");
  sub->add_option("--topology", args->topology, "YAML file: compile workers, cpu devices, timeouts")
      ->check(CLI::ExistingFile);
  sub->add_option("--max-error", args->max_error,
                  "the chosen variant's largest error (default: the original's error + 0.02)");
  sub->add_option("--hyper", args->hyper, "gevo hyperparameter name=value (repeatable)");
  sub->add_flag("--quiet", args->quiet, "no progress line on stderr");
  commands.emplace_back(sub, [args] { return run_evolve(*args); });
}

void add_edits_command(CLI::App& app, command_list& commands) {
  auto db = std::make_shared<std::string>();
  auto trial = std::make_shared<std::int64_t>(0);
  auto run = std::make_shared<std::int64_t>(0);
  auto* sub = app.add_subcommand("edits", "A recorded variant of `evolve`: its edits and its IR against the original.");
  sub->add_option("--db", *db, "results database written by tune-engine evolve")->required()->check(CLI::ExistingFile);
  sub->add_option("--trial", *trial, "the trial's number in the run (as evolve's front lists it)")->required();
  auto* run_option = sub->add_option("--run", *run, "the run (default: the latest run of evolve)");
  commands.emplace_back(sub, [db, trial, run, run_option] {
    auto v = load_variant(*db, *trial, run_option->count() ? std::optional<std::int64_t>(*run) : std::nullopt);
    std::printf("%s, run %lld, trial %lld: %s", v.workload.c_str(), static_cast<long long>(v.run_id),
                static_cast<long long>(v.trial), std::string(to_string(v.state)).c_str());
    if (v.objectives.size() >= 2) std::printf(", %.3f ms, error %.4f", v.objectives[0], v.objectives[1]);
    std::printf("\nedits (%zu):\n", v.edits.size());
    for (auto& e : v.edits) std::printf("  %s\n", e.c_str());
    for (auto& s : v.skipped) std::printf("skipped: %s\n", s.c_str());
    std::printf("%s", v.diff.empty() ? "the program is the original\n" : v.diff.c_str());
    return exit_ok;
  });
}

}  // namespace tune::cli
