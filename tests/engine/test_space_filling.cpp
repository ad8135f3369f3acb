// Latin hypercubes and space-filling designs snapped to a pool: the strata
// property, quantile coordinates, validity, distinctness and determinism.
#include <catch2/catch.hpp>
#include <cmath>
#include <set>

#include "tune/engine/space_filling.hpp"

using namespace tune;

namespace {
search_space_ptr grid(int size_x, int size_y, const std::vector<std::string>& constraints = {}) {
  std::vector<double> xs, ys;
  for (int i = 0; i < size_x; ++i) xs.push_back(i);
  for (int i = 0; i < size_y; ++i) ys.push_back(i);
  auto space = std::make_shared<search_space>(
      std::vector<parameter_ptr>{make_discrete_parameter("x", xs), make_discrete_parameter("y", ys)});
  if (!constraints.empty()) space->add_constraints(constraints);
  return space;
}
}  // namespace

TEST_CASE("a Latin hypercube has one point in each stratum of every dimension", "[engine][design]") {
  for (std::size_t points : {1, 2, 7, 20}) {
    for (std::size_t dimension : {1, 3, 6}) {
      for (std::uint64_t seed = 1; seed <= 5; ++seed) {
        INFO(points << " points, dimension " << dimension << ", seed " << seed);
        rng_type rng(seed);
        auto design = latin_hypercube(points, dimension, rng);
        REQUIRE(design.size() == points * dimension);
        for (std::size_t d = 0; d < dimension; ++d) {
          std::set<std::size_t> strata;
          for (std::size_t i = 0; i < points; ++i) {
            double u = design[i * dimension + d];
            CHECK(u >= 0.0);
            CHECK(u < 1.0);
            strata.insert(static_cast<std::size_t>(std::floor(u * static_cast<double>(points))));
          }
          CHECK(strata.size() == points);
        }
      }
    }
  }
}

TEST_CASE("a Latin hypercube is reproducible for a seed", "[engine][design]") {
  rng_type a(7), b(7), c(8);
  auto first = latin_hypercube(10, 4, a);
  CHECK(first == latin_hypercube(10, 4, b));
  CHECK(first != latin_hypercube(10, 4, c));
}

TEST_CASE("the minimum distance is the closest pair's", "[engine][design]") {
  CHECK(minimum_distance({0, 0, 3, 4, 10, 10}, 2) == Approx(5.0));
  CHECK(std::isinf(minimum_distance({1, 2}, 2)));
}

TEST_CASE("quantile coordinates follow the pool's distribution of each parameter", "[engine][design]") {
  auto space = grid(4, 2);
  // x = 0 three times, x = 1 once, x = 3 once; y = 1 always.
  std::vector<configuration> pool = {{0, 1}, {0, 1}, {0, 1}, {1, 1}, {3, 1}};
  auto q = quantile_coordinates(*space, pool);
  REQUIRE(q.size() == 2);
  CHECK(q[0][0] == Approx(0.3));  // (0 + 3/2) / 5
  CHECK(q[0][1] == Approx(0.7));  // (3 + 1/2) / 5
  CHECK(q[0][2] == Approx(0.8));  // absent: where it would start
  CHECK(q[0][3] == Approx(0.9));
  CHECK(q[1][0] == Approx(0.0));
  CHECK(q[1][1] == Approx(0.5));
}

TEST_CASE("a space-filling design is valid, distinct, spread and reproducible", "[engine][design]") {
  auto space = grid(20, 20, {"x + y <= 30"});
  const auto& pool = *space->enumerate_valid();
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    for (std::size_t tries : {1, 8}) {
      INFO("seed " << seed << ", tries " << tries);
      rng_type rng(seed), again(seed);
      auto design = space_filling_design(*space, pool, {}, 10, tries, rng);
      REQUIRE(design.size() == 10);
      CHECK(design == space_filling_design(*space, pool, {}, 10, tries, again));
      std::set<std::size_t> distinct(design.begin(), design.end());
      CHECK(distinct.size() == 10);
      // Ten strata of x by the pool's quantiles: no decile left out twice
      // over, so the design spans the valid x range.
      std::set<std::uint64_t> xs;
      for (auto c : design) {
        CHECK(space->is_valid(pool[c]));
        xs.insert(pool[c][0]);
      }
      CHECK(xs.size() >= 8);
      CHECK(*xs.begin() <= 3);
      CHECK(*xs.rbegin() >= 15);
    }
  }
}

TEST_CASE("a space-filling design avoids taken members and stops when none is left", "[engine][design]") {
  auto space = grid(3, 3);
  const auto& pool = *space->enumerate_valid();
  std::vector<bool> taken(pool.size(), true);
  taken[2] = taken[7] = false;
  rng_type rng(1);
  auto design = space_filling_design(*space, pool, taken, 5, 4, rng);
  CHECK(std::set<std::size_t>(design.begin(), design.end()) == std::set<std::size_t>{2, 7});
  CHECK_THROWS_WITH(space_filling_design(*space, pool, {}, 5, 0, rng), Catch::Contains("tries"));
  CHECK_THROWS_WITH(space_filling_design(*space, pool, std::vector<bool>(3), 5, 1, rng),
                    Catch::Contains("one flag per pool member"));
}

TEST_CASE("maximin keeps the most spread of its tries", "[engine][design]") {
  auto space = grid(30, 30);
  const auto& pool = *space->enumerate_valid();
  auto spread = [&](const std::vector<std::size_t>& design) {
    std::vector<double> points;
    for (auto c : design)
      for (auto v : pool[c]) points.push_back(static_cast<double>(v));
    return minimum_distance(points, 2);
  };
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    rng_type one(seed), many(seed);
    // The first try of both is the same hypercube; more tries only improve.
    CHECK(spread(space_filling_design(*space, pool, {}, 8, 16, many)) >=
          spread(space_filling_design(*space, pool, {}, 8, 1, one)));
  }
}
