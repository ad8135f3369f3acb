// tune-engine tune --compare-vendor (and its alias --compare-blas): the vendor
// figures in the summary JSON, what it says when no vendor can be timed, and
// the refusal without a built-in task; Ctrl-C (SIGINT) and SIGTERM stop a run.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "actors/scratch_dir.hpp"
#include "cli/cli_process.hpp"

using Catch::Matchers::Contains;
using tune::test::cli_process;

namespace {

nlohmann::json summary_of(const std::filesystem::path& file) {
  std::ifstream in(file);
  return nlohmann::json::parse(in);
}

}  // namespace

TEST_CASE("tune --compare-blas puts every vendor kernel and the best ratio in the summary", "[cli]") {
  tune::test::scratch_dir dir("tune-cli-vendor");
  setenv("TUNE_CACHE_DIR", (dir / "cache").c_str(), 1);
  cli_process p({"tune", "--task", "matmul:16x16x32", "--budget", "2", "--seed", "1", "--quiet", "--compare-blas",
                 "--summary-json", (dir / "summary.json").string()});
  const int code = p.wait(std::chrono::seconds(300));
  INFO(p.err());
  REQUIRE(code == 0);
  auto throughput = summary_of(dir / "summary.json")["throughput"];
  REQUIRE(throughput["vendors"].size() >= 2);
  CHECK(throughput["vendors"][0]["library"] == "onednn");
  CHECK(throughput["threads"] == 1);
  for (const auto& v : throughput["vendors"])
    if (v["available"] == true) CHECK(v["ratio"].get<double>() > 0);
  if (!throughput["best_vendor"].is_null())
    CHECK_THAT(p.out(), Contains("the best vendor kernel, " + throughput["best_vendor"]["library"].get<std::string>()));
  unsetenv("TUNE_CACHE_DIR");
}

TEST_CASE("tune --compare-vendor without a vendor worker says none is available", "[cli]") {
  tune::test::scratch_dir dir("tune-cli-novendor");
  setenv("TUNE_CACHE_DIR", (dir / "cache").c_str(), 1);
  setenv("TUNE_VENDOR_WORKER", (dir / "missing-worker").c_str(), 1);
  cli_process p({"tune", "--task", "conv2d:1x2x6x6:4x3x3", "--budget", "1", "--seed", "1", "--quiet",
                 "--compare-vendor", "--summary-json", (dir / "summary.json").string()});
  unsetenv("TUNE_VENDOR_WORKER");
  unsetenv("TUNE_CACHE_DIR");
  const int code = p.wait(std::chrono::seconds(300));
  INFO(p.err());
  REQUIRE(code == 0);
  auto throughput = summary_of(dir / "summary.json")["throughput"];
  CHECK(throughput["best_vendor"].is_null());
  REQUIRE(throughput["vendors"].size() == 3);
  CHECK_THAT(throughput["vendors"][0]["note"].get<std::string>(), Contains("missing-worker"));
  CHECK_THAT(throughput["vendors"][2]["note"].get<std::string>(), Contains("no BLAS equivalent"));
  CHECK_THAT(p.out(), Contains("best vendor: none available"));
}

TEST_CASE("tune --compare-vendor without a built-in task is refused with exit code 2", "[cli]") {
  cli_process p({"tune", "--kernel", std::string(TUNE_SOURCE_DIR) + "/examples/user-kernel", "--budget", "1", "--seed",
                 "1", "--compare-vendor"});
  CHECK(p.wait() == 2);
  CHECK_THAT(p.err(), Contains("--compare-vendor compares a built-in --task"));
}

TEST_CASE("tune stops at SIGINT or SIGTERM with a resumable summary and exit code 130", "[cli]") {
  // A replay at recorded speed of the full convolution A100 dataset would
  // take hours for this budget; the signal must end it within seconds.
  for (int sig : {SIGINT, SIGTERM}) {
    INFO("signal " << sig);
    tune::test::scratch_dir dir("cli-tune-signal");
    auto db = (dir / "run.db").string();
    cli_process p({"tune", "--dataset", std::string(TUNE_DATA_DIR) + "/datasets/convolution/A100.json.gz", "--budget",
                   "100000", "--seed", "1", "--db", db, "--summary-json", (dir / "s.json").string()});
    REQUIRE(p.wait_for_err("trials", std::chrono::seconds(60)));
    p.signal(sig);
    CHECK(p.wait(std::chrono::seconds(60)) == 130);
    auto summary = summary_of(dir / "s.json");
    CHECK(summary["reason"] == "stopped");
    CHECK(summary["trials"].get<int>() < 100000);
  }
}
