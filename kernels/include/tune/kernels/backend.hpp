#pragma once
// A backend compiles and measures the configurations of one task (a kernel
// and its problem shape) on one kind of device:
//
//   configuration ──build()──> build_result ──run(device)──> run_result
//
// Both calls block and are meant to run on a thread of their own (the actor
// pipeline hosts them in detached actors). Failures are statuses in the
// results, never exceptions; every call honours its timeout.
//
// A run is measured against the best time known (run_limits::reference_ms):
// a candidate whose kernel is still running after slow_factor times the best
// is stopped (status too_slow; before any best is known, one still running
// after early_stop_policy::first_limit_ms), and one whose first timed runs (or
// checked run, on CPUs) are already clearly slower than the best stops timing
// early (run_result::stopped_early, fewer repeats). A backend that cannot stop
// a run early measures it in full.

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tune/engine/limits.hpp"
#include "tune/engine/result.hpp"
#include "tune/engine/space.hpp"

namespace tune {

struct build_result {
  status state = status::unknown;
  /// What run() needs: a path to a shared object or cubin, a cache key, or
  /// empty (replay).
  std::string artifact;
  /// Seconds the build took (simulated seconds for replay).
  double compile_s = 0.0;
  /// Compiler output or the reason of a failure.
  std::string message;
};

struct run_result {
  status state = status::unknown;
  /// Kernel time in ms (median of the repeats); NaN unless ok.
  double time_ms = std::nan("");
  /// Seconds the measurement took, verification included (simulated for replay).
  double run_s = 0.0;
  std::string message;
  /// Extra objectives (e.g. error) for multi-objective strategies.
  std::vector<double> objectives;
  /// Timed runs behind time_ms (the checked warm-up run not counted), or 1
  /// when time_ms is the checked run's alone (a CPU candidate whose checked
  /// run already showed it clearly slower; `message` says so); 0 when
  /// unknown (a backend that does not say, a failed run).
  std::uint32_t repeats = 0;
  /// Each timed run's milliseconds, in the order they ran (the checked run's
  /// when time_ms is its alone); empty when unknown.
  std::vector<double> times_ms;
  /// The timed runs stopped before the measurement's minimum repeats and time
  /// because they were already clearly slower than run_limits::reference_ms:
  /// time_ms is the median of fewer runs, or the checked run's alone. Such a
  /// time never becomes the best.
  bool stopped_early = false;
  /// Seconds spent inside the kernel's runs (the checked one and the timed
  /// ones); run_s minus this is the trial's overhead (process, buffers,
  /// checking, replying). 0 when unknown.
  double kernel_s = 0.0;
};

/// How a run is cut short against the best time known (run_limits).
struct early_stop_policy {
  /// A kernel run still going after slow_factor × the best time (and at
  /// least min_slow_ms) is stopped and the trial is too_slow; 0: never.
  /// 4: measured against 10 on MM1, BMM1 and C2 (docs/pipeline.md), the
  /// same bests in 1.0-1.17x the trials per second.
  double slow_factor = 4.0;
  double min_slow_ms = 1.0;
  /// Timing stops early once the fastest timed run so far exceeds the best
  /// time × (1 + margin): even its luckiest run is that much slower. 0: never.
  double margin = 0.25;
  /// Before any best time is known (the first runs of a run), a kernel run
  /// still going after this many ms is stopped and the trial is too_slow,
  /// instead of running on to the run timeout. A device doubles it after
  /// each such stop (up to the run timeout), so a task whose kernels all take
  /// longer still finds its first best after a few stops. 0: only the run
  /// timeout until a best is known.
  double first_limit_ms = 1000.0;
  /// A build still going after build_factor × the median build of the run so
  /// far (of its task; at least min_build_s, at most the compile timeout) is
  /// stopped and the trial is build_timeout, its message saying why: a
  /// configuration that takes minutes to compile where its peers take a
  /// second (a fully unrolled loop) rarely pays for the wait. Applied once
  /// five builds of the task have ended ok, and only to a backend whose
  /// builds are real (backend::real_builds). 0: only the compile timeout.
  double build_factor = 10.0;
  double min_build_s = 5.0;
  /// None of the rules.
  static early_stop_policy off() { return {0.0, 0.0, 0.0, 0.0, 0.0, 0.0}; }
};

/// What a run may take and what it is measured against. A plain number is a
/// timeout alone (no best time known: nothing is stopped early).
struct run_limits {
  /// A timeout alone: no limit of the first runs either (a measurer puts
  /// its device's early_stop_policy::first_limit_ms in the limits it runs with).
  run_limits(double timeout = 10.0) : timeout_s(timeout) {  // NOLINT: a timeout is a run's limits
    early_stop.first_limit_ms = 0.0;
  }

  /// Seconds after which a run is killed whatever it measures (run_timeout):
  /// the ceiling for the first trials and for hangs.
  double timeout_s = 10.0;
  /// The best kernel time known when the run starts, in ms; NaN: none yet
  /// (then early_stop.first_limit_ms and timeout_s apply).
  double reference_ms = std::nan("");
  early_stop_policy early_stop;
};

struct device_info {
  std::string backend;  ///< "cpu", "cuda", "hip", "replay"
  int id = 0;
  std::string name;
};

/// Built configurations timed against each other, round by round
/// (backend::run_interleaved).
struct interleaved_times {
  /// ok, or the status of the first run that failed (message names it).
  status state = status::ok;
  std::string message;
  /// time_ms[entry][round]: each entry's time in each round.
  std::vector<std::vector<double>> time_ms;
  bool ok() const { return state == status::ok; }
};

/// Calls `measure(entry)` for each of `entries` entries once per round, in
/// turn (0 1 2 0 1 2 …), `rounds` rounds, into their times; stops at the
/// first result that is not ok with a time, its status and a message naming
/// the entry and the round. The loop of backend::run_interleaved, for a
/// backend that measures there otherwise than run() does.
interleaved_times measure_in_turn(std::size_t entries, int rounds,
                                  const std::function<run_result(std::size_t entry)>& measure);

class backend {
 public:
  virtual ~backend() = default;

  /// "cpu", "cuda", "hip", "replay".
  virtual std::string name() const = 0;
  /// Identifies the task (kernel, shape, dtype): results of one task key are comparable.
  virtual std::string task_key() const = 0;
  /// Identifies the device model and toolchain a measurement depends on.
  virtual std::string device_kind() const = 0;
  virtual search_space_ptr space() const = 0;

  /// Builds one configuration. Thread-safe; may be called from many threads.
  virtual build_result build(const configuration& config, double timeout_s) = 0;

  /// True when build() does no work worth a thread of its own and returns at
  /// once (an in-process objective's): the compile pool then calls it itself,
  /// in order, instead of handing it to a build worker, which would cost two
  /// thread hand-offs per trial. Its compile timeout is not enforced then.
  virtual bool builds_instantly() const { return false; }

  /// False for a backend whose build() replays recorded compile times (a
  /// replay): those are what they are, so the pipeline stops its builds at
  /// the compile timeout alone, never relative to the run's other builds
  /// (early_stop_policy::build_factor).
  virtual bool real_builds() const { return true; }

  /// Measures one built configuration on `device` within `limits`. The caller
  /// serialises calls per device; calls on different devices may overlap.
  virtual run_result run(const configuration& config, const build_result& build, int device,
                         const run_limits& limits) = 0;

  /// Measures each built configuration once per round, in turn (A B C A B C
  /// …), `rounds` rounds on `device`, every run in full (nothing stopped
  /// early): the entries are compared on what was measured at the same
  /// moments, so a machine that slows down or speeds up meanwhile shifts them
  /// alike. The default calls run() for each; a backend may time them closer
  /// together. Serialised per device with run().
  virtual interleaved_times run_interleaved(const std::vector<std::pair<configuration, build_result>>& entries,
                                            int device, int rounds, double timeout_s);

  /// The machine's resources that measuring on `device` occupies, as lease
  /// names (device_lease.hpp): a CPU device its cores ("cpu-core-3"), a GPU
  /// itself ("cuda-0"); none (the default) where nothing real is measured
  /// (replay, objective functions).
  virtual std::vector<std::string> device_resources(int /*device*/) const { return {}; }

  /// The CPU cores measuring on `device` is pinned to; none (the default)
  /// where the device is not CPU cores (a GPU, a replay). The pipeline keeps
  /// its compile workers off them, and may build there at idle priority
  /// while the device waits (storage::topology::background_builds).
  virtual std::vector<int> measuring_cores(int /*device*/) const { return {}; }
};

using backend_ptr = std::shared_ptr<backend>;

/// Where a device's measuring time went, summed from its trials (backend
/// seconds). Every second of a trial's run_s lands in exactly one bucket.
struct device_time {
  std::uint64_t trials = 0;
  double measured_s = 0.0;       ///< inside the kernel's runs of trials measured in full
  double stopped_early_s = 0.0;  ///< inside the kernel's runs of trials whose timing stopped early
  double too_slow_s = 0.0;       ///< whole trials stopped as too slow
  double timeout_s = 0.0;        ///< whole trials killed at the run timeout
  double failed_s = 0.0;         ///< whole trials that failed otherwise (crash, wrong answer, …)
  double overhead_s = 0.0;       ///< the rest of ok trials: process, buffers, checking, answering
  double probe_s = 0.0;          ///< the drift probe's runs (not a trial's)
  double duel_s = 0.0;           ///< would-be new bests measured against the best (duel_policy)

  /// Adds one trial (a reused one, measured by another run, adds nothing).
  void add(const trial& t);
  double total_s() const {
    return measured_s + stopped_early_s + too_slow_s + timeout_s + failed_s + overhead_s + probe_s + duel_s;
  }
};

/// When a device runs its drift probe (a fixed configuration of the run, the
/// fastest measured in full before the first probe, measured in full every so
/// often) and when its time has moved: out of [baseline × (1 − band),
/// baseline × (1 + band)], the baseline the median of the first `baseline`
/// probes (taken at the same pace as the others, so they span the run's first
/// minutes), the band the larger of min_band and 1.5 × their relative range.
struct drift_policy {
  std::uint32_t every_trials = 25;  ///< a probe before every this many trials; 0: no probes
  double every_s = 30.0;            ///< or when this many seconds passed since the last
  std::uint32_t baseline = 3;
  double min_band = 0.05;
};

/// When a would-be new best is measured again against the best before it on
/// the same device (a duel: the two in turn, `rounds` rounds, each run in
/// full) before it becomes the best: when it was measured in full, is faster
/// than the best, and not by more than `margin` (a candidate that much faster
/// is faster beyond what load moves a measurement; the end-of-run
/// confirmation re-measures the fastest anyway). It becomes the best only if
/// its median over the rounds is lower than the best's. Once the device's
/// duels have taken more than `max_share` of its measuring time so far, a
/// would-be best is taken as measured (long kernels made duels cost a quarter
/// of a run); the end-of-run confirmation still measures the fastest again,
/// and its measurements are counted in that share ahead (reserved_runs).
struct duel_policy {
  std::uint32_t rounds = 3;  ///< 0: no duels
  double margin = 0.2;
  double max_share = 0.1;
  /// Measurements the end-of-run confirmation will make on this device (its
  /// top × rounds; 0: none): the duels' share leaves room for them, each
  /// priced at what one of the duels' measurements has cost (both measure in
  /// turn; nothing is held back before the first duel), so that duels and
  /// confirmation together take about max_share of the measuring time. The
  /// pipeline gives it to its first device, where the session confirms.
  double reserved_runs = 0;
  /// What a duel's rounds come to (the run's measurement_protocol::statistic).
  time_statistic statistic = time_statistic::median;
};

/// How a device's probe time moved during a run.
struct device_drift {
  std::uint32_t probes = 0;
  double baseline_ms = 0.0;  ///< 0 until the baseline's probes are in
  double band = 0.0;         ///< relative half-width of the noise band
  double min_ratio = 1.0;    ///< probe / baseline, over the run
  double max_ratio = 1.0;
  std::uint64_t flagged = 0;  ///< trials flagged as measured while drifting
};

}  // namespace tune
