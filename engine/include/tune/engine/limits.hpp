#pragma once
// The limits of a run, declared once and held by every layer that needs them:
// the topology file (timeouts), the facade's session, the pipeline and each of
// its stages, a node's task.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tune/engine/median.hpp"

namespace tune {

/// How long one build and one run of a candidate may take, in backend
/// seconds (simulated seconds for a replayed dataset).
struct timeouts {
  double compile_s = 60.0;
  double run_s = 10.0;
};

/// When a run stops handing out work.
struct budget {
  /// Trials in all, those recorded before a resume included.
  std::uint64_t trials = 100;
  /// Backend seconds since the start; 0: no time budget.
  double seconds = 0.0;
};

/// What becomes of several times of one kernel (its timed runs, a burst of
/// them, the rounds of a confirmation or a duel): their median, or their
/// least. Noise on a shared machine (other processes, memory traffic of
/// other tenants, interrupts) only ever makes a run slower, so the least is
/// the kernel's undisturbed speed and moves less with load; the median is
/// what a kernel typically takes under the conditions of the moment.
enum class time_statistic { median, min };

/// "median" or "min".
inline const char* to_string(time_statistic s) { return s == time_statistic::min ? "min" : "median"; }
inline std::optional<time_statistic> time_statistic_from_string(std::string_view text) {
  if (text == "median") return time_statistic::median;
  if (text == "min") return time_statistic::min;
  return std::nullopt;
}
/// The statistic of `times` (NaN when there are none).
inline double statistic_of(std::vector<double> times, time_statistic s) {
  if (s == time_statistic::median || times.empty()) return median(std::move(times));
  double least = times.front();
  for (double t : times) least = t < least ? t : least;
  return least;
}

/// How one configuration of a kernel is timed: one run first, checked
/// against the reference and not timed (it is also the warm-up), then timed
/// runs until at least `min_repeats` of them and `min_time_s` of kernel time
/// (at most `max_repeats`); the time is their `statistic`, which also
/// reduces the bursts and rounds of duels and of the end-of-run confirmation.
/// Set by the topology file's `measurement:` or session_options::measurement;
/// recorded with each run (runs.options.measurement).
struct measurement_protocol {
  double min_time_s = 0.05;
  int min_repeats = 3;
  int max_repeats = 1000;
  /// CPU kernels: before each timed run, evict the caches (read a buffer
  /// twice the size of the last-level cache) when the kernel's
  /// arguments fit in that cache, so that every timed run starts as the
  /// first would in a program that touched other data in between; off, the
  /// runs after the first find their data cached. GPU kernels: refused.
  bool flush_cache = false;
  time_statistic statistic = time_statistic::median;
};

/// What is wrong with a protocol, as "FIELD must …"; empty when nothing.
inline std::string measurement_problem(const measurement_protocol& p) {
  if (!(p.min_time_s >= 0) || p.min_time_s > 3600) return "min_time_s must be from 0 to 3600 seconds";
  if (p.min_repeats < 1) return "min_repeats must be at least 1";
  if (p.max_repeats < p.min_repeats || p.max_repeats > 1000000)
    return "max_repeats must be from min_repeats to 1000000";
  return {};
}

}  // namespace tune
