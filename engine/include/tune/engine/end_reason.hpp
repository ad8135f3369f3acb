#pragma once
// Why a tuning run ended: one vocabulary from the population that decides it
// to the run summary, the results database (runs.status), the event stream
// (run_finished.reason), the facade's report and the command's exit code.

#include <array>
#include <optional>
#include <string_view>

namespace tune {

enum class end_reason {
  budget,     ///< the trial budget was spent
  time,       ///< the time budget passed
  exhausted,  ///< the strategy had nothing left to propose
  stopped,    ///< a stop was requested (SIGINT, request_stop()): resumable
  failed,     ///< the pipeline itself broke down
};

/// Every end reason, in declaration order.
inline constexpr std::array<end_reason, 5> all_end_reasons = {
    end_reason::budget, end_reason::time, end_reason::exhausted, end_reason::stopped, end_reason::failed};

/// "budget", "time", "exhausted", "stopped", "failed".
std::string_view to_string(end_reason reason);
/// The reason `to_string` names; nullopt for any other text (a file written
/// by another version): callers say so, they never guess.
std::optional<end_reason> end_reason_from_string(std::string_view text);
/// "budget, time, exhausted, stopped, failed": for messages about bad text.
std::string_view end_reason_names();

}  // namespace tune
