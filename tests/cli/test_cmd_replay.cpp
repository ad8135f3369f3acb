// tune-engine replay: summary, trajectories that give back the printed
// numbers, and bad input.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/cli_process.hpp"
#include "tune/engine/strategy.hpp"
#include "tune/engine/text.hpp"

using Catch::Matchers::Contains;
using tune::test::cli_process;

namespace {

std::string slice() { return std::string(TUNE_DATA_DIR) + "/replay/conv_a100_slice.json.gz"; }

std::filesystem::path scratch(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("tune_cmd_replay_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir / name;
}

}  // namespace

TEST_CASE("replay trajectories re-read give the printed numbers", "[cli]") {
  auto traj = scratch("traj.jsonl");
  cli_process p({"replay", "--dataset", slice(), "--strategy", "random", "--budget", "60", "--runs", "6", "--seed",
                 "11", "--json", "--trajectories", traj.string()});
  REQUIRE(p.wait() == 0);
  auto summary = nlohmann::json::parse(p.out());
  CHECK(summary["runs"] == 6);
  CHECK(summary["configurations"] == 164);
  CHECK(summary["ok_configurations"] == 135);
  double optimum = summary["optimum_ms"];

  std::map<int, std::vector<double>> curves;  // run -> f after each evaluation
  std::map<int, std::set<std::string>> configs;
  std::map<int, double> clock;
  std::ifstream in(traj);
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    int run = j["run"];
    auto& curve = curves[run];
    CHECK(j["eval"] == curve.size() + 1);
    CHECK(configs[run].insert(j["config"].dump()).second);
    CHECK(j["config"].contains("block_size_x"));
    double sim = j["sim_time_s"];
    CHECK(sim > clock[run]);
    clock[run] = sim;
    double f = curve.empty() ? 0.0 : curve.back();
    if (j["status"] == "ok") {
      REQUIRE(j["time_ms"].is_number());
      f = std::max(f, optimum / j["time_ms"].get<double>());
    } else {
      CHECK(j["time_ms"].is_null());
    }
    curve.push_back(f);
  }
  REQUIRE(curves.size() == 6);
  for (auto& [run, curve] : curves) CHECK(curve.size() == 60);

  for (const auto& at : summary["at"]) {
    std::size_t n = at["evals"];
    double mean = 0;
    for (auto& [run, curve] : curves) mean += curve[n - 1];
    mean /= 6;
    CHECK(at["mean_f"].get<double>() == Approx(mean).epsilon(1e-12));
    CHECK(at["random_f"].get<double>() > 0.0);
  }
  REQUIRE(summary["at"].size() == 3);  // 20, 50 and the budget 60
  for (const auto& reach : summary["reach"]) {
    double threshold = reach["f"];
    std::size_t never = 0;
    double sum = 0;
    for (auto& [run, curve] : curves) {
      auto it = std::find_if(curve.begin(), curve.end(), [&](double f) { return f >= threshold - 1e-12; });
      if (it == curve.end())
        ++never;
      else
        sum += static_cast<double>(it - curve.begin() + 1);
    }
    CHECK(reach["never"] == never);
    if (never < 6) CHECK(reach["mean_evals"].get<double>() == Approx(sum / static_cast<double>(6 - never)));
  }
}

TEST_CASE("replay prints a text summary with the random baseline and the score", "[cli]") {
  cli_process p(
      {"replay", "--dataset", slice(), "--strategy", "random", "--budget", "20", "--runs", "3", "--seed", "1"});
  REQUIRE(p.wait() == 0);
  CHECK_THAT(p.out(), Contains("after   20 evaluations") && Contains("random") && Contains("f >= 0.95") &&
                          Contains("Willemsen"));
}

TEST_CASE("replay rejects bad input with exit code 2", "[cli]") {
  auto run = [](std::vector<std::string> args) {
    cli_process p(args);
    int code = p.wait();
    return std::make_pair(code, p.err());
  };
  auto missing = run({"replay", "--dataset", "/no/such/file.json", "--strategy", "random", "--budget", "5", "--runs",
                      "1", "--seed", "0"});
  CHECK(missing.first == 2);
  CHECK_THAT(missing.second, Contains("/no/such/file.json"));
  auto zero =
      run({"replay", "--dataset", slice(), "--strategy", "random", "--budget", "0", "--runs", "1", "--seed", "0"});
  CHECK(zero.first == 2);
  CHECK_THAT(zero.second, Contains("--budget"));
  auto hyper = run({"replay", "--dataset", slice(), "--strategy", "random", "--budget", "5", "--runs", "1", "--seed",
                    "0", "--hyper", "lambda"});
  CHECK(hyper.first == 2);
  CHECK_THAT(hyper.second, Contains("name=value"));
  auto strategy =
      run({"replay", "--dataset", slice(), "--strategy", "nonsense", "--budget", "5", "--runs", "1", "--seed", "0"});
  CHECK(strategy.first == 2);
  CHECK_THAT(strategy.second, Contains("nonsense"));
  auto kinds = scratch("kinds.json");
  std::ofstream(kinds) << R"({"no_such_param": "discrete"})";
  auto bad_kinds = run({"replay", "--dataset", slice(), "--strategy", "random", "--budget", "5", "--runs", "1",
                        "--seed", "0", "--kinds", kinds.string()});
  CHECK(bad_kinds.first == 2);
  CHECK_THAT(bad_kinds.second, Contains("no_such_param"));
}

TEST_CASE("replay --help lists every strategy make_strategy knows", "[cli]") {
  cli_process help({"replay", "--help"});
  REQUIRE(help.wait() == 0);
  CHECK_THAT(help.out(), Contains(tune::join(tune::strategy_names())));
}

TEST_CASE("replay takes a prior dataset and names it", "[cli]") {
  auto t4 = std::string(TUNE_DATA_DIR) + "/replay/conv_a100_slice_T4.json.gz";
  cli_process p({"replay", "--dataset", slice(), "--strategy", "bo", "--budget", "20", "--runs", "2", "--seed", "1",
                 "--prior", t4});
  REQUIRE(p.wait() == 0);
  CHECK_THAT(p.out(), Contains("prior     " + t4));
  cli_process bad({"replay", "--dataset", slice(), "--budget", "5", "--runs", "1", "--seed", "0", "--prior",
                   std::string(TUNE_DATA_DIR) + "/datasets/ktt/coulomb3d_RTX_2080_Ti_KTT_profiling.json.gz"});
  CHECK(bad.wait() == 2);
  CHECK_THAT(bad.err(), Contains("--prior") && Contains("no configuration of the prior"));
}
