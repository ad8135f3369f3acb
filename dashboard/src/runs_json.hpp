#pragma once
// What the page's /api routes answer, read from results databases (read-only,
// opened per request so a run writing the file meanwhile is seen as it is).

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace tune::dashboard {

/// Every run of every database, newest first: [{"db", "id", "task",
/// "strategy", "seed" (a string: 64 bits do not fit a JavaScript number),
/// "device_kind", "started_at", "finished_at", "state", "trials",
/// "ok_trials", "best_time_ms"}…], the counts and best from one aggregate
/// query per database (results_db::all_run_totals): no trial row is read, so
/// the list costs a small part of reading the trials (a test checks it on a
/// database of 200,000 trials). "state" is runs.status: "running" (no end
/// recorded: running or killed) or an end reason.
nlohmann::json list_runs(const std::vector<std::string>& databases);

/// One run with its options and every trial in recorded order ("trials":
/// [{"seq", "config", "status", "time_ms", "compile_s", "run_s", "device",
/// "wall_elapsed_s", "reused_from_run"}…]) and "status_counts"; nullopt when database
/// `db` has no run `run_id`. "wall_elapsed_s" is trials.finished_at -
/// runs.started_at: the same number as the run's live events carry. Reads
/// every trial of that one run (what the answer holds); its counts and best
/// are summed from them.
std::optional<nlohmann::json> run_details(const std::vector<std::string>& databases, std::size_t db,
                                          std::int64_t run_id);

/// The database holding run `run_id` of task `task`, if any.
std::optional<std::size_t> find_database(const std::vector<std::string>& databases, std::int64_t run_id,
                                         const std::string& task);

}  // namespace tune::dashboard
