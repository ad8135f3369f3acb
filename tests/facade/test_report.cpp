// The facade's small pieces: hyperparameter parsing, strategy checks, end
// reasons, and the report as JSON and text.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "report_detail.hpp"
#include "tune/tune.hpp"

using namespace tune;

TEST_CASE("parse_hyper: name=value items become numbers", "[facade]") {
  auto h = parse_hyper({"rho=8", "q=0.5", "stall=-1e2"});
  CHECK(h.size() == 3);
  CHECK(h.at("rho") == 8);
  CHECK(h.at("q") == 0.5);
  CHECK(h.at("stall") == -100);
  CHECK(parse_hyper({}).empty());
}

TEST_CASE("parse_hyper: malformed items name the item and the fix", "[facade]") {
  for (std::string bad : {"rho", "=8", "rho=", "rho=8x", "rho=abc", "rho=nan", "rho=inf"}) {
    INFO(bad);
    CHECK_THROWS_WITH(parse_hyper({bad}), Catch::Matchers::StartsWith("hyper " + bad + ":"));
    CHECK_THROWS_WITH(parse_hyper({bad}, "--hyper"), Catch::Matchers::StartsWith("--hyper " + bad + ":"));
  }
  CHECK_THROWS_WITH(parse_hyper({"rho=8", "rho=9"}), Catch::Matchers::Contains("twice"));
  CHECK_THROWS_AS(parse_hyper({"rho"}), input_error);
  // An embedder's items are named as the embedder's caller knows them.
  CHECK_THROWS_WITH(parse_hyper({"rho"}, "hyper of my_tool"),
                    Catch::Matchers::StartsWith("hyper of my_tool rho:") && !Catch::Matchers::Contains("--hyper"));
}

TEST_CASE("validate_strategy: unknown names and hyperparameters are input errors", "[facade]") {
  std::vector<parameter_ptr> p;
  p.push_back(make_discrete_parameter("x", {1, 2, 3, 4}));
  auto space = std::make_shared<const search_space>(std::move(p));
  CHECK_NOTHROW(validate_strategy("opevo", {{"rho", 4}}, space));
  CHECK_THROWS_WITH(validate_strategy("nope", {}, space), Catch::Matchers::Contains("nope"));
  CHECK_THROWS_AS(validate_strategy("opevo", {{"nope", 1}}, space), input_error);
}

TEST_CASE("end_reason: every reason has its own name", "[facade]") {
  CHECK(to_string(end_reason::budget) == "budget");
  CHECK(to_string(end_reason::time) == "time");
  CHECK(to_string(end_reason::exhausted) == "exhausted");
  CHECK(to_string(end_reason::stopped) == "stopped");
  CHECK(to_string(end_reason::failed) == "failed");
}

TEST_CASE("run_report: JSON and text carry the run", "[facade]") {
  run_report r;
  r.run_id = 4;
  r.trials = 12;
  r.new_trials = 5;
  r.resumed = true;
  r.reason = end_reason::stopped;
  r.task_key = "bowl";
  r.strategy = "bo";
  r.seed = 9;
  trial_info best;
  best.config = {1, 2};
  best.config_json = R"({"x":2,"y":3})";
  best.state = status::ok;
  best.time_ms = 0.25;
  r.best = best;
  r.device_busy = {{"cpu0", 0.5}};
  r.trace = {{0.1, 3, 0.5}, {0.2, 7, 0.25}};
  auto j = r.to_json();
  CHECK(j["run_id"] == 4);
  CHECK(j["trials"] == 12);
  CHECK(j["new_trials"] == 5);
  CHECK(j["resumed"] == true);
  CHECK(j["reason"] == "stopped");
  CHECK(j["task"] == "bowl");
  CHECK(j["seed"] == 9);
  CHECK(j["best"]["config"]["y"] == 3);
  CHECK(j["best"]["time_ms"] == 0.25);
  CHECK(j["busy"]["devices"]["cpu0"] == 0.5);
  CHECK(j["trace"].size() == 2);
  CHECK_FALSE(j.contains("throughput"));
  auto text = r.to_text();
  CHECK_THAT(text, Catch::Matchers::Contains("run 4 (resumed): 12 trials (5 new)"));
  CHECK_THAT(text, Catch::Matchers::Contains("ended by stopped"));
  CHECK_THAT(text, Catch::Matchers::Contains(R"(best 0.25 ms: {"x":2,"y":3})"));
  CHECK_THAT(text, Catch::Matchers::Contains("cpu0 50.0%"));
  CHECK(j["db_migrated_from"].is_null());
  CHECK_THAT(text, !Catch::Matchers::Contains("migrated"));
  r.db_migrated_from = 1;
  CHECK(r.to_json()["db_migrated_from"] == 1);
  CHECK_THAT(r.to_text(), Catch::Matchers::Contains("results database: migrated from schema version 1 to 3"));

  r.best.reset();
  CHECK(r.to_json()["best"]["time_ms"].is_null());
  CHECK_THAT(r.to_text(), Catch::Matchers::Contains("best: none"));
}

TEST_CASE("trial_info: JSON writes a failed trial's time as null", "[facade]") {
  trial_info t;
  t.config_json = R"({"x":1})";
  t.state = status::compile_error;
  t.time_ms = std::nan("");
  t.message = "error: expected ';'";
  auto j = t.to_json();
  CHECK(j["status"] == "compile_error");
  CHECK(j["time_ms"].is_null());
  CHECK(j["message"] == "error: expected ';'");
  CHECK(j["config"]["x"] == 1);
}

TEST_CASE("version: MAJOR.MINOR.PATCH", "[facade]") {
  auto v = std::string(version());
  CHECK(std::count(v.begin(), v.end(), '.') == 2);
}

TEST_CASE("vendor comparison: ratios to each vendor and to the best available one", "[facade]") {
  std::vector<vendor_figure> figures{{"onednn", "plain", 100.0, "brg:avx512_core", ""},
                                     {"openblas", "default", 0.0, "", "OpenBLAS: not built in"},
                                     {"openblas", "SkylakeX", 160.0, "core SkylakeX", ""}};
  nlohmann::json best;
  auto list = detail::vendor_json(figures, 80.0, best);
  REQUIRE(list.size() == 3);
  CHECK(list[0]["ratio"] == 0.8);
  CHECK(list[0]["detail"] == "brg:avx512_core");
  CHECK(list[1]["available"] == false);
  CHECK(list[1]["note"] == "OpenBLAS: not built in");
  CHECK_FALSE(list[1].contains("ratio"));
  CHECK(best["library"] == "openblas");
  CHECK(best["variant"] == "SkylakeX");
  CHECK(best["ratio"] == 0.5);

  run_report r;
  trial_info t;
  t.state = status::ok;
  t.time_ms = 1.0;
  t.config_json = "{}";
  r.best = t;
  r.throughput = {{"task", "matmul:8x8x8"}, {"flops", 1024.0}, {"gflops", 80.0},
                  {"threads", 2},           {"vendors", list}, {"best_vendor", best}};
  auto text = r.to_text();
  CHECK_THAT(text, Catch::Matchers::Contains("onednn (plain): 100.0 GFLOP/s on 2 thread(s) [brg:avx512_core]; best "
                                             "found = 0.80x"));
  CHECK_THAT(text, Catch::Matchers::Contains("openblas (default): unavailable: OpenBLAS: not built in"));
  CHECK_THAT(text, Catch::Matchers::Contains("best found = 0.50x the best vendor kernel, openblas (SkylakeX)"));
  CHECK(r.to_json()["throughput"]["best_vendor"]["ratio"] == 0.5);
}

TEST_CASE("vendor comparison: with no vendor available the best is null and the text says so", "[facade]") {
  std::vector<vendor_figure> figures{{"onednn", "own layouts", 0.0, "", "oneDNN: not built in"},
                                     {"openblas", "default", 0.0, "", "no BLAS equivalent of a convolution"}};
  nlohmann::json best = "unset";
  auto list = detail::vendor_json(figures, 50.0, best);
  CHECK(best.is_null());
  CHECK(list[1]["note"] == "no BLAS equivalent of a convolution");
  run_report r;
  r.throughput = {{"task", "conv2d:1x3x9x9:8x3x3:s1:p0"},
                  {"flops", 1.0},
                  {"gflops", 50.0},
                  {"threads", 1},
                  {"vendors", list},
                  {"best_vendor", best}};
  auto text = r.to_text();
  CHECK_THAT(text, Catch::Matchers::Contains("onednn (own layouts): unavailable: oneDNN: not built in"));
  CHECK_THAT(text, Catch::Matchers::Contains("best vendor: none available"));
  CHECK(r.to_json()["throughput"]["best_vendor"].is_null());
}
