#pragma once
// The actors of the tuning pipeline, their messages, and the one block of
// type IDs that registers every message type.
//
//            demand(n) ─────────────> ┌───────────┐
//      ┌──────────────────────────── │ generator │ <── observe(trial)
//      │  candidates                 └───────────┘
//      v
// ┌────────────┐ evaluate(candidate) ┌──────────────┐ build  ┌──────────────┐
// │ population │ ──────────────────> │ compile_pool │ ─────> │ build_worker │ × N (detached)
// │            │ <────────────────── │              │        └──────────────┘
// └────────────┘   trial (reply)     │              │ measure ┌──────────┐ run ┌───────────────┐
//                                    │              │ ──────> │ measurer │ ──> │ device_runner │
//                                    └──────────────┘ <────── └──────────┘     └───────────────┘
//                                                      trial    one per device, runs serialised
//
// Requests inside the pipeline carry no CAF timeout (caf::infinite): each
// actor that waits keeps its own deadlines and checks them on its tick, about
// four times a second while work is outstanding — the population an
// evaluation's, the compile pool a build's and a measurement's, a measurer a
// run's — because CAF 0.17 keeps a request's timeout entry until its deadline
// and wakes its clock thread for each (docs/pipeline.md). A deadline passed
// makes the trial a status (build_timeout, run_timeout, unknown) and a late
// answer is dropped; a worker or runner silent past its timeout plus
// stage_timing::request_grace_s is replaced. The generator is local and
// answers every demand (a slow one is reported, not timed out). Only requests
// that cross the network (a node's hello and open) carry CAF timeouts. A
// failed build or run, a timeout or an exception thrown by a backend becomes
// a status in the trial, never an error that crosses a mailbox unanswered.

#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/fwd.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/replies_to.hpp>
#include <caf/type_id.hpp>
#include <caf/typed_actor.hpp>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tune/engine/end_reason.hpp"
#include "tune/engine/limits.hpp"
#include "tune/engine/result.hpp"
#include "tune/engine/strategy.hpp"
#include "tune/kernels/backend.hpp"

namespace tune {

// The backend's results travel between actors: found by argument-dependent lookup.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, build_result& x) {
  return f(caf::meta::type_name("build_result"), x.state, x.artifact, x.compile_s, x.message);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, device_time& x) {
  return f(caf::meta::type_name("device_time"), x.trials, x.measured_s, x.stopped_early_s, x.too_slow_s, x.timeout_s,
           x.failed_s, x.overhead_s, x.probe_s, x.duel_s);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, interleaved_times& x) {
  return f(caf::meta::type_name("interleaved_times"), x.state, x.message, x.time_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, device_drift& x) {
  return f(caf::meta::type_name("device_drift"), x.probes, x.baseline_ms, x.band, x.min_ratio, x.max_ratio, x.flagged);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_result& x) {
  return f(caf::meta::type_name("run_result"), x.state, x.time_ms, x.run_s, x.message, x.objectives, x.repeats,
           x.times_ms, x.stopped_early, x.kernel_s);
}

}  // namespace tune

namespace tune::actors {

/// A configuration on its way through the pipeline; `id` is unique in a run
/// (the generator numbers them in the order it hands them out).
struct candidate {
  std::uint64_t id = 0;
  configuration config;
  /// The best time of the run when the candidate was handed out (ms; NaN:
  /// none yet): its run is measured against it (run_limits::reference_ms).
  /// Later bests are only faster, so a candidate that waited is held to a
  /// looser standard, never a stricter one.
  double reference_ms = std::nan("");
  /// The most backend seconds its build may take when that is less than the
  /// compile timeout (NaN: the timeout alone): set by the compile pool as it
  /// hands the candidate to a worker or, unbuilt, to a node's measurer, from
  /// the run's builds so far (early_stop_policy::build_factor).
  double build_limit_s = std::nan("");
};

/// A candidate and the outcome of building it.
struct compiled_candidate {
  candidate cand;
  build_result build;
  /// Not built yet: the node that measures it builds it first (a node
  /// compiles what it measures; see docs/nodes.md).
  bool unbuilt = false;
  /// The artifact's bytes when it was built on another machine than the one
  /// that measures it; `build.artifact` is then its plain file name, and the
  /// measuring side writes it to its own cache (materialize_artifact).
  std::string artifact_bytes;
};

/// A trial as the pipeline carries it: the trial (what the strategy observes,
/// what the results database stores and what events report) with the
/// candidate it came from and the measurer that ran it.
struct measured_trial : trial {
  std::uint64_t candidate_id = 0;  ///< the candidate's id (hand-out order)
  std::int32_t device_id = -1;     ///< the measuring device's id in the run; -1: none ran it
  /// Seconds since the start of the run when the population received it,
  /// in backend time (wall seconds divided by the time scale).
  double finished_s = 0.0;
  /// The compile pool gave the candidate up (every measurer lost for longer
  /// than the lost timeout): not a trial; nothing is recorded and the run
  /// ends resumable.
  bool abandoned = false;
  /// Earlier trials of this device (their candidate ids) found suspect by a
  /// drift probe taken since: measured between the last probe in the noise
  /// band and the first out of it.
  std::vector<std::uint64_t> drift_suspects;
  /// Seconds of drift probes the device ran just before this trial.
  double probe_s = 0.0;
  /// The device's drift so far.
  device_drift drift;
  /// Seconds of this trial's duel against the best before it (duel_policy).
  double duel_s = 0.0;
  /// A would-be new best taken as measured, without a duel: the device's
  /// duels had had their share of its measuring time (duel_policy::max_share).
  bool duel_skipped = false;
  /// Built by the node that measured it at idle priority on a measuring core
  /// (every core of the node measures): compile_s includes the build's waits
  /// for the core, so it is not a typical build of the run.
  bool built_idle = false;
};

/// How busy one stage was inside a window of wall-clock time.
struct stage_stats {
  std::uint32_t workers = 0;
  /// Seconds all workers of the stage spent working inside the window.
  double busy_s = 0.0;
  double window_s = 0.0;
  /// CPU seconds the stage's own actor (not its blocking workers) used.
  double cpu_s = 0.0;
  /// The compile pool's background workers (compile_pool_options::
  /// background_cores), apart from `workers`: how many, their seconds
  /// building inside the window, and the backend seconds of the builds they
  /// finished in the whole run (what the trials' compile_s holds of theirs).
  std::uint32_t background_workers = 0;
  double background_busy_s = 0.0;
  double background_build_s = 0.0;

  double busy_fraction() const { return workers && window_s > 0 ? busy_s / (workers * window_s) : 0.0; }
};

/// One improvement of the best time, for time-to-target curves.
struct best_point {
  double at_s = 0.0;  ///< backend seconds since the start of the run
  std::uint64_t trials = 0;
  double time_ms = 0.0;
};

/// What a finished run reports.
struct run_summary {
  /// State unknown when nothing succeeded; of a multi-task run (pipeline_
  /// options::multi_task), task 0's best.
  measured_trial best;
  /// A multi-task run's best trial of each task, by task index (state unknown
  /// for a task with none); empty otherwise.
  std::vector<measured_trial> task_bests;
  std::uint64_t trials = 0;        ///< trials of this run
  std::uint64_t prior_trials = 0;  ///< trials recorded before a resume
  double wall_s = 0.0;
  double sim_s = 0.0;  ///< wall seconds divided by the time scale
  end_reason reason = end_reason::budget;
  stage_stats compile;               ///< after warm-up
  std::vector<stage_stats> devices;  ///< one per measurer, after warm-up
  /// Trials finished per backend second between warm-up and the last hand-out.
  double steady_rate = 0.0;
  /// CPU seconds of the generator, population, pool and measurer actors'
  /// handlers, with the framework's dispatch between two of them that follow
  /// each other on a thread within a millisecond (detail::cpu_scope).
  double engine_cpu_s = 0.0;
  std::vector<best_point> trace;
  /// Where each device's measuring time went (by device id, in the order
  /// devices first answered), from the trials of this run.
  std::vector<std::pair<std::int32_t, device_time>> device_times;
  /// Backend seconds the compile workers spent building this run's trials
  /// (their compile_s; reused trials not counted).
  double build_s = 0.0;
  /// How each device's drift probe moved (by device id), as of its last trial.
  std::vector<std::pair<std::int32_t, device_drift>> device_drifts;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, candidate& x) {
  return f(caf::meta::type_name("candidate"), x.id, x.config, x.reference_ms, x.build_limit_s);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, compiled_candidate& x) {
  return f(caf::meta::type_name("compiled_candidate"), x.cand, x.build, x.unbuilt, x.artifact_bytes);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, measured_trial& x) {
  // CAF 0.17 has no inspector for std::optional: reused_from_run travels as
  // a run id or -1 (none; run ids start at 1).
  std::int64_t reused = x.reused_from_run.value_or(-1);
  // A NaN does not survive CAF's portable encoding of a double (it arrives as
  // -1): the duel's medians travel as -1 when there was no duel.
  double duel = std::isfinite(x.duel_ms) ? x.duel_ms : -1.0;
  double duel_best = std::isfinite(x.duel_best_ms) ? x.duel_best_ms : -1.0;
  auto load = [&]() -> caf::error {
    x.reused_from_run = reused >= 0 ? std::optional<std::int64_t>(reused) : std::nullopt;
    x.duel_ms = duel > 0 ? duel : std::nan("");
    x.duel_best_ms = duel_best > 0 ? duel_best : std::nan("");
    return caf::none;
  };
  return f(caf::meta::type_name("measured_trial"), x.candidate_id, x.config, x.state, x.time_ms, x.objectives,
           x.compile_s, x.run_s, x.device_id, x.message, x.finished_s, reused, x.abandoned, x.repeats, x.times_ms,
           x.stopped_early, x.kernel_s, x.drift_flagged, x.drift_suspects, x.probe_s, x.drift, duel, duel_best,
           x.duel_s, x.duel_skipped, x.built_idle, caf::meta::load_callback(load));
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stage_stats& x) {
  return f(caf::meta::type_name("stage_stats"), x.workers, x.busy_s, x.window_s, x.cpu_s, x.background_workers,
           x.background_busy_s, x.background_build_s);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, best_point& x) {
  return f(caf::meta::type_name("best_point"), x.at_s, x.trials, x.time_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_summary& x) {
  return f(caf::meta::type_name("run_summary"), x.best, x.task_bests, x.trials, x.prior_trials, x.wall_s, x.sim_s,
           x.reason, x.compile, x.devices, x.steady_rate, x.engine_cpu_s, x.trace, x.device_times, x.build_s,
           x.device_drifts);
}

}  // namespace tune::actors

CAF_BEGIN_TYPE_ID_BLOCK(tune_actors, caf::first_custom_type_id)
CAF_ADD_TYPE_ID(tune_actors, (tune::actors::candidate))
CAF_ADD_TYPE_ID(tune_actors, (std::vector<tune::actors::candidate>))
CAF_ADD_TYPE_ID(tune_actors, (tune::actors::compiled_candidate))
CAF_ADD_TYPE_ID(tune_actors, (tune::run_result))
CAF_ADD_TYPE_ID(tune_actors, (tune::actors::measured_trial))
CAF_ADD_TYPE_ID(tune_actors, (tune::actors::stage_stats))
CAF_ADD_TYPE_ID(tune_actors, (tune::actors::run_summary))
CAF_ADD_TYPE_ID(tune_actors, (tune::interleaved_times))
CAF_ADD_ATOM(tune_actors, tune::actors, demand_atom, "demand")
CAF_ADD_ATOM(tune_actors, tune::actors, observe_atom, "observe")
CAF_ADD_ATOM(tune_actors, tune::actors, evaluate_atom, "evaluate")
CAF_ADD_ATOM(tune_actors, tune::actors, build_atom, "build")
CAF_ADD_ATOM(tune_actors, tune::actors, measure_atom, "measure")
CAF_ADD_ATOM(tune_actors, tune::actors, run_atom, "run")
CAF_ADD_ATOM(tune_actors, tune::actors, stats_atom, "stats")
CAF_ADD_ATOM(tune_actors, tune::actors, start_atom, "start")
CAF_ADD_ATOM(tune_actors, tune::actors, stop_atom, "stop")
CAF_ADD_ATOM(tune_actors, tune::actors, tick_atom, "tick")
CAF_ADD_ATOM(tune_actors, tune::actors, done_atom, "done")
CAF_ADD_ATOM(tune_actors, tune::actors, cached_atom, "cached")
CAF_ADD_ATOM(tune_actors, tune::actors, join_atom, "nodejoin")
CAF_ADD_ATOM(tune_actors, tune::actors, hello_atom, "nodehello")
CAF_ADD_ATOM(tune_actors, tune::actors, open_atom, "nodeopen")
CAF_ADD_ATOM(tune_actors, tune::actors, close_atom, "nodeclose")
CAF_ADD_ATOM(tune_actors, tune::actors, reconnect_atom, "reconnect")
CAF_ADD_ATOM(tune_actors, tune::actors, duel_atom, "duel")
CAF_END_TYPE_ID_BLOCK(tune_actors)

namespace tune::actors {

/// Registers every message type of the pipeline (the block above) with an
/// actor system's configuration. Call once per configuration.
void register_message_types(caf::actor_system_config& config);

// -- the generator -----------------------------------------------------------
/// Owns the strategy. Messages:
/// - (demand, n) -> vector<candidate>: up to n new candidates, never one that
///   was handed out before, is recorded, or violates the space's constraints;
///   fewer (even none) when the strategy has nothing to offer now.
/// - (observe, measured_trial): tells the strategy one result.
/// - (stats, from, to) -> stage_stats: the generator's CPU time.
using generator_actor = caf::typed_actor<caf::replies_to<demand_atom, std::uint32_t>::with<std::vector<candidate>>,
                                         caf::reacts_to<observe_atom, measured_trial>,
                                         caf::replies_to<stats_atom, double, double>::with<stage_stats>>;

/// `prior` are recorded trials (resume): the strategy observes them in this
/// order before the first proposal, and none of them is handed out again.
generator_actor spawn_generator(caf::actor_system& system, search_space_ptr space, std::unique_ptr<strategy> strategy,
                                std::vector<measured_trial> prior);

// -- a build worker (detached: backend::build blocks) -------------------------
/// - (build, candidate) -> compiled_candidate: builds with the compile timeout.
///   An exception of the backend becomes status unknown.
using build_worker_actor = caf::typed_actor<caf::replies_to<build_atom, candidate>::with<compiled_candidate>>;

/// Where a build worker's builds run: the worker's thread is placed so before
/// each build, and the compiler processes it starts inherit its CPU set and
/// scheduling policy.
struct build_placement {
  std::vector<int> cores;      ///< empty: wherever the system puts them
  bool idle_priority = false;  ///< SCHED_IDLE: only CPU time no other thread wants
};

/// Where the builds of a machine go whose devices measure on `measuring`
/// cores (backend::measuring_cores), the process running on `available`:
/// the compile workers on the available cores that do not measure (none
/// left: empty, anywhere) and, with `background`, one background worker on
/// each measuring core (compile_pool_options::background_cores).
struct build_plan {
  std::vector<int> worker_cores;
  std::vector<std::vector<int>> background_cores;
};
build_plan plan_builds(const std::vector<int>& measuring, const std::vector<int>& available, bool background);

/// The cores the calling thread may run on (sched_getaffinity).
std::vector<int> thread_cpu_set();

/// Places the calling thread (best effort: a core outside the process's CPU
/// set or a refused policy leaves that part as it was; an empty placement
/// changes nothing); false when a part could not be applied.
bool apply_build_placement(const build_placement& placement);

build_worker_actor spawn_build_worker(caf::actor_system& system, backend_ptr backend, double compile_timeout_s,
                                      build_placement placement = {});

/// What a build worker does with one candidate (blocks), within `timeout_s`
/// or the candidate's build_limit_s if that is less: an exception of the
/// backend becomes status unknown.
compiled_candidate build_candidate(backend& backend, candidate cand, double timeout_s);

// -- a device runner (detached: backend::run blocks) --------------------------
/// - (run, compiled_candidate, first_limit_ms) -> run_result: one run on the
///   runner's device, with the device's limit of the first runs as it stands
///   (early_stop_policy::first_limit_ms; 0: none).
/// - (duel, challenger, best, rounds) -> interleaved_times: the two measured
///   in turn (backend::run_interleaved), challenger first, each round.
using device_runner_actor = caf::typed_actor<
    caf::replies_to<run_atom, compiled_candidate, double>::with<run_result>,
    caf::replies_to<duel_atom, compiled_candidate, compiled_candidate, std::uint32_t>::with<interleaved_times>>;

/// `limits`: the timeout and early-stop policy of every run; each
/// candidate's reference_ms is added to them.
device_runner_actor spawn_device_runner(caf::actor_system& system, backend_ptr backend, int device,
                                        const run_limits& limits);

// -- a measurer, one per device -----------------------------------------------
/// Runs one candidate at a time on its device and queues the rest (the
/// compile pool sends at most 1 + prefetch at once). Messages:
/// - (measure, compiled_candidate) -> measured_trial: replied when the run ends,
///   failed or timed out runs included; for a would-be new best, after its
///   duel against the device's best (duel_policy; measured_trial::duel_ms).
/// - (stats, from, to) -> stage_stats: device busy time inside [from, to]
///   (steady-clock seconds).
/// - (tick): internal timer while a run is in progress (its deadline).
using measurer_actor =
    caf::typed_actor<caf::replies_to<measure_atom, compiled_candidate>::with<measured_trial>,
                     caf::replies_to<stats_atom, double, double>::with<stage_stats>, caf::reacts_to<tick_atom>>;

/// The clock of the pipeline's stages, shared by the pipeline and each stage.
struct stage_timing {
  tune::timeouts timeouts;  ///< backend seconds a build and a run may take
  /// Wall seconds past a timeout before a silent worker or runner is replaced
  /// (the backend enforces its timeouts; this catches one that hangs).
  double request_grace_s = 5.0;
  /// Wall seconds per backend second: a replay backend that sleeps X times
  /// the recorded latencies runs at time scale X; real backends at 1.
  double time_scale = 1.0;
};

struct measurer_options {
  int device = 0;
  stage_timing timing;
  /// How a run is cut short against its candidate's reference time.
  early_stop_policy early_stop;
  /// When the device probes its own drift.
  drift_policy drift;
  /// When a would-be new best is measured against the best before it.
  duel_policy duel;
  /// The run's configurations are tagged with their task (tune/engine/
  /// multi_task.hpp): the device's best, its duels and its limit of the first
  /// runs are each task's own.
  bool multi_task = false;
};

measurer_actor spawn_measurer(caf::actor_system& system, backend_ptr backend, const measurer_options& options);

// -- the compile pool --------------------------------------------------------
/// N build workers; compiled candidates go to the measurer with the fewest
/// outstanding runs that has room (1 running + its prefetch). Messages:
/// - (evaluate, candidate) -> measured_trial: replied when the candidate has
///   been built and measured (or failed to build).
/// - (stats, from, to) -> stage_stats: busy time of the workers in [from, to]
///   (the background workers' apart).
/// - (join, measurers, device ids, prefetch, builders): measurers and compile
///   workers of a remote node that (re)connected; a device id already known
///   replaces its lost measurer.
/// - (tick): internal timer while a build or a measurement is outstanding (their
///   deadlines) or no measurer is alive.
/// Remote measurers are monitored: when one goes down, the candidates it
/// held go back to the front of the queue (the promise of each is delivered
/// once, so nothing is recorded twice) and the rest measure them.
using compile_pool_actor =
    caf::typed_actor<caf::replies_to<evaluate_atom, candidate>::with<measured_trial>,
                     caf::replies_to<stats_atom, double, double>::with<stage_stats>,
                     caf::reacts_to<join_atom, std::vector<caf::actor>, std::vector<std::int32_t>, std::uint32_t,
                                    std::vector<caf::actor>>,
                     caf::reacts_to<tick_atom>>;

struct compile_pool_options {
  std::uint32_t workers = 1;
  stage_timing timing;
  std::vector<measurer_actor> measurers;
  /// Compiled candidates each measurer may queue besides the one it runs.
  std::vector<std::uint32_t> prefetch;
  /// Per measurer: true for a measurer of a remote node (monitored; what it
  /// holds goes back to the queue when it is lost). Missing entries: local.
  std::vector<bool> remote;
  /// Per measurer: the device id written into its trials; missing or -1:
  /// the one the measurer reports.
  std::vector<std::int32_t> device_ids;
  /// Wall seconds the pool waits with work queued and no measurer alive
  /// before it gives the queued candidates up (the run ends resumable).
  double lost_timeout_s = 60.0;
  /// Times a candidate goes back to the queue after losing its remote
  /// measurer before it becomes a failed trial (a candidate that kills nodes).
  std::uint32_t max_requeues = 3;
  /// Remote measurers build what they measure (real kernels: the pool sends
  /// them unbuilt candidates, or artifacts as bytes); false: they measure
  /// what the pool built (replayed datasets, whose builds are simulated).
  bool remote_builds = false;
  /// Per measurer: its share when several have room (a measurer with room
  /// and the fewest held candidates per weight is chosen). Missing: 1.
  std::vector<double> weight;
  /// Compile workers of nodes (they answer build with the artifact's bytes):
  /// monitored; a lost one's candidate is built again elsewhere.
  std::vector<build_worker_actor> remote_workers;
  /// The cores the `workers` build on (the cores no local device measures
  /// on); empty: wherever the system puts them.
  std::vector<int> worker_cores;
  /// One background worker per entry, building on those cores (a measuring
  /// device's) at idle priority: it is given a candidate only when every
  /// other worker is busy and the local devices would otherwise wait (they
  /// have room for more than is being built and already built), so its
  /// builds fill the devices' idle time and their runs take the core back at
  /// once. A build it could not finish within the compile timeout (its core
  /// was busy measuring) goes back to the queue for the other workers, not
  /// into the results as a build timeout.
  std::vector<std::vector<int>> background_cores;
  /// Its build_factor and min_build_s: a build far slower than the run's
  /// other builds of its task is stopped (candidate::build_limit_s), where
  /// the backend's builds are real (backend::real_builds).
  early_stop_policy early_stop;
  /// The run's configurations are tagged with their task (tune/engine/
  /// multi_task.hpp): each task's builds are compared with its own.
  bool multi_task = false;
};

compile_pool_actor spawn_compile_pool(caf::actor_system& system, backend_ptr backend,
                                      const compile_pool_options& options);

// -- the population ----------------------------------------------------------
/// Keeps capacity candidates in flight, takes every result, tracks the best,
/// reports each trial once to its listener and decides when to stop.
/// Messages:
/// - (start): begins asking the generator for candidates.
/// - (stop): hands out nothing more; finishes when in-flight work drained.
/// - (tick): internal timer (progress line, time budget).
/// - (cached, measured_trial): internal; a trial reused from an earlier run.
/// When it finishes it sends (done, run_summary) to its `done_to` actor.
using population_actor = caf::typed_actor<caf::reacts_to<start_atom>, caf::reacts_to<stop_atom>,
                                          caf::reacts_to<tick_atom>, caf::reacts_to<cached_atom, measured_trial>>;

/// The progress line's numbers, about four times a second.
struct progress_report {
  std::uint64_t trials = 0;         ///< recorded trials included
  double at_s = 0.0;                ///< backend seconds since the start
  double rate = 0.0;                ///< trials of this run per backend second
  double compile_busy = 0.0;        ///< after warm-up, in [0, 1]
  std::vector<double> device_busy;  ///< per measurer, after warm-up
  std::optional<double> best_time_ms;
  std::uint64_t in_flight = 0;  ///< candidates handed out and not answered yet
};

/// Where the population reports, on its own thread and in arrival order: the
/// results database and the event publisher live behind this.
class trial_listener {
 public:
  virtual ~trial_listener() = default;
  /// Once per finished trial; `new_best` when it improved the best time.
  virtual void on_trial(const measured_trial& trial, bool new_best) = 0;
  virtual void on_progress(const progress_report&) {}
};

/// A measurement reused from an earlier run, found by configuration.
using trial_cache = std::function<std::optional<measured_trial>(const configuration&)>;

enum class pipeline_mode {
  steady,        ///< demand-driven: a freed slot is refilled at once
  generational,  ///< propose a batch, build and measure all of it, wait, repeat
};

struct population_options {
  tune::budget budget;
  stage_timing timing;  ///< its time scale converts wall seconds into backend seconds
  /// Candidates in flight in steady mode: compile workers + per device one
  /// running and its prefetch.
  std::uint32_t capacity = 1;
  pipeline_mode mode = pipeline_mode::steady;
  std::uint32_t batch = 8;  ///< candidates per generation in generational mode
  /// Wall seconds the population waits for a candidate's trial.
  double evaluate_timeout_s = 600.0;
  /// Wall seconds after which a generator that has not answered a demand is
  /// reported on stderr (again each time as long as it stays silent). The
  /// population keeps waiting: a slow strategy (many observations to learn
  /// from on a starved machine, as when a long run resumes) is not a failure,
  /// and a generator that ends answers the demand with an error.
  double demand_notice_s = 30.0;
  std::vector<measured_trial> prior;  ///< recorded trials (resume), in recorded order
  /// Asked after every trial (and the pipeline polls it between trials): once
  /// true, nothing more is handed out and the run drains as with (stop).
  std::function<bool()> stop_requested;
  /// New candidates handed out at most (recorded ones not counted); once that
  /// many are out, the hand-out closes as a stop closes it and the run ends
  /// `stopped` (resumable) when they are in. 0: no limit.
  std::uint64_t hand_out_limit = 0;
  bool progress_line = false;  ///< a status line on stderr: rewritten in place on a terminal, every 10 s into a file
  std::shared_ptr<trial_listener> listener;
  /// Looked up before a candidate is built; a hit is a trial at once.
  trial_cache cache;
  std::vector<measurer_actor> measurers;  ///< asked for their busy time
  /// The run's configurations are tagged with their task (tune/engine/
  /// multi_task.hpp): each task has its own best, which its candidates are
  /// measured against and which a trial must beat to be a new best
  /// (trial_listener::on_trial); run_summary::task_bests has them.
  bool multi_task = false;
};

population_actor spawn_population(caf::actor_system& system, generator_actor generator, compile_pool_actor pool,
                                  population_options options, caf::actor done_to);

}  // namespace tune::actors
