// The one Catch2 main of all test executables (compiled once), with the
// listener that counts a test case's checks for SKIP_TEST (tests/skip.hpp),
// and a device lease folder of the test process's own (TUNE_LEASE_DIR,
// unless set): tests run in parallel (ctest -j) then do not wait for each
// other's leases of core 0, while the runs one test starts (its tune-engine
// processes inherit the variable) still lease against each other.
#define CATCH_CONFIG_MAIN
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "skip.hpp"

namespace {

struct own_lease_dir {
  std::string dir;
  pid_t owner = ::getpid();  // a forked child that exits leaves it alone
  own_lease_dir() {
    if (std::getenv("TUNE_LEASE_DIR")) return;
    dir = (std::filesystem::temp_directory_path() / ("tune-test-leases-" + std::to_string(::getpid()))).string();
    ::setenv("TUNE_LEASE_DIR", dir.c_str(), 1);
  }
  ~own_lease_dir() {
    std::error_code ignored;
    if (!dir.empty() && ::getpid() == owner) std::filesystem::remove_all(dir, ignored);
  }
} lease_dir;

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
