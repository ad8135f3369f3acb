#pragma once
// The outcome of trying one configuration. Statuses follow TVM's numbering
// (too_slow, after it, is tune-engine's own); anything but `ok` has zero
// fitness.

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tune/engine/space.hpp"

namespace tune {

enum class status : int {
  ok = 0,
  instantiation_error = 1,   ///< constraint or resource limit, found before compiling
  compile_error = 2,         ///< host compile error
  compile_error_device = 3,  ///< device compile error
  runtime_error = 4,
  wrong_answer = 5,
  build_timeout = 6,
  run_timeout = 7,
  unknown = 8,
  /// Stopped while running because it was already far slower than the best
  /// time known (a multiple of it, run_limits::slow_factor): no time, and
  /// run_s says how long it ran.
  too_slow = 9,
};

/// "ok", "instantiation_error", "compile_error", "compile_error_device",
/// "runtime_error", "wrong_answer", "build_timeout", "run_timeout", "unknown",
/// "too_slow".
std::string_view to_string(status s);
std::optional<status> status_from_string(std::string_view text);

/// What a strategy is told about one configuration.
struct trial_result {
  configuration config;
  status state = status::unknown;
  /// Kernel time in milliseconds; NaN unless state is ok.
  double time_ms = std::nan("");
  /// Objectives to minimise for multi-objective strategies (e.g. time and
  /// error). Empty means {time_ms}.
  std::vector<double> objectives;

  bool ok() const { return state == status::ok && std::isfinite(time_ms); }
};

/// One finished trial: what the strategy is told and what trying the
/// configuration cost. Each layer's trial is this plus what that layer adds:
/// the pipeline's measured_trial (candidate and device ids), the results
/// database's trial_record (run, seq, configuration text, device name), the
/// facade's trial_info. A fact has one name and one type in all of them.
struct trial : trial_result {
  double compile_s = 0.0;  ///< seconds the build took (simulated for replay)
  double run_s = 0.0;      ///< seconds measuring took, verification included (simulated for replay)
  /// Compiler output or why the trial failed; may be empty.
  std::string message;
  /// Timed runs behind time_ms; 0 when unknown.
  std::uint32_t repeats = 0;
  /// Each timed run's milliseconds, in the order they ran; empty when
  /// unknown (a reused or replayed measurement: the results database keeps
  /// time_ms and repeats, not the runs).
  std::vector<double> times_ms;
  /// Timing stopped early, the candidate being clearly slower than the best:
  /// time_ms is the median of fewer runs and never becomes the best.
  bool stopped_early = false;
  /// Seconds inside the kernel's runs; run_s minus this is the trial's
  /// overhead. 0 when unknown.
  double kernel_s = 0.0;
  /// Measured while its device had drifted out of its noise band (the probe
  /// the device runs every so often said so), or between the last probe in
  /// the band and the first out of it: its time is suspect.
  bool drift_flagged = false;
  /// A would-be new best is measured again against the best before it, in
  /// turn on the same device (a duel), before it becomes the best: its median
  /// over those rounds and the best's median over the same rounds; NaN when it
  /// had no duel (not faster than the best, clearly faster, or no best yet).
  double duel_ms = std::nan("");
  double duel_best_ms = std::nan("");
  /// The earlier run whose recorded measurement was reused instead of
  /// measuring again; empty when measured by this run.
  std::optional<std::int64_t> reused_from_run;

  bool reused() const { return reused_from_run.has_value(); }
  /// It had a duel and was not faster in it: it never becomes the best.
  bool duel_lost() const { return duel_ms >= duel_best_ms; }
  /// The time a best is judged by: the duel's median when it had one (a
  /// measurement that was not picked for being low), else time_ms.
  double best_judged_ms() const { return std::isfinite(duel_ms) ? duel_ms : time_ms; }
};

}  // namespace tune
