// kernels/src/cpu/resident_measurer.cpp, the engine's side of a GPU's
// measuring process, against a stand-in for that process: a script that
// speaks the resident protocol (kernels/worker/resident.hpp) on descriptor 3,
// takes `setup` seconds to set up in a fresh process and "runs" a kernel for
// the milliseconds its request names. The real process needs a GPU
// (tests/kernels/test_cuda_backend.cpp runs it on one); what is tested here
// is the engine's enforcement of the slow limit on the runs it reports.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <string>

#include "../../../kernels/src/cpu/resident_measurer.hpp"
#include "kernels/kernel_fixtures.hpp"

using tune::status;

namespace {

/// A stand-in GPU measuring process: sleeps `setup_s` before its first run,
/// reports each request's run ({"run": 0}), lasting the request's
/// "kernel_ms", then replies ok with its pid in the message.
std::string stand_in(const tune::test::kernel_scratch& scratch, double setup_s) {
  auto path = (scratch.path() / "gpu-stand-in.sh").string();
  std::ofstream script(path);
  script << "#!/bin/bash\n"
         << "first=1\n"
         << "while IFS= read -r line <&3; do\n"
         << "  [[ $line =~ \\\"kernel_ms\\\":([0-9.]+) ]] && ms=${BASH_REMATCH[1]} || ms=1\n"
         << "  if [[ $first == 1 ]]; then sleep " << setup_s << "; first=0; fi\n"
         << "  echo '{\"run\": 0}' >&3\n"
         << "  sleep $(awk \"BEGIN { print $ms / 1000 }\")\n"
         << "  echo '{\"idle\": 0}' >&3\n"
         << "  echo \"{\\\"status\\\": \\\"ok\\\", \\\"time_ms\\\": $ms, \\\"repeats\\\": 1, \\\"message\\\": \\\"pid "
            "$$\\\"}\" "
            ">&3\n"
         << "done\n";
  script.close();
  ::chmod(path.c_str(), 0755);
  return path;
}

tune::run_limits limits_with_best(double best_ms) {
  tune::run_limits limits(30.0);
  limits.reference_ms = best_ms;
  limits.early_stop.slow_factor = 4;
  limits.early_stop.min_slow_ms = 1;
  return limits;
}

}  // namespace

TEST_CASE("a GPU run is stopped as too slow only once it has run longer than a fresh process takes to set up",
          "[kernels]") {
  tune::test::kernel_scratch scratch("gpu-stand-in");
  tune::resident_measurer measurer(stand_in(scratch, 0.6), tune::resident_measurer::kind::gpu, 0);
  const auto limits = limits_with_best(10.0);  // too slow past 40 ms by the factor alone

  auto first = measurer.measure({{"kernel_ms", 5}}, limits);
  REQUIRE(first.state == status::ok);
  CHECK(measurer.restart_ms() >= 550.0);
  const auto pid = first.message;

  // 200 ms: past 4x the best, but killing it would cost the next trial the
  // 0.6 s set-up; it ends by itself in the same process.
  auto slow = measurer.measure({{"kernel_ms", 200}}, limits);
  INFO(slow.message);
  CHECK(slow.state == status::ok);
  CHECK(slow.time_ms == 200.0);
  CHECK(slow.message == pid);

  // 20 s: stopped once it has run as long as the set-up took.
  auto hopeless = measurer.measure({{"kernel_ms", 20000}}, limits);
  INFO(hopeless.message);
  CHECK(hopeless.state == status::too_slow);
  CHECK(hopeless.message.find("more than 4x the best time so far, 10 ms, and longer than the measuring process's "
                              "set-up") != std::string::npos);
  CHECK(hopeless.run_s < 10.0);
}

TEST_CASE("a GPU run past the slow limit and the set-up is stopped, and the next trial starts another process",
          "[kernels]") {
  tune::test::kernel_scratch scratch("gpu-stand-in-fast");
  tune::resident_measurer measurer(stand_in(scratch, 0.0), tune::resident_measurer::kind::gpu, 0);
  const auto limits = limits_with_best(10.0);

  // The first measurement with no best known: the stand-in's own start (a
  // bash process) counts towards a run, and on a loaded machine it can take
  // longer than 4 x 10 ms.
  auto first = measurer.measure({{"kernel_ms", 5}}, limits_with_best(std::nan("")));
  REQUIRE(first.state == status::ok);

  auto slow = measurer.measure({{"kernel_ms", 3000}}, limits);
  INFO(slow.message);
  CHECK(slow.state == status::too_slow);
  CHECK(slow.message.find("more than 4x the best time so far, 10 ms") != std::string::npos);
  CHECK(slow.message.find("a fresh one measures the next trial") != std::string::npos);
  CHECK(slow.run_s < 2.0);

  auto after = measurer.measure({{"kernel_ms", 5}}, limits);
  CHECK(after.state == status::ok);
  CHECK(after.message != first.message);
}
