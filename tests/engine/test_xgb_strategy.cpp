// `xgb` (engine/src/xgb_strategy.cpp) beyond the contract every strategy
// keeps (test_strategies.cpp): its plan follows the model, a seed reproduces
// a run under both objectives, bad hyperparameters are refused, and a build
// without XGBoost says what to install. Its search on a measured space
// against random search is in tests/kernels/test_replay_search.cpp.
#include <catch2/catch.hpp>

#include "../../engine/src/xgb_model.hpp"
#include "skip.hpp"
#include "tune/engine/strategy.hpp"

using namespace tune;

namespace {

// x, y in 0..31, z one of four: 4096 configurations.
search_space_ptr xgb_grid() {
  std::vector<double> range;
  for (int i = 0; i < 32; ++i) range.push_back(i);
  return std::make_shared<search_space>(std::vector<parameter_ptr>{
      make_discrete_parameter("x", range), make_discrete_parameter("y", range),
      make_categorical_parameter("z", {parameter_value(std::string("a")), parameter_value(std::string("b")),
                                       parameter_value(std::string("c")), parameter_value(std::string("d"))})});
}

// Fast (1 ms) where x < 16, slow (100 ms) elsewhere; y = 31 fails to compile.
trial_result halves(const configuration& c) {
  trial_result r;
  r.config = c;
  if (c[1] == 31) {
    r.state = status::compile_error;
    return r;
  }
  r.state = status::ok;
  r.time_ms = c[0] < 16 ? 1.0 + 0.01 * static_cast<double>(c[1]) : 100.0;
  return r;
}

std::vector<configuration> run(std::map<std::string, double> hyper, std::uint64_t seed, std::size_t budget) {
  strategy_options o;
  o.seed = seed;
  o.hyper = std::move(hyper);
  auto s = make_strategy("xgb", xgb_grid(), o);
  std::vector<configuration> proposed;
  while (proposed.size() < budget) {
    auto batch = s->propose(4);  // the plans start at multiples of 4
    if (batch.empty()) break;
    for (auto& c : batch) proposed.push_back(c), s->observe(halves(c));
  }
  return proposed;
}

}  // namespace

TEST_CASE("xgb's plan holds the configurations its model ranks fast", "[engine][strategy][xgb]") {
  if (!tune::detail::xgb_available()) SKIP_TEST("built without XGBoost (libxgboost-dev)");
  for (double rank : {1.0, 0.0}) {
    INFO("rank = " << rank);
    strategy_options o;
    o.seed = 5;
    o.hyper = {{"plan_size", 32}, {"rank", rank}};
    auto s = make_strategy("xgb", xgb_grid(), o);
    // The first 32 are random: about half of them fast.
    auto first = s->propose(32);
    REQUIRE(first.size() == 32);
    for (auto& c : first) s->observe(halves(c));
    // Then the plan, less its random tail of floor(0.05 * 32) = 1: all fast,
    // none of them measured before.
    auto planned = s->propose(31);
    REQUIRE(planned.size() == 31);
    std::size_t fast = 0;
    for (auto& c : planned) {
      fast += c[0] < 16 ? 1 : 0;
      CHECK(std::find(first.begin(), first.end(), c) == first.end());
    }
    CHECK(fast == 31);
  }
}

TEST_CASE("xgb with epsilon 1 proposes at random, with epsilon 0 from the plan alone", "[engine][strategy][xgb]") {
  if (!tune::detail::xgb_available()) SKIP_TEST("built without XGBoost (libxgboost-dev)");
  auto fast_share = [](double epsilon) {
    auto proposed = run({{"plan_size", 32}, {"epsilon", epsilon}}, 9, 96);
    REQUIRE(proposed.size() == 96);
    std::size_t fast = 0;
    for (std::size_t i = 32; i < 96; ++i) fast += proposed[i][0] < 16 ? 1 : 0;
    return static_cast<double>(fast) / 64.0;
  };
  CHECK(fast_share(0.0) == 1.0);
  double random = fast_share(1.0);
  CHECK(random > 0.25);
  CHECK(random < 0.75);
}

TEST_CASE("xgb is reproducible for a seed under both objectives", "[engine][strategy][xgb]") {
  if (!tune::detail::xgb_available()) SKIP_TEST("built without XGBoost (libxgboost-dev)");
  for (double rank : {1.0, 0.0}) {
    INFO("rank = " << rank);
    std::map<std::string, double> hyper = {{"plan_size", 20}, {"rank", rank}};
    auto a = run(hyper, 3, 120), b = run(hyper, 3, 120), c = run(hyper, 4, 120);
    CHECK(a == b);
    CHECK(a != c);
  }
  // The two objectives are different models: after the first plan the runs part.
  CHECK(run({{"plan_size", 20}, {"rank", 1}}, 3, 120) != run({{"plan_size", 20}, {"rank", 0}}, 3, 120));
}

TEST_CASE("xgb refuses bad hyperparameters naming the field and what it takes", "[engine][strategy][xgb]") {
  auto refused = [](const std::string& name, double value) {
    strategy_options o;
    o.hyper = {{name, value}};
    try {
      make_strategy("xgb", xgb_grid(), o);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK_THAT(refused("rank", 0.5),
             Catch::Contains("'rank'") && Catch::Contains("1 (pairwise ranking") && Catch::Contains("0 (regression"));
  CHECK_THAT(refused("plan_size", 0), Catch::Contains("'plan_size'") && Catch::Contains("whole number >= 1"));
  CHECK_THAT(refused("plan_size", 2.5), Catch::Contains("'plan_size'"));
  CHECK_THAT(refused("epsilon", 1.5), Catch::Contains("'epsilon'") && Catch::Contains("must lie in [0"));
  CHECK_THAT(refused("eta", 0), Catch::Contains("'eta'") && Catch::Contains("must lie in"));
  CHECK_THAT(refused("max_depth", 31), Catch::Contains("'max_depth'") && Catch::Contains("[1, 30]"));
  CHECK_THAT(refused("sa_points", 0), Catch::Contains("'sa_points'"));
  CHECK_THAT(refused("stopping_rounds", -1), Catch::Contains("'stopping_rounds'"));
  CHECK(refused("sa_steps", 0) == "accepted");  // no annealing: the walkers' first draws only
}

TEST_CASE("xgb without XGBoost takes its hyperparameters but refuses to propose", "[engine][strategy][xgb]") {
  if (tune::detail::xgb_available()) SKIP_TEST("this build has XGBoost");
  strategy_options o;
  o.hyper = {{"plan_size", 8}};
  auto s = make_strategy("xgb", xgb_grid(), o);
  CHECK_THROWS_WITH(s->propose(1),
                    Catch::Contains("'xgb'") && Catch::Contains("libxgboost-dev") && Catch::Contains("build again"));
}
