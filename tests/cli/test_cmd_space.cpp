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
