// Every benchmark program (bench/*.cpp) explains its options with --help and
// refuses an option it does not know or a malformed value, before it
// measures anything: a typo must not run a long benchmark with a default in
// place of what was asked, and --help must not start one.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "kernels/process_checks.hpp"
#include "skip.hpp"
#include "tune/kernels/subprocess.hpp"

namespace {

/// The benchmark programs built here, by their sources' names.
std::vector<std::filesystem::path> built_benchmarks() {
  std::vector<std::filesystem::path> out;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(TUNE_SOURCE_DIR) / "bench"))
    if (entry.path().extension() == ".cpp") {
      auto program = std::filesystem::path(TUNE_BENCH_DIR) / entry.path().stem();
      if (std::filesystem::is_regular_file(program)) out.push_back(program);
    }
  return out;
}

}  // namespace

TEST_CASE("every benchmark explains its options and refuses one it does not know, without measuring", "[bench]") {
  const auto programs = built_benchmarks();
  if (programs.empty()) SKIP_TEST("no benchmark program is built in " TUNE_BENCH_DIR);
  // bench_pipeline, bench_nodes and bench_soak are among them (each runs for
  // minutes when it starts measuring), so the timeouts below catch a program
  // that takes --help or a typo for a run.
  CHECK(programs.size() >= 15);
  for (const auto& program : programs) {
    const std::string name = program.filename().string();
    INFO(name);
    auto help = tune::run_process({program.string(), "--help"}, 20.0);
    INFO(help.output);
    CHECK(help.ok());
    CHECK(help.output.find("Options:") != std::string::npos);
    CHECK(help.output.find("--help") != std::string::npos);
    auto typo = tune::run_process({program.string(), "--no-such-option", "1"}, 20.0);
    INFO(typo.output);
    CHECK(!typo.timed_out);
    CHECK(typo.started);
    // Bad input is exit code 2, as with the tune-engine command (CLI11's own
    // codes are 100 and up).
    CHECK(typo.exit_code == 2);
    // Named, or a required option's absence said first (bench_retime's --db).
    CHECK((typo.output.find("--no-such-option") != std::string::npos ||
           typo.output.find("is required") != std::string::npos));
  }
}

TEST_CASE("a replay benchmark refuses a count of 0 and gives each --kinds to the dataset after it", "[bench]") {
  const auto program = std::filesystem::path(TUNE_BENCH_DIR) / "bench_strategies";
  if (!std::filesystem::is_regular_file(program)) SKIP_TEST("bench_strategies is not built in " TUNE_BENCH_DIR);
  const auto dataset = std::string(TUNE_DATA_DIR) + "/datasets/pnpoly/RTX_3090.json.gz";
  for (const char* runs : {"0", "-3", "many"}) {
    INFO(runs);
    auto out = tune::run_process({program.string(), "--runs", runs, dataset}, 20.0);
    INFO(out.output);
    CHECK(out.started);
    CHECK(out.exit_code == 2);
    CHECK(out.output.find(std::string("--runs: must be a number more than 0, not ") + runs) != std::string::npos);
  }
  // A hyperparameter's value that is not a number is named, with the option.
  auto hyper = tune::run_process({program.string(), "--hyper", "bo:xi=abc", dataset}, 20.0);
  INFO(hyper.output);
  CHECK(hyper.exit_code == 2);
  CHECK(hyper.output.find("--hyper bo:xi=abc: the value 'abc' is not a number") != std::string::npos);
  // A --kinds after the last dataset applies to none: refused, not ignored.
  auto late = tune::run_process(
      {program.string(), "--runs", "1", dataset, "--kinds", std::string(TUNE_DATA_DIR) + "/datasets/pnpoly/kinds.json"},
      20.0);
  INFO(late.output);
  CHECK(late.exit_code == 2);
  CHECK(late.output.find("must come before the dataset it applies to") != std::string::npos);
  // Each --kinds applies to the one dataset after it, however many there are.
  const auto out_dir = std::filesystem::temp_directory_path() / ("tune-bench-kinds-" + std::to_string(::getpid()));
  const auto kinds = std::string(TUNE_DATA_DIR) + "/datasets/pnpoly/kinds.json";
  auto two = tune::run_process(
      {program.string(), "--runs", "1", "--budget", "5", "--strategies", "random", "--out", out_dir.string(), "--kinds",
       kinds, dataset, std::string(TUNE_DATA_DIR) + "/datasets/dedispersion/A4000.json.gz", "--kinds", kinds, dataset},
      120.0);
  INFO(two.output);
  CHECK(two.ok());
  std::ifstream table(out_dir / "strategies.md");
  const std::string text{std::istreambuf_iterator<char>(table), std::istreambuf_iterator<char>()};
  std::size_t overridden = 0;
  for (auto at = text.find("overridden by"); at != std::string::npos; at = text.find("overridden by", at + 1))
    ++overridden;
  CHECK(overridden == 2);
  CHECK(text.find("Parameter kinds of dedispersion") == std::string::npos);
  std::filesystem::remove_all(out_dir);
}

TEST_CASE("a benchmark takes the last value of an option given twice and refuses a count of 0", "[bench]") {
  // bench_builds parsed with CLI11 before the others did; it follows the same
  // conventions: the scripts pass their defaults first and the user's after.
  const auto program = std::filesystem::path(TUNE_BENCH_DIR) / "bench_builds";
  if (!std::filesystem::is_regular_file(program)) SKIP_TEST("bench_builds is not built in " TUNE_BENCH_DIR);
  auto zero = tune::run_process({program.string(), "--configs", "0"}, 20.0);
  INFO(zero.output);
  CHECK(zero.exit_code == 2);
  CHECK(zero.output.find("--configs: must be a number more than 0, not 0") != std::string::npos);
  // One configuration built once each way, no stage table, no timings.
  auto twice = tune::run_process({program.string(), "--task", "matmul:16x16x16", "--configs", "4", "--configs", "1",
                                  "--rounds", "1", "--stage-rounds", "0", "--measure-rounds", "0"},
                                 120.0);
  INFO(twice.output);
  CHECK(twice.ok());
  CHECK(twice.output.find(", 1 configurations (seed") != std::string::npos);
}

TEST_CASE("a benchmark's node processes die with it, also when it is killed", "[bench]") {
  // bench_nodes starts four tune-engine node processes; killed by a signal
  // it cannot catch, it cannot stop them itself: the kernel does
  // (PR_SET_PDEATHSIG).
  const auto program = std::filesystem::path(TUNE_BENCH_DIR) / "bench_nodes";
  if (!std::filesystem::is_regular_file(program)) SKIP_TEST("bench_nodes is not built in " TUNE_BENCH_DIR);
  const pid_t bench = ::fork();
  REQUIRE(bench >= 0);
  if (bench == 0) {
    int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, STDOUT_FILENO);
    ::dup2(null, STDERR_FILENO);
    ::execl(program.c_str(), program.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  std::vector<long> nodes;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while ((nodes = tune::test::children_of(bench, "tune-engine")).size() < 4 &&
         std::chrono::steady_clock::now() < deadline && !tune::test::has_ended(bench))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ::kill(bench, SIGKILL);
  ::waitpid(bench, nullptr, 0);
  REQUIRE(nodes.size() == 4);
  for (long node : nodes) {
    INFO(node);
    CHECK(tune::test::ends_soon(node));
    if (!tune::test::has_ended(node)) ::kill(static_cast<pid_t>(node), SIGKILL);
  }
}
