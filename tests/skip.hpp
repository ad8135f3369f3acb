#pragma once
// The one way a test says it cannot run here (no GPU, no hipcc, no cgroup,
// no python3...): SKIP_TEST("why") prints "SKIPPED: why" to stdout, which
// ctest reports as Skipped (SKIP_REGULAR_EXPRESSION in tests/CMakeLists.txt),
// and returns from the test case. Use it in the TEST_CASE's own body, before
// any check: a test that checked something and then skipped would hide those
// checks behind "Skipped", so a skip after a CHECK or REQUIRE fails instead
// (the assertions are counted by the listener in catch_main.cpp). The reason
// may be streamed: SKIP_TEST("no GPU (" << why << ")").

#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdio>
#include <sstream>
#include <string>

namespace tune::test {

/// Checks (passed or failed, messages not counted) made so far by the test
/// case that is running, over all of its sections' runs.
std::size_t checks_in_this_test_case();

/// Prints "SKIPPED: why" and flushes; false, printing nothing, when the test
/// case has already checked something.
inline bool report_skip(const std::string& why) {
  if (checks_in_this_test_case() > 0) return false;
  std::printf("SKIPPED: %s\n", why.c_str());
  std::fflush(stdout);
  return true;
}

}  // namespace tune::test

#define SKIP_TEST(why)                                                                    \
  do {                                                                                    \
    std::ostringstream tune_skip_reason_;                                                 \
    tune_skip_reason_ << why;                                                             \
    if (!::tune::test::report_skip(tune_skip_reason_.str()))                              \
      FAIL("a test that has checked something cannot skip: " << tune_skip_reason_.str()); \
    return;                                                                               \
  } while (false)
