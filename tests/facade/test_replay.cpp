// tune::replay_statistics: the numbers `tune-engine replay --json` prints.
#include <catch2/catch.hpp>
#include <fstream>
#include <string>

#include "actors/scratch_dir.hpp"
#include "tune/tune.hpp"

using namespace tune;

namespace {
const std::string ktt = std::string(TUNE_DATA_DIR) + "/datasets/ktt/coulomb3d_RTX_2080_Ti_KTT_profiling.json.gz";
}

TEST_CASE("replay_statistics: checkpoints and reach and score for a small dataset", "[facade]") {
  replay_options o;
  o.dataset = ktt;
  o.strategy = "random";
  o.budget = 60;
  o.runs = 4;
  o.seed = 1;
  auto s = replay_statistics(o);
  CHECK(s["configurations"] == 210);
  CHECK(s["runs"] == 4);
  CHECK(s["budget"] == 60);
  CHECK(s["strategy"] == "random");
  REQUIRE(s["at"].size() == 3);  // 20, 50 and the budget
  CHECK(s["at"][0]["evals"] == 20);
  CHECK(s["at"][2]["evals"] == 60);
  double previous = 0;
  for (const auto& at : s["at"]) {
    double f = at["mean_f"].get<double>();
    CHECK(f >= previous);
    CHECK(f <= 1.0);
    previous = f;
  }
  CHECK(s["reach"].size() == 3);
  // Same seed, same numbers: the runs are reproducible.
  CHECK(replay_statistics(o)["at"] == s["at"]);
}

TEST_CASE("replay_statistics: trajectories are written one line per evaluation", "[facade]") {
  tune::test::scratch_dir dir("facade-replay");
  replay_options o;
  o.dataset = ktt;
  o.strategy = "random";
  o.budget = 10;
  o.runs = 2;
  o.trajectories_file = (dir / "t.jsonl").string();
  replay_statistics(o);
  std::ifstream in(o.trajectories_file);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) ++lines;
  CHECK(lines == 20);
}

TEST_CASE("replay_statistics: bad options name the option", "[facade]") {
  replay_options o;
  o.dataset = ktt;
  o.budget = 0;
  CHECK_THROWS_WITH(replay_statistics(o), "budget: must be at least 1 evaluation");
  o.option_names = {{"budget", "--budget"}, {"runs", "--runs"}, {"dataset", "--dataset"}};
  CHECK_THROWS_WITH(replay_statistics(o), "--budget: must be at least 1 evaluation");
  o.budget = 10;
  o.runs = 0;
  CHECK_THROWS_WITH(replay_statistics(o), "--runs: must be at least 1");
  o.option_names.clear();
  CHECK_THROWS_WITH(replay_statistics(o), "runs: must be at least 1");
  o.runs = 1;
  o.dataset.clear();
  CHECK_THROWS_WITH(replay_statistics(o), Catch::Matchers::StartsWith("dataset: no dataset given"));
  o.dataset = ktt;
  o.trajectories_file = "/nonexistent-folder/t.jsonl";
  o.option_names = {{"trajectories_file", "--trajectories"}};
  CHECK_THROWS_WITH(replay_statistics(o),
                    Catch::Matchers::StartsWith("--trajectories /nonexistent-folder/t.jsonl: cannot write"));
  o.trajectories_file.clear();
  o.strategy = "no-such-strategy";
  CHECK_THROWS_WITH(replay_statistics(o), Catch::Matchers::Contains("no-such-strategy"));
  o.strategy = "random";
  o.dataset = "/nonexistent.json";
  CHECK_THROWS_WITH(replay_statistics(o), Catch::Matchers::Contains("/nonexistent.json"));
}
