#include "tune/engine/end_reason.hpp"

namespace tune {

std::string_view to_string(end_reason reason) {
  switch (reason) {
    case end_reason::budget:
      return "budget";
    case end_reason::time:
      return "time";
    case end_reason::exhausted:
      return "exhausted";
    case end_reason::stopped:
      return "stopped";
    case end_reason::failed:
      return "failed";
  }
  return "failed";  // not reached: every enumerator is named above
}

std::optional<end_reason> end_reason_from_string(std::string_view text) {
  for (auto reason : all_end_reasons)
    if (to_string(reason) == text) return reason;
  return std::nullopt;
}

std::string_view end_reason_names() { return "budget, time, exhausted, stopped, failed"; }

}  // namespace tune
