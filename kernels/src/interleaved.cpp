// backend::run_interleaved's default: whole measurements, in turn.
#include <string>

#include "tune/kernels/backend.hpp"

namespace tune {

interleaved_times backend::run_interleaved(const std::vector<std::pair<configuration, build_result>>& entries,
                                           int device, int rounds, double timeout_s) {
  interleaved_times out;
  out.time_ms.assign(entries.size(), {});
  run_limits limits(timeout_s);
  limits.early_stop = early_stop_policy::off();
  for (int round = 0; round < rounds; ++round) {
    for (std::size_t e = 0; e < entries.size(); ++e) {
      auto result = run(entries[e].first, entries[e].second, device, limits);
      if (result.state != status::ok || !(result.time_ms > 0)) {
        out.state = result.state == status::ok ? status::unknown : result.state;
        out.message = "entry " + std::to_string(e) + ", round " + std::to_string(round) + ": " +
                      std::string(to_string(result.state)) + (result.message.empty() ? "" : ": " + result.message);
        return out;
      }
      out.time_ms[e].push_back(result.time_ms);
    }
  }
  return out;
}

}  // namespace tune
