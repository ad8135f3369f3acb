#include "tune/kernels/machine.hpp"

#include <cctype>
#include <fstream>
#include <vector>

namespace tune {
namespace {

/// The first line of a sysfs file, without its newline; empty when it cannot be read.
std::string first_line(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string line;
  if (!in || !std::getline(in, line)) return {};
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r' || line.back() == ' ')) line.pop_back();
  // sysfs values are short words and numbers; anything else is not trusted.
  if (line.size() > 64) return {};
  for (char c : line)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return {};
  return line;
}

}  // namespace

std::uint64_t last_level_cache_bytes(int core, const std::filesystem::path& sys) {
  std::error_code ec;
  auto caches = sys / "devices/system/cpu" / ("cpu" + std::to_string(core)) / "cache";
  int best_level = 0;
  std::uint64_t best_bytes = 0;
  for (const auto& entry : std::filesystem::directory_iterator(caches, ec)) {
    if (entry.path().filename().string().rfind("index", 0) != 0) continue;
    auto level = first_line(entry.path() / "level"), size = first_line(entry.path() / "size");
    if (level.empty() || size.empty() || level.size() > 2) continue;
    std::uint64_t unit = 1;
    if (size.back() == 'K') unit = 1024;
    if (size.back() == 'M') unit = 1024 * 1024;
    if (unit != 1) size.pop_back();
    if (size.empty() || size.size() > 12 || size.find_first_not_of("0123456789") != std::string::npos) continue;
    int l = std::stoi(level);
    std::uint64_t bytes = std::stoull(size) * unit;
    if (l > best_level || (l == best_level && bytes > best_bytes)) {
      best_level = l;
      best_bytes = bytes;
    }
  }
  return best_bytes;
}

cpu_frequency_state read_cpu_frequency(int core, const std::filesystem::path& sys) {
  cpu_frequency_state out;
  auto cpu = sys / "devices/system/cpu";
  auto freq = cpu / ("cpu" + std::to_string(core)) / "cpufreq";
  out.governor = first_line(freq / "scaling_governor");
  out.max_khz = first_line(freq / "scaling_max_freq");
  auto boost = first_line(cpu / "cpufreq/boost");
  if (boost == "1") out.boost = "on";
  if (boost == "0") out.boost = "off";
  if (out.boost.empty()) {
    auto no_turbo = first_line(cpu / "intel_pstate/no_turbo");
    if (no_turbo == "0") out.boost = "on";
    if (no_turbo == "1") out.boost = "off";
  }
  return out;
}

std::string frequency_change_note(const cpu_frequency_state& before, std::int64_t before_run,
                                  const cpu_frequency_state& now) {
  std::vector<std::string> changes;
  auto compare = [&](const std::string& what, const std::string& was, const std::string& is) {
    if (!was.empty() && !is.empty() && was != is) changes.push_back(what + " went from " + was + " to " + is);
  };
  compare("frequency governor", before.governor, now.governor);
  compare("boost (turbo)", before.boost, now.boost);
  compare("maximum frequency (kHz)", before.max_khz, now.max_khz);
  if (changes.empty()) return {};
  std::string out = "since run " + std::to_string(before_run) + " of this task the CPU's ";
  for (std::size_t i = 0; i < changes.size(); ++i) out += (i ? " and its " : "") + changes[i];
  return out + ": times of the two runs are not comparable";
}

}  // namespace tune
