#pragma once
// The outcome of trying one configuration. Statuses follow TVM's numbering;
// anything but `ok` has zero fitness.

#include <cmath>
#include <optional>
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
};

/// "ok", "instantiation_error", "compile_error", "compile_error_device",
/// "runtime_error", "wrong_answer", "build_timeout", "run_timeout", "unknown".
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

}  // namespace tune
