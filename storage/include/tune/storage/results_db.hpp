#pragma once
// The results database: every run and every trial of every run, in one SQLite
// file (WAL journal; the default) or in a PostgreSQL database that a team or a
// build farm shares (a postgresql:// URI or a libpq conninfo given as the
// path; same tables, queries and semantics; docs/storage.md). It is the truth
// the pipeline rebuilds from:
//
//   run_recorder ──create_run()──> runs      (one row per tuning run)
//                ──record_trial()─> trials   (one row per measured configuration,
//                                             committed before it is reported)
//   --resume     <──trials(run)──── in recorded order, to replay observe()
//   cache        <──load_cache()─── same task key + device kind, earlier runs
//   best         <──best()───────── fastest ok trial of a task
//   export       <──runs/trials──── a run as T4 or a Kernel Tuner cache (export.hpp)
//
// The recorder (actors/run_recorder.hpp) is the population's listener: the
// population hands it each result, the recorder writes it. Every row read
// back is validated; a corrupt row throws db_error naming the file, the table
// and the row. A results_db is used by one thread at a time (the recorder,
// called from the population actor); other processes may read the file
// concurrently, and on PostgreSQL many coordinators on many machines write
// their own runs at once.

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tune/engine/end_reason.hpp"
#include "tune/engine/result.hpp"

namespace tune::storage {

/// A results database that cannot be read or written as expected (corrupt
/// row, I/O failure). Bad user input (an unwritable path, a file that is not
/// a results database, a newer schema) throws std::invalid_argument instead.
struct db_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// True when `target` names a PostgreSQL database rather than an SQLite file:
/// a postgresql:// or postgres:// URI, or libpq's keyword=value form, which
/// starts with one of its connection keywords (host, dbname, user, service…)
/// and '=' (e.g. "host=/run/postgresql dbname=tune").
bool is_postgres_target(std::string_view target);
/// Whether this build opens PostgreSQL databases (it was built with libpq).
bool postgres_available();

/// What create_run() needs to know about a new run.
struct run_spec {
  std::string task_key;             ///< backend::task_key()
  std::string strategy;             ///< name given to make_strategy
  std::uint64_t seed = 0;           ///< the run's seed (stored exactly, all 64 bits)
  std::string options_json = "{}";  ///< budget, hyperparameters, topology…: a JSON object
  std::string device_kind;          ///< backend::device_kind()
};

/// A run as recorded. Its status column holds "running" until finish_run()
/// writes why it ended (tune::to_string(end_reason)); a run killed before
/// that stays "running". Both a running and a stopped run are what --resume
/// continues.
struct run_record {
  std::int64_t id = 0;
  std::string task_key;
  std::string strategy;
  std::uint64_t seed = 0;
  std::string options_json;
  std::string device_kind;
  double started_at = 0.0;            ///< Unix seconds
  std::optional<double> finished_at;  ///< Unix seconds; empty while running
  std::optional<end_reason> reason;   ///< empty while running (or killed)
  /// The trial (seq) that won the run's confirmation rounds: its best
  /// re-measured against the runners-up; empty when none was confirmed.
  std::optional<std::int64_t> confirmed_seq;

  bool running() const { return !reason.has_value(); }
  /// Running, killed or stopped: a later run may continue it.
  bool resumable() const { return !reason || *reason == end_reason::stopped; }
};

/// "running", or why the run ended: what runs.status holds.
std::string run_status_text(const run_record& run);

/// One trial as the database keeps it: the trial (tune::trial, whose
/// `config` stays empty here: the database keeps a configuration as its
/// canonical JSON text, which search_space::from_json turns into values) with
/// where and when it ran. record_trials() takes the same type; it assigns
/// run_id and seq.
struct trial_record : trial {
  std::int64_t run_id = 0;
  std::int64_t seq = 0;      ///< 0, 1, 2… in the order results arrived in the run
  std::string config_json;   ///< search_space::to_json(config): canonical
  std::string device;        ///< the device's name (topology), e.g. "sim0"
  double finished_at = 0.0;  ///< Unix seconds; 0 given to record_trials: the time of recording
};

/// One time of one trial in a run's confirmation rounds: the run's fastest
/// trials re-measured in turn, round after round, on one device.
struct confirmation_row {
  std::int64_t seq = 0;     ///< the trial re-measured
  std::uint32_t round = 0;  ///< 0, 1, … (every trial of the group is timed once per round)
  double time_ms = 0.0;
};

/// Outcome of record_trial(): a configuration is recorded once per run.
struct record_outcome {
  bool inserted = false;     ///< false: the configuration was already in the run
  std::int64_t seq = 0;      ///< the new trial's seq, or the existing one's
  double finished_at = 0.0;  ///< the new trial's trials.finished_at (Unix seconds); 0 when not inserted
};

/// A run's trial counts and best time, counted by SQLite (run_totals()).
struct run_totals {
  std::int64_t trials = 0;
  std::int64_t ok_trials = 0;
  std::optional<double> best_time_ms;  ///< fastest ok trial; empty when none is ok
};

/// The best ok trial of a task plus counts, for `tune-engine best`.
struct task_summary {
  std::string task_key;
  std::int64_t runs = 0;
  std::int64_t trials = 0;  ///< all trials of all runs of the task
  std::int64_t ok_trials = 0;
  std::optional<trial_record> best;    ///< see results_db::best (ties: earliest)
  std::optional<run_record> best_run;  ///< the run of `best`
  /// When `best` won its run's confirmation: its confirmed time (the run's
  /// statistic of its rounds, median or min), the fastest and slowest round,
  /// and how many rounds.
  std::optional<double> confirmed_ms;
  double confirmed_min_ms = 0.0;
  double confirmed_max_ms = 0.0;
  std::uint32_t confirmed_rounds = 0;
};

class results_db {
 public:
  /// Current schema version written to new files. An older file is migrated
  /// when opened read-write, and read as it is when read-only (version 3 added
  /// trials.message and writes why a run ended into runs.status; an older
  /// file's "finished" is read as the reason its trial count and budget give:
  /// budget when the trials reached it, else time with a time budget, else
  /// exhausted; version 4 added trials.duel_ms and duel_best_ms, NULL in a
  /// migrated file's older trials).
  static constexpr int schema_version = 4;

  enum class open_mode { read_write, read_only };

  /// Opens (read_write: creates if missing) the database. Throws
  /// std::invalid_argument naming the path when it cannot be created or
  /// opened, is not a tune-engine results database, or has a newer schema.
  /// A PostgreSQL target (is_postgres_target) is connected to, its tables
  /// made when missing; a password inside the target is refused (libpq reads
  /// it from ~/.pgpass, PGPASSFILE or PGPASSWORD, so it never shows in a
  /// message), and a build without libpq refuses the target saying so.
  /// `synchronous_full` makes every commit survive power loss too (slower);
  /// the default (NORMAL) survives a killed process. The path ":memory:"
  /// keeps everything in memory (no file, no WAL), for runs without a database.
  explicit results_db(const std::filesystem::path& file, open_mode mode = open_mode::read_write,
                      bool synchronous_full = false);
  ~results_db();
  results_db(results_db&&) noexcept;
  results_db& operator=(results_db&&) noexcept;

  /// The schema version the file had when this open migrated it to
  /// schema_version; nullopt when this open migrated nothing (a new file, a
  /// current one, a read-only open, or another process migrated it first).
  std::optional<int> migrated_from() const;

  /// The file, or for PostgreSQL postgresql://user@host:port/dbname (never a password).
  const std::filesystem::path& path() const;

  // ---- runs -------------------------------------------------------------
  /// Starts a run ("running"); returns its id.
  std::int64_t create_run(const run_spec& spec);
  std::optional<run_record> find_run(std::int64_t run_id) const;
  /// The most recently started resumable run (running, killed or stopped)
  /// with this task key, strategy and seed: what a resume continues.
  std::optional<run_record> latest_resumable_run(const std::string& task_key, const std::string& strategy,
                                                 std::uint64_t seed) const;
  std::vector<run_record> runs() const;
  /// Records why the run ended and when. Throws db_error for an unknown run.
  void finish_run(std::int64_t run_id, end_reason reason);
  /// Marks a stopped run running again (a resume continues it).
  void reopen_run(std::int64_t run_id);
  /// Claims the run for this object until it is destroyed: false when another
  /// process (or another results_db on the file) holds it, so that two
  /// processes never continue one run at once. SQLite: an open-file-description
  /// lock on a byte far past SQLite's own locks; the system drops it when the
  /// process ends, killed or not. Always true for ":memory:". PostgreSQL: a
  /// session advisory lock, a lease the server drops when the connection
  /// ends (the holder killed) or stops answering keepalives (about 25 s).
  bool claim_run(std::int64_t run_id);

  // ---- trials -----------------------------------------------------------
  /// Writes one trial in its own committed transaction and returns after
  /// the commit: once this returns, the trial survives a kill -9. A
  /// configuration already recorded in the run is not written again
  /// (inserted = false). Throws std::invalid_argument for an invalid trial
  /// (unknown run, negative times, ok without a finite time, config not a
  /// JSON object).
  record_outcome record_trial(std::int64_t run_id, const trial_record& trial);
  /// Several trials in one committed transaction, in order (seq ascending):
  /// all of them survive a kill -9 once this returns, none if it throws.
  /// One outcome per trial; a configuration given twice is written once.
  /// Throws before writing anything when any trial is invalid.
  std::vector<record_outcome> record_trials(std::int64_t run_id, const std::vector<trial_record>& trials);
  /// Every trial of the run in recorded order (seq ascending).
  std::vector<trial_record> trials(std::int64_t run_id) const;
  std::int64_t trial_count(std::int64_t run_id) const;
  /// Counts and best time of every run that has trials, by run id, in one
  /// aggregate query: no trial row is read into memory.
  std::map<std::int64_t, run_totals> all_run_totals() const;

  // ---- across runs --------------------------------------------------------
  /// The latest earlier measurement of this configuration for the same task
  /// key and device kind whose outcome does not depend on luck: ok,
  /// instantiation_error, compile_error, compile_error_device, wrong_answer.
  /// (Runtime errors, timeouts and unknown are measured again.)
  std::optional<trial_record> find_cached(const std::string& task_key, const std::string& device_kind,
                                          const std::string& config_json) const;
  /// All such measurements at once, by canonical config JSON (the latest per
  /// configuration), for a recorder that looks up in memory.
  std::unordered_map<std::string, trial_record> load_cache(const std::string& task_key,
                                                           const std::string& device_kind) const;

  /// Task keys with at least one run, sorted.
  std::vector<std::string> tasks() const;
  // ---- confirmation -------------------------------------------------------
  /// Records a run's confirmation rounds and the trial that won them, in one
  /// transaction. Throws std::invalid_argument for an unknown run or trial,
  /// a time that is not finite and > 0, or a winner not among the rows.
  void record_confirmation(std::int64_t run_id, const std::vector<confirmation_row>& rows, std::int64_t winner_seq);
  /// Marks trials of the run as measured while their device had drifted
  /// (trials.drift_flagged), in one transaction; unknown seqs change nothing.
  void flag_drift(std::int64_t run_id, const std::vector<std::int64_t>& seqs);
  /// The run's confirmation rounds by seq and round; empty when none.
  std::vector<confirmation_row> confirmations(std::int64_t run_id) const;

  // ---- copies between stores (tune-engine db copy) -------------------------
  /// Writes a run recorded in another store, in one transaction: its row as
  /// it is there (start and end time, status, confirmed winner), its trials
  /// (seq, finished_at and everything else as recorded; reused_from_run as
  /// given, which the caller maps to this store's run ids) and its
  /// confirmation rounds. A run already here (same task key, strategy, seed,
  /// device kind and start time: an earlier copy of it) gets the trials it
  /// lacks (seq past its own) and, with them or when it had not ended, the
  /// status, end time and confirmation of `run`; otherwise it is added under
  /// a new id. A copy here that holds more trials than `run`, or other ones
  /// (it went on after it was copied), is left as it is: `diverged`. The
  /// trials must be the run's, in seq order from 0 without gaps (as trials()
  /// gives them). Throws std::invalid_argument for an invalid trial. Imports
  /// into one store are serialised, so that two copies at once never add a
  /// run twice.
  struct import_outcome {
    std::int64_t run_id = 0;        ///< the run's id in this store
    bool added = false;             ///< true: a new run; false: an earlier copy
    bool was_running = false;       ///< the earlier copy had not ended
    bool diverged = false;          ///< the earlier copy went on here: nothing written
    std::int64_t trials_added = 0;  ///< trials written now
  };
  import_outcome import_run(const run_record& run, const std::vector<trial_record>& trials,
                            const std::vector<confirmation_row>& rounds);
  /// Sets reused_from_run of trials of a run (pairs of seq and the reused
  /// run's id here), in one transaction: copy_runs links a trial to a run it
  /// copied after the trial's own.
  void set_reused_from(std::int64_t run_id, const std::vector<std::pair<std::int64_t, std::int64_t>>& links);

  /// The best trial of the task over all its runs (any device kind unless
  /// given) with counts; nullopt when the task has no run. When runs of the
  /// task were confirmed, the winner with the lowest confirmed time (the
  /// median of its rounds); else the fastest ok trial that did not lose a duel
  /// (by its duel's median when it had one: trial::best_judged_ms).

  std::optional<task_summary> best(const std::string& task_key,
                                   const std::optional<std::string>& device_kind = std::nullopt) const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace tune::storage
