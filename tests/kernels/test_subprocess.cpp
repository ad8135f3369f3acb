// Running programs by argv with a timeout that kills the whole process group.
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "tune/kernels/subprocess.hpp"

namespace {

/// True once the process is gone or a zombie waiting for init to reap it.
bool has_ended(long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  auto close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] == 'Z';
}

/// Waits (up to 10 s, for the kernel to deliver the signal) until the process has ended.
bool ends_soon(long pid) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!has_ended(pid)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

}  // namespace

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

TEST_CASE("run_process kills the whole process group of a program that overruns its timeout", "[kernels]") {
  // The shell starts a helper in its group (as g++ starts cc1plus) and waits;
  // the helper does not hold the output open, so only a group kill ends it.
  auto slow = tune::run_process({"sh", "-c", "sleep 300 >/dev/null 2>&1 & echo $!; wait"}, 0.5);
  REQUIRE(slow.started);
  CHECK(slow.timed_out);
  long helper = std::stol(slow.output);
  REQUIRE(helper > 1);
  CHECK(ends_soon(helper));
}

TEST_CASE("run_process kills helpers a finished program left behind in its group", "[kernels]") {
  auto quick = tune::run_process({"sh", "-c", "sleep 300 >/dev/null 2>&1 & echo $!"}, 30.0);
  REQUIRE(quick.ok());
  long helper = std::stol(quick.output);
  REQUIRE(helper > 1);
  CHECK(ends_soon(helper));
}
