// Behaviour every strategy of make_strategy must show: finds the optimum of a
// small known objective, is deterministic for a seed, takes results out of
// order and failures, never proposes an invalid or seen configuration, stops
// when the space is exhausted, rejects unknown hyperparameters.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "tune/engine/strategy.hpp"

using namespace tune;

namespace {

// x, y in 0..31, z one of four: 4096 configurations.
search_space_ptr grid_space(bool constrained) {
  std::vector<double> range;
  for (int i = 0; i < 32; ++i) range.push_back(i);
  auto space = std::make_shared<search_space>(std::vector<parameter_ptr>{
      make_discrete_parameter("x", range), make_discrete_parameter("y", range),
      make_categorical_parameter("z", {parameter_value(std::string("a")), parameter_value(std::string("b")),
                                       parameter_value(std::string("c")), parameter_value(std::string("d"))})});
  if (constrained) space->add_constraints({"x + y <= 40"});
  return space;
}

// Smooth with one optimum at x = 20, y = 7, z = c; x % 7 == 3 fails to run.
trial_result evaluate(const configuration& c) {
  trial_result r;
  r.config = c;
  if (c[0] % 7 == 3) {
    r.state = status::runtime_error;
    return r;
  }
  double x = static_cast<double>(c[0]), y = static_cast<double>(c[1]);
  r.state = status::ok;
  r.time_ms = 1.0 + (x - 20) * (x - 20) + (y - 7) * (y - 7) + (c[2] == 2 ? 0.0 : 30.0);
  return r;
}

struct run_log {
  std::vector<configuration> proposed;
  double best = std::numeric_limits<double>::infinity();
  bool exhausted = false;
};

strategy_options small_options(const std::string& name, std::uint64_t seed) {
  strategy_options o;
  o.seed = seed;
  if (name == "nose") o.hyper = {{"population", 20}};
  if (name == "ga" || name == "nsga2") o.hyper = {{"population", 12}};
  return o;
}

// Asks in batches of 4 and returns each batch's results in reverse order, so
// results arrive out of order and interleaved with later proposals.
run_log drive(const std::string& name, search_space_ptr space, std::size_t budget, std::uint64_t seed,
              const strategy_options* options = nullptr) {
  auto s = make_strategy(name, space, options ? *options : small_options(name, seed));
  run_log log;
  std::vector<configuration> pending;
  while (log.proposed.size() < budget) {
    auto batch = s->propose(std::min<std::size_t>(4, budget - log.proposed.size()));
    if (batch.empty() && pending.empty()) {
      log.exhausted = true;
      break;
    }
    for (auto& c : batch) log.proposed.push_back(c);
    pending.insert(pending.end(), batch.begin(), batch.end());
    // Keep two results in flight across calls.
    while (pending.size() > 2 || (batch.empty() && !pending.empty())) {
      auto r = evaluate(pending.back());
      pending.pop_back();
      if (r.ok()) log.best = std::min(log.best, r.time_ms);
      s->observe(r);
    }
  }
  return log;
}

const std::vector<std::string> evolving = {"ga", "opevo", "nose", "nsga2", "opevo+knn"};

}  // namespace

TEST_CASE("strategy names are the documented six", "[engine][strategy]") {
  auto names = strategy_names();
  CHECK(names == std::vector<std::string>{"random", "ga", "opevo", "nose", "nsga2", "opevo+knn"});
  CHECK_THROWS_WITH(make_strategy("annealing", grid_space(false), {}),
                    Catch::Contains("annealing") && Catch::Contains("opevo+knn"));
}

TEST_CASE("evolutionary strategies find the optimum of a smooth objective", "[engine][strategy]") {
  for (bool constrained : {false, true}) {
    for (auto& name : evolving) {
      INFO(name << (constrained ? " constrained" : ""));
      auto space = grid_space(constrained);
      auto log = drive(name, space, 700, 5);
      CHECK(log.best == 1.0);
    }
  }
}

TEST_CASE("random finds the optimum by exhausting a small space", "[engine][strategy]") {
  auto space = grid_space(false);
  auto log = drive("random", space, 5000, 1);
  CHECK(log.exhausted);
  CHECK(log.proposed.size() == 4096);
  CHECK(log.best == 1.0);
}

TEST_CASE("strategies never propose invalid or seen configurations", "[engine][strategy]") {
  for (auto& name : strategy_names()) {
    INFO(name);
    auto space = grid_space(true);
    auto log = drive(name, space, 400, 9);
    configuration_set unique(log.proposed.begin(), log.proposed.end());
    CHECK(unique.size() == log.proposed.size());
    CHECK(log.proposed.size() == 400);
    CHECK(std::all_of(log.proposed.begin(), log.proposed.end(), [&](auto& c) { return space->is_valid(c); }));
  }
}

TEST_CASE("strategies are deterministic for a seed", "[engine][strategy]") {
  for (auto& name : strategy_names()) {
    INFO(name);
    auto a = drive(name, grid_space(true), 300, 42);
    auto b = drive(name, grid_space(true), 300, 42);
    auto c = drive(name, grid_space(true), 300, 43);
    CHECK(a.proposed == b.proposed);
    CHECK(a.proposed != c.proposed);
  }
}

TEST_CASE("strategies stop cleanly when the valid space is exhausted", "[engine][strategy]") {
  for (auto& name : strategy_names()) {
    INFO(name);
    // 6 x 4 = 24 configurations, 15 of them valid.
    auto space = std::make_shared<search_space>(std::vector<parameter_ptr>{
        make_discrete_parameter("a", {1, 2, 3, 4, 5, 6}), make_discrete_parameter("b", {1, 2, 3, 4})});
    space->add_constraints({"a * b <= 8"});
    strategy_options o;
    o.seed = 3;
    if (name == "opevo" || name == "opevo+knn") o.hyper = {{"lambda", 2}};
    if (name != "random" && name != "opevo" && name != "opevo+knn") o.hyper = {{"population", 2}};
    auto s = make_strategy(name, space, o);
    configuration_set seen;
    for (int round = 0; round < 100; ++round) {
      auto batch = s->propose(4);
      if (batch.empty()) break;
      for (auto& c : batch) {
        CHECK(space->is_valid(c));
        CHECK(seen.insert(c).second);
        s->observe(evaluate(c));
      }
    }
    CHECK(seen.size() == *space->count_valid());
    CHECK(s->propose(4).empty());
  }
}

TEST_CASE("results observed on resume are never proposed again", "[engine][strategy]") {
  for (auto& name : strategy_names()) {
    INFO(name);
    auto space = std::make_shared<search_space>(std::vector<parameter_ptr>{
        make_discrete_parameter("a", {1, 2, 3, 4, 5, 6}), make_discrete_parameter("b", {1, 2, 3, 4})});
    auto s = make_strategy(name, space, {});
    configuration_set recorded;
    for (std::uint64_t flat = 0; flat < 20; ++flat) {
      auto c = space->unflatten(flat);
      recorded.insert(c);
      s->observe(evaluate(c));
    }
    auto rest = s->propose(10);
    CHECK(rest.size() == 4);
    for (auto& c : rest) CHECK_FALSE(recorded.count(c));
  }
}

TEST_CASE("only failures keep a strategy proposing random configurations", "[engine][strategy]") {
  for (auto& name : strategy_names()) {
    INFO(name);
    auto s = make_strategy(name, grid_space(false), small_options(name, 1));
    std::size_t proposed = 0;
    for (int round = 0; round < 60; ++round) {
      auto batch = s->propose(5);
      proposed += batch.size();
      for (auto& c : batch) {
        trial_result r;
        r.config = c;
        r.state = status::compile_error;
        s->observe(r);
      }
    }
    CHECK(proposed == 300);
  }
}

TEST_CASE("unknown or bad hyperparameters are rejected", "[engine][strategy]") {
  for (auto& name : strategy_names()) {
    INFO(name);
    strategy_options o;
    o.hyper = {{"bogus", 1}};
    CHECK_THROWS_WITH(make_strategy(name, grid_space(false), o),
                      Catch::Contains("'" + name + "'") && Catch::Contains("'bogus'") && Catch::Contains("accepted"));
  }
  strategy_options o;
  o.hyper = {{"q", 1.5}};
  CHECK_THROWS_WITH(make_strategy("opevo", grid_space(false), o), Catch::Contains("'q'"));
  o.hyper = {{"population", 0}};
  CHECK_THROWS_AS(make_strategy("nose", grid_space(false), o), std::invalid_argument);
  o.hyper = {{"lambda", 4}, {"rho", 4}, {"q", 0.3}};
  CHECK_NOTHROW(make_strategy("opevo", grid_space(false), o));
}
