// bench_gevo: program-edit evolution (GEVO-ML) through the pipeline on this
// machine: for each workload and seed, several searches on the same budget:
//   gevo     NSGA-II with GEVO-ML's two edit kinds (copy, delete), lists drawn
//            again until every edit applies (the defaults of evolve; gevo5 and
//            random draw again too)
//   gevo5    the same with all five kinds (copy, delete, move, swap, replace)
//   noretry  gevo with max_draws=1: lists handed out as drawn
//   random   random edit lists (gevo whose initial population never ends:
//            every variant is the original with three random copy/delete edits)
// Prints per run the fraction of variants that ran (ok / trials), the edit
// lists checked and refused, the hypervolume of the ok variants in
// (time / original time, search error) against (2, 1), the time to solution
// (the original's time: run_report::original_reference_ms(), the lower of its
// time recorded in the run and its time measured again after the search; the
// "orig ms" column),
// the variant chosen on validation (the fastest front member with a
// validation error <= the original's + 0.02) with its search, validation and
// test errors, its speed-up as recorded and measured again five times in turn
// with the original, and the front member with the lowest validation error at
// no time loss with its test error (matmul: the fastest at a max relative
// error <= 1e-4, no splits).
//
//   bench_gevo [--budget N] [--seeds 1,2,3] [--workloads 2fcnet:predict,2fcnet:train,cnn:predict]
//              [--searches gevo,gevo5,noretry,random] [--population N] [--db FILE]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_text.hpp"
#include "tune/engine/pareto.hpp"
#include "tune/engine/program_edit.hpp"
#include "tune/engine/text.hpp"
#include "tune/tune.hpp"

namespace {

struct outcome {
  double original_ms = NAN;
  tune::trial_info original;
  const tune::trial_info* chosen = nullptr;    // fastest front member within the margin (validation error)
  const tune::trial_info* accurate = nullptr;  // lowest validation error at no time loss
  std::vector<tune::trial_info> front;
  double hypervolume = 0.0;
  double trials_per_s = 0.0;
  double solution_s = NAN;
  std::uint64_t checked = 0, refused = 0;
  std::size_t ok = 0, trials = 0;
};

// The configuration a matmul workload started from (report.base_*).
struct base_info {
  std::string configuration, origin;
};

bool is_matmul(const std::string& workload) { return workload.rfind("matmul:", 0) == 0; }

// The error a faster variant may have: 2 points more than the original's
// (validation) for the classifiers, a max relative error of 1e-4 for matmul.
double allowed_error(const std::string& workload, const tune::trial_info& original) {
  return is_matmul(workload) ? 1e-4 : judged_error(original) + 0.02 + 1e-12;
}

outcome evolve(const std::string& workload, std::uint64_t seed, std::uint64_t budget, const std::string& search,
               std::uint64_t population, const std::string& db, base_info* base) {
  std::vector<tune::trial_info> trials;
  tune::session_options o;
  o.workload = workload;
  o.db_path = db;       // where a matmul finds its configuration
  o.use_cache = false;  // every run measures its own variants, the original included
  o.budget.trials = budget;
  o.seed = seed;
  if (population > 0) o.hyper["population"] = static_cast<double>(population);
  if (search == "random") o.hyper["population"] = static_cast<double>(budget + 1);
  if (search == "gevo5") o.hyper["edit_kinds"] = tune::all_edit_kinds;
  if (search == "noretry") o.hyper["max_draws"] = 1;
  o.on_trial = [&trials](const tune::trial_info& t) { trials.push_back(t); };
  auto report = tune::session(o).run();
  *base = {report.base_configuration, report.base_origin};
  outcome out;
  out.trials = trials.size();
  out.trials_per_s = report.wall_s > 0 ? trials.size() / report.wall_s : 0.0;
  out.solution_s = report.solution_s;
  out.checked = report.edit_lists_checked;
  out.refused = report.edit_lists_refused;
  out.front = report.front;
  if (!report.original) return out;
  out.original = *report.original;
  out.original_ms = report.original_reference_ms();  // the lower of its recorded and measured-again times
  std::vector<std::vector<double>> points;
  for (auto& t : trials) {
    if (!t.ok() || t.objectives.size() < 2) continue;
    ++out.ok;
    points.push_back({t.time_ms / out.original_ms, t.objectives[1]});
  }
  out.hypervolume = tune::hypervolume_2d(points, {2.0, 1.0});
  for (const auto& t : out.front) {
    if (t.config.empty()) continue;
    if (judged_error(t) <= allowed_error(workload, out.original) && (!out.chosen || t.time_ms < out.chosen->time_ms))
      out.chosen = &t;
    if (t.time_ms <= out.original_ms && judged_error(t) < judged_error(out.original) &&
        (!out.accurate || judged_error(t) < judged_error(*out.accurate)))
      out.accurate = &t;
  }
  return out;
}

// The original's time over the variant's, both measured again five times in
// turn (the run measured each once, at different moments of a shared
// machine), as `evolve` confirms its chosen variant (tune::confirm_variant).
double confirm(const std::string& workload, const base_info& base, const tune::configuration& variant) {
  tune::session_options o;
  o.workload = workload;
  tune::run_report report;
  report.base_configuration = base.configuration;
  report.base_origin = base.origin;
  try {
    return tune::confirm_variant(o, report, variant, 5).speedup;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gevo: %s\n", e.what());
    return NAN;
  }
}

std::string errors_text(const tune::trial_info& t) {
  char text[128];
  std::snprintf(text, sizeof text, "error %.4f search, %.4f validation, %.4f test", t.objectives[1], t.validation_error,
                t.test_error);
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t budget = 200;
  std::string seeds_text = "1,2,3", workloads_text = "2fcnet:predict,2fcnet:train,cnn:predict";
  std::string searches_text = "gevo,gevo5,noretry,random";
  std::string db;
  std::uint64_t population = 0;
  CLI::App app{"GEVO-ML through the pipeline: its operators against all five, no retry and random edit lists"};
  tune::bench::last_value_wins(app);
  app.add_option("--budget", budget, "Variants measured per run")->check(tune::bench::more_than_zero());
  app.add_option("--seeds", seeds_text, "Comma-separated seeds (each runs every search)");
  app.add_option("--workloads", workloads_text, "Comma-separated: " + tune::join(tune::evolution_workloads()));
  app.add_option("--searches", searches_text, "Comma-separated: gevo, gevo5, noretry, random");
  app.add_option("--population", population,
                 "Population of gevo, gevo5 and noretry (default: evolve's, 32; random is unaffected)")
      ->check(CLI::Range(2, 100000));
  app.add_option("--db", db, "Results database; matmul starts from its task's best configuration there");
  if (auto rc = tune::bench::parse_options(app, argc, argv)) return *rc;
  const auto seeds = tune::bench::split(seeds_text, ',');
  const auto workloads = tune::bench::split(workloads_text, ',');
  const auto searches = tune::bench::split(searches_text, ',');
  for (auto& search : searches)
    if (search != "gevo" && search != "gevo5" && search != "noretry" && search != "random") {
      std::fprintf(stderr, "bench_gevo: --searches: unknown search '%s' (accepted: gevo, gevo5, noretry, random)\n",
                   search.c_str());
      return 2;
    }
  if (tune::evolution_workloads().empty()) {
    std::printf("bench_gevo: this build has no LLVM 14; nothing to measure\n");
    return 0;
  }
  std::printf("budget %llu per run, population %s; hypervolume of (time / original, search error) against (2, 1)\n",
              static_cast<unsigned long long>(budget),
              population ? std::to_string(population).c_str() : "evolve's default");
  std::printf("%-15s %4s %-8s %9s %9s %8s %8s %8s %7s %9s\n", "workload", "seed", "search", "orig ms", "ok/trials",
              "checked", "refused", "HV", "trial/s", "solution");
  for (auto& workload : workloads)
    for (auto& seed_text : seeds)
      for (auto& search : searches) {
        base_info base;
        auto r = evolve(workload, std::strtoull(seed_text.c_str(), nullptr, 10), budget, search, population, db, &base);
        char ran[32], solution[32];
        std::snprintf(ran, sizeof ran, "%zu/%zu", r.ok, r.trials);
        if (std::isfinite(r.solution_s))
          std::snprintf(solution, sizeof solution, "%.1f s", r.solution_s);
        else
          std::snprintf(solution, sizeof solution, "none");
        std::printf("%-15s %4s %-8s %9.3f %9s %8llu %8llu %8.4f %7.2f %9s\n", workload.c_str(), seed_text.c_str(),
                    search.c_str(), r.original_ms, ran, static_cast<unsigned long long>(r.checked),
                    static_cast<unsigned long long>(r.refused), r.hypervolume, r.trials_per_s, solution);
        if (!base.origin.empty()) std::printf("    base configuration (%s)\n", base.origin.c_str());
        if (std::isfinite(r.original_ms)) std::printf("    original: %s\n", errors_text(r.original).c_str());
        for (const auto& t : r.front)
          std::printf("    front: trial %llu, %.3fx, %zu edits, %s\n", static_cast<unsigned long long>(t.seq),
                      r.original_ms / t.time_ms, tune::edit_count(t.config), errors_text(t).c_str());
        if (r.chosen)
          std::printf(
              "    chosen on validation (fastest within %s): trial %llu, %.3fx recorded, %s; measured again "
              "in turn with the original: %.3fx\n",
              is_matmul(workload) ? "1e-4" : "+0.02", static_cast<unsigned long long>(r.chosen->seq),
              r.original_ms / r.chosen->time_ms, errors_text(*r.chosen).c_str(),
              confirm(workload, base, r.chosen->config));
        else
          std::printf("    chosen on validation: none faster within the margin\n");
        if (r.accurate)
          std::printf("    lowest validation error at no time loss: trial %llu, %.3fx time, %s\n",
                      static_cast<unsigned long long>(r.accurate->seq), r.accurate->time_ms / r.original_ms,
                      errors_text(*r.accurate).c_str());
        else
          std::printf("    lowest validation error at no time loss: none below the original's\n");
        std::fflush(stdout);
      }
  return 0;
}
