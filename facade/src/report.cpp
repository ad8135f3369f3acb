// The facade's small pieces: version, hyperparameters, the trial as each
// layer knows it, and the run report as JSON and as text.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "report_detail.hpp"
#include "tune/engine/program_edit.hpp"
#include "tune/engine/strategy.hpp"
#include "tune/kernels/task.hpp"
#include "tune/kernels/vendor_reference.hpp"
#include "tune/storage/results_db.hpp"
#include "tune/tune.hpp"

namespace tune {

std::string_view version() { return TUNE_VERSION; }

std::string detail::option_name(const std::map<std::string, std::string>& names, const std::string& field) {
  auto it = names.find(field);
  return it == names.end() ? field : it->second;
}

std::map<std::string, double> parse_hyper(const std::vector<std::string>& items, std::string_view field) {
  std::map<std::string, double> out;
  for (const auto& item : items) {
    const std::string where = std::string(field) + " " + item;
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      throw input_error(where + ": expected name=value, e.g. rho=8");
    std::string name = item.substr(0, eq), text = item.substr(eq + 1);
    std::size_t used = 0;
    double value = 0.0;
    try {
      value = std::stod(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (name == "edit_kinds" && used != text.size()) {  // gevo's: a list of kinds, held as their set's number
      try {
        value = parse_edit_kinds(text);
        used = text.size();
      } catch (const std::invalid_argument& e) {
        throw input_error(where + ": " + e.what());
      }
    }
    if (used != text.size() || !std::isfinite(value))
      throw input_error(where + ": '" + text + "' is not a finite number");
    if (!out.emplace(name, value).second) throw input_error(where + ": '" + name + "' is given twice; keep one");
  }
  return out;
}

early_stop_policy parse_early_stop(const std::vector<std::string>& items, early_stop_policy policy,
                                   std::string_view field) {
  return set_early_stop(parse_hyper(items, field), policy, field);
}

early_stop_policy set_early_stop(const std::map<std::string, double>& settings, early_stop_policy policy,
                                 std::string_view field) {
  const std::pair<const char*, double early_stop_policy::*> fields[] = {
      {"slow_factor", &early_stop_policy::slow_factor},
      {"min_slow_ms", &early_stop_policy::min_slow_ms},
      {"margin", &early_stop_policy::margin},
      {"first_limit_ms", &early_stop_policy::first_limit_ms},
      {"build_factor", &early_stop_policy::build_factor},
      {"min_build_s", &early_stop_policy::min_build_s}};
  auto field_named = [&fields](std::string_view name) {
    return std::find_if(std::begin(fields), std::end(fields), [&](const auto& f) { return name == f.first; });
  };
  const early_stop_policy before = policy;
  for (const auto& [name, value] : settings) {
    const std::string where = std::string(field) + " " + name + "=" + fmt::format("{:g}", value);
    auto known = field_named(name);
    if (known == std::end(fields)) {
      std::string names;
      for (const auto& setting : fields) names += std::string(names.empty() ? "" : ", ") + setting.first;
      throw input_error(where + ": '" + name + "' is not an early-stop setting; known: " + names);
    }
    if (value < 0) throw input_error(where + ": must be 0 (the rule off) or more");
    policy.*(known->second) = value;
  }
  // A rule switched back on (after off(), which zeroes every number) gets its
  // floor's default, unless the floor is set too: build_factor=10 alone after
  // --no-early-stop is the default rule, not 10 x the median with no least limit.
  const std::pair<const char*, const char*> floors[] = {{"slow_factor", "min_slow_ms"},
                                                        {"build_factor", "min_build_s"}};
  for (const auto& [rule, least] : floors) {
    auto rule_of = field_named(rule)->second, least_of = field_named(least)->second;
    if (settings.count(rule) && !(before.*rule_of > 0) && policy.*rule_of > 0 && !settings.count(least) &&
        !(policy.*least_of > 0))
      policy.*least_of = early_stop_policy{}.*least_of;
  }
  return policy;
}

void validate_strategy(const std::string& name, const std::map<std::string, double>& hyper, search_space_ptr space) {
  strategy_options so;
  so.hyper = hyper;
  try {
    make_strategy(name, std::move(space), so);
  } catch (const std::invalid_argument& e) {
    throw input_error(std::string("strategy: ") + e.what());
  }
}

namespace {

nlohmann::json number_or_null(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(); }

}  // namespace

nlohmann::json trial_info::to_json() const {
  return {{"seq", seq},
          {"config", nlohmann::json::parse(config_json)},
          {"status", std::string(tune::to_string(state))},
          {"time_ms", number_or_null(time_ms)},
          {"times_ms", times_ms},
          {"objectives", objectives},
          {"compile_s", compile_s},
          {"run_s", run_s},
          {"device", device},
          {"message", message},
          {"finished_s", finished_s},
          {"reused_from_run", reused() ? nlohmann::json(*reused_from_run) : nlohmann::json(nullptr)},
          {"duel_ms", number_or_null(duel_ms)},
          {"duel_best_ms", number_or_null(duel_best_ms)},
          {"new_best", new_best},
          {"validation_error", number_or_null(validation_error)},
          {"test_error", number_or_null(test_error)}};
}

nlohmann::json run_report::to_json() const {
  nlohmann::json b = {{"config", nullptr}, {"time_ms", nullptr}};
  if (best) {
    b["config"] = nlohmann::json::parse(best->config_json);
    b["time_ms"] = best->time_ms;
  }
  nlohmann::json devices = nlohmann::json::object();
  for (const auto& [name, busy] : device_busy) devices[name] = busy;
  nlohmann::json points = nlohmann::json::array();
  for (const auto& p : trace) points.push_back({p.at_s, p.trials, p.time_ms});
  nlohmann::json out = {
      {"task", task_key},
      {"strategy", strategy},
      {"seed", seed},
      {"seed_drawn", seed_drawn},
      {"best", b},
      {"trials", trials},
      {"new_trials", new_trials},
      {"run_id", run_id},
      {"resumed", resumed},
      {"reason", std::string(tune::to_string(reason))},
      {"wall_s", wall_s},
      {"sim_s", sim_s},
      {"busy", {{"compile", compile_busy}, {"background_builds", background_busy}, {"devices", devices}}},
      {"steady_trials_per_s", steady_trials_per_s},
      {"engine_cpu_us_per_trial", engine_cpu_us_per_trial},
      {"trace", points},
      {"prior", {{"sources", prior_sources}, {"configurations", prior_configurations}}},
      {"db_migrated_from", db_migrated_from ? nlohmann::json(*db_migrated_from) : nlohmann::json(nullptr)},
  };
  nlohmann::json measuring = nlohmann::json::object();
  for (const auto& [name, t] : device_times)
    measuring[name] = {
        {"trials", t.trials},         {"measured_s", t.measured_s}, {"stopped_early_s", t.stopped_early_s},
        {"too_slow_s", t.too_slow_s}, {"timeout_s", t.timeout_s},   {"failed_s", t.failed_s},
        {"overhead_s", t.overhead_s}, {"probe_s", t.probe_s},       {"duel_s", t.duel_s}};
  for (const auto& [name, d] : device_drifts)
    if (measuring.contains(name))
      measuring[name]["drift"] = {{"probes", d.probes},       {"baseline_ms", d.baseline_ms}, {"band", d.band},
                                  {"min_ratio", d.min_ratio}, {"max_ratio", d.max_ratio},     {"flagged", d.flagged}};
  out["drift_flagged"] = drift_flagged;
  out["duels"] = {{"count", duels.count}, {"lost", duels.lost}, {"skipped", duels.skipped}};
  out["time"] = {{"devices", measuring},
                 {"compile",
                  {{"workers", compile_workers},
                   {"build_s", build_s},
                   {"waiting_s", waiting_s()},
                   {"background", {{"workers", background_workers}, {"build_s", background_build_s}}}}},
                 {"confirmation_s", confirmation_s}};
  auto rounds = nlohmann::json::array();
  for (const auto& entry : confirmation)
    rounds.push_back({{"seq", entry.seq},
                      {"search_ms", entry.search_ms},
                      {"time_ms", entry.time_ms},
                      {"rounds_ms", entry.rounds_ms}});
  out["confirmation"] = rounds;
  out["statistic"] = to_string(statistic);
  if (!confirmation.empty()) out["best"]["search_time_ms"] = confirmation.front().search_ms;
  if (!confirmation_note.empty()) out["confirmation_note"] = confirmation_note;
  if (!machine_note.empty()) out["machine_note"] = machine_note;
  if (!throughput.is_null()) out["throughput"] = throughput;
  if (original || !front.empty()) {
    auto members = nlohmann::json::array();
    for (const auto& t : front) members.push_back(t.to_json());
    out["evolution"] = {{"front", members},
                        {"original", original ? original->to_json() : nlohmann::json()},
                        {"edit_lists", {{"checked", edit_lists_checked}, {"refused", edit_lists_refused}}},
                        {"original_remeasured_ms", number_or_null(original_remeasured_ms)},
                        {"original_reference_ms", number_or_null(original_reference_ms())},
                        {"solution_s", number_or_null(solution_s)},
                        {"solution_seq", std::isfinite(solution_s) ? nlohmann::json(solution_seq) : nlohmann::json()}};
  }
  return out;
}

double run_report::original_reference_ms() const {
  if (!original) return std::numeric_limits<double>::quiet_NaN();
  return std::fmin(original->time_ms, original_remeasured_ms);  // fmin: a NaN side is ignored
}

double run_report::waiting_s() const {
  return std::max(0.0, static_cast<double>(compile_workers) * sim_s - (build_s - background_build_s));
}

std::string run_report::to_text() const {
  std::string out = fmt::format("run {}{}: {} trials ({} new) in {:.2f} s wall{}; ended by {}; seed {}{}\n", run_id,
                                resumed ? " (resumed)" : "", trials, new_trials, wall_s,
                                sim_s != wall_s ? fmt::format(", {:.2f} s simulated", sim_s) : std::string(),
                                tune::to_string(reason), seed, seed_drawn ? " (drawn)" : "");
  for (const auto& source : prior_sources) out += "prior " + source + "\n";
  if (db_migrated_from)
    out += fmt::format(
        "results database: migrated from schema version {} to {} (tune-engine versions before that cannot open it)\n",
        *db_migrated_from, storage::results_db::schema_version);
  if (best && !confirmation.empty()) {
    const auto& won = confirmation.front();
    auto [low, high] = std::minmax_element(won.rounds_ms.begin(), won.rounds_ms.end());
    out += fmt::format(
        "best {:.6g} ms, confirmed: the {} of {} rounds ({:.6g}–{:.6g} ms) against the {} next fastest, in "
        "turn ({:.2f} s after the run); {:.6g} ms when found (trial {}): {}\n",
        best->time_ms, to_string(statistic), won.rounds_ms.size(), *low, *high, confirmation.size() - 1, confirmation_s,
        won.search_ms, won.seq, best->config_json);
  } else if (best) {
    out += fmt::format("best {:.6g} ms: {}\n", best->time_ms, best->config_json);
  } else {
    out += "best: none (no trial succeeded)\n";
  }
  if (!confirmation_note.empty()) out += "not confirmed: " + confirmation_note + "\n";
  if (!machine_note.empty()) out += "note: " + machine_note + "\n";
  for (const auto& [name, t] : device_times)
    out += fmt::format(
        "{} measuring {:.2f} s: timed in full {:.2f}, stopped early {:.2f}, too slow {:.2f}, timeouts {:.2f}, "
        "failed {:.2f}, overhead {:.2f}, drift probes {:.2f}, duels {:.2f}\n",
        name, t.total_s(), t.measured_s, t.stopped_early_s, t.too_slow_s, t.timeout_s, t.failed_s, t.overhead_s,
        t.probe_s, t.duel_s);
  if (duels.count > 0 || duels.skipped > 0) {
    out += fmt::format("duels: {} would-be best{} measured against the best before, in turn; {} lost", duels.count,
                       duels.count == 1 ? "" : "s", duels.lost);
    if (duels.skipped > 0)
      out += fmt::format("; {} more taken as measured (the duels had had their share of the device's time)",
                         duels.skipped);
    out += "\n";
  }
  for (const auto& [name, d] : device_drifts) {
    if (d.baseline_ms > 0)
      out += fmt::format(
          "{} drift probe: {} probes, baseline {:.4g} ms (band ±{:.0f}%), moved {:.3f}–{:.3f}x; {} trial{} flagged\n",
          name, d.probes, d.baseline_ms, 100.0 * d.band, d.min_ratio, d.max_ratio, d.flagged,
          d.flagged == 1 ? "" : "s");
    else
      out +=
          fmt::format("{} drift probe: {} probe{}, too few for a baseline\n", name, d.probes, d.probes == 1 ? "" : "s");
  }
  if (compile_workers > 0) {
    out += fmt::format("compile ({} worker{}): building {:.2f} s, waiting {:.2f} s", compile_workers,
                       compile_workers == 1 ? "" : "s", build_s - background_build_s, waiting_s());
    if (background_workers > 0)
      out += fmt::format("; {} more on the measuring core{} at idle priority while {} waited: building {:.2f} s",
                         background_workers, background_workers == 1 ? "" : "s",
                         background_workers == 1 ? "its device" : "their devices", background_build_s);
    out += "\n";
  }
  out += fmt::format("busy after warm-up: compile {:.1f}%", 100.0 * compile_busy);
  if (background_workers > 0) out += fmt::format(" (background builds {:.1f}%)", 100.0 * background_busy);
  for (const auto& [name, busy] : device_busy) out += fmt::format(", {} {:.1f}%", name, 100.0 * busy);
  // The steady window runs from the first result to the last hand-out: a run
  // shorter than the pipeline's capacity has none.
  if (steady_trials_per_s > 0)
    out += fmt::format("\nsteady state: {:.3f} trials per {}second; engine CPU {:.1f} us per trial\n",
                       steady_trials_per_s, sim_s != wall_s ? "simulated " : "", engine_cpu_us_per_trial);
  else
    out += fmt::format(
        "\nsteady state: not reached (too few trials to fill the pipeline); engine CPU {:.1f} us per "
        "trial\n",
        engine_cpu_us_per_trial);
  if (!throughput.is_null()) {
    out +=
        fmt::format("best throughput: {:.1f} GFLOP/s ({}, {:.4g} GFLOP per run)\n", throughput["gflops"].get<double>(),
                    throughput["task"].get<std::string>(), throughput["flops"].get<double>() / 1e9);
    if (throughput.contains("vendor_note"))
      out += "vendor comparison: unavailable: " + throughput["vendor_note"].get<std::string>() + "\n";
    else if (throughput.contains("tuned_gflops"))
      out += fmt::format(
          "vendor comparison: the best configuration timed alternately with each vendor kernel: {:.1f} "
          "GFLOP/s (median)\n",
          throughput["tuned_gflops"].get<double>());
    // "1.08x (1.04–1.11 over 5 rounds, interleaved)"
    auto ratio = [](const nlohmann::json& v) {
      return fmt::format("tuned / vendor = {:.2f}x ({:.2f}\u2013{:.2f} over {} rounds, interleaved)",
                         v["ratio"].get<double>(), v["ratio_min"].get<double>(), v["ratio_max"].get<double>(),
                         v["rounds"].get<int>());
    };
    for (const auto& v : throughput.value("vendors", nlohmann::json::array())) {
      const std::string name = v["library"].get<std::string>() + " (" + v["variant"].get<std::string>() + ")";
      if (v["available"] == true)
        out += fmt::format("{}: {:.1f} GFLOP/s on {} thread(s) [{}]; {}\n", name, v["gflops"].get<double>(),
                           throughput["threads"].get<int>(), v["detail"].get<std::string>(), ratio(v));
      else
        out += name + ": unavailable: " + v["note"].get<std::string>() + "\n";
    }
    if (throughput.contains("best_vendor")) {
      const auto& best = throughput["best_vendor"];
      if (best.is_null())
        out += "best vendor: none available\n";
      else
        out += fmt::format("against the best vendor kernel, {} ({}): {}\n", best["library"].get<std::string>(),
                           best["variant"].get<std::string>(), ratio(best));
    }
  }
  return out;
}

namespace detail {

std::string device_name(const storage::topology& topo, std::int32_t device) {
  for (const auto& spec : topo.devices)
    if (spec.id == device) return spec.name;
  return device < 0 ? std::string() : "device" + std::to_string(device);
}

trial_info to_trial_info(const actors::measured_trial& trial, bool new_best, const search_space& space,
                         const storage::topology& topo) {
  trial_info info;
  static_cast<tune::trial&>(info) = trial;
  if (!info.ok()) info.time_ms = std::nan("");
  info.config_json = space.to_json(trial.config);
  info.device = device_name(topo, trial.device_id);
  info.finished_s = trial.finished_s;
  info.new_best = new_best;
  return info;
}

storage::trial_record to_record(const actors::measured_trial& trial, const search_space& space,
                                const storage::topology& topo) {
  storage::trial_record record;
  static_cast<tune::trial&>(record) = trial;
  record.config.clear();  // the database keeps its text
  record.config_json = space.to_json(trial.config);
  record.device = device_name(topo, trial.device_id);
  return record;
}

actors::measured_trial to_measured(const storage::trial_record& row, const search_space& space,
                                   const storage::topology& topo, const std::string& db_path, std::int64_t run_id,
                                   const session_options& options) {
  actors::measured_trial trial;
  static_cast<tune::trial&>(trial) = row;
  trial.candidate_id = static_cast<std::uint64_t>(row.seq);
  try {
    trial.config = space.from_json(row.config_json);
  } catch (const std::exception& e) {
    throw input_error(db_path + ": run " + std::to_string(run_id) + ", trial " + std::to_string(row.seq) +
                      " does not fit the search space (" + e.what() + "); resume with the same " +
                      option_name(options, "task") + " or " + option_name(options, "dataset") +
                      ", or start a new run without " + option_name(options, "resume"));
  }
  for (const auto& device : topo.devices)
    if (device.name == row.device) trial.device_id = device.id;
  return trial;
}

run_report make_report(const actors::run_summary& s, const search_space& space, const storage::topology& topo) {
  run_report r;
  if (s.best.ok()) r.best = to_trial_info(s.best, true, space, topo);
  r.trials = s.prior_trials + s.trials;
  r.new_trials = s.trials;
  r.reason = s.reason;
  r.wall_s = s.wall_s;
  r.sim_s = s.sim_s;
  r.compile_busy = s.compile.busy_fraction();
  for (std::size_t d = 0; d < s.devices.size() && d < topo.devices.size(); ++d)
    r.device_busy.emplace_back(topo.devices[d].name, s.devices[d].busy_fraction());
  r.steady_trials_per_s = s.steady_rate;
  for (const auto& [id, time] : s.device_times) r.device_times.emplace_back(device_name(topo, id), time);
  for (const auto& [id, drift] : s.device_drifts)
    if (drift.probes > 0) r.device_drifts.emplace_back(device_name(topo, id), drift);
  r.compile_workers = static_cast<std::uint32_t>(topo.compile_workers);
  r.build_s = s.build_s;
  r.background_workers = s.compile.background_workers;
  r.background_build_s = s.compile.background_build_s;
  if (s.compile.background_workers > 0 && s.compile.window_s > 0)
    r.background_busy = s.compile.background_busy_s / (s.compile.background_workers * s.compile.window_s);
  r.engine_cpu_us_per_trial = s.trials ? 1e6 * s.engine_cpu_s / static_cast<double>(s.trials) : 0.0;
  for (const auto& p : s.trace) r.trace.push_back({p.at_s, p.trials, p.time_ms});
  return r;
}

nlohmann::json task_throughput(const std::string& task, const run_report& report, bool compare_vendor, int threads,
                               backend* be) {
  if (!report.best || !(report.best->time_ms > 0)) return nullptr;
  task_spec spec = parse_task(task);
  double gflops = spec.flops() / report.best->time_ms / 1e6;
  nlohmann::json out = {{"task", spec.to_string()}, {"flops", spec.flops()}, {"gflops", gflops}};
  if (!compare_vendor) return out;
  vendor_options vo;
  vo.threads = threads;
  out["threads"] = threads;
  out["rounds"] = vo.rounds;
  // The run's best configuration, rebuilt (from the compile cache), is timed
  // alternately with each vendor kernel in one process.
  vendor_comparison comparison;
  try {
    if (!be) throw std::invalid_argument("no backend to build the best configuration with");
    comparison = compare_with_vendors(spec, cpu_tuned_kernel(spec, threads, *be, report.best->config), vo);
  } catch (const std::exception& e) {
    out["vendor_note"] = e.what();
  }
  out["vendors"] = vendor_json(comparison, out["best_vendor"]);
  if (comparison.tuned_gflops > 0) out["tuned_gflops"] = comparison.tuned_gflops;
  return out;
}

nlohmann::json vendor_json(const vendor_comparison& comparison, nlohmann::json& best) {
  auto figures = [](const vendor_result& v) {
    auto ratios = nlohmann::json::array();
    for (const auto& r : v.rounds) ratios.push_back(r.ratio());
    return nlohmann::json{{"gflops", v.vendor_gflops}, {"tuned_gflops", v.tuned_gflops}, {"ratio", v.ratio.median},
                          {"ratio_min", v.ratio.min},  {"ratio_max", v.ratio.max},       {"rounds", v.rounds.size()},
                          {"round_ratios", ratios}};
  };
  auto list = nlohmann::json::array();
  for (const auto& v : comparison.vendors) {
    nlohmann::json j = {{"library", v.library}, {"variant", v.variant}, {"available", v.available()}};
    if (v.available()) {
      j.update(figures(v));
      j["detail"] = v.detail;
    } else {
      j["note"] = v.note;
    }
    list.push_back(j);
  }
  best = nullptr;
  if (const auto* b = comparison.best()) {
    best = figures(*b);
    best.update({{"library", b->library}, {"variant", b->variant}});
  }
  return list;
}

}  // namespace detail
}  // namespace tune
