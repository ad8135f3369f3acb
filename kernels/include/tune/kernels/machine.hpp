#pragma once
// What the machine's CPU frequency settings were when a run started: a
// governor or boost (turbo) changed between two runs changes their times, and
// a run says so when it finds them changed since the last run of its task.

#include <cstdint>
#include <filesystem>
#include <string>

namespace tune {

/// Each field as the kernel reports it; empty when the machine does not say
/// (no cpufreq driver, as in most virtual machines).
struct cpu_frequency_state {
  std::string governor;  ///< e.g. "performance", "powersave", "schedutil"
  std::string boost;     ///< "on" or "off" (cpufreq/boost, or intel_pstate/no_turbo)
  std::string max_khz;   ///< the governor's upper frequency limit in kHz

  bool known() const { return !governor.empty() || !boost.empty() || !max_khz.empty(); }
  bool operator==(const cpu_frequency_state&) const = default;
};

/// Reads the state of `core` from `sys` (the sysfs root, "/sys" on a real
/// machine). Never throws: what cannot be read stays empty.
cpu_frequency_state read_cpu_frequency(int core, const std::filesystem::path& sys = "/sys");

/// The size in bytes of the largest cache level `core` sees (sysfs
/// devices/system/cpu/cpuN/cache/index*/level and size, e.g. "32768K");
/// 0 when the machine does not say. Never throws.
std::uint64_t last_level_cache_bytes(int core, const std::filesystem::path& sys = "/sys");

/// "" when nothing changed or either side is unknown; otherwise one line
/// naming what changed from `before` (of run `before_run`) to `now`, e.g.
/// "since run 3 of this task the CPU's frequency governor went from
/// powersave to performance: times of the two runs are not comparable".
std::string frequency_change_note(const cpu_frequency_state& before, std::int64_t before_run,
                                  const cpu_frequency_state& now);

}  // namespace tune
