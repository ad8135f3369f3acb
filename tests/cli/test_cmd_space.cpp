#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "actors/scratch_dir.hpp"
#include "cli/cli_process.hpp"

using Catch::Matchers::Contains;
using tune::test::cli_process;

namespace {

std::string spec(const std::string& name) { return std::string(TUNE_DATA_DIR) + "/specs/" + name; }

}  // namespace

TEST_CASE("tune-engine space prints the OpEvo MatMul space", "[cli][space]") {
  cli_process p({"space", spec("opevo_mm_N512K1024M1024_search_space.json")});
  REQUIRE(p.wait() == 0);
  CHECK_THAT(p.out(), Contains("factorization") && Contains("220") && Contains("286") && Contains("66"));
  CHECK_THAT(p.out(), Contains("Cartesian size: 4152720"));
  CHECK_THAT(p.out(), Contains("valid configurations: 4152720"));
}

TEST_CASE("tune-engine space counts the valid configurations of a T1 spec", "[cli][space]") {
  cli_process p({"space", spec("convolution_milo_T1.json")});
  REQUIRE(p.wait() == 0);
  CHECK_THAT(p.out(), Contains("Cartesian size: 10240"));
  CHECK_THAT(p.out(), Contains("constraints: 4"));
  CHECK_THAT(p.out(), Contains("valid configurations: 4362"));

  cli_process j({"space", "--json", spec("convolution_milo_T1.json")});
  REQUIRE(j.wait() == 0);
  auto doc = nlohmann::json::parse(j.out());
  CHECK(doc["cartesian_size"] == 10240);
  CHECK(doc["valid"] == 4362);
  CHECK(doc["parameters"].size() == 10);
  CHECK(doc["parameters"][0]["kind"] == "discrete");
  CHECK(doc["constraints"].size() == 4);
}

TEST_CASE("tune-engine space does not enumerate beyond --limit", "[cli][space]") {
  cli_process p({"space", "--limit", "1000", spec("convolution_milo_T1.json")});
  REQUIRE(p.wait() == 0);
  CHECK_THAT(p.out(), Contains("not counted"));
  cli_process j({"space", "--json", "--limit", "1000", spec("convolution_milo_T1.json")});
  REQUIRE(j.wait() == 0);
  CHECK(nlohmann::json::parse(j.out())["valid"].is_null());
  // A negative limit, draws or seed is refused (not read as a huge number).
  for (const char* option : {"--limit", "--draws", "--seed"}) {
    cli_process negative({"space", option, "-1", spec("convolution_milo_T1.json")});
    CHECK(negative.wait() == 2);
    CHECK_THAT(negative.err(), Contains(std::string(option) + ": must not be negative: -1"));
  }
}

TEST_CASE("tune-engine space answers at once on a space of 10^21 configurations", "[cli][space]") {
  tune::test::scratch_dir dir("cli-space-huge");
  auto path = (dir / "huge.json").string();
  std::ofstream(path) << R"({"t": {"_type": "factor", "_value": [1099511627776, 16]},
                             "p": {"_type": "perm", "_value": 12}})";
  cli_process p({"space", path});
  REQUIRE(p.wait() == 0);
  CHECK_THAT(p.out(), Contains("11899700525790") && Contains("479001600"));
  CHECK_THAT(p.out(), Contains("Cartesian size: 5699975591374251264000 (10^21.8, more than 2^64)"));
  CHECK_THAT(p.out(), Contains("valid configurations: 5699975591374251264000 (exact: no constraints)"));

  // With a constraint the count is estimated, and said to be.
  auto constrained = (dir / "constrained.json").string();
  std::ofstream(constrained) << R"({"ConfigurationSpace": {"TuningParameters": [
      {"Name": "a", "Type": "int", "Values": "[i for i in range(0, 100000)]"},
      {"Name": "b", "Type": "int", "Values": "[i for i in range(0, 100000)]"},
      {"Name": "c", "Type": "int", "Values": "[i for i in range(0, 1000)]"}],
      "Conditions": [{"Expression": "a < b", "Parameters": ["a", "b"]}]}})";
  cli_process e({"space", "--json", "--draws", "20000", constrained});
  REQUIRE(e.wait() == 0);
  auto doc = nlohmann::json::parse(e.out());
  CHECK(doc["cartesian_size"] == 10'000'000'000'000ULL);
  CHECK(doc["valid"].is_null());
  CHECK(doc["valid_exact"] == false);
  auto estimate = doc["valid_estimate"];
  CHECK(estimate["draws"] == 20000);
  CHECK(estimate["count_low"].get<double>() < 5e12);
  CHECK(estimate["count_high"].get<double>() > 5e12);
  cli_process t({"space", constrained});
  REQUIRE(t.wait() == 0);
  CHECK_THAT(t.out(), Contains("valid configurations: about") && Contains("95% interval") &&
                          Contains("estimated from 100000 uniform draws"));
}

TEST_CASE("tune-engine space rejects bad files with exit code 2 and the field", "[cli][space]") {
  tune::test::scratch_dir dir("cli-space");
  {
    cli_process p({"space", (dir / "absent.json").string()});
    CHECK(p.wait() == 2);
    CHECK_THAT(p.err(), Contains("absent.json") && Contains("cannot open"));
  }
  {
    auto path = (dir / "bad.json").string();
    std::ofstream(path) << R"({"ConfigurationSpace": {"TuningParameters": [{"Name": "a", "Values": "[1, 2"}]}})";
    cli_process p({"space", path});
    CHECK(p.wait() == 2);
    CHECK_THAT(p.err(), Contains("bad.json: ConfigurationSpace.TuningParameters[0].Values"));
  }
  {
    cli_process p({"space"});
    CHECK(p.wait() == 2);
    CHECK_THAT(p.err(), Contains("FILE"));
  }
}
