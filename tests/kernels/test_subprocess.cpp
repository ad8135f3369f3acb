// Running programs by argv with a timeout that kills the whole process group.
#include <catch2/catch.hpp>

#include "tune/kernels/subprocess.hpp"

TEST_CASE("run_process collects output and exit codes", "[kernels]") {
  auto ok = tune::run_process({"echo", "hello", "world"}, 10.0);
  CHECK(ok.ok());
  CHECK(ok.output == "hello world\n");
  auto failing = tune::run_process({"false"}, 10.0);
  CHECK(failing.started);
  CHECK(failing.exit_code == 1);
  CHECK_FALSE(failing.ok());
  // Arguments go through untouched: no shell interprets them.
  auto literal = tune::run_process({"echo", "$HOME;", "`id`"}, 10.0);
  CHECK(literal.output == "$HOME; `id`\n");
}

TEST_CASE("run_process reports a missing program instead of throwing", "[kernels]") {
  auto missing = tune::run_process({"/nonexistent/compiler"}, 10.0);
  CHECK_FALSE(missing.started);
  CHECK(missing.error.find("/nonexistent/compiler") != std::string::npos);
}

TEST_CASE("run_process kills a program that overruns its timeout", "[kernels]") {
  auto slow = tune::run_process({"sleep", "30"}, 0.3);
  CHECK(slow.started);
  CHECK(slow.timed_out);
  CHECK(slow.seconds < 10.0);
}
