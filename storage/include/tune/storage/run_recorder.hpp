#pragma once
// A real run's record: every trial goes to the results database and, once
// committed there, to the event stream. It also opens or resumes the run and
// offers earlier measurements of the same task as a cache. It knows trials as
// the database keeps them (trial_record): whoever runs the pipeline turns its
// trials into records (the facade's session does).
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
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tune/engine/end_reason.hpp"
#include "tune/engine/space.hpp"
#include "tune/storage/event_stream.hpp"
#include "tune/storage/results_db.hpp"

namespace tune::storage {

struct recorder_options {
  std::string db_path;  ///< ":memory:" records nothing that outlives the process
  run_spec spec;
  /// Continue the latest resumable run with the same task, strategy and seed
  /// (a new run when there is none).
  bool resume = false;
  /// Reuse measurements of earlier runs of the same task and device kind.
  bool use_cache = true;
  /// ZeroMQ endpoint to publish events on; empty: no events.
  std::string publish_endpoint;
  /// CURVE secret key (Z85) of the publisher; required off loopback.
  std::string publish_key;
  /// A publisher already bound to publish on instead (publish_endpoint and
  /// publish_key are then unused): one stream for several runs in turn, as a
  /// model run's rounds share one. Used by one recorder at a time.
  std::shared_ptr<event_publisher> publisher;
  /// Wait (up to 10 s) for this many subscribers before the first event.
  std::size_t wait_for_subscribers = 0;
  /// The space searched: recorded with a new run (tune-engine export writes
  /// its parameter lists from it).
  search_space_ptr space;
  std::optional<std::int64_t> budget_trials;
  std::optional<double> budget_seconds;
  nlohmann::json topology = nlohmann::json::object();
  /// Wall seconds that commits are apart at least while trials come faster.
  double commit_interval_s = 0.05;
  /// What messages call the options behind db_path, resume and the seed, for
  /// an embedder whose users know them by other names (the command sets
  /// {"db_path", "--db"}, …); a field not listed is named as it is here.
  std::map<std::string, std::string> option_names;
};

class run_recorder {
 public:
  /// Opens the database and creates (or resumes) the run. Throws
  /// std::invalid_argument for a database that cannot be used or a run that
  /// another process is continuing.
  explicit run_recorder(recorder_options options);
  ~run_recorder();

  std::int64_t run_id() const { return run_id_; }
  bool resumed() const { return resumed_; }
  /// The run's recorded trials, in recorded order (empty for a new run).
  const std::vector<trial_record>& prior() const { return prior_; }
  /// The latest earlier measurement of a configuration (its canonical JSON)
  /// by another run of the same task and device kind whose outcome does not
  /// depend on luck (results_db::load_cache); nullptr when there is none or
  /// the cache is off. Valid as long as the recorder.
  const trial_record* cached(const std::string& config_json) const;
  /// True when cached() can find anything.
  bool has_cache() const { return !cache_.empty(); }
  /// The bound endpoint, or empty when not publishing.
  std::string endpoint() const;

  /// Publishes run_started; call once before the pipeline starts.
  void started();
  /// Queues a trial (its run_id and seq are assigned when committed; a
  /// finished_at of 0 becomes the time of this call); nothing is written
  /// until commit(). `elapsed_s`: backend seconds since the run started.
  void add(trial_record trial, double elapsed_s, bool new_best);
  /// Trials queued and the last commit at least commit_interval_s ago.
  bool commit_due() const;
  /// Writes the queued trials in one transaction, then publishes their
  /// events; returns how many were queued. On a database error none of them
  /// is recorded, the queue is emptied and the error is thrown.
  std::size_t commit();
  std::size_t queued() const { return queue_.size(); }
  /// Records the run's confirmation rounds and their winner
  /// (results_db::record_confirmation), after committing what is queued.
  void confirmed(const std::vector<confirmation_row>& rows, std::int64_t winner_seq);
  /// Marks trials as measured while their device had drifted (after
  /// committing what is queued) and publishes a drift event.
  void flag_drift(drift_event drift);
  /// Publishes a progress event (its wall_elapsed_s is filled in here).
  void on_progress(progress_event progress);
  /// Commits what is queued, records why the run ended (a stopped run stays
  /// resumable) and publishes run_finished. `trials`: recorded ones included;
  /// `best`: the best trial of the run, or nullptr.
  void finished(end_reason reason, std::int64_t trials, const trial_record* best, double wall_s);

 private:
  /// Seconds from the run's start in the database (runs.started_at) to `unix_seconds`.
  double wall_elapsed(double unix_seconds) const;
  std::string option_name(const std::string& field) const;

  recorder_options options_;
  std::unique_ptr<results_db> db_;
  std::shared_ptr<event_publisher> publisher_;
  std::int64_t run_id_ = 0;
  double started_at_ = 0.0;  ///< runs.started_at (Unix seconds)
  bool resumed_ = false;
  std::vector<trial_record> prior_;
  std::unordered_map<std::string, trial_record> cache_;
  /// The trials waiting for commit(); beside each what its events need.
  std::vector<trial_record> queue_;
  struct queued_event {
    double elapsed_s = 0.0;
    bool new_best = false;
  };
  std::vector<queued_event> queued_events_;
  double last_commit_ = -1e300;  ///< steady seconds
};

}  // namespace tune::storage
