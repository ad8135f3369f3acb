#include "runs_json.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "tune/storage/results_db.hpp"

namespace tune::dashboard {
namespace {

using storage::results_db;

nlohmann::json optional_number(const std::optional<double>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

/// The winner's confirmation: {"seq", "time_ms" (median of its rounds),
/// "min_ms", "max_ms", "rounds"}; null when the run was not confirmed.
nlohmann::json confirmation_of(const results_db& db, const storage::run_record& run) {
  if (!run.confirmed_seq) return nullptr;
  std::vector<double> times;
  for (const auto& c : db.confirmations(run.id))
    if (c.seq == *run.confirmed_seq) times.push_back(c.time_ms);
  if (times.empty()) return nullptr;
  std::sort(times.begin(), times.end());
  auto n = times.size();
  double median = n % 2 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
  return {{"seq", *run.confirmed_seq},
          {"time_ms", median},
          {"min_ms", times.front()},
          {"max_ms", times.back()},
          {"rounds", n}};
}

/// A run's row; its best is the confirmed winner's time when the run has one.
nlohmann::json run_summary(std::size_t db, const storage::run_record& run, const storage::run_totals& totals,
                           nlohmann::json confirmed) {
  auto best = confirmed.is_null() ? optional_number(totals.best_time_ms) : confirmed["time_ms"];
  return {{"db", db},
          {"id", run.id},
          {"task", run.task_key},
          {"strategy", run.strategy},
          {"seed", std::to_string(run.seed)},
          {"device_kind", run.device_kind},
          {"started_at", run.started_at},
          {"finished_at", optional_number(run.finished_at)},
          {"state", storage::run_status_text(run)},
          {"trials", totals.trials},
          {"ok_trials", totals.ok_trials},
          {"best_time_ms", best},
          {"confirmed", confirmed}};
}

}  // namespace

nlohmann::json list_runs(const std::vector<std::string>& databases) {
  nlohmann::json runs = nlohmann::json::array();
  for (std::size_t d = 0; d < databases.size(); ++d) {
    results_db db(databases[d], results_db::open_mode::read_only);
    // Counted by SQLite in one query: the list does not read any run's trials.
    auto totals = db.all_run_totals();
    for (const auto& run : db.runs()) {
      auto found = totals.find(run.id);
      runs.push_back(
          run_summary(d, run, found == totals.end() ? storage::run_totals{} : found->second, confirmation_of(db, run)));
    }
  }
  std::stable_sort(runs.begin(), runs.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    return a["started_at"].get<double>() > b["started_at"].get<double>();
  });
  return runs;
}

std::optional<nlohmann::json> run_details(const std::vector<std::string>& databases, std::size_t db,
                                          std::int64_t run_id) {
  if (db >= databases.size()) return std::nullopt;
  results_db file(databases[db], results_db::open_mode::read_only);
  auto run = file.find_run(run_id);
  if (!run) return std::nullopt;
  // One run's every trial: the answer holds them all, so its counts and best
  // are summed from the rows read for it rather than by another query. The
  // run list never comes here (list_runs).
  auto trials = file.trials(run_id);
  storage::run_totals totals;
  for (const auto& t : trials) {
    ++totals.trials;
    if (!t.ok()) continue;
    ++totals.ok_trials;
    if (!totals.best_time_ms || t.time_ms < *totals.best_time_ms) totals.best_time_ms = t.time_ms;
  }
  auto details = run_summary(db, *run, totals, confirmation_of(file, *run));
  details["database"] = file.path().string();  // a PostgreSQL URI without its password
  details["options"] = nlohmann::json::parse(run->options_json, nullptr, false);
  if (details["options"].is_discarded()) details["options"] = nullptr;
  std::map<std::string, std::int64_t> counts;
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& t : trials) {
    ++counts[std::string(to_string(t.state))];
    auto config = nlohmann::json::parse(t.config_json, nullptr, false);
    nlohmann::json row = {{"seq", t.seq},
                          {"config", config.is_discarded() ? nlohmann::json(t.config_json) : config},
                          {"status", std::string(to_string(t.state))},
                          {"time_ms", t.ok() ? nlohmann::json(t.time_ms) : nlohmann::json()},
                          {"compile_s", t.compile_s},
                          {"run_s", t.run_s},
                          {"device", t.device},
                          {"wall_elapsed_s", std::max(0.0, t.finished_at - run->started_at)},
                          {"reused_from_run", t.reused() ? nlohmann::json(*t.reused_from_run) : nlohmann::json()},
                          {"stopped_early", t.stopped_early},
                          {"drift_flagged", t.drift_flagged}};
    if (std::isfinite(t.duel_ms)) {  // as the trial_finished event has them
      row["duel_ms"] = t.duel_ms;
      row["duel_best_ms"] = t.duel_best_ms;
    }
    rows.push_back(std::move(row));
  }
  details["status_counts"] = counts;
  details["trials"] = std::move(rows);
  return details;
}

std::optional<std::size_t> find_database(const std::vector<std::string>& databases, std::int64_t run_id,
                                         const std::string& task) {
  for (std::size_t d = 0; d < databases.size(); ++d) {
    results_db db(databases[d], results_db::open_mode::read_only);
    auto run = db.find_run(run_id);
    if (run && run->task_key == task) return d;
  }
  return std::nullopt;
}

}  // namespace tune::dashboard
