// The facade's small pieces: hyperparameter parsing, strategy checks, end
// reasons, and the report as JSON and text.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

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
    CHECK_THROWS_WITH(parse_hyper({bad}), Catch::Matchers::Contains("--hyper " + bad));
  }
  CHECK_THROWS_WITH(parse_hyper({"rho=8", "rho=9"}), Catch::Matchers::Contains("twice"));
  CHECK_THROWS_AS(parse_hyper({"rho"}), input_error);
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
