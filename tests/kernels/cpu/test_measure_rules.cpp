// kernels/src/cpu/measure_rules.hpp: the rules that measure a kernel's runs
// against the best time known, as plain numbers.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "../../../kernels/src/cpu/measure_rules.hpp"

namespace rules = tune::measure_rules;

TEST_CASE("the checked run stops the timing only when even 1.5x its slowness leaves it past the margin", "[kernels]") {
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  // The boundary: best 10 ms, margin 0.25, allowance 1.5: 18.75 ms.
  CHECK_FALSE(rules::stop_after_checked_run(18.75, 10.0, 0.25));
  CHECK(rules::stop_after_checked_run(18.76, 10.0, 0.25));
  // Slower than the timed-run rule's cut but within the allowance: timed runs follow.
  CHECK(rules::stop_timing(15.0, 10.0, 0.25));
  CHECK_FALSE(rules::stop_after_checked_run(15.0, 10.0, 0.25));
  // Off: no margin, no best, no checked time.
  CHECK_FALSE(rules::stop_after_checked_run(1000.0, 10.0, 0.0));
  CHECK_FALSE(rules::stop_after_checked_run(1000.0, nan, 0.25));
  CHECK_FALSE(rules::stop_after_checked_run(1000.0, 0.0, 0.25));
  CHECK_FALSE(rules::stop_after_checked_run(1000.0, inf, 0.25));
  CHECK_FALSE(rules::stop_after_checked_run(nan, 10.0, 0.25));
  CHECK_FALSE(rules::stop_after_checked_run(-1.0, 10.0, 0.25));
}

TEST_CASE("the checked run's rule is the timed runs' rule at the allowance and grows with the checked time",
          "[kernels]") {
  for (double reference : {0.01, 0.5, 10.0, 3000.0})
    for (double margin : {0.05, 0.25, 1.0})
      for (int step = 0; step <= 400; ++step) {
        const double checked = reference * step / 50.0;
        INFO(reference << " " << margin << " " << checked);
        const bool stops = rules::stop_after_checked_run(checked, reference, margin);
        // Never stricter than the timed runs' rule: whatever the checked run
        // stops, a timed run as slow would have stopped too.
        if (stops) CHECK(rules::stop_timing(checked, reference, margin));
        CHECK(stops == rules::stop_timing(checked / rules::checked_run_allowance, reference, margin));
        // Monotone: a slower checked run stops whenever a faster one does.
        if (stops) CHECK(rules::stop_after_checked_run(checked * 1.01, reference, margin));
      }
}

TEST_CASE("a larger allowance lets a slower checked run through, and none below 1 is taken", "[kernels]") {
  // Best 10 ms, margin 0.25: the cut is 12.5 ms times the allowance.
  CHECK(rules::stop_after_checked_run(20.0, 10.0, 0.25, 1.5));
  CHECK_FALSE(rules::stop_after_checked_run(20.0, 10.0, 0.25, 2.0));
  CHECK_FALSE(rules::stop_after_checked_run(25.0, 10.0, 0.25, 2.0));
  CHECK(rules::stop_after_checked_run(25.01, 10.0, 0.25, 2.0));
  // An allowance under 1 counts as 1: the checked run is never taken as faster than it ran.
  CHECK(rules::stop_after_checked_run(12.6, 10.0, 0.25, 0.5) == rules::stop_after_checked_run(12.6, 10.0, 0.25, 1.0));
  CHECK_FALSE(rules::stop_after_checked_run(12.4, 10.0, 0.25, 0.5));
  CHECK_FALSE(rules::stop_after_checked_run(1000.0, 10.0, 0.25, std::nan("")));
}

TEST_CASE("a device's first-run allowance follows its own first runs, never below the default", "[kernels]") {
  rules::first_run_allowance a;
  CHECK(a.value() == rules::checked_run_allowance);
  // Fewer than `least` observations: the default, however slow they were.
  for (std::size_t i = 0; i + 1 < rules::first_run_allowance::least; ++i) a.add(30.0, 10.0);
  CHECK(a.value() == rules::checked_run_allowance);
  a.add(30.0, 10.0);
  CHECK(a.value() == Approx(3.0));
  // Bad pairs are not observations.
  const auto n = a.size();
  a.add(std::nan(""), 10.0);
  a.add(10.0, 0.0);
  a.add(-1.0, 10.0);
  a.add(10.0, std::numeric_limits<double>::infinity());
  CHECK(a.size() == n);

  // The 90th percentile (nearest rank) of the ratios: 1.0, 1.1, ..., 1.9 -> 1.9 at rank 9 of 10.
  rules::first_run_allowance b;
  for (int i = 0; i < 10; ++i) b.add(10.0 + i, 10.0);
  CHECK(b.value() == Approx(1.8));
  b.add(100.0, 10.0);  // one outlier of eleven: rank 10 is 1.9
  CHECK(b.value() == Approx(1.9));
  // First runs as fast as the kernel: the default stays.
  rules::first_run_allowance c;
  for (int i = 0; i < 20; ++i) c.add(10.0, 10.0);
  CHECK(c.value() == rules::checked_run_allowance);
  // Only the last `window` count: slow first runs long ago are forgotten.
  rules::first_run_allowance d;
  for (std::size_t i = 0; i < rules::first_run_allowance::window; ++i) d.add(25.0, 10.0);
  CHECK(d.value() == Approx(2.5));
  for (std::size_t i = 0; i < rules::first_run_allowance::window; ++i) d.add(11.0, 10.0);
  CHECK(d.size() == rules::first_run_allowance::window);
  CHECK(d.value() == rules::checked_run_allowance);
}
