// Where a device's measuring time went: every second of a trial lands in one bucket.
#include <catch2/catch.hpp>

#include "tune/kernels/backend.hpp"

using namespace tune;

namespace {
trial make(status state, double run_s, double kernel_s, bool stopped_early = false) {
  trial t;
  t.state = state;
  t.time_ms = state == status::ok ? 1.0 : std::nan("");
  t.run_s = run_s;
  t.kernel_s = kernel_s;
  t.stopped_early = stopped_early;
  return t;
}
}  // namespace

TEST_CASE("device time: each trial's run lands in one bucket, kernel time apart from overhead", "[kernels]") {
  device_time d;
  d.add(make(status::ok, 1.0, 0.75));
  d.add(make(status::ok, 0.5, 0.25, true));
  d.add(make(status::too_slow, 0.2, 0.0));
  d.add(make(status::run_timeout, 10.0, 0.0));
  d.add(make(status::wrong_answer, 0.3, 0.1));
  d.add(make(status::runtime_error, 0.05, 0.0));
  auto reused = make(status::ok, 3.0, 2.0);
  reused.reused_from_run = 4;
  d.add(reused);  // another run measured it
  CHECK(d.trials == 6);
  CHECK(d.measured_s == Approx(0.75));
  CHECK(d.stopped_early_s == Approx(0.25));
  CHECK(d.too_slow_s == Approx(0.2));
  CHECK(d.timeout_s == Approx(10.0));
  CHECK(d.failed_s == Approx(0.35));
  CHECK(d.overhead_s == Approx(0.5));
  CHECK(d.total_s() == Approx(1.0 + 0.5 + 0.2 + 10.0 + 0.3 + 0.05));
}

TEST_CASE("device time: a kernel time past the run's is clipped, a negative one counts as none", "[kernels]") {
  device_time d;
  d.add(make(status::ok, 1.0, 2.0));
  d.add(make(status::ok, 1.0, -1.0));
  CHECK(d.measured_s == Approx(1.0));
  CHECK(d.overhead_s == Approx(1.0));
  CHECK(d.total_s() == Approx(2.0));
}
