#pragma once
// The rules that measure a kernel's runs against the best time known
// (run_limits::reference_ms and its early_stop_policy), in one place: the
// kernel worker applies them to CPU kernels (its forked child reports each
// run's start, the resident process stops one that overruns), to the timed
// runs of every kernel and to the checked run of CPU kernels; the engine side
// applies the first to GPU kernels, whose resident process reports each run's
// start on its channel; the program backend (GEVO-ML's workloads) applies
// the first to whole measurements (program_slow_limit_s). Plain numbers, as
// they travel in the worker's requests.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

namespace tune::measure_rules {

/// Milliseconds one kernel run (the checked one or a timed one) may go on
/// before it is stopped as too slow. With a best time known (reference_ms
/// positive): max(slow_factor × reference_ms, min_slow_ms), infinite when
/// slow_factor is not positive. Before any best is known: first_limit_ms
/// (early_stop_policy::first_limit_ms, as the measurer has raised it), and
/// infinite when that is not positive; then only the run timeout applies.
inline double slow_limit_ms(double reference_ms, double slow_factor, double min_slow_ms, double first_limit_ms) {
  if (!(reference_ms > 0) || !std::isfinite(reference_ms))
    return first_limit_ms > 0 && std::isfinite(first_limit_ms) ? first_limit_ms
                                                               : std::numeric_limits<double>::infinity();
  if (!(slow_factor > 0)) return std::numeric_limits<double>::infinity();
  return std::max(slow_factor * reference_ms, min_slow_ms);
}

/// "stopped after 40.5 ms: more than 4x the best time so far, 10.1 ms" (and
/// the floor when min_slow_ms set the limit; before any best, the limit of
/// the first runs).
inline std::string too_slow_message(double ran_ms, double reference_ms, double slow_factor, double min_slow_ms,
                                    double first_limit_ms) {
  char text[256];
  if (!(reference_ms > 0) || !std::isfinite(reference_ms))
    std::snprintf(text, sizeof text,
                  "stopped after %.3g ms: no best time known yet, and more than the limit of the first runs, "
                  "first_limit_ms %g ms (doubled at each such stop until a best is known)",
                  ran_ms, first_limit_ms);
  else if (slow_factor * reference_ms >= min_slow_ms)
    std::snprintf(text, sizeof text, "stopped after %.3g ms: more than %gx the best time so far, %.3g ms", ran_ms,
                  slow_factor, reference_ms);
  else
    std::snprintf(text, sizeof text,
                  "stopped after %.3g ms: more than %gx the best time so far, %.3g ms, and than the least limit, "
                  "min_slow_ms %g ms",
                  ran_ms, slow_factor, reference_ms, min_slow_ms);
  return text;
}

/// Early stopping: whether to stop timing a kernel whose fastest timed run so
/// far took `fastest_ms`. Noise (other processes, interrupts, a lower clock,
/// cold caches) only ever makes a run slower than the kernel can go, never
/// faster; so the fastest run is the best evidence of the kernel's speed, and
/// when even that luckiest run is more than (1 + margin) × the best time
/// known, more runs would only confirm that the candidate is slower. Off when
/// margin is not positive or no best time is known. Applied after each timed
/// run, never before the checked run has verified the outputs.
inline bool stop_timing(double fastest_ms, double reference_ms, double margin) {
  return margin > 0 && reference_ms > 0 && std::isfinite(reference_ms) && fastest_ms > reference_ms * (1.0 + margin);
}

/// How much slower than the kernel can go its checked run may be, before the
/// device has shown its own: the first run in a fresh process, with cold
/// caches, code pages and branch history (its outputs' pages already the
/// process's own, its inputs' pages read). Measured over the candidates timed
/// in full in whole runs of MM1, C2 and BMM1 on a Zen 4 VM (docs/pipeline.md,
/// "The checked run as the first timing"): the checked run took a median
/// 1.05-1.26x the timed runs' median, 1.15-1.50x at the 95th percentile. On
/// other machines it is more (a Zen 5 VM: up to 2.1x, the kernels' own first
/// allocations at about 11 us a fresh page), so each device learns its own
/// (first_run_allowance).
constexpr double checked_run_allowance = 1.5;

/// The allowance a device's own first runs call for: the ratios of checked
/// run to timed runs' time of the kernels it timed from timed runs, the last
/// `window` of them kept; with at least `least` of them, the 90th percentile
/// when that is above checked_run_allowance, else checked_run_allowance. A
/// candidate as fast as the best is then hidden from the search by its checked
/// run only when its first run was slower than nine in ten of the device's
/// recent first runs by more than 1 + margin.
class first_run_allowance {
 public:
  static constexpr std::size_t window = 64, least = 8;

  /// A kernel timed from timed runs: its checked run's time and its time.
  /// Ignored unless both are positive and finite.
  void add(double checked_ms, double time_ms) {
    if (!(checked_ms > 0) || !(time_ms > 0) || !std::isfinite(checked_ms) || !std::isfinite(time_ms)) return;
    if (ratios_.size() == window) ratios_.erase(ratios_.begin());
    ratios_.push_back(checked_ms / time_ms);
  }

  std::size_t size() const { return ratios_.size(); }

  double value() const {
    if (ratios_.size() < least) return checked_run_allowance;
    std::vector<double> sorted = ratios_;
    std::sort(sorted.begin(), sorted.end());
    // The nearest rank: the smallest ratio at least 90% of them reach.
    const auto rank = static_cast<std::size_t>(std::ceil(0.9 * static_cast<double>(sorted.size())));
    return std::max(checked_run_allowance, sorted[rank - 1]);
  }

 private:
  std::vector<double> ratios_;
};

/// Early stopping before any timed run: whether the checked run alone,
/// `checked_ms`, already shows the candidate clearly slower than the best.
/// The rule of stop_timing() applied to the checked run's time divided by
/// `allowance` (at least 1; checked_run_allowance, or the device's
/// first_run_allowance): even granting that the first run went that much
/// slower than the kernel can, it is more than (1 + margin) × the best time
/// known. Off as stop_timing() is, and when the checked run's time is not
/// known (NaN: a runner whose checked run is not a run like the timed ones).
inline bool stop_after_checked_run(double checked_ms, double reference_ms, double margin,
                                   double allowance = checked_run_allowance) {
  return checked_ms >= 0 && stop_timing(checked_ms / std::max(allowance, 1.0), reference_ms, margin);
}

}  // namespace tune::measure_rules
