#pragma once
// tune-engine as a library: one session tunes one thing through the actor
// pipeline (generator, compile pool, one measurer per device, population)
// and reports what it found. The `tune-engine tune` command is a user of this
// header; so are the C API and the Python module.
//
//   tune::session_options o;
//   o.task = "matmul:512x1024x1024";          // or dataset, kernel, objective, backend
//   o.budget.trials = 150;                     // else the target's default
//   o.seed = 1;                                // else drawn, and reported
//   o.on_new_best = [](const tune::trial_info& t) { ... };
//   tune::session s(o);                          // validates: throws tune::input_error
//   tune::run_report r = s.run();                // blocks; s.request_stop() from any thread
//   std::cout << r.to_json().dump(2);
//
// What can be tuned (exactly one of them):
// - `task`: a built-in kernel ("matmul:NxKxM", "bmm:…", "conv2d:…") on the
//   topology's backend (cpu, cuda, hip);
// - `dataset`: a measured dataset replayed on `replay` devices;
// - `kernel`: a user kernel's launch description (docs/kernels.md);
// - `objective`: any callable scoring a configuration of `space` /
//   `space_file` (lower is better; throwing or returning a non-finite value
//   makes a failed trial, the run goes on);
// - `backend`: a user-written tune::backend.
// Every random choice flows from `seed` (drawn when not given), which is
// recorded with the results and reported.

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "tune/engine/end_reason.hpp"
#include "tune/engine/limits.hpp"
#include "tune/engine/result.hpp"
#include "tune/engine/space.hpp"
#include "tune/kernels/backend.hpp"
#include "tune/storage/topology.hpp"

namespace tune::storage {
class event_publisher;
}

namespace tune {

/// The library's version, "MAJOR.MINOR.PATCH".
std::string_view version();

/// Bad input from a user (a file, an option, a value): the message names the
/// file or option, the field and the fix. The command prints it and exits 2.
struct input_error : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

/// Parses "name=value" items (the command's repeated --hyper) into numbers.
/// Throws input_error naming `field` (where the items came from, as the
/// caller's user knows it) and the item.
std::map<std::string, double> parse_hyper(const std::vector<std::string>& items, std::string_view field = "hyper");

/// Sets the fields of `policy` named by "name=value" items (the command's
/// repeated --early-stop): slow_factor, min_slow_ms, margin, first_limit_ms,
/// build_factor, min_build_s (early_stop_policy; 0 switches a rule off).
/// A rule switched back on from 0 (slow_factor, build_factor) gets its
/// floor's default (min_slow_ms, min_build_s) if that is 0 and not given.
/// Throws input_error naming `field` and the item for an unknown name (listing
/// the known ones), a value that is not a number, or a negative one.
early_stop_policy parse_early_stop(const std::vector<std::string>& items, early_stop_policy policy,
                                   std::string_view field = "early_stop");
/// The same for settings already numbers (name -> value), e.g. an embedder's
/// own option: the names and values are checked as parse_early_stop checks
/// them.
early_stop_policy set_early_stop(const std::map<std::string, double>& settings, early_stop_policy policy,
                                 std::string_view field = "early_stop");

/// Checks a strategy name and its hyperparameters by building the strategy
/// once on `space`; throws input_error listing the known names or saying
/// which hyperparameter is unknown or out of range.
void validate_strategy(const std::string& name, const std::map<std::string, double>& hyper, search_space_ptr space);

/// A cost to minimise for one configuration (e.g. milliseconds).
using objective_fn = std::function<double(const configuration&)>;

enum class run_mode {
  steady,        ///< demand-driven: a freed slot is refilled at once (default)
  generational,  ///< propose `batch`, build and measure all of it, wait, repeat
};

/// One finished trial, as callbacks and the report see it: the trial
/// (configuration, status, time_ms (NaN unless ok), objectives, compile_s,
/// run_s, message, reused_from_run) with its place in the run.
struct trial_info : trial {
  std::uint64_t seq = 0;    ///< its number in the run: 0, 1, 2… in arrival order (recorded trials first)
  std::string config_json;  ///< {"name": value, …} in the space's order
  std::string device;       ///< the topology's device name
  double finished_s = 0.0;  ///< seconds since the start (simulated for replay)
  bool new_best = false;    ///< it improved the best time
  /// Program-edit evolution, the front and the original only: the error on
  /// the validation and test splits, which the search never saw (objectives[1]
  /// is the error on the search split); NaN otherwise, or for matmul.
  double validation_error = std::numeric_limits<double>::quiet_NaN();
  double test_error = std::numeric_limits<double>::quiet_NaN();
  /// {"seq", "config", "status", "time_ms" (null unless ok), "times_ms" (each
  /// timed run, [] when unknown), "objectives",
  /// "compile_s", "run_s", "device", "message", "finished_s",
  /// "reused_from_run" (null unless reused), "duel_ms" and "duel_best_ms"
  /// (null unless it had a duel), "new_best", "validation_error" and
  /// "test_error" (null unless known)}.
  nlohmann::json to_json() const;
};

/// About four times a second while a run is on.
struct progress_info {
  std::uint64_t trials = 0;  ///< recorded ones included
  std::uint64_t budget = 0;
  double at_s = 0.0;
  double trials_per_s = 0.0;
  double compile_busy = 0.0;
  std::vector<double> device_busy;
  std::optional<double> best_time_ms;
};

/// Handed to one session; request_stop() may be called from any thread (or a
/// signal handler): nothing more is handed out and the run ends once the work
/// in flight has drained, resumable like a SIGINT.
class stop_source {
 public:
  stop_source() : flag_(std::make_shared<std::atomic<bool>>(false)) {}
  void request_stop() const noexcept { flag_->store(true); }
  bool stop_requested() const noexcept { return flag_->load(); }

 private:
  std::shared_ptr<std::atomic<bool>> flag_;
};

/// What a run does when another process on this machine holds the lease of a
/// device it would measure on (session_options::device_wait).
enum class device_wait_policy {
  wait,  ///< wait for it, saying who holds it
  free,  ///< measure on the devices that are free (waiting while none is)
  fail,  ///< fail at once (std::runtime_error naming the holder)
};

struct session_options {
  // -- where it runs ----------------------------------------------------------
  /// Topology YAML file; else `topology`; else the target's default: one
  /// device of `backend_name` (cpu; replay for a dataset) with a compile
  /// worker on every other core.
  std::string topology_file;
  std::optional<storage::topology> topology;
  std::string backend_name;  ///< without a topology: cpu, cuda, hip (default cpu)
  /// Lease the resources of every local device (its cores, its GPU:
  /// backend::device_resources) for the session's run, so that no other run on
  /// this machine measures on them meanwhile (tune/kernels/device_lease.hpp;
  /// the leases end when run() returns, or with the process). false: measure without
  /// (two runs on one core then time each other's kernels).
  bool lease_devices = true;
  device_wait_policy device_wait = device_wait_policy::wait;

  // -- what to tune: exactly one (the target) -------------------------------------
  std::string task;  ///< built-in kernel, e.g. "matmul:512x1024x1024"
  /// Program-edit evolution (GEVO-ML, docs/gevo.md): a workload whose LLVM IR
  /// is evolved, one of evolution_workloads() ("2fcnet:predict",
  /// "2fcnet:train", "matmul:NxKxM": the kernel of the task's best
  /// configuration in db_path, else a built-in default); the strategy is then
  /// `gevo`, the objectives {run time, error} and run_report::front the result.
  std::string workload;
  std::string dataset;      ///< measured dataset to replay (Kernel Tuner, T4, KTT)
  std::string kinds_file;   ///< with dataset: parameter kind overrides
  double time_scale = 1.0;  ///< with dataset: wall seconds per recorded second
  std::string kernel;       ///< user kernel: launch.json or the folder holding it
  objective_fn objective;   ///< with space or space_file
  std::shared_ptr<backend> custom_backend;
  /// The space an objective searches (file: NNI, T1, Kernel Tuner tune_params).
  std::string space_file;
  search_space_ptr space;
  /// Names the objective's or custom backend's task in the results database.
  std::string task_name = "objective";

  // -- how it searches -------------------------------------------------------
  std::string strategy;  ///< empty: the default (default_strategy_name())
  std::map<std::string, double> hyper;
  /// budget.trials: trials in all, recorded ones included on resume; 0: the
  /// target's default (default_budget()). budget.seconds: (simulated) seconds
  /// after which nothing more is handed out; 0: none.
  tune::budget budget{0, 0.0};
  /// Hand out at most this many new trials (a resume's recorded ones not
  /// counted), then end as a stop does once they are in: reason `stopped`,
  /// the run resumable. One round of a longer search (tune_model's rounds);
  /// 0: no such limit. Unlike budget, it is not the search's end.
  std::uint64_t stop_after_trials = 0;
  /// Every random choice flows from it; empty: one is drawn and reported
  /// (run_report::seed) and recorded, so that the run can be repeated.
  std::optional<std::uint64_t> seed;
  /// Transfer from measurements made elsewhere: measured datasets (Kernel
  /// Tuner, T4, KTT) or results databases holding runs of the same task, e.g.
  /// on another GPU. Their configurations and times become
  /// strategy_options::prior (several sources merged by geometric mean);
  /// `bo` uses it, the other strategies ignore it.
  std::vector<std::string> priors;
  /// Also take as prior the runs of the same task on other device kinds that
  /// db_path already holds; in a model run (tune/model.hpp), also each task's
  /// family's runs (prior_tasks) and, through one pipeline, its family's
  /// trials so far in the run. Off: only the priors named here.
  bool auto_prior = true;
  /// Also take as prior the runs in db_path of these other tasks (their task
  /// keys, run_report::task_key; e.g. other shapes of the same operator, as a
  /// model run passes its tasks' families): their configurations carried to
  /// the nearest of this task's space (tune/engine/nearest_configuration.hpp:
  /// the same tile sizes where they divide), with their times; those are
  /// another shape's, and `bo` fits the slope of its model's trend to this
  /// run's results. A task with no run in db_path on this device kind, or none
  /// that maps, gives nothing. Needs db_path.
  std::vector<std::string> prior_tasks;
  /// Configurations handed out first, each a JSON object of the parameters'
  /// values as search_space::to_json writes it (Kernel Tuner's x0): the
  /// strategy then goes on knowing their results (strategy_options::start).
  std::vector<std::string> start;
  run_mode mode = run_mode::steady;
  std::uint32_t batch = 8;  ///< generational mode: candidates per generation

  // -- what it records -------------------------------------------------------
  std::string db_path;           ///< SQLite results database; empty: kept in memory
  bool resume = false;           ///< continue the latest unfinished run of the same task, strategy and seed
  bool use_cache = true;         ///< reuse measurements of earlier runs of the task in db_path
  std::string publish_endpoint;  ///< ZeroMQ endpoint for events; empty: none
  /// CURVE secret key (Z85 text) of the event stream; required when
  /// publish_endpoint is not on loopback (storage::make_curve_keypair).
  std::string publish_key;
  std::size_t publish_wait = 0;  ///< wait up to 10 s for this many subscribers
  /// A publisher already bound (storage::event_publisher) to publish the run's
  /// events on instead of one bound at publish_endpoint, which is then unused:
  /// several runs in turn on one stream, as a model run's rounds share one
  /// (tune/model.hpp). Used by one run at a time.
  std::shared_ptr<storage::event_publisher> publisher;
  bool progress_line = false;  ///< a status line on stderr: rewritten in place on a terminal, every 10 s into a file
  /// Serves the live web dashboard (serve_dashboard) on HOST:PORT while the
  /// run lasts, fed by the run's own events (published on a free loopback port
  /// when publish_endpoint is empty) and db_path; empty: none. Checked and
  /// bound by the constructor; a warning (off loopback without a token) goes
  /// to stderr.
  std::string dashboard_listen;
  std::string dashboard_token;  ///< with dashboard_listen: required by the page, /api and /ws
  /// With dashboard_listen: called once it listens, with the page's address.
  std::function<void(const std::string& url)> on_dashboard;

  /// What messages about bad input call each field, for a front end whose
  /// users know them by other names: the command sets {"budget", "--budget"},
  /// {"dashboard_listen", "--dashboard"}, … A field not listed is named as it
  /// is here (budget, time_budget, db_path, …; session_option_fields()).
  std::map<std::string, std::string> option_names;

  // -- kernels -----------------------------------------------------------------
  int threads = 1;  ///< CPU threads one kernel uses
  /// How each configuration of a kernel (task, kernel, workload) is timed;
  /// empty: the topology file's `measurement:`, else measurement_protocol's
  /// defaults. Recorded with the run (runs.options.measurement), with the
  /// drift and confirmation settings and the CPU's frequency governor and
  /// boost; a run that finds them changed since the last run of its task
  /// says so (run_report::machine_note).
  std::optional<measurement_protocol> measurement;
  /// How a run is cut short against the best time so far: stopped as too
  /// slow past a multiple of it (before any best, past first_limit_ms),
  /// timing stopped early when clearly slower (tune/kernels/backend.hpp).
  /// early_stop_policy::off() measures every candidate in full.
  early_stop_policy early_stop;
  /// When each local device runs its drift probe (a fixed configuration of the
  /// run measured every so often; trials measured while it had moved out of
  /// its noise band are flagged). drift.every_trials 0: none.
  drift_policy drift;
  /// At the end of a run its `top` fastest configurations (distinct, measured
  /// in full) are measured again against each other, in turn, `rounds` rounds
  /// on the first device; the reported best is the one with the lowest median
  /// over those rounds, and the rounds are recorded. top 0: none (a replayed
  /// dataset, program-edit evolution and an objective function are never
  /// confirmed, nor probed for drift).
  /// During the run, a would-be new best (measured in full, faster than the
  /// device's best but by less than duel_policy::margin) is measured against
  /// that best in turn, `duel_rounds` rounds, before it becomes the best; it
  /// becomes the best only if its median is the lower (trial_info::duel_ms).
  /// duel_rounds 0: none.
  struct confirm_options {
    std::uint32_t top = 5;
    std::uint32_t rounds = 5;
    std::uint32_t duel_rounds = duel_policy{}.rounds;
  } confirm;
  /// Built-in tasks: after the run, time the vendor kernels of the task on the
  /// same cores and threads (tune/kernels/vendor_reference.hpp: oneDNN, and
  /// OpenBLAS with its default and its fastest core type) into
  /// run_report::throughput.
  bool compare_vendor = false;

  // -- callbacks (called on the population's thread, in arrival order) --------
  std::function<void(const trial_info&)> on_trial;
  std::function<void(const trial_info&)> on_new_best;
  std::function<void(const progress_info&)> on_progress;
  stop_source stop;
};

/// The session_options fields a user sets by value (not callbacks, objects or
/// callables), as messages name them when option_names does not: budget
/// (budget.trials), time_budget (budget.seconds), seed, db_path, … A front
/// end maps each of those it offers to its own name.
const std::vector<std::string>& session_option_fields();

/// The trial budget a target gets when session_options::budget.trials is 0:
/// for "task", "kernel", "dataset", "objective", "custom_backend" or
/// "workload". Throws std::invalid_argument for another name.
std::uint64_t default_budget(std::string_view target);

/// What a finished run reports; to_json() is `tune --summary-json`.
struct run_report {
  /// The best trial: the winner of the confirmation rounds when there were
  /// any (its time_ms then the `statistic` of its rounds; `confirmation` has
  /// the time it was found with), else the fastest trial of the search.
  std::optional<trial_info> best;
  /// The run's fastest trials measured again against each other at its end
  /// (session_options::confirm); empty when none were.
  struct confirmation_entry {
    std::uint64_t seq = 0;          ///< the trial
    double search_ms = 0.0;         ///< its time during the search
    std::vector<double> rounds_ms;  ///< its time in each round
    double time_ms = 0.0;           ///< the `statistic` of its rounds
  };
  std::vector<confirmation_entry> confirmation;  ///< by time_ms, the winner first
  /// What several times of one configuration come to in this run (its timed
  /// runs, the duels' and the confirmation's rounds): the run's
  /// measurement_protocol::statistic; median where nothing was timed.
  time_statistic statistic = time_statistic::median;
  /// Why there was no confirmation although one was asked for; empty otherwise.
  std::string confirmation_note;
  /// Wall seconds the confirmation took, after the run's wall_s (0 when there
  /// was none): its builds (the compile cache answers) and rounds.
  double confirmation_s = 0.0;
  /// What changed in the CPU's frequency settings (governor, boost, maximum)
  /// since the last run of this task in the database; empty when nothing
  /// did or it cannot be told.
  std::string machine_note;
  std::uint64_t trials = 0;      ///< recorded ones included
  std::uint64_t new_trials = 0;  ///< measured (or reused) by this call
  std::int64_t run_id = 0;
  bool resumed = false;
  end_reason reason = end_reason::budget;
  std::string task_key;
  std::string strategy;
  std::uint64_t seed = 0;
  bool seed_drawn = false;  ///< no seed was given: this one was drawn
  /// Where the prior came from ("FILE" or "DB: run N (device kind)") and how
  /// many configurations it gave; empty and 0 without one.
  std::vector<std::string> prior_sources;
  std::size_t prior_configurations = 0;
  /// Of session_options::prior_tasks, the task keys whose runs gave the prior
  /// configurations (a task with no run on this device kind, or none that
  /// maps onto this space, is not among them).
  std::vector<std::string> prior_tasks_used;
  /// The schema version the results database had when this run opened it and
  /// migrated it to the current one (older tune-engines cannot open it since);
  /// empty when nothing was migrated.
  std::optional<int> db_migrated_from;
  double wall_s = 0.0;
  double sim_s = 0.0;  ///< wall seconds divided by the time scale
  double compile_busy = 0.0;
  std::vector<std::pair<std::string, double>> device_busy;  ///< after warm-up
  /// Where each device's measuring time went (by device name), over the whole run.
  std::vector<std::pair<std::string, device_time>> device_times;
  /// How each device's drift probe moved (by device name); empty without probes.
  std::vector<std::pair<std::string, device_drift>> device_drifts;
  /// The trials (seq) flagged as measured while their device had drifted.
  std::vector<std::uint64_t> drift_flagged;
  /// Would-be new bests measured against the best before them during the run
  /// (session_options::confirm.duel_rounds), and how many of them lost.
  struct duel_count {
    std::uint64_t count = 0;
    std::uint64_t lost = 0;
    /// Would-be new bests taken as measured: the duels had had their share
    /// of the device's measuring time.
    std::uint64_t skipped = 0;
  } duels;
  std::uint32_t compile_workers = 0;
  /// (Backend) seconds the compile workers spent building, the background
  /// workers' included; waiting_s() the rest.
  double build_s = 0.0;
  /// compile_workers × sim_s − (build_s − background_build_s): what the
  /// compile workers waited.
  double waiting_s() const;
  /// Workers building on the measuring cores at idle priority while their
  /// devices wait (storage::topology::background_builds), the seconds of
  /// their builds (part of build_s) and their busy share after warm-up.
  std::uint32_t background_workers = 0;
  double background_build_s = 0.0;
  double background_busy = 0.0;
  double steady_trials_per_s = 0.0;
  /// CPU time of the pipeline's actors per trial (their handlers, and the
  /// dispatch between handlers that follow each other on a thread).
  double engine_cpu_us_per_trial = 0.0;
  struct trace_point {
    double at_s = 0.0;
    std::uint64_t trials = 0;
    double time_ms = 0.0;
  };
  std::vector<trace_point> trace;  ///< every improvement of the best time
  /// Program-edit evolution: the ok trials that no other dominates on
  /// {run time, error on the search split}, fastest first; `id` is the
  /// trial's number in the run (what `tune-engine edits --trial` takes), with
  /// its validation and test errors measured after the search. Empty for
  /// other runs. In to_json() as "evolution": {"front", "original"}.
  std::vector<trial_info> front;
  /// Program-edit evolution: the trial of the original program (no edits).
  std::optional<trial_info> original;
  /// Program-edit evolution: the edit lists the strategy drew and had
  /// checked before handing them out (every edit applies, the module
  /// verifies), and how many of those were refused and drawn again; the
  /// trials are the lists handed out. In to_json() under "evolution".
  std::uint64_t edit_lists_checked = 0, edit_lists_refused = 0;
  /// Program-edit evolution: the original measured again after the search,
  /// in full, `confirm.rounds` times (the median, ms; NaN when rounds is 0,
  /// it did not build or a round failed). In to_json() under "evolution".
  double original_remeasured_ms = std::numeric_limits<double>::quiet_NaN();
  /// The time the run's speed-ups count from: the lower of
  /// original_remeasured_ms and the original's time recorded during the run
  /// (its one measurement there, at the start, may have met a slow moment
  /// and would then flatter every speed-up of the run; noise only ever slows
  /// a program). NaN without an original. In to_json() under "evolution".
  double original_reference_ms() const;
  /// Program-edit evolution: the time to solution: seconds from the start to
  /// the first ok variant at least `solution_speedup` times faster than the
  /// original (original_reference_ms) with an error at most
  /// `solution_margin` above the original's (search split, as the search saw
  /// them), and that trial; NaN and 0 when none was found.
  double solution_s = std::numeric_limits<double>::quiet_NaN();
  std::uint64_t solution_seq = 0;
  static constexpr double solution_speedup = 1.1, solution_margin = 0.02;
  /// Program-edit evolution: every ok variant with {run time, error} (for plots).
  std::vector<trial_info> evolved;
  /// Program-edit evolution of a matmul: the configuration the original was
  /// generated from (JSON) and where it comes from (a results database's
  /// best trial, or "built-in default"); empty otherwise.
  std::string base_configuration, base_origin;
  /// Built-in tasks: {"task", "flops", "gflops"}, with compare_vendor also
  /// "threads", "rounds", "tuned_gflops", "vendors": [{"library", "variant",
  /// "available", "gflops", "tuned_gflops", "detail", "ratio" (median of the
  /// per-round tuned / vendor ratios, the best configuration and the vendor
  /// kernel timed alternately), "ratio_min", "ratio_max", "rounds",
  /// "round_ratios"} or {…, "note"}] and "best_vendor" (the same fields of the
  /// one with the lowest ratio; null when none is available), or "vendor_note"
  /// when there is no comparison; null for other runs.
  nlohmann::json throughput;
  nlohmann::json to_json() const;
  /// The lines `tune` prints at the end.
  std::string to_text() const;
};

namespace detail {
struct session_access;
}

class session {
 public:
  /// Validates the options (files read, strategy and hyperparameters
  /// checked); throws input_error with the option, field and fix.
  explicit session(session_options options);
  ~session();
  session(const session&) = delete;
  session& operator=(const session&) = delete;

  /// The space being searched.
  search_space_ptr space() const;
  /// The run's seed: the one given, or the one drawn for it.
  std::uint64_t seed() const;
  /// The run's trial budget: the one given, or the target's default.
  std::uint64_t budget_trials() const;
  /// Runs to the end. Call once. Throws input_error for a database that
  /// cannot be used, std::runtime_error when the pipeline breaks down.
  run_report run();
  /// Thread-safe; see stop_source.
  void request_stop() noexcept;

 private:
  friend struct detail::session_access;  // runs sessions together (a model's tasks in one pipeline)
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// Shorthand: session(options).run().
run_report tune_once(session_options options);

// -- nodes (what `tune-engine node` runs; docs/nodes.md) -----------------------

struct node_options {
  /// HOST:PORT to listen on; off loopback only with a 'tls:' section.
  std::string listen = "127.0.0.1:7101";
  /// Node topology YAML: its devices (one measurer each), run_timeout_s,
  /// network and tls; no 'nodes:'.
  std::string topology_file;
  stop_source stop;
  /// Called once listening, with the port (useful with port 0).
  std::function<void(std::uint16_t)> on_listening;
  /// What messages about bad input call each field (listen, topology_file);
  /// a field not listed is named as it is here.
  std::map<std::string, std::string> option_names;
};

/// Serves runs of coordinators, one at a time, until `stop` is requested.
/// Throws input_error for a bad listen address or topology (naming the file
/// and field), std::runtime_error when the network layer fails.
void serve_node(const node_options& options);

// -- the live web dashboard (what `tune-engine dashboard` runs; docs/dashboard.md)

struct dashboard_options {
  /// HOST:PORT to serve on (port 0: a free one). Off loopback without a token
  /// it serves, with a warning that there is no authentication.
  std::string listen = "127.0.0.1:8080";
  /// ZeroMQ endpoints of runs' event streams (`tune --publish`).
  std::vector<std::string> events;
  /// Results databases whose runs the page lists and catches up from.
  std::vector<std::string> databases;
  /// When not empty, the page, /api and /ws need ?token=TOKEN.
  std::string token;
  /// Messages one browser may have queued before events to it are dropped.
  std::size_t client_queue = 1024;
  stop_source stop;
  /// Called once listening, with the page's address (token included).
  std::function<void(const std::string& url)> on_listening;
  /// Warnings for the person starting it (default: printed on stderr).
  std::function<void(const std::string&)> on_warning;
  /// What messages about bad input call each field (listen, events,
  /// databases, token, client_queue); a field not listed is named as it is
  /// here.
  std::map<std::string, std::string> option_names;
};

/// Serves the dashboard until `stop` is requested. Throws input_error for a
/// bad listen address, endpoint or database (naming the option and the fix).
void serve_dashboard(const dashboard_options& options);

// -- program-edit evolution (GEVO-ML, docs/gevo.md) --------------------------

/// The workloads session_options::workload accepts; empty when this build has
/// no LLVM 14.
std::vector<std::string> evolution_workloads();

/// The error a variant of program-edit evolution is judged by: its
/// validation error where known (trial_info::validation_error), else its
/// search error (objectives[1]).
double judged_error(const trial_info& t);

/// The fastest member of a front whose validation error (objectives[1], the
/// search split's error, where the validation error is not known) is at most
/// `max_error`; nullptr when none is.
const trial_info* choose_variant(const std::vector<trial_info>& front, double max_error);

/// A variant of program-edit evolution and the original measured again, in
/// turn (original, variant, original, …), each time in full by the
/// evolution's protocol: the speed-up to quote, where a front's figure is
/// each program measured once, at its own moment of the search.
struct variant_confirmation {
  std::uint32_t rounds = 0;
  /// Median over the rounds of original time / variant time, and its range.
  double speedup = std::numeric_limits<double>::quiet_NaN();
  double min_speedup = std::numeric_limits<double>::quiet_NaN();
  double max_speedup = std::numeric_limits<double>::quiet_NaN();
  /// Their times (ms), the median of each one's rounds.
  double original_ms = std::numeric_limits<double>::quiet_NaN();
  double variant_ms = std::numeric_limits<double>::quiet_NaN();
};

/// Measures `variant` (a configuration of report.evolved or report.front)
/// against the original of the evolution run `report` made with options `o`
/// (its workload, the report's base configuration, threads, and the
/// protocol of session_options::measurement — a topology file's
/// `measurement:` is not read — as evolution adjusts it: at least 5 runs and
/// 0.25 s, by the fastest run), `rounds` rounds in turn on core 0. Throws input_error for options
/// without a workload or with 0 rounds (or a build without LLVM 14), and
/// std::runtime_error naming the program when the original or the variant
/// does not build or run.
variant_confirmation confirm_variant(const session_options& o, const run_report& report, const configuration& variant,
                                     std::uint32_t rounds = 5);

/// A recorded variant of program-edit evolution, as `tune-engine edits` prints it.
struct recorded_variant {
  std::string workload;
  std::int64_t run_id = 0;
  std::int64_t trial = 0;  ///< its number in the run
  status state = status::unknown;
  std::vector<double> objectives;    ///< {run time ms, error} when ok
  std::vector<std::string> edits;    ///< one readable line each
  std::vector<std::string> skipped;  ///< edits that could not be applied, with the reason
  std::string diff;                  ///< the IR against the original (line_diff)
};

/// What the plot of an evolution run shows: every ok variant, the Pareto
/// front and the original program, run time (x) against error (y).
struct evolution_plot {
  std::string title;
  std::string x_label = "run time (ms)";
  std::string y_label = "error";
  std::vector<trial_info> variants;  ///< ok trials with {time, error}
  std::vector<trial_info> front;     ///< the non-dominated ones among them
  std::optional<trial_info> original;
};

/// The plot as a self-contained SVG document (no plotting library): a grey
/// dot per variant (class "variant"), a blue dot per front member (class
/// "front-point", joined by a staircase), a red diamond for the original
/// (class "original-point"); each point's <title> names its trial, time,
/// error and edits. Every text is escaped.
std::string front_svg(const evolution_plot& plot);

/// The plot of a recorded run (the latest run of an evolved workload when
/// `run_id` is not given); throws input_error as load_variant() does. The
/// front's and the original's validation and test errors are not recorded:
/// it builds the workload's programs and runs them again to tell them (the
/// workload files and clang-14 needed, seconds to minutes).
evolution_plot load_evolution_plot(const std::string& db_path, std::optional<std::int64_t> run_id = {});

/// Reads trial `trial` of run `run_id` (the latest run of an evolved workload
/// when not given) from a results database and applies its edits again.
/// Throws input_error naming the file and the trial when there is no such
/// trial or run, or the run is not one of program-edit evolution.
recorded_variant load_variant(const std::string& db_path, std::int64_t trial, std::optional<std::int64_t> run_id = {});

// -- replay statistics (what `tune-engine replay` prints) ---------------------

struct replay_options {
  std::string dataset;     ///< Kernel Tuner cache, T4 results or KTT TuningOutput
  std::string kinds_file;  ///< optional parameter kind overrides
  std::string strategy;    ///< empty: the default
  std::map<std::string, double> hyper;
  std::size_t budget = 100;  ///< evaluations per run
  std::size_t runs = 10;     ///< seeds seed, seed+1, …
  std::uint64_t seed = 0;
  bool noise = false;    ///< draw each time from the recorded runs
  unsigned threads = 2;  ///< threads running runs (1 or 2)
  /// When not empty: one JSON line per evaluation is written to this file.
  std::string trajectories_file;
  /// Datasets of the same kernel measured elsewhere (other devices, earlier
  /// runs), merged by replay_prior() into strategy_options::prior.
  std::vector<std::string> priors;
  /// What messages about bad input call each field (as session_options::
  /// option_names): the command sets {"budget", "--budget"}, {"priors",
  /// "--prior"}, … A field not listed is named as it is here.
  std::map<std::string, std::string> option_names;
};

/// Replays `runs` searches and returns the statistics `tune-engine replay
/// --json` prints: {"dataset", "format", "configurations", "ok_configurations",
/// "optimum_ms", "strategy", "hyper", "runs", "budget", "seed", "noise", "prior",
/// "at": [{"evals", "mean_f", "std_f", "random_f"}…] at 20, 50, 100, 200, 500
/// and the budget, "reach": [{"f", "mean_evals", "never", "random_evals"}…]
/// for f = 0.90, 0.95, 0.99, "score" (Willemsen et al.),
/// "rejected_proposals", "duplicate_proposals"}. Throws input_error for a bad
/// file, strategy or budget.
nlohmann::json replay_statistics(const replay_options& options);

}  // namespace tune
