#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <regex>

#include "actors/scratch_dir.hpp"
#include "cli/cli_process.hpp"
#include "skip.hpp"
#include "tune/storage/results_db.hpp"

using Catch::Matchers::Contains;
using tune::test::cli_process;

#ifdef TUNE_WITH_LLVM
TEST_CASE("evolve records two objectives per trial and prints a front that edits explains", "[cli][gevo]") {
  tune::test::scratch_dir dir("tune-test-cli-evolve");
  const auto db = (dir / "evolve.db").string();
  const auto summary = (dir / "summary.json").string();
  cli_process evolve({"evolve", "--workload", "2fcnet:predict", "--budget", "6", "--seed", "3", "--db", db, "--hyper",
                      "population=2", "--hyper", "edit_kinds=copy,delete", "--summary-json", summary, "--quiet"});
  INFO(evolve.err());
  REQUIRE(evolve.wait() == 0);
  const auto out = evolve.out();
  INFO(out);
  CHECK_THAT(out, Contains("original: "));
  CHECK_THAT(out, Contains("Pareto front ("));
  CHECK_THAT(out, Contains("error on the search, validation and test splits"));
  CHECK_THAT(out, Contains("chosen (fastest with validation error <= "));
  CHECK_THAT(out, Contains("edit lists drawn: "));
  CHECK_THAT(out, Contains("time to solution: "));
  // The JSON summary: the front and the original with the three errors.
  std::ifstream summary_in(summary);
  auto json = nlohmann::json::parse(summary_in);
  REQUIRE(json.contains("evolution"));
  CHECK(json["evolution"].contains("solution_s"));
  CHECK(json["evolution"]["solution_s"].is_null() == (out.find("time to solution: none") != std::string::npos));
  REQUIRE(!json["evolution"]["front"].empty());
  for (auto& member : json["evolution"]["front"]) {
    CHECK(member["objectives"][1].is_number());
    CHECK(member["validation_error"].is_number());
    CHECK(member["test_error"].is_number());
  }
  CHECK(json["evolution"]["edit_lists"]["checked"].get<int>() >= 5);  // each of the 5 variants at least once
  // The original measured again after the search (5 rounds by default); the
  // speed-ups count from the lower of that and its recorded time.
  const double recorded = json["evolution"]["original"]["time_ms"].get<double>();
  const double again = json["evolution"]["original_remeasured_ms"].get<double>();
  CHECK(again > 0);
  CHECK(json["evolution"]["original_reference_ms"].get<double>() == std::min(recorded, again));
  CHECK_THAT(out, Contains("original measured again after the search: "));
  auto original = json["evolution"]["original"];
  CHECK(original["validation_error"].get<double>() == Approx(8.0 / 120).margin(2.0 / 120));
  // front from the database shows the same held-out errors.
  cli_process front({"front", "--db", db});
  REQUIRE(front.wait() == 0);
  char validation[64];
  std::snprintf(validation, sizeof validation, "%.4f validation", original["validation_error"].get<double>());
  CHECK_THAT(front.out(), Contains(validation));

  tune::storage::results_db results(db, tune::storage::results_db::open_mode::read_only);
  auto runs = results.runs();
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].task_key == "gevo:2fcnet:predict");
  CHECK(runs[0].strategy == "gevo");
  auto trials = results.trials(runs[0].id);
  CHECK(trials.size() == 6);
  std::size_t ok = 0;
  for (auto& t : trials) {
    CHECK_THAT(t.config_json, Contains("{\"edits\":["));
    if (t.state != tune::status::ok) continue;
    ++ok;
    REQUIRE(t.objectives.size() == 2);
    CHECK(t.objectives[1] >= 0);
    CHECK(t.objectives[1] <= 1);
  }
  CHECK(ok >= 1);  // the original at least

  std::smatch chosen;
  REQUIRE(std::regex_search(out, chosen, std::regex("chosen [^\\n]*: trial (\\d+)")));
  cli_process edits({"edits", "--db", db, "--trial", chosen[1]});
  REQUIRE(edits.wait() == 0);
  CHECK_THAT(edits.out(), Contains("2fcnet:predict, run 1, trial " + chosen[1].str() + ": ok"));

  cli_process missing({"edits", "--db", db, "--trial", "99"});
  CHECK(missing.wait() == 2);
  CHECK_THAT(missing.err(), Contains("has no trial 99"));
}

TEST_CASE("evolve measures the chosen variant again in turn with the original, unless told not to", "[cli][gevo]") {
  tune::test::scratch_dir dir("tune-test-cli-evolve-confirm");
  for (const std::string rounds : {"3", "0"}) {
    const auto summary = (dir / ("summary" + rounds + ".json")).string();
    // --max-error 1: the fastest of the front is chosen, whatever its error.
    cli_process evolve({"evolve", "--workload", "2fcnet:predict", "--budget", "8", "--seed", "3", "--max-error", "1",
                        "--confirm-rounds", rounds, "--summary-json", summary, "--quiet"});
    INFO(evolve.err());
    REQUIRE(evolve.wait() == 0);
    const auto out = evolve.out();
    INFO(out);
    std::ifstream summary_in(summary);
    auto json = nlohmann::json::parse(summary_in);
    REQUIRE(json["chosen"].is_object());
    const bool variant = json["chosen"]["seq"] != json["evolution"]["original"]["seq"];
    const bool confirmed = variant && rounds != "0";
    // The original measured again after the search with the same rounds: not at 0.
    CHECK(json["evolution"]["original_remeasured_ms"].is_null() == (rounds == "0"));
    CHECK((out.find("original measured again after the search: ") != std::string::npos) == (rounds != "0"));
    CHECK((out.find("measured again in turn with the original, 3 rounds: ") != std::string::npos) == confirmed);
    CHECK(json["chosen"]["confirmation"].is_null() == !confirmed);
    if (confirmed) {
      const auto& c = json["chosen"]["confirmation"];
      CHECK(c["rounds"] == 3);
      CHECK(c["min_speedup"].get<double>() <= c["speedup"].get<double>());
      CHECK(c["speedup"].get<double>() <= c["max_speedup"].get<double>());
      CHECK(c["original_ms"].get<double>() > 0);
    }
  }
}

TEST_CASE("evolve of a matmul starts from the tuned configuration of its database and plots its front", "[cli][gevo]") {
  tune::test::scratch_dir dir("tune-test-cli-evolve-matmul");
  const auto db = (dir / "mm.db").string();
  const std::string task = "matmul:32x64x48";
  cli_process tune({"tune", "--task", task, "--budget", "3", "--seed", "1", "--db", db, "--strategy", "random"});
  INFO(tune.err());
  REQUIRE(tune.wait() == 0);

  const auto plot = (dir / "front.svg").string();
  cli_process evolve({"evolve", "--workload", task, "--budget", "5", "--seed", "2", "--db", db, "--hyper",
                      "population=2", "--plot", plot, "--quiet"});
  INFO(evolve.err());
  REQUIRE(evolve.wait() == 0);
  const auto out = evolve.out();
  INFO(out);
  CHECK_THAT(out, Contains("base configuration (" + db + ": run 1, trial "));
  CHECK_THAT(out, Contains("chosen (fastest with error <= 0.0001)"));
  CHECK_THAT(out, !Contains("validation"));  // a matmul has no splits
  std::smatch front_size;
  REQUIRE(std::regex_search(out, front_size, std::regex("Pareto front \\((\\d+) variants\\)")));

  tune::storage::results_db results(db, tune::storage::results_db::open_mode::read_only);
  auto runs = results.runs();
  REQUIRE(runs.size() == 2);
  CHECK(runs[1].task_key.rfind("gevo:" + task + "@", 0) == 0);
  CHECK_THAT(runs[1].options_json, Contains("\"base\":{\"configuration\":"));

  // One front point per front member, the original marked.
  std::ifstream in(plot);
  std::string svg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto count = [&svg](const std::string& what) {
    std::size_t n = 0;
    for (auto at = svg.find(what); at != std::string::npos; at = svg.find(what, at + 1)) ++n;
    return n;
  };
  CHECK(count("class=\"front-point\"") == std::stoul(front_size[1]));
  CHECK(count("class=\"original-point\"") == 1);

  // The same front from the database, and a plot that cannot be written.
  cli_process front({"front", "--db", db, "--plot", (dir / "again.svg").string()});
  REQUIRE(front.wait() == 0);
  CHECK_THAT(front.out(), Contains("Pareto front (" + front_size[1].str() + " variants)"));
  CHECK(std::filesystem::exists(dir / "again.svg"));
  cli_process unwritable({"front", "--db", db, "--plot", (dir / "missing" / "x.svg").string()});
  CHECK(unwritable.wait() == 2);
  CHECK_THAT(unwritable.err(), Contains("cannot write the file"));
}
#else
TEST_CASE("the end-to-end runs of evolve", "[cli][gevo]") {
  SKIP_TEST("built without LLVM 14: evolve refuses every workload (checked below)");
}
#endif

TEST_CASE("evolve refuses an unknown workload with the accepted ones", "[cli][gevo]") {
  cli_process evolve({"evolve", "--workload", "3fcnet:train", "--budget", "4", "--seed", "1", "--quiet"});
  CHECK(evolve.wait() == 2);
#ifdef TUNE_WITH_LLVM
  CHECK_THAT(evolve.err(), Contains("unknown workload '3fcnet:train' (accepted: 2fcnet:predict, 2fcnet:train, "
                                    "cnn:predict, cnn:train, matmul:NxKxM)"));
#else
  CHECK_THAT(evolve.err(), Contains("no LLVM 14"));
#endif
}

TEST_CASE("evolve refuses edit kinds that are not a subset of the five, naming the field and the fix", "[cli][gevo]") {
  cli_process evolve({"evolve", "--workload", "2fcnet:predict", "--budget", "4", "--seed", "1", "--hyper",
                      "edit_kinds=copy,insert", "--quiet"});
  CHECK(evolve.wait() == 2);
  CHECK_THAT(evolve.err(), Contains("edit_kinds") && Contains("'insert' is not an edit kind") &&
                               Contains("copy, delete, move, swap, replace"));
}

TEST_CASE("evolve refuses a budget of 0 naming the option", "[cli][gevo]") {
  cli_process evolve({"evolve", "--workload", "2fcnet:predict", "--budget", "0", "--seed", "1", "--quiet"});
  CHECK(evolve.wait() == 2);
  CHECK_THAT(evolve.err(), Contains("--budget: must be at least 1 trial"));
}
