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
