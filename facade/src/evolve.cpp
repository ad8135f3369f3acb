// Program-edit evolution through the facade: workloads, fronts and recorded
// variants (docs/gevo.md).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "evolve_detail.hpp"
#include "report_detail.hpp"
#include "targets/target.hpp"
#include "tune/engine/median.hpp"
#include "tune/engine/pareto.hpp"
#include "tune/engine/program_edit.hpp"
#include "tune/storage/results_db.hpp"
#ifdef TUNE_WITH_LLVM
#include "tune/kernels/program_backend.hpp"
#endif

namespace tune {

namespace {
constexpr const char* task_prefix = "gevo:";

#ifndef TUNE_WITH_LLVM
[[noreturn]] void no_llvm() {
  throw input_error(
      "workload: this build has no LLVM 14, which program-edit evolution needs; install llvm-14-dev and clang-14 "
      "(scripts/setup.sh) and configure the build again");
}
#endif
}  // namespace

std::vector<std::string> evolution_workloads() {
#ifdef TUNE_WITH_LLVM
  return program_workload_names();
#else
  return {};
#endif
}

double judged_error(const trial_info& t) {
  return std::isfinite(t.validation_error) ? t.validation_error : t.objectives.at(1);
}

const trial_info* choose_variant(const std::vector<trial_info>& front, double max_error) {
  const trial_info* chosen = nullptr;
  for (const auto& t : front) {
    if (t.objectives.size() < 2) continue;
    double error = judged_error(t);
    if (error <= max_error && (!chosen || t.time_ms < chosen->time_ms)) chosen = &t;
  }
  return chosen;
}

variant_confirmation confirm_variant(const session_options& o, const run_report& report, const configuration& variant,
                                     std::uint32_t rounds) {
  if (o.workload.empty())
    throw input_error("confirm_variant: " + detail::option_name(o, "workload") +
                      " is empty; give the options of the evolution run the report comes from");
  if (rounds == 0) throw input_error("confirm_variant: rounds must be at least 1");
  // Measured as the run was: its topology's protocol unless the options set one.
  const auto protocol = detail::evolution_protocol_of(o, detail::given_topology(o).value_or(storage::topology{}));
#ifdef TUNE_WITH_LLVM
  std::shared_ptr<program_backend> backend;
  try {
    backend = make_program_backend(o.workload, detail::evolution_backend_options(o.threads, protocol),
                                   {report.base_configuration, report.base_origin});
  } catch (const std::invalid_argument& e) {
    throw input_error(detail::option_name(o, "workload") + ": " + e.what());
  }
  auto original = backend->build({}, 600);
  auto edited = backend->build(variant, 600);
  for (const auto& [what, built] :
       {std::pair<const char*, const build_result*>{"the original", &original}, {"the variant", &edited}})
    if (built->state != status::ok)
      throw std::runtime_error("confirm_variant: " + std::string(what) + " of " + o.workload + " did not build (" +
                               std::string(to_string(built->state)) + "): " + built->message);
  auto times =
      backend->run_interleaved({{configuration{}, original}, {variant, edited}}, 0, static_cast<int>(rounds), 120);
  if (!times.ok())
    throw std::runtime_error("confirm_variant: " + o.workload +
                             " (entry 0 the original, 1 the variant): " + times.message);
  std::vector<double> ratios;
  for (std::uint32_t r = 0; r < rounds; ++r) ratios.push_back(times.time_ms[0][r] / times.time_ms[1][r]);
  variant_confirmation out;
  out.rounds = rounds;
  out.speedup = median(ratios);
  out.min_speedup = *std::min_element(ratios.begin(), ratios.end());
  out.max_speedup = *std::max_element(ratios.begin(), ratios.end());
  out.original_ms = median(times.time_ms[0]);
  out.variant_ms = median(times.time_ms[1]);
  return out;
#else
  (void)report;
  (void)variant;
  (void)protocol;
  no_llvm();
#endif
}

namespace {
// The run `run_id`, or the latest run of program-edit evolution in the file.
storage::run_record evolution_run(const storage::results_db& db, const std::string& db_path,
                                  std::optional<std::int64_t> run_id) {
  std::optional<storage::run_record> run;
  if (run_id) {
    run = db.find_run(*run_id);
    if (!run) throw input_error(db_path + ": no run " + std::to_string(*run_id));
  } else {
    for (auto& r : db.runs())
      if (r.task_key.rfind(task_prefix, 0) == 0 && (!run || r.id > run->id)) run = r;
    if (!run)
      throw input_error(db_path + ": holds no run of program-edit evolution; record one with tune-engine evolve");
  }
  if (run->task_key.rfind(task_prefix, 0) != 0)
    throw input_error(db_path + ": run " + std::to_string(run->id) + " tunes " + run->task_key +
                      ", not a workload of program-edit evolution");
  return *run;
}

std::string workload_of(const storage::run_record& run) {
  auto workload = run.task_key.substr(std::string(task_prefix).size());
  return workload.substr(0, workload.find('@'));  // matmul: @ the base's hash
}

// A matmul run's base configuration (JSON) as its options recorded it; empty otherwise.
std::string base_configuration_of(const storage::run_record& run) {
  if (auto options = nlohmann::json::parse(run.options_json, nullptr, false); options.is_object())
    if (auto it = options.find("evolution"); it != options.end() && it->is_object() && it->contains("base"))
      return (*it)["base"].value("configuration", "");
  return {};
}
}  // namespace

evolution_plot load_evolution_plot(const std::string& db_path, std::optional<std::int64_t> run_id) {
  storage::results_db db(db_path, storage::results_db::open_mode::read_only);
  auto run = evolution_run(db, db_path, run_id);
  evolution_plot plot;
  plot.title = workload_of(run) + ": program-edit evolution, run " + std::to_string(run.id);
  for (auto& t : db.trials(run.id)) {
    if (!t.ok() || t.objectives.size() < 2) continue;
    trial_info info;
    info.seq = static_cast<std::uint64_t>(t.seq);
    info.state = t.state;
    info.config_json = t.config_json;
    try {
      info.config = encode(edit_list_from_json(t.config_json));
    } catch (const std::invalid_argument& e) {
      throw input_error(db_path + ": trial " + std::to_string(t.seq) + ": " + e.what());
    }
    info.time_ms = t.time_ms;
    info.objectives = t.objectives;
    if (info.config.empty() && !plot.original) plot.original = info;
    plot.variants.push_back(std::move(info));
  }
  plot.front = detail::front_of(plot.variants);
#ifdef TUNE_WITH_LLVM
  backend_ptr backend =
      make_program_backend(workload_of(run), task_backend_options{}, {base_configuration_of(run), db_path});
  detail::add_held_out_errors(backend, plot.front, plot.original);
#endif
  return plot;
}

recorded_variant load_variant(const std::string& db_path, std::int64_t trial, std::optional<std::int64_t> run_id) {
  storage::results_db db(db_path, storage::results_db::open_mode::read_only);
  auto run = std::optional<storage::run_record>(evolution_run(db, db_path, run_id));
  recorded_variant out;
  out.workload = workload_of(*run);
  auto base_json = base_configuration_of(*run);
  out.run_id = run->id;
  out.trial = trial;
  std::optional<storage::trial_record> found;
  for (auto& t : db.trials(run->id))
    if (t.seq == trial) found = t;
  if (!found)
    throw input_error(db_path + ": run " + std::to_string(run->id) + " has no trial " + std::to_string(trial) +
                      " (trials are numbered as evolve's front lists them)");
  out.state = found->state;
  out.objectives = found->objectives;
  edit_list edits;
  try {
    edits = edit_list_from_json(found->config_json);
  } catch (const std::invalid_argument& e) {
    throw input_error(db_path + ": trial " + std::to_string(trial) + ": " + e.what());
  }
  for (auto& e : edits) out.edits.push_back(describe(e));
#ifdef TUNE_WITH_LLVM
  auto backend = make_program_backend(out.workload, task_backend_options{}, {base_json, db_path});
  auto applied = backend->program()->apply(edits);
  for (auto& s : applied.skipped) out.skipped.push_back(s.reason);
  out.diff = line_diff(readable_ir(backend->program()->text()), readable_ir(applied.ir));
#else
  no_llvm();
#endif
  return out;
}

namespace detail {

task_backend_options evolution_backend_options(int threads, const measurement_protocol& protocol) {
  task_backend_options ko;
  ko.first_core = 0;
  ko.threads = threads;
  ko.measurement = protocol;
  return ko;
}

measurement_protocol evolution_protocol_of(const session_options& o, const storage::topology& topo) {
  return evolution_protocol(measurement_of(o, topo),
                            o.measurement ? "session_options::measurement" : topo.origin + ": measurement");
}

measurement_protocol evolution_protocol(measurement_protocol p, const std::string& field) {
  if (p.flush_cache)
    throw input_error(field +
                      ".flush_cache: program-edit evolution does not flush caches between a program's runs: remove "
                      "flush_cache");
  p.min_time_s = std::max(p.min_time_s, 0.25);
  p.min_repeats = std::max(p.min_repeats, 5);
  p.max_repeats = std::max(p.max_repeats, p.min_repeats);
  p.statistic = time_statistic::min;
  return p;
}

backend_ptr make_evolution_backend(const std::string& workload, const task_backend_options& options,
                                   const std::string& db_path) {
#ifdef TUNE_WITH_LLVM
  try {
    program_base base;
    if (workload.rfind("matmul:", 0) == 0 && !db_path.empty() &&
        (storage::is_postgres_target(db_path) || std::filesystem::exists(db_path))) {
      auto key = make_cpu_task_program(parse_task(workload))->key;
      storage::results_db db(db_path, storage::results_db::open_mode::read_only);
      if (auto summary = db.best(key); summary && summary->best) {
        base.configuration_json = summary->best->config_json;
        base.origin = db_path + ": run " + std::to_string(summary->best->run_id) + ", trial " +
                      std::to_string(summary->best->seq) + " of " + key + " (" +
                      std::to_string(summary->best->time_ms) + " ms)";
      }
    }
    return make_program_backend(workload, options, base);
  } catch (const std::invalid_argument& e) {
    throw input_error(std::string("workload: ") + e.what());
  }
#else
  (void)workload;
  (void)options;
  (void)db_path;
  no_llvm();
#endif
}

nlohmann::json evolution_record(const backend_ptr& backend) {
#ifdef TUNE_WITH_LLVM
  auto program = std::dynamic_pointer_cast<program_backend>(backend);
  if (!program) return nullptr;
  nlohmann::json out = {{"workload", program->workload()}};
  if (auto base = program->base(); !base.configuration_json.empty())
    out["base"] = {{"configuration", base.configuration_json}, {"origin", base.origin}};
  return out;
#else
  (void)backend;
  return nullptr;
#endif
}

std::unique_ptr<strategy> make_evolution_strategy(const backend_ptr& backend, const strategy_options& options) {
#ifdef TUNE_WITH_LLVM
  auto program = std::dynamic_pointer_cast<program_backend>(backend);
  if (!program) throw std::logic_error("make_evolution_strategy: not a program backend");
  try {
    return make_program_edit_strategy(program->program()->outline(), options,
                                      [program](const edit_list& edits) { return program->edits_apply(edits, 120); });
  } catch (const std::invalid_argument& e) {
    throw input_error(std::string("strategy gevo: ") + e.what());
  }
#else
  (void)backend;
  (void)options;
  no_llvm();
#endif
}

void add_held_out_errors(const backend_ptr& backend, std::vector<trial_info>& front,
                         std::optional<trial_info>& original) {
#ifdef TUNE_WITH_LLVM
  auto program = std::dynamic_pointer_cast<program_backend>(backend);
  if (!program) return;
  auto fill = [&](trial_info& t) {
    auto errors = program->held_out(t.config, 120);
    t.validation_error = errors.validation;
    t.test_error = errors.test;
  };
  for (auto& t : front) fill(t);
  if (original) fill(*original);
#else
  (void)backend;
  (void)front;
  (void)original;
#endif
}

void remeasure_original(run_report& report, const backend_ptr& backend, std::uint32_t rounds) {
  report.original_remeasured_ms = std::nan("");
  if (!report.original || rounds == 0 || !backend) return;
  auto built = backend->build(report.original->config, 600);
  if (built.state != status::ok) return;
  auto times = backend->run_interleaved({{report.original->config, built}}, 0, static_cast<int>(rounds), 120);
  if (times.ok() && !times.time_ms.empty() && !times.time_ms[0].empty())
    report.original_remeasured_ms = median(times.time_ms[0]);
}

void add_search_counts(run_report& report, const backend_ptr& backend) {
#ifdef TUNE_WITH_LLVM
  if (auto program = std::dynamic_pointer_cast<program_backend>(backend)) {
    auto counts = program->checks();
    report.edit_lists_checked = counts.checked;
    report.edit_lists_refused = counts.refused;
  }
#else
  (void)backend;
#endif
  if (!report.original || report.original->objectives.size() < 2) return;
  const auto& base = *report.original;
  const double reference_ms = report.original_reference_ms();
  double first = std::nan("");  // the earliest solution's finished_s so far
  for (const auto& t : report.evolved) {
    if (t.objectives.size() < 2 || t.config.empty()) continue;
    bool solution = reference_ms >= run_report::solution_speedup * t.time_ms &&
                    t.objectives[1] <= base.objectives[1] + run_report::solution_margin;
    if (solution && !(t.finished_s >= first)) {
      first = t.finished_s;
      report.solution_seq = t.seq;
    }
  }
  report.solution_s = first;
}

std::vector<trial_info> front_of(const std::vector<trial_info>& trials) {
  std::vector<std::vector<double>> points;
  for (auto& t : trials) points.push_back(t.objectives);
  std::vector<trial_info> front;
  if (points.empty()) return front;
  auto fronts = non_dominated_sort(points);
  for (auto i : fronts.front()) front.push_back(trials[i]);
  // Variants that are the same program share one measurement: keep the one with the fewest edits.
  std::stable_sort(front.begin(), front.end(), [](const trial_info& a, const trial_info& b) {
    if (a.objectives != b.objectives) return a.objectives < b.objectives;
    return a.config.size() < b.config.size();
  });
  front.erase(std::unique(front.begin(), front.end(),
                          [](const trial_info& a, const trial_info& b) { return a.objectives == b.objectives; }),
              front.end());
  return front;
}

}  // namespace detail
}  // namespace tune
