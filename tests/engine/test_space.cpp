#include <catch2/catch.hpp>
#include <set>
#include <thread>

#include "tune/engine/space.hpp"

using namespace tune;

namespace {

search_space small_space() {
  return search_space({make_factorization_parameter("tile", 8, 3), make_discrete_parameter("unroll", {0, 125, 256}),
                       make_categorical_parameter("explicit", {0.0, 1.0}), make_permutation_parameter("order", 3)},
                      "small");
}

}  // namespace

TEST_CASE("a space knows its Cartesian size and flattens both ways", "[engine][space]") {
  auto space = small_space();
  REQUIRE(space.cartesian_size() == 10u * 3 * 2 * 6);
  for (std::uint64_t flat = 0; flat < *space.cartesian_size(); ++flat) {
    auto config = space.unflatten(flat);
    CHECK(space.flatten(config) == flat);
    CHECK(space.is_valid(config));
  }
  CHECK(space.count_valid() == 360u);
  CHECK(space.feature_count() == 3 + 1 + 1 + 3);
}

TEST_CASE("a configuration's key is its flat index, and none where flat indices cannot tell configurations apart",
          "[engine][space]") {
  auto space = small_space();
  for (std::uint64_t flat = 0; flat < *space.cartesian_size(); ++flat) CHECK(space.key(space.unflatten(flat)) == flat);
  // A value out of range would alias another configuration's index: no key.
  CHECK_FALSE(space.key({0, 3, 0, 0}).has_value());  // unroll has 3 values
  CHECK_FALSE(space.key({10, 0, 0, 0}).has_value());
  CHECK_FALSE(space.key({0, 0, 0}).has_value());
  CHECK_FALSE(space.key({0, 0, 0, 0, 0}).has_value());
  // Beyond 64 bits: none at all.
  std::vector<parameter_ptr> params;
  for (int i = 0; i < 5; ++i) params.push_back(make_permutation_parameter("p" + std::to_string(i), 12));
  search_space huge(params);
  CHECK_FALSE(huge.key({0, 0, 0, 0, 0}).has_value());
}

TEST_CASE("a restricted space knows its members by key, and the rest by value beyond 64 bits", "[engine][space]") {
  auto space = small_space();
  std::vector<configuration> members;
  for (std::uint64_t flat = 0; flat < 360; flat += 7) members.push_back(space.unflatten(flat));
  members.push_back(members.front());  // a duplicate is kept once
  space.restrict_to(members);
  CHECK(space.members()->size() == members.size() - 1);
  for (std::uint64_t flat = 0; flat < 360; ++flat) CHECK(space.is_valid(space.unflatten(flat)) == (flat % 7 == 0));
  CHECK_FALSE(space.is_valid({0, 3, 0, 0}));  // out of range, though its flat index would be a member's
  std::vector<parameter_ptr> params;
  for (int i = 0; i < 5; ++i) params.push_back(make_permutation_parameter("p" + std::to_string(i), 12));
  search_space huge(params);
  huge.restrict_to({{1, 2, 3, 4, 5}, {5, 4, 3, 2, 1}});
  CHECK(huge.is_valid({1, 2, 3, 4, 5}));
  CHECK(huge.is_valid({5, 4, 3, 2, 1}));
  CHECK_FALSE(huge.is_valid({1, 2, 3, 4, 6}));
}

TEST_CASE("validity given a key is validity: members and constraints both apply", "[engine][space]") {
  auto space = small_space();
  auto check_all = [&](const char* what) {
    for (std::uint64_t flat = 0; flat < *space.cartesian_size(); ++flat) {
      auto config = space.unflatten(flat);
      INFO(what << ", flat index " << flat);
      REQUIRE(space.is_valid(config, *space.key(config)) == space.is_valid(config));
    }
  };
  check_all("plain");
  space.add_constraints({"unroll != 125"});
  check_all("constrained");
  std::vector<configuration> members;
  for (std::uint64_t flat = 0; flat < 360; flat += 5) members.push_back(space.unflatten(flat));
  space.restrict_to(members);
  check_all("constrained and restricted");
  // The key given decides membership: a non-member's refuses.
  auto member = space.unflatten(0);
  CHECK(space.is_valid(member, 0));
  CHECK_FALSE(space.is_valid(member, 1));
}

TEST_CASE("a Cartesian size beyond 64 bits is reported as unknown", "[engine][space]") {
  std::vector<parameter_ptr> params;
  for (int i = 0; i < 5; ++i) params.push_back(make_permutation_parameter("p" + std::to_string(i), 12));
  search_space space(params);
  CHECK_FALSE(space.cartesian_size().has_value());
  CHECK_FALSE(space.count_valid().has_value());
  rng_type rng(3);
  CHECK(space.draw_valid(rng).has_value());
}

TEST_CASE("a huge space reports its exact size and estimates its valid share", "[engine][space][property]") {
  // 2^40 into 16 parts times the orders of 12 loops: 5.7e21 configurations.
  search_space space(
      {make_factorization_parameter("t", std::int64_t{1} << 40, 16), make_permutation_parameter("p", 12)});
  CHECK_FALSE(space.cartesian_size().has_value());
  CHECK(space.cartesian_size_text() == "5699975591374251264000");
  CHECK(space.cartesian_log10() == Approx(21.7558).margin(1e-3));
  rng_type rng(1);
  CHECK(space.draw_valid(rng).has_value());
  // t_0 == 1 holds for C(54, 14) / C(55, 15) = 15/55 of the factorizations.
  space.add_constraints({"t_0 == 1"});
  auto estimate = space.estimate_valid(20000, rng);
  CHECK(estimate.draws == 20000);
  CHECK(estimate.low < 15.0 / 55);
  CHECK(estimate.high > 15.0 / 55);
  CHECK(estimate.fraction == Approx(15.0 / 55).margin(0.02));
  CHECK(estimate.high - estimate.low < 0.02);
}

TEST_CASE("the valid-share interval covers the truth on a countable space", "[engine][space][property]") {
  // Over 40 seeds the 95% interval must cover the exact share in most runs.
  search_space space({make_factorization_parameter("t", 720, 3), make_permutation_parameter("p", 4)});
  space.add_constraints({"t_0 <= t_1"});
  double exact = static_cast<double>(*space.count_valid()) / static_cast<double>(*space.cartesian_size());
  int covered = 0;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    rng_type rng(seed);
    auto e = space.estimate_valid(500, rng);
    covered += e.low <= exact && exact <= e.high;
  }
  CHECK(covered >= 34);
}

TEST_CASE("configurations of the wrong shape or range are invalid", "[engine][space]") {
  auto space = small_space();
  CHECK_FALSE(space.is_valid({0, 0, 0}));
  CHECK_FALSE(space.is_valid({10, 0, 0, 0}));
  CHECK_FALSE(space.is_valid({0, 3, 0, 0}));
}

TEST_CASE("restricting to members: only they are valid and they are drawn uniformly", "[engine][space]") {
  auto space = small_space();
  std::vector<configuration> members = {space.unflatten(5), space.unflatten(17), space.unflatten(300),
                                        space.unflatten(17)};
  space.restrict_to(members);
  REQUIRE(space.members()->size() == 3);  // duplicates collapse
  CHECK(space.is_valid(space.unflatten(17)));
  CHECK_FALSE(space.is_valid(space.unflatten(18)));
  CHECK(space.count_valid() == 3u);

  rng_type rng(7);
  std::map<std::uint64_t, int> counts;
  for (int i = 0; i < 3000; ++i) ++counts[space.flatten(*space.draw_valid(rng))];
  CHECK(counts.size() == 3);
  for (auto& [flat, count] : counts) CHECK(count > 900);

  CHECK_THROWS_AS(space.restrict_to({{0, 0}}), std::invalid_argument);
  CHECK_THROWS_AS(space.restrict_to({{0, 99, 0, 0}}), std::invalid_argument);
}

TEST_CASE("values by name round-trip through from_values and to_json", "[engine][space]") {
  auto space = small_space();
  auto config = space.unflatten(123);
  std::map<std::string, parameter_value> values;
  for (auto& [name, value] : space.values(config)) values[name] = value;
  CHECK(space.from_values(values) == config);

  auto json = space.to_json(space.from_values({{"tile", std::vector<std::int64_t>{2, 2, 2}},
                                               {"unroll", 125.0},
                                               {"explicit", 1.0},
                                               {"order", std::vector<std::int64_t>{2, 0, 1}}}));
  CHECK(json == R"({"tile": [2, 2, 2], "unroll": 125, "explicit": 1, "order": [2, 0, 1]})");

  values.erase("unroll");
  CHECK_THROWS_WITH(space.from_values(values), Catch::Contains("'unroll'"));
  values["unroll"] = 7.0;
  CHECK_THROWS_WITH(space.from_values(values), Catch::Contains("unroll"));
  values["unroll"] = 0.0;
  values["bogus"] = 1.0;
  CHECK_THROWS_WITH(space.from_values(values), Catch::Contains("'bogus'"));
}

TEST_CASE("duplicate parameter names are rejected", "[engine][space]") {
  CHECK_THROWS_WITH(search_space({make_discrete_parameter("a", {1}), make_discrete_parameter("a", {2})}),
                    Catch::Contains("'a'"));
}

TEST_CASE("draw is reproducible for a seed", "[engine][space]") {
  auto space = small_space();
  rng_type a(11), b(11);
  for (int i = 0; i < 50; ++i) CHECK(space.draw(a) == space.draw(b));
}

TEST_CASE("threads that share a space enumerate it once", "[engine][space]") {
  // Parallel replay runs share one space; the first enumerate_valid() builds
  // the cache while others may be asking for it.
  std::vector<double> range;
  for (int i = 0; i < 60; ++i) range.push_back(i);
  search_space space(
      {make_discrete_parameter("a", range), make_discrete_parameter("b", range), make_discrete_parameter("c", range)});
  std::vector<const std::vector<configuration>*> seen(4, nullptr);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < seen.size(); ++t) threads.emplace_back([&, t] { seen[t] = space.enumerate_valid(); });
  for (auto& t : threads) t.join();
  REQUIRE(seen[0] != nullptr);
  CHECK(seen[0]->size() == 60u * 60 * 60);
  for (auto* s : seen) CHECK(s == seen[0]);
  CHECK(space.count_valid() == 60u * 60 * 60);
}
