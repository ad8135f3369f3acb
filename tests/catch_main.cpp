// The one Catch2 main of all test executables (compiled once), with the
// listener that counts a test case's checks for SKIP_TEST (tests/skip.hpp).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
#include <cstddef>

#include "skip.hpp"

namespace {

std::size_t checks = 0;

struct check_counter : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;

  void testCaseStarting(const Catch::TestCaseInfo& info) override {
    checks = 0;
    TestEventListenerBase::testCaseStarting(info);
  }

  bool assertionEnded(const Catch::AssertionStats& stats) override {
    auto type = stats.assertionResult.getResultType();
    if (type != Catch::ResultWas::Info && type != Catch::ResultWas::Warning) ++checks;
    return true;
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(check_counter)

std::size_t tune::test::checks_in_this_test_case() { return checks; }
