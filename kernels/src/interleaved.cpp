// backend::run_interleaved's default: whole measurements, in turn (measure_in_turn).
#include <string>

#include "tune/kernels/backend.hpp"

namespace tune {

interleaved_times measure_in_turn(std::size_t entries, int rounds,
                                  const std::function<run_result(std::size_t entry)>& measure) {
  interleaved_times out;
  out.time_ms.assign(entries, {});
  for (int round = 0; round < rounds; ++round) {
    for (std::size_t e = 0; e < entries; ++e) {
      auto result = measure(e);
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

interleaved_times backend::run_interleaved(const std::vector<std::pair<configuration, build_result>>& entries,
                                           int device, int rounds, double timeout_s) {
  run_limits limits(timeout_s);
  limits.early_stop = early_stop_policy::off();
  return measure_in_turn(entries.size(), rounds,
                         [&](std::size_t e) { return run(entries[e].first, entries[e].second, device, limits); });
}

}  // namespace tune
