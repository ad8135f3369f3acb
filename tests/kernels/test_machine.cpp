// The CPU's frequency settings read from sysfs (a made-up one here: this
// machine may have none), and the note when they changed between two runs.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "actors/scratch_dir.hpp"
#include "tune/kernels/machine.hpp"

using tune::cpu_frequency_state;

namespace {

void write(const std::filesystem::path& file, const std::string& text) {
  std::filesystem::create_directories(file.parent_path());
  std::ofstream(file) << text;
}

}  // namespace

TEST_CASE("machine: the governor, boost and maximum frequency are read from sysfs", "[kernels]") {
  tune::test::scratch_dir sys("machine-sys");
  auto cpu = sys.path() / "devices/system/cpu";
  CHECK_FALSE(tune::read_cpu_frequency(0, sys.path()).known());  // a machine that says nothing

  write(cpu / "cpu2/cpufreq/scaling_governor", "performance\n");
  write(cpu / "cpu2/cpufreq/scaling_max_freq", "3700000\n");
  write(cpu / "cpufreq/boost", "1\n");
  auto state = tune::read_cpu_frequency(2, sys.path());
  CHECK(state.governor == "performance");
  CHECK(state.max_khz == "3700000");
  CHECK(state.boost == "on");
  CHECK_FALSE(tune::read_cpu_frequency(0, sys.path()).governor.size());  // another core's own files

  // Intel's driver says it the other way round.
  std::filesystem::remove(cpu / "cpufreq/boost");
  write(cpu / "intel_pstate/no_turbo", "1\n");
  CHECK(tune::read_cpu_frequency(2, sys.path()).boost == "off");

  // What is not a short word is not trusted.
  write(cpu / "cpu2/cpufreq/scaling_governor", "perf\"<b>\n");
  CHECK(tune::read_cpu_frequency(2, sys.path()).governor.empty());
}

TEST_CASE("machine: a change between two runs is named, an unknown side is no change", "[kernels]") {
  cpu_frequency_state before{"powersave", "on", "3700000"};
  CHECK(tune::frequency_change_note(before, 3, before).empty());
  CHECK(tune::frequency_change_note(cpu_frequency_state{}, 3, before).empty());
  CHECK(tune::frequency_change_note(before, 3, cpu_frequency_state{}).empty());
  auto note = tune::frequency_change_note(before, 3, cpu_frequency_state{"performance", "off", "3700000"});
  CHECK(note ==
        "since run 3 of this task the CPU's frequency governor went from powersave to performance and its boost "
        "(turbo) went from on to off: times of the two runs are not comparable");
}

TEST_CASE("machine: the last-level cache's size is the largest level's, read from sysfs", "[kernels]") {
  tune::test::scratch_dir sys("machine-cache");
  CHECK(tune::last_level_cache_bytes(0, sys.path()) == 0);  // a machine that says nothing
  auto cache = sys.path() / "devices/system/cpu/cpu1/cache";
  write(cache / "index0/level", "1\n");
  write(cache / "index0/size", "48K\n");
  write(cache / "index2/level", "2\n");
  write(cache / "index2/size", "2048K\n");
  write(cache / "index3/level", "3\n");
  write(cache / "index3/size", "32768K\n");
  CHECK(tune::last_level_cache_bytes(1, sys.path()) == 32ull * 1024 * 1024);
  CHECK(tune::last_level_cache_bytes(0, sys.path()) == 0);  // another core's own files
  write(cache / "index3/size", "64M\n");
  CHECK(tune::last_level_cache_bytes(1, sys.path()) == 64ull * 1024 * 1024);
  // A size that is not a number is passed over: the level below counts.
  write(cache / "index3/size", "lots\n");
  CHECK(tune::last_level_cache_bytes(1, sys.path()) == 2048ull * 1024);
}
