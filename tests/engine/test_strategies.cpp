// Behaviour every strategy of make_strategy must show: finds the optimum of a
// small known objective, is deterministic for a seed, takes results out of
// order and failures, never proposes an invalid or seen configuration, stops
// when the space is exhausted, rejects unknown hyperparameters; and
// docs/strategies.md states the defaults the code has. `xgb` is left out of
// what proposes in a build without XGBoost (tests/engine/test_xgb_strategy.cpp
// checks what it says there).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "../../engine/src/xgb_model.hpp"
#include "tune/engine/program_edit.hpp"
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
// A configuration of two parameters (no z) is timed as if z were c.
trial_result evaluate(const configuration& c) {
  trial_result r;
  r.config = c;
  if (c[0] % 7 == 3) {
    r.state = status::runtime_error;
    return r;
  }
  double x = static_cast<double>(c[0]), y = static_cast<double>(c[1]);
  r.state = status::ok;
  r.time_ms = 1.0 + (x - 20) * (x - 20) + (y - 7) * (y - 7) + (c.size() < 3 || c[2] == 2 ? 0.0 : 30.0);
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
  if (name == "xgb") o.hyper = {{"plan_size", 16}};  // its model after 16 results, not 64
  return o;
}

// Whether the strategy can propose in this build: `xgb` needs XGBoost.
bool proposes_here(const std::string& name) { return name != "xgb" || tune::detail::xgb_available(); }

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

const std::vector<std::string> guided = {"ga", "opevo", "nose", "nsga2", "opevo+knn", "bo", "xgb"};

}  // namespace

TEST_CASE("strategy names are the documented eight", "[engine][strategy]") {
  auto names = strategy_names();
  CHECK(names == std::vector<std::string>{"random", "ga", "opevo", "nose", "nsga2", "opevo+knn", "bo", "xgb"});
  CHECK_THROWS_WITH(make_strategy("annealing", grid_space(false), {}),
                    Catch::Contains("annealing") && Catch::Contains("opevo+knn"));
}

TEST_CASE("guided strategies find the optimum of a smooth objective", "[engine][strategy]") {
  for (bool constrained : {false, true}) {
    for (auto& name : guided) {
      if (!proposes_here(name)) continue;
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
    if (!proposes_here(name)) continue;
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
    if (!proposes_here(name)) continue;
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
    if (!proposes_here(name)) continue;
    INFO(name);
    // 6 x 4 = 24 configurations, 15 of them valid.
    auto space = std::make_shared<search_space>(std::vector<parameter_ptr>{
        make_discrete_parameter("a", {1, 2, 3, 4, 5, 6}), make_discrete_parameter("b", {1, 2, 3, 4})});
    space->add_constraints({"a * b <= 8"});
    strategy_options o;
    o.seed = 3;
    if (name == "opevo" || name == "opevo+knn") o.hyper = {{"lambda", 2}};
    if (name == "ga" || name == "nose" || name == "nsga2") o.hyper = {{"population", 2}};
    if (name == "bo") o.hyper = {{"initial", 2}};
    if (name == "xgb") o.hyper = {{"plan_size", 4}};
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
    if (!proposes_here(name)) continue;
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

TEST_CASE("start configurations are proposed first, once, and then the strategy's own", "[engine][strategy]") {
  const configuration optimum = {20, 7, 2}, other = {3, 3, 0};
  for (auto& name : strategy_names()) {
    if (!proposes_here(name)) continue;
    INFO(name);
    auto space = grid_space(true);
    auto options = small_options(name, 4);
    options.start = {optimum, other, optimum};  // a repeat is measured once
    auto s = make_strategy(name, space, options);
    CHECK(s->name() == name);
    CHECK(s->propose(1) == std::vector<configuration>{optimum});
    auto next = s->propose(3);
    REQUIRE(next.size() == 3);
    CHECK(next[0] == other);
    CHECK(std::count(next.begin(), next.end(), optimum) == 0);

    auto log = drive(name, space, 300, 4, &options);
    REQUIRE(log.proposed.size() == 300);
    CHECK(log.proposed[0] == optimum);
    CHECK(log.proposed[1] == other);
    CHECK(configuration_set(log.proposed.begin(), log.proposed.end()).size() == 300);
    CHECK(std::all_of(log.proposed.begin(), log.proposed.end(), [&](auto& c) { return space->is_valid(c); }));

    // Observed before it was proposed (a resumed run recorded it): not proposed.
    auto resumed = make_strategy(name, space, options);
    resumed->observe(evaluate(optimum));
    auto first = resumed->propose(2);
    REQUIRE(first.size() == 2);
    CHECK(first[0] == other);
    CHECK(first[1] != optimum);
  }
  strategy_options bad;
  bad.start = {{30, 30, 0}};  // x + y <= 40 excludes it
  CHECK_THROWS_WITH(make_strategy("random", grid_space(true), bad), Catch::Contains("start"));
  bad.start = {{1, 2}};
  CHECK_THROWS_WITH(make_strategy("opevo+knn", grid_space(true), bad), Catch::Contains("start"));
}

TEST_CASE("only failures keep a strategy proposing random configurations", "[engine][strategy]") {
  for (auto& name : strategy_names()) {
    if (!proposes_here(name)) continue;
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

namespace {

// opevo+knn after eight good results around (2, 2, a) and only worse ones
// afterwards: how many of the next proposals lie outside that basin
// (|x - 2| > 4 or |y - 2| > 4), counted in the `before` proposals made while
// fewer than `stall` results failed to improve and the `after` ones made later.
struct basin_counts {
  std::size_t before = 0, outside_before = 0, after = 0, outside_after = 0;
};

basin_counts leave_basin(std::map<std::string, double> hyper, std::uint64_t seed, std::size_t proposals) {
  strategy_options o;
  o.seed = seed;
  o.hyper = std::move(hyper);
  o.hyper.insert({"initial", 8});
  auto stall = static_cast<std::size_t>(o.hyper.count("stall") ? o.hyper.at("stall") : 40);
  auto space = grid_space(false);
  auto s = make_strategy("opevo+knn", space, o);
  for (std::uint64_t i = 0; i < 8; ++i) {
    trial_result r;
    r.config = {1 + i % 3, 1 + i / 3, 0};
    r.state = status::ok;
    r.time_ms = 1.0 + 0.1 * static_cast<double>(i);
    s->observe(r);
  }
  basin_counts counts;
  // The last improvement was the first result; the stall starts after it.
  std::size_t without_improvement = 7;
  for (std::size_t i = 0; i < proposals; ++i) {
    auto batch = s->propose(1);
    REQUIRE(batch.size() == 1);
    auto& c = batch[0];
    bool outside = (c[0] > 6 || c[1] > 6);
    if (without_improvement < stall) {
      ++counts.before;
      counts.outside_before += outside ? 1 : 0;
    } else {
      ++counts.after;
      counts.outside_after += outside ? 1 : 0;
    }
    trial_result r;
    r.config = c;
    r.state = status::ok;
    r.time_ms = 100.0;
    s->observe(r);
    ++without_improvement;
  }
  return counts;
}

}  // namespace

TEST_CASE("opevo+knn explores outside a converged basin after a stall", "[engine][strategy]") {
  for (std::uint64_t seed : {1, 2, 3}) {
    INFO("seed " << seed);
    // Before the stall its children stay near the parents; after 30 results
    // without improvement every proposal is uniformly random, and 92% of the
    // space lies outside the basin.
    auto stalled = leave_basin({{"stall", 30}, {"explore", 1}, {"epsilon", 0}}, seed, 130);
    REQUIRE(stalled.before == 23);
    CHECK(stalled.outside_before <= 5);
    CHECK(stalled.outside_after >= 75);
    // With explore = 0 (or no stall yet) it keeps to the basin.
    auto kept = leave_basin({{"stall", 30}, {"explore", 0}, {"epsilon", 0}}, seed, 130);
    CHECK(kept.outside_after <= 20);
    // epsilon draws a share at random from the start.
    auto eps = leave_basin({{"stall", 1000}, {"epsilon", 0.5}}, seed, 100);
    CHECK(eps.outside_before >= 30);
    CHECK(eps.outside_before <= 70);
    // Until `initial` results arrived every proposal is random.
    auto wide = leave_basin({{"initial", 24}, {"stall", 1000}, {"epsilon", 0}}, seed, 16);
    CHECK(wide.outside_before >= 10);
  }
}

TEST_CASE("opevo+knn follows a new best found while exploring", "[engine][strategy]") {
  for (std::uint64_t seed : {1, 2, 3, 4, 5}) {
    INFO("seed " << seed);
    strategy_options o;
    o.seed = seed;
    o.hyper = {{"initial", 8}, {"stall", 10}, {"explore", 1}, {"epsilon", 0}};
    auto s = make_strategy("opevo+knn", grid_space(false), o);
    auto tell = [&](configuration c, double time_ms) {
      trial_result r;
      r.config = std::move(c);
      r.state = status::ok;
      r.time_ms = time_ms;
      s->observe(r);
    };
    for (std::uint64_t i = 0; i < 8; ++i) tell({1 + i % 3, 1 + i / 3, 0}, 1.0 + 0.1 * static_cast<double>(i));
    for (int i = 0; i < 20; ++i) tell(s->propose(1).at(0), 100.0);
    // Stalled: exploring at random. A new best far away ends the stall, and
    // the proposals gather around it and the old basin (children mix both).
    tell({25, 25, 1}, 0.5);
    std::size_t near_new = 0, near_old = 0;
    for (int i = 0; i < 20; ++i) {
      auto c = s->propose(1).at(0);
      auto near = [&](std::uint64_t x, std::uint64_t y) {
        return c[0] + 4 >= x && c[0] <= x + 4 && c[1] + 4 >= y && c[1] <= y + 4;
      };
      near_new += near(25, 25) ? 1 : 0;
      near_old += near(2, 2) ? 1 : 0;
      tell(c, 100.0);
    }
    // Uniform draws would put about 1.6 of 20 near each.
    CHECK(near_new >= 3);
    CHECK(near_new + near_old >= 8);
  }
}

TEST_CASE("opevo+knn with frequent stalls stays valid, fresh and deterministic", "[engine][strategy]") {
  strategy_options o;
  o.seed = 11;
  o.hyper = {{"stall", 3}, {"explore", 0.7}, {"epsilon", 0.2}, {"local", 0.5}, {"oversample", 3}};
  auto space = grid_space(true);
  auto a = drive("opevo+knn", space, 600, 11, &o);
  auto b = drive("opevo+knn", grid_space(true), 600, 11, &o);
  o.seed = 12;
  auto c = drive("opevo+knn", grid_space(true), 600, 12, &o);
  configuration_set unique(a.proposed.begin(), a.proposed.end());
  CHECK(unique.size() == 600);
  CHECK(std::all_of(a.proposed.begin(), a.proposed.end(), [&](auto& x) { return space->is_valid(x); }));
  CHECK(a.proposed == b.proposed);
  CHECK(a.proposed != c.proposed);
  CHECK(a.best == 1.0);
}

TEST_CASE("opevo+knn checks its exploration hyperparameters", "[engine][strategy]") {
  for (auto [name, value] : std::vector<std::pair<std::string, double>>{{"local", 1.5},
                                                                        {"local", -0.1},
                                                                        {"epsilon", 2},
                                                                        {"explore", -1},
                                                                        {"stall", 0},
                                                                        {"stall", 2.5},
                                                                        {"oversample", 0.5},
                                                                        {"initial", -1},
                                                                        {"initial", 3.5}}) {
    INFO(name << " = " << value);
    strategy_options o;
    o.hyper = {{name, value}};
    CHECK_THROWS_WITH(make_strategy("opevo+knn", grid_space(false), o), Catch::Contains("'" + name + "'"));
  }
  strategy_options o;
  o.hyper = {{"local", 0}, {"epsilon", 0}, {"explore", 1}, {"stall", 1}, {"oversample", 1}, {"initial", 0}};
  CHECK_NOTHROW(make_strategy("opevo+knn", grid_space(false), o));
}

TEST_CASE("the default strategy is bo, one of the named ones", "[engine][strategy]") {
  auto names = strategy_names();
  CHECK(default_strategy_name() == "bo");  // as README and strategy.hpp document it
  CHECK(std::find(names.begin(), names.end(), default_strategy_name()) != names.end());
  CHECK(make_strategy(default_strategy_name(), grid_space(false), {})->name() == default_strategy_name());
}

namespace {
trial_result result_of(const configuration& config, status state, double time_ms = std::nan("")) {
  trial_result r;
  r.config = config;
  r.state = state;
  r.time_ms = time_ms;
  return r;
}
}  // namespace

TEST_CASE("bo proposes the pool member of highest expected improvement", "[engine][strategy]") {
  // One parameter, 0..40; after a few results the model's best guess must lie
  // between the two fastest points of a parabola, not at random.
  std::vector<double> range;
  for (int i = 0; i <= 40; ++i) range.push_back(i);
  auto space = std::make_shared<search_space>(std::vector<parameter_ptr>{make_discrete_parameter("x", range)});
  strategy_options o;
  o.seed = 1;
  o.hyper = {{"initial", 4}};
  auto s = make_strategy("bo", space, o);
  auto time_of = [](std::uint64_t x) {
    return 1.0 + (static_cast<double>(x) - 23.0) * (static_cast<double>(x) - 23.0);
  };
  for (std::uint64_t x : {0, 10, 30, 40}) s->observe(result_of({x}, status::ok, time_of(x)));
  std::uint64_t best = 0;
  double best_time = 1e9;
  for (int step = 0; step < 8; ++step) {
    auto next = s->propose(1);
    REQUIRE(next.size() == 1);
    auto r = result_of(next[0], status::ok, time_of(next[0][0]));
    if (r.time_ms < best_time) best_time = r.time_ms, best = next[0][0];
    s->observe(r);
  }
  CHECK(best == 23);
}

TEST_CASE("bo models failures as slow and checks its hyperparameters", "[engine][strategy]") {
  auto space = grid_space(false);
  strategy_options o;
  o.seed = 2;
  o.hyper = {{"initial", 4}};
  auto s = make_strategy("bo", space, o);
  // Failures before the first ok result wait for it; afterwards every
  // proposal is a fresh pool member.
  for (std::uint64_t x : {3, 10, 17}) s->observe(result_of({x, 0, 0}, status::runtime_error));
  auto ok = result_of({20, 7, 2}, status::ok, 1.0);
  s->observe(ok);
  auto next = s->propose(3);
  CHECK(next.size() == 3);
  for (auto& c : next) CHECK(c != ok.config);

  for (auto& [name, value] : std::vector<std::pair<std::string, double>>{{"length_scale", 0},
                                                                         {"jitter", 0},
                                                                         {"xi", -1},
                                                                         {"pool", 0},
                                                                         {"initial", 0.5},
                                                                         {"alignment", -1},
                                                                         {"failure_noise", -1},
                                                                         {"stall", 2.5},
                                                                         {"design_tries", 0},
                                                                         {"initial_min", 0},
                                                                         {"switch_correlation", 1.5},
                                                                         {"model_limit", 0.5},
                                                                         {"prior_top", -1},
                                                                         {"prior_slope", -1},
                                                                         {"prior_strength", 0},
                                                                         {"prior_share", 1.5}}) {
    INFO(name);
    strategy_options bad;
    bad.hyper = {{name, value}};
    CHECK_THROWS_WITH(make_strategy("bo", space, bad), Catch::Contains("'" + name + "'"));
  }
}

TEST_CASE("bo finds an optimum that lies between stripes of failures", "[engine][strategy]") {
  // evaluate() fails on x = 17 and x = 24, either side of the optimum at
  // x = 20: a failure's stand-in time is a guess, and a model forced through
  // it would keep predicting slow times around the optimum.
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    for (double length_scale : {0.5, 1.0}) {
      INFO("seed " << seed << ", length_scale " << length_scale);
      strategy_options o;
      o.seed = seed;
      o.hyper = {{"length_scale", length_scale}};
      auto log = drive("bo", grid_space(false), 300, seed, &o);
      CHECK(log.best == 1.0);
    }
  }
}

TEST_CASE("bo draws a pool of the requested size from a large space", "[engine][strategy]") {
  // 32 × 32 × 4 = 4096 configurations, pool of 100: every proposal after the
  // initial ones comes from the pool, and all stay distinct and valid.
  strategy_options o;
  o.seed = 5;
  o.hyper = {{"pool", 100}, {"initial", 5}};
  auto space = grid_space(true);
  auto s = make_strategy("bo", space, o);
  configuration_set seen;
  for (int i = 0; i < 120; ++i) {
    auto next = s->propose(1);
    REQUIRE(next.size() == 1);
    CHECK(space->is_valid(next[0]));
    CHECK(seen.insert(next[0]).second);
    s->observe(evaluate(next[0]));
  }
}

TEST_CASE("bo starts with a space-filling design of the valid configurations", "[engine][strategy]") {
  // Before its first result, bo proposes its design. With `initial` = 32 on
  // the unconstrained grid every stratum is one value of x (and of y): each
  // value comes once, and each of z's four categories eight times. On the
  // constrained grid the design stays valid and distinct.
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    for (bool constrained : {false, true}) {
      INFO("seed " << seed << (constrained ? ", constrained" : ""));
      strategy_options o;
      o.seed = seed;
      o.hyper = {{"initial", 32}};
      auto space = grid_space(constrained);
      auto design = make_strategy("bo", space, o)->propose(32);
      REQUIRE(design.size() == 32);
      std::set<std::uint64_t> xs, ys;
      std::map<std::uint64_t, int> zs;
      configuration_set distinct;
      for (auto& c : design) {
        CHECK(space->is_valid(c));
        distinct.insert(c);
        xs.insert(c[0]);
        ys.insert(c[1]);
        ++zs[c[2]];
      }
      CHECK(distinct.size() == 32);
      if (!constrained) {
        CHECK(xs.size() == 32);
        CHECK(ys.size() == 32);
        CHECK(zs == std::map<std::uint64_t, int>{{0, 8}, {1, 8}, {2, 8}, {3, 8}});
      }
    }
  }
}

TEST_CASE("bo proposes a prior's fastest configurations first", "[engine][strategy]") {
  auto space = grid_space(false);
  strategy_options o;
  o.seed = 3;
  // A prior measured elsewhere: the grid objective, shifted (another device).
  for (std::uint64_t x = 0; x < 32; ++x)
    for (std::uint64_t y = 0; y < 32; y += 3) {
      auto r = evaluate({x, y, 2});
      if (r.ok()) r.time_ms *= 2.0;
      o.prior.push_back(r);
    }
  o.hyper = {{"prior_top", 3}};
  auto s = make_strategy("bo", space, o);
  auto first = s->propose(4);
  REQUIRE(first.size() == 4);
  // The prior has y = 0, 3, 6, …: fastest (20, 6), then (19, 6) and (21, 6)
  // (a tie, kept in the prior's order).
  CHECK(first[0] == configuration{20, 6, 2});
  CHECK(first[1] == configuration{19, 6, 2});
  CHECK(first[2] == configuration{21, 6, 2});
  CHECK(first[3] != first[0]);
  // Without a prior the first proposal is the design's, not the optimum.
  strategy_options none;
  none.seed = 3;
  CHECK(make_strategy("bo", space, none)->propose(1)[0] != configuration{20, 7, 2});
}

TEST_CASE("bo sweeps the best configuration's neighbours after local_after results without a faster time",
          "[engine][strategy]") {
  // Every configuration takes the same time, so nothing is ever faster than
  // the first result: after local_after results the proposals are the
  // one-step neighbours of that first configuration (x and y one value up or
  // down, z any other of its four values), and only those, until they run out.
  auto flat = [](const configuration& c) {
    trial_result r;
    r.config = c;
    r.state = status::ok;
    r.time_ms = 5.0;
    return r;
  };
  auto neighbour_of = [](const configuration& a, const configuration& b) {
    int differing = 0;
    bool step = true;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (a[i] == b[i]) continue;
      ++differing;
      if (i < 2 && (a[i] > b[i] ? a[i] - b[i] : b[i] - a[i]) != 1) step = false;
    }
    return differing == 1 && step;
  };
  for (double local_after : {30.0, 0.0}) {
    INFO("local_after " << local_after);
    strategy_options o;
    o.seed = 3;
    o.hyper = {{"local_after", local_after}, {"stall", 20}};
    auto s = make_strategy("bo", grid_space(false), o);
    std::vector<configuration> measured;
    while (measured.size() < 40) {
      auto c = s->propose(1).at(0);
      measured.push_back(c);
      s->observe(flat(c));
    }
    std::size_t neighbours = 0;
    for (std::size_t i = 30; i < 37; ++i) neighbours += neighbour_of(measured[0], measured[i]);
    if (local_after > 0) {
      // At most seven neighbours (fewer at an edge); they come first.
      std::size_t possible = 0;
      for (std::size_t i = 0; i < 3; ++i) possible += (i < 2 ? (measured[0][i] > 0) + (measured[0][i] < 31) : 3);
      std::size_t taken_before = 0;
      for (std::size_t i = 1; i < 30; ++i) taken_before += neighbour_of(measured[0], measured[i]);
      CHECK(neighbours == std::min<std::size_t>(7, possible - taken_before));
    } else {
      CHECK(neighbours < 7);
    }
  }
}

TEST_CASE("bo gives stall_model_share of the requests made while stalled to the model", "[engine][strategy]") {
  // Every configuration takes the same time: after the first result nothing
  // is faster, so from `stall` results on the run is stalled. With a share of
  // 1 the model keeps every request and the proposals are those of a run
  // without the explorer (stall = 0); with 0 the explorer takes over, and
  // with 0.5 it takes every other request, so half of the stalled proposals
  // are not the model's.
  auto run = [](double stall, double share) {
    strategy_options o;
    o.seed = 5;
    o.hyper = {{"stall", stall}, {"stall_model_share", share}, {"local_after", 0.0}};
    auto s = make_strategy("bo", grid_space(false), o);
    std::vector<configuration> proposed;
    while (proposed.size() < 40) {
      auto c = s->propose(1).at(0);
      proposed.push_back(c);
      trial_result r;
      r.config = c;
      r.state = status::ok;
      r.time_ms = 5.0;
      s->observe(r);
    }
    return proposed;
  };
  auto model = run(0, 0);
  CHECK(run(20, 1.0) == model);
  auto explorer = run(20, 0.0);
  CHECK(std::equal(model.begin(), model.begin() + 20, explorer.begin()));
  std::size_t differ = 0;
  for (std::size_t i = 20; i < 40; ++i) differ += explorer[i] != model[i];
  CHECK(differ > 10);
  // Alternating: the requests at odd positions of the stall go to the model.
  auto half = run(20, 0.5);
  CHECK(std::equal(model.begin(), model.begin() + 20, half.begin()));
  CHECK(half != model);
  CHECK(half != explorer);
}

TEST_CASE("bo with a misleading prior still finds the optimum", "[engine][strategy]") {
  // The prior ranks the grid backwards: its fastest configurations are the
  // slowest here. The fitted slope drops to 0 and half the model's proposals
  // ignore the trend, so bo finds the optimum as without a prior.
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    INFO("seed " << seed);
    strategy_options o;
    o.seed = seed;
    auto space = grid_space(false);
    for (auto& c : *space->enumerate_valid()) {
      auto r = evaluate(c);
      if (r.ok()) r.time_ms = 1000.0 / r.time_ms;
      o.prior.push_back(r);
    }
    auto log = drive("bo", space, 300, seed, &o);
    CHECK(log.best == 1.0);
  }
}

TEST_CASE("bo drops the prior after prior_phase results and proposes from this run's results alone",
          "[engine][strategy]") {
  // The prior says: fast near x = y = 0; here the optimum is at x = 20,
  // y = 7. After prior_phase results the model is rebuilt from this run's
  // own results: it then proposes exactly what bo without a prior proposes
  // when given the same results, and differs from the run that keeps it.
  auto space = grid_space(false);
  auto measure = [](const configuration& c) {
    trial_result r;
    r.config = c;
    r.state = status::ok;  // no failures: their stand-in time depends on what was seen before
    double x = static_cast<double>(c[0]), y = static_cast<double>(c[1]);
    r.time_ms = 1.0 + (x - 20) * (x - 20) + (y - 7) * (y - 7) + (c[2] == 2 ? 0.0 : 30.0);
    return r;
  };
  std::vector<trial_result> prior;
  for (auto& c : *space->enumerate_valid()) {
    auto r = measure(c);
    r.time_ms = 1.0 + static_cast<double>(c[0] * c[0] + c[1] * c[1]);
    prior.push_back(r);
  }
  const std::map<std::string, double> quiet = {{"stall", 0}, {"local_after", 0}, {"prior_share", 1.0}};
  auto with_prior = [&](double phase, std::uint64_t seed) {
    strategy_options o;
    o.seed = seed;
    o.prior = prior;
    o.hyper = quiet;
    o.hyper["prior_phase"] = phase;
    return make_strategy("bo", space, o);
  };
  for (std::uint64_t seed = 5; seed <= 7; ++seed) {
    INFO("seed " << seed);
    auto dropping = with_prior(15, seed), keeping = with_prior(0, seed);
    strategy_options plain;
    plain.seed = seed;
    plain.hyper = quiet;
    auto fresh = make_strategy("bo", space, plain);
    std::set<configuration> prior_configs;
    for (int i = 0; i < 15; ++i) {
      auto c = dropping->propose(1).at(0);
      auto k = keeping->propose(1).at(0);
      CHECK(c == k);                       // the same run until the prior is dropped
      if (i < 2) prior_configs.insert(c);  // the prior's two fastest open the design
      dropping->observe(measure(c));
      keeping->observe(measure(k));
      if (i >= 2) fresh->observe(measure(c));
    }
    CHECK(prior_configs.count(configuration{0, 0, 0}) + prior_configs.count(configuration{0, 0, 1}) == 2);
    auto next = dropping->propose(3);
    CHECK(next == fresh->propose(3));
    CHECK(next != keeping->propose(3));
  }
}

TEST_CASE("every strategy works on a space of 10^21 configurations without enumerating it", "[engine][strategy]") {
  // A factorization of 2^40 into 16 parts times the orders of 12 loops: no
  // strategy may list the space; each proposes valid distinct configurations.
  auto space = std::make_shared<search_space>(std::vector<parameter_ptr>{
      make_factorization_parameter("t", std::int64_t{1} << 40, 16), make_permutation_parameter("p", 12)});
  REQUIRE_FALSE(space->cartesian_size().has_value());
  for (const auto& name : strategy_names()) {
    if (!proposes_here(name)) continue;
    INFO(name);
    strategy_options o = small_options(name, 7);
    if (name == "bo") o.hyper = {{"pool", 2000}};
    auto s = make_strategy(name, space, o);
    std::set<configuration> seen;
    for (int round = 0; round < 6; ++round) {
      auto batch = s->propose(8);
      REQUIRE(batch.size() == 8);
      for (auto& c : batch) {
        CHECK(space->is_valid(c));
        CHECK(seen.insert(c).second);
        trial_result r;
        r.config = c;
        r.state = status::ok;
        // Faster when the first factor is large: something to learn.
        r.time_ms = 1.0 + 1.0 / static_cast<double>(
                                    std::get<std::vector<std::int64_t>>(space->parameters()[0]->value(c[0]))[0]);
        s->observe(r);
      }
    }
  }
}

TEST_CASE("strategy_defaults is the table each strategy reads its defaults from", "[engine][strategy]") {
  CHECK(strategy_defaults("opevo") == std::map<std::string, double>{{"lambda", 8}, {"rho", 8}, {"q", 0.5}});
  CHECK(strategy_defaults("random").empty());
  CHECK_THROWS_WITH(strategy_defaults("annealing"), Catch::Contains("annealing") && Catch::Contains("opevo+knn"));
  for (const auto& name : strategy_names()) {
    if (!proposes_here(name)) continue;
    INFO(name);
    // Every default is accepted as a hyperparameter, and giving each one its
    // default changes nothing: the strategy's defaults are these values.
    strategy_options plain, spelled;
    plain.seed = spelled.seed = 3;
    spelled.hyper = strategy_defaults(name);
    auto a = make_strategy(name, grid_space(true), plain);
    auto b = make_strategy(name, grid_space(true), spelled);
    for (int round = 0; round < 12; ++round) {
      auto batch = a->propose(4);
      REQUIRE(batch == b->propose(4));
      for (auto& c : batch) a->observe(evaluate(c)), b->observe(evaluate(c));
    }
  }
}

namespace {
// A default as docs/strategies.md states it, and where.
struct stated_default {
  std::size_t line;
  std::string strategy;
  std::string name;
  double value;
  bool in_table;  // else in prose
};

std::string strip(std::string s) {
  auto keep = [](char c) { return c != ' ' && c != '`'; };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), keep));
  s.erase(std::find_if(s.rbegin(), s.rend(), keep).base(), s.end());
  return s;
}

std::vector<std::string> cells(const std::string& row) {
  std::vector<std::string> out;
  std::stringstream in(row.substr(1));
  for (std::string cell; std::getline(in, cell, '|');) out.push_back(strip(cell));
  return out;
}

double number(const std::string& text, std::size_t line) {
  INFO("docs/strategies.md line " << line << ": '" << text << "' is not a number");
  std::size_t used = 0;
  double value = std::nan("");
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
  }
  REQUIRE(used == text.size());
  return value;
}

std::map<std::string, double> code_defaults(const std::string& strategy) {
  return strategy == "gevo" ? program_edit_defaults() : strategy_defaults(strategy);
}

// The rows of the table whose header is "strategy | hyperparameter | default",
// and every "`name` = value" in a section whose heading names one strategy
// (in backticks): both are statements of a default.
std::vector<stated_default> stated_defaults(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  auto names = strategy_names();
  names.push_back("gevo");
  const std::regex heading_strategy("`([a-z0-9+]+)`");
  const std::regex assignment("`([a-z_]+)` = ([0-9][0-9.e+-]*[0-9]|[0-9])");
  std::vector<stated_default> out;
  bool in_table = false;
  std::string section;  // the strategy the current section is about, if one
  std::size_t n = 0;
  for (std::string text; std::getline(in, text);) {
    ++n;
    if (text.rfind("#", 0) == 0) {
      section.clear();
      for (auto it = std::sregex_iterator(text.begin(), text.end(), heading_strategy); it != std::sregex_iterator();
           ++it)
        if (std::find(names.begin(), names.end(), (*it)[1].str()) != names.end())
          section = section.empty() ? (*it)[1].str() : "(several)";
      if (section == "(several)") section.clear();
      in_table = false;
      continue;
    }
    if (text.rfind("|", 0) == 0) {
      auto row = cells(text);
      if (row.size() >= 3 && row[0] == "strategy" && row[1] == "hyperparameter" && row[2] == "default") {
        in_table = true;
        continue;
      }
      if (in_table && row.size() >= 3 && row[0].find("---") == std::string::npos)
        out.push_back({n, row[0], row[1], number(row[2], n), true});
      continue;
    }
    in_table = false;
    if (section.empty()) continue;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), assignment); it != std::sregex_iterator(); ++it)
      out.push_back({n, section, (*it)[1].str(), number((*it)[2].str(), n), false});
  }
  return out;
}
}  // namespace

TEST_CASE("docs/strategies.md states the defaults the strategies have", "[engine][strategy]") {
  auto stated = stated_defaults(TUNE_SOURCE_DIR "/docs/strategies.md");
  std::set<std::pair<std::string, std::string>> listed;
  for (const auto& s : stated) {
    INFO("docs/strategies.md line " << s.line << ": " << s.strategy << " " << s.name << " = " << s.value);
    std::map<std::string, double> code;
    REQUIRE_NOTHROW(code = code_defaults(s.strategy));
    REQUIRE(code.count(s.name) == 1);
    CHECK(s.value == code.at(s.name));
    if (s.in_table) listed.insert({s.strategy, s.name});
  }
  // The table lists every hyperparameter of every strategy.
  auto names = strategy_names();
  names.push_back("gevo");
  for (const auto& strategy : names)
    for (const auto& [name, value] : code_defaults(strategy)) {
      INFO(strategy << " " << name << " = " << value << " is not in docs/strategies.md's table of defaults");
      CHECK(listed.count({strategy, name}) == 1);
    }
}
