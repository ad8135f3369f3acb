#pragma once
// A real run's record: every trial goes to the results database and, once
// committed there, to the event stream. It also opens or resumes the run and
// offers earlier measurements of the same task as a cache.
//
// Trials are committed in groups: add() queues one, commit() writes every
// queued trial in one transaction and then publishes their events. A caller
// commits when commit_due() says so, which is at once while commits are at
// least commit_interval_s apart (a run of slow trials commits each as it
// comes), and on its timer; a fast run so pays for one transaction per
// interval instead of one per trial.
//
//   session listener ──add/commit──> run_recorder ──record_trials──> results_db
//                                                 ──publish───────> event_publisher

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tune/actors/interfaces.hpp"
#include "tune/storage/event_stream.hpp"
#include "tune/storage/results_db.hpp"
#include "tune/storage/topology.hpp"

namespace tune::actors {

struct recorder_options {
  std::string db_path;
  storage::run_spec spec;
  /// Continue the latest unfinished run with the same task, strategy and seed
  /// (a new run when there is none).
  bool resume = false;
  /// Reuse measurements of earlier runs of the same task and device kind.
  bool use_cache = true;
  /// ZeroMQ endpoint to publish events on; empty: no events.
  std::string publish_endpoint;
  /// CURVE secret key (Z85) of the publisher; required off loopback.
  std::string publish_key;
  /// Wait (up to 10 s) for this many subscribers before the first event.
  std::size_t wait_for_subscribers = 0;
  search_space_ptr space;
  /// The measuring devices, in the pipeline's order (names for the database
  /// and events).
  std::vector<storage::device_spec> devices;
  std::optional<std::int64_t> budget_trials;
  std::optional<double> budget_seconds;
  nlohmann::json topology = nlohmann::json::object();
  /// Wall seconds that commits are apart at least while trials come faster.
  double commit_interval_s = 0.05;
};

class run_recorder {
 public:
  /// Opens the database and creates (or resumes) the run. Throws
  /// std::invalid_argument for a database that cannot be used.
  explicit run_recorder(recorder_options options);
  ~run_recorder();

  std::int64_t run_id() const { return run_id_; }
  bool resumed() const { return resumed_; }
  /// The run's recorded trials, in recorded order (empty for a new run).
  const std::vector<measured_trial>& prior() const { return prior_; }
  /// Earlier measurements to reuse; empty when the cache is off.
  trial_cache cache() const;
  /// The bound endpoint, or empty when not publishing.
  std::string endpoint() const;

  /// Devices that joined after construction (a node's devices, known once it
  /// answered); call before the first trial.
  void add_devices(const std::vector<storage::device_spec>& devices);
  /// Publishes run_started; call once before the pipeline starts.
  void started();
  /// Queues a trial; nothing is written until commit().
  void add(const measured_trial& trial, bool new_best);
  /// Trials queued and the last commit at least commit_interval_s ago.
  bool commit_due() const;
  /// Writes the queued trials in one transaction, then publishes their
  /// events; returns how many were queued. On a database error none of them
  /// is recorded, the queue is emptied and the error is thrown.
  std::size_t commit();
  std::size_t queued() const { return queue_.size(); }
  void on_progress(const progress_report& report);
  /// Commits what is queued, marks the run finished (unless `interrupted`:
  /// then --resume continues it) and publishes run_finished.
  void finished(const run_summary& summary, bool interrupted);

 private:
  std::string device_name(std::int32_t device) const;
  nlohmann::json config_json(const configuration& config) const;
  /// Seconds from the run's start in the database (runs.started_at) to `unix_seconds`.
  double wall_elapsed(double unix_seconds) const;

  recorder_options options_;
  std::unique_ptr<storage::results_db> db_;
  std::unique_ptr<storage::event_publisher> publisher_;
  std::int64_t run_id_ = 0;
  double started_at_ = 0.0;  ///< runs.started_at (Unix seconds)
  bool resumed_ = false;
  std::vector<measured_trial> prior_;
  std::shared_ptr<std::unordered_map<std::string, storage::trial_record>> cache_;
  /// The trials waiting for commit(), as the database takes them; with a
  /// publisher, beside each what its events need.
  std::vector<storage::trial_input> queue_;
  std::vector<std::pair<measured_trial, bool>> queued_events_;  ///< trial, new best
  double last_commit_ = -1e300;                                 ///< steady seconds
};

}  // namespace tune::actors
