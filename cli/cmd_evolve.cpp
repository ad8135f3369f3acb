// tune-engine evolve and tune-engine edits: program-edit evolution (GEVO-ML)
// of a workload's LLVM IR through the facade (docs/gevo.md).
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>

#include "commands.hpp"
#include "tune/engine/program_edit.hpp"
#include "tune/engine/text.hpp"

namespace tune::cli {
namespace {

struct evolve_args {
  session_options o;
  std::uint64_t seed = 0;
  double max_error = -1;  // < 0: the original's error + 0.02
  std::string plot;       // SVG of the front
  std::string summary_json;
  std::vector<std::string> hyper;
  bool quiet = false;
  lease_options lease;
  std::map<std::string, std::string> names;
};

std::string workload_help() {
  auto out = join(evolution_workloads());
  return out.empty() ? "none in this build (it has no LLVM 14)" : out;
}

// An error as the front prints it: "-" when not known (matmul has no splits).
std::string error_text(double error) {
  if (!std::isfinite(error)) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.4f", error);
  return text;
}

// The front with its errors: on the search, validation and test splits for
// a workload that has them, else (matmul) the one error.
const trial_info* print_front(const run_report& report, double max_error, const std::string& db) {
  double base = report.original ? report.original_reference_ms() : 0.0;
  bool splits = report.original && std::isfinite(report.original->validation_error);
  auto errors = [splits](const trial_info& t, const char* format) {
    std::string out = error_text(t.objectives[1]);
    if (!splits) return out;
    char text[96];
    std::snprintf(text, sizeof text, format, out.c_str(), error_text(t.validation_error).c_str(),
                  error_text(t.test_error).c_str());
    return std::string(text);
  };
  if (!report.base_origin.empty())
    std::printf("base configuration (%s): %s\n", report.base_origin.c_str(), report.base_configuration.c_str());
  if (report.original) {
    std::printf("original: %.3f ms, error %s (trial %llu)\n", report.original->time_ms,
                errors(*report.original, "%s search, %s validation, %s test").c_str(),
                static_cast<unsigned long long>(report.original->seq));
    if (std::isfinite(report.original_remeasured_ms))
      std::printf("original measured again after the search: %.3f ms; speed-ups count from %.3f ms, the lower\n",
                  report.original_remeasured_ms, report.original_reference_ms());
  }
  std::printf("Pareto front (%zu variants)%s:\n  %6s %10s %9s %s %6s\n", report.front.size(),
              splits ? ", error on the search, validation and test splits" : "", "trial", "time ms", "speedup",
              splits ? "  search validation     test" : "   error", "edits");
  for (const auto& t : report.front)
    std::printf("  %6llu %10.3f %8.2fx %s %6zu\n", static_cast<unsigned long long>(t.seq), t.time_ms,
                base > 0 ? base / t.time_ms : 0.0, errors(t, "%8s %10s %8s").c_str(), decode(t.config).size());
  const auto* chosen = choose_variant(report.front, max_error);
  const char* which = splits ? "validation error" : "error";
  if (!chosen) {
    std::printf("no variant has %s <= %.4f\n", which, max_error);
    return nullptr;
  }
  std::printf("chosen (fastest with %s <= %.4f): trial %llu, %.3f ms (%.2fx), error %s\n", which, max_error,
              static_cast<unsigned long long>(chosen->seq), chosen->time_ms, base > 0 ? base / chosen->time_ms : 0.0,
              errors(*chosen, "%s search, %s validation, %s test").c_str());
  for (const auto& e : decode(chosen->config)) std::printf("  %s\n", describe(e).c_str());
  if (!chosen->message.empty()) std::printf("  (%s)\n", chosen->message.substr(0, chosen->message.find('\n')).c_str());
  if (!db.empty())
    std::printf("its IR against the original: tune-engine edits --db %s --trial %llu\n", db.c_str(),
                static_cast<unsigned long long>(chosen->seq));
  return chosen;
}

/// The chosen variant measured again in turn with the original (its
/// speed-up to quote), printed; null in JSON when not measured, {"error"}
/// when it could not be.
nlohmann::json confirm_chosen(const session_options& o, const run_report& report, const trial_info& chosen) {
  if (o.confirm.rounds == 0 || chosen.config.empty()) return nullptr;
  variant_confirmation c;
  try {
    c = confirm_variant(o, report, chosen.config, o.confirm.rounds);
  } catch (const std::runtime_error& e) {
    // The run's results stand: a variant that fails when measured again is reported, not fatal.
    std::printf("could not be measured again in turn with the original: %s\n", e.what());
    return {{"error", e.what()}};
  }
  std::printf(
      "measured again in turn with the original, %u rounds: %.2fx (%.2f-%.2fx; original %.3f ms, variant %.3f ms)\n",
      c.rounds, c.speedup, c.min_speedup, c.max_speedup, c.original_ms, c.variant_ms);
  return {{"rounds", c.rounds},           {"speedup", c.speedup},         {"min_speedup", c.min_speedup},
          {"max_speedup", c.max_speedup}, {"original_ms", c.original_ms}, {"variant_ms", c.variant_ms}};
}

void write_plot(const std::string& path, const evolution_plot& plot) {
  std::ofstream out(path, std::ios::binary);
  out << front_svg(plot);
  out.close();
  if (!out) throw input_error("--plot " + path + ": cannot write the file; give a path in a writable folder");
  std::printf("plot of the front: %s\n", path.c_str());
}

// Without --max-error: 1e-4 for matmul (relative error), else the original's
// validation error (its search error where that is not known) + 0.02.
double default_max_error(const std::string& workload, const std::optional<trial_info>& original) {
  if (workload.rfind("matmul:", 0) == 0) return 1e-4;
  if (!original) return 1.0;
  return judged_error(*original) + 0.02;
}

int run_evolve(const evolve_args& a, bool seed_given) {
  auto o = a.o;
  o.option_names = a.names;  // the library checks the values
  if (seed_given) o.seed = a.seed;
  o.hyper = parse_hyper(a.hyper, a.names.at("hyper"));
  o.progress_line = !a.quiet;
  a.lease.apply(o);
  stop_source stop = o.stop;       // shares its flag with the session's copy
  const session_options used = o;  // what the chosen variant is confirmed with
  session s(std::move(o));
  if (!seed_given)
    std::fprintf(stderr, "seed %llu (drawn; --seed %llu repeats this run)\n", static_cast<unsigned long long>(s.seed()),
                 static_cast<unsigned long long>(s.seed()));
  auto summary_out = open_summary(a.summary_json);
  auto report = run_until_signal(s, stop);
  std::printf("%llu trials in %.1f s (%.2f per second)\n", static_cast<unsigned long long>(report.trials),
              report.wall_s, report.wall_s > 0 ? report.new_trials / report.wall_s : 0.0);
  if (report.edit_lists_checked > 0)
    std::printf(
        "edit lists drawn: %llu checked before compiling, %llu refused (an edit did not apply or the module "
        "did not verify) and drawn again\n",
        static_cast<unsigned long long>(report.edit_lists_checked),
        static_cast<unsigned long long>(report.edit_lists_refused));
  if (std::isfinite(report.solution_s))
    std::printf(
        "time to solution: %.1f s (trial %llu: the first >= %.1fx faster than the original at <= +%.2f error)\n",
        report.solution_s, static_cast<unsigned long long>(report.solution_seq), run_report::solution_speedup,
        run_report::solution_margin);
  else if (report.original)
    std::printf("time to solution: none (no variant >= %.1fx faster than the original at <= +%.2f error)\n",
                run_report::solution_speedup, run_report::solution_margin);
  double max_error = a.max_error;
  if (max_error < 0) max_error = default_max_error(a.o.workload, report.original);
  const auto* chosen = print_front(report, max_error, a.o.db_path);
  auto summary = report.to_json();
  summary["chosen"] = nullptr;
  if (chosen) {
    summary["chosen"] = {
        {"seq", chosen->seq}, {"time_ms", chosen->time_ms}, {"max_error", max_error}, {"confirmation", nullptr}};
    if (report.original && !stop.stop_requested())
      summary["chosen"]["confirmation"] = confirm_chosen(used, report, *chosen);
  }
  if (summary_out.is_open()) summary_out << summary.dump(2) << "\n";
  if (!a.plot.empty()) {
    evolution_plot plot;
    plot.title = a.o.workload + ": program-edit evolution, seed " + std::to_string(report.seed) + ", " +
                 std::to_string(report.trials) + " trials";
    plot.variants = report.evolved;
    plot.front = report.front;
    plot.original = report.original;
    write_plot(a.plot, plot);
  }
  return exit_code_of(report);
}

}  // namespace

void add_evolve_command(CLI::App& app, command_list& commands) {
  auto args = std::make_shared<evolve_args>();
  auto* sub = app.add_subcommand(
      "evolve",
      "Evolve edits to a workload's LLVM IR (GEVO-ML): NSGA-II over run time and error through the pipeline;\n"
      "prints the Pareto front and the fastest variant within --max-error.");
  auto& o = args->o;
  field_options f(sub);
  f.option("workload", "--workload", o.workload, workload_help())->required();
  f.option("budget", "--budget", o.budget.trials,
           "trials in all (default " + std::to_string(default_budget("workload")) + ")")
      ->check(at_least_one("trial"));
  auto* seed =
      f.option("seed", "--seed", args->seed, "the run's seed: every random choice flows from it (default: drawn)");
  f.option("db_path", "--db", o.db_path,
           "Results store: an SQLite file (created if missing) or a shared PostgreSQL database, "
           "postgresql://user@host:port/dbname (password from ~/.pgpass or PGPASSWORD; docs/storage.md); without it "
           "nothing is recorded");
  f.option("topology_file", "--topology", o.topology_file, "YAML file: compile workers, cpu devices, timeouts")
      ->check(CLI::ExistingFile);
  sub->add_option("--max-error", args->max_error,
                  "the chosen variant's largest validation error (default: the original's + 0.02; matmul: 1e-4)");
  f.option("confirm_rounds", "--confirm-rounds", o.confirm.rounds,
           "after the search, measure the original again this many times (the run's speed-ups count from the lower "
           "of that median and its recorded time), then the chosen variant and the original in turn, this many "
           "rounds, for the speed-up to quote (default 5; 0: neither)");
  f.option("hyper", "--hyper", args->hyper, "gevo hyperparameter name=value (repeatable)");
  sub->add_option("--plot", args->plot, "write an SVG plot of the front, the variants and the original to this file");
  sub->add_option("--summary-json", args->summary_json,
                  "write the run's summary as JSON to this file (\"evolution\": the front and the original with their "
                  "search, validation and test errors; \"chosen\": the chosen variant and its confirmation)");
  f.flag("progress_line", "--quiet", args->quiet, "no progress line on stderr");
  args->lease.declare(f);
  args->names = f.names();
  declare_option_names("evolve", args->names);
  commands.emplace_back(sub, [args, seed] { return run_evolve(*args, seed->count() > 0); });
}

void add_edits_command(CLI::App& app, command_list& commands) {
  auto db = std::make_shared<std::string>();
  auto trial = std::make_shared<std::int64_t>(0);
  auto run = std::make_shared<std::int64_t>(0);
  auto* sub = app.add_subcommand("edits", "A recorded variant of `evolve`: its edits and its IR against the original.");
  sub->add_option("--db", *db, "results store written by tune-engine evolve (file or PostgreSQL URI)")
      ->required()
      ->check(existing_store());
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

void add_front_command(CLI::App& app, command_list& commands) {
  struct front_args {
    std::string db, plot;
    std::int64_t run = 0;
  };
  auto args = std::make_shared<front_args>();
  auto* sub = app.add_subcommand("front",
                                 "The Pareto front of a recorded `evolve` run, optionally as an SVG plot (runs the "
                                 "front's programs again for their validation and test errors).");
  sub->add_option("--db", args->db, "results store written by tune-engine evolve (file or PostgreSQL URI)")
      ->required()
      ->check(existing_store());
  auto* run_option = sub->add_option("--run", args->run, "the run (default: the latest run of evolve)");
  sub->add_option("--plot", args->plot, "write an SVG plot of the front, the variants and the original to this file");
  commands.emplace_back(sub, [args, run_option] {
    auto plot =
        load_evolution_plot(args->db, run_option->count() ? std::optional<std::int64_t>(args->run) : std::nullopt);
    std::printf("%s: %zu ok variants\n", plot.title.c_str(), plot.variants.size());
    run_report report;
    report.front = plot.front;
    report.original = plot.original;
    print_front(report, default_max_error(plot.title, plot.original), args->db);
    if (!args->plot.empty()) write_plot(args->plot, plot);
    return exit_ok;
  });
}

}  // namespace tune::cli
