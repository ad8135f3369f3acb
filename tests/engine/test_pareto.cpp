#include <catch2/catch.hpp>
#include <cmath>

#include "tune/engine/pareto.hpp"
#include "tune/engine/strategy.hpp"

using namespace tune;

TEST_CASE("dominance and fronts of a hand-checked set", "[engine][pareto]") {
  CHECK(dominates({1, 2}, {2, 2}));
  CHECK_FALSE(dominates({1, 2}, {1, 2}));
  CHECK_FALSE(dominates({1, 3}, {2, 2}));
  //  0:(1,5) 1:(2,3) 2:(4,1) 3:(3,4) 4:(5,5) 5:(2,3) 6:(4,4)
  std::vector<std::vector<double>> pts = {{1, 5}, {2, 3}, {4, 1}, {3, 4}, {5, 5}, {2, 3}, {4, 4}};
  auto fronts = non_dominated_sort(pts);
  REQUIRE(fronts.size() == 4);
  CHECK(fronts[0] == std::vector<std::size_t>{0, 1, 2, 5});
  CHECK(fronts[1] == std::vector<std::size_t>{3});  // (3,4) is dominated by (2,3)
  CHECK(fronts[2] == std::vector<std::size_t>{6});  // (4,4) by (3,4)
  CHECK(fronts[3] == std::vector<std::size_t>{4});  // (5,5) by (4,4)
  CHECK(non_dominated_sort({}).empty());
}

TEST_CASE("crowding distance by hand", "[engine][pareto]") {
  // Front (1,4) (2,3) (3,1) (4,0): ranges 3 and 4.
  std::vector<std::vector<double>> pts = {{1, 4}, {2, 3}, {3, 1}, {4, 0}};
  auto d = crowding_distance(pts, {0, 1, 2, 3});
  CHECK(std::isinf(d[0]));
  CHECK(std::isinf(d[3]));
  CHECK(d[1] == Approx((3.0 - 1.0) / 3 + (4.0 - 1.0) / 4));
  CHECK(d[2] == Approx((4.0 - 2.0) / 3 + (3.0 - 0.0) / 4));
}

TEST_CASE("pareto_front keeps ok, non-dominated results", "[engine][pareto]") {
  auto make = [](std::uint64_t id, std::vector<double> obj, bool ok = true) {
    trial_result r;
    r.config = {id};
    r.state = ok ? status::ok : status::runtime_error;
    r.time_ms = ok ? obj[0] : std::nan("");
    r.objectives = std::move(obj);
    return r;
  };
  std::vector<trial_result> rs = {make(0, {1, 5}), make(1, {2, 2}), make(2, {3, 3}), make(3, {0, 0}, false),
                                  make(4, {4, 1})};
  auto front = pareto_front(rs);
  REQUIRE(front.size() == 3);
  CHECK(front[0].config == configuration{0});
  CHECK(front[1].config == configuration{1});
  CHECK(front[2].config == configuration{4});
  // Without objectives the front is the fastest result.
  trial_result fast;
  fast.config = {9};
  fast.state = status::ok;
  fast.time_ms = 0.5;
  rs[0].objectives.clear();
  auto single = pareto_front({rs[0], fast});
  REQUIRE(single.size() == 1);
  CHECK(single[0].config == configuration{9});
}

TEST_CASE("nsga2 finds the Pareto front of a small bi-objective problem", "[engine][pareto]") {
  // x in 0..15, y in 0..63: objectives (x + y, (15 - x) + y); the front is
  // y = 0, all 16 values of x.
  std::vector<double> xs, ys;
  for (int i = 0; i < 16; ++i) xs.push_back(i);
  for (int i = 0; i < 64; ++i) ys.push_back(i);
  auto space = std::make_shared<search_space>(
      std::vector<parameter_ptr>{make_discrete_parameter("x", xs), make_discrete_parameter("y", ys)});
  strategy_options o;
  o.seed = 2;
  o.hyper = {{"population", 16}};
  auto s = make_strategy("nsga2", space, o);
  std::vector<trial_result> all;
  for (int round = 0; round < 75; ++round) {
    for (auto& c : s->propose(4)) {
      trial_result r;
      r.config = c;
      r.state = status::ok;
      double x = static_cast<double>(c[0]), y = static_cast<double>(c[1]);
      r.objectives = {x + y, 15 - x + y};
      r.time_ms = r.objectives[0];
      all.push_back(r);
      s->observe(r);
    }
  }
  REQUIRE(all.size() == 300);  // of 1024
  auto front = pareto_front(all);
  CHECK(front.size() == 16);
  for (auto& r : front) CHECK(r.config[1] == 0);
}
