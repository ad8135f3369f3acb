// tune::nearest_configuration: a configuration of one shape carried onto
// another's space (the prior a model's task takes from its family), and
// values_from_json's refusals.
#include <catch2/catch.hpp>

#include "tune/engine/nearest_configuration.hpp"

using namespace tune;

namespace {

using split = std::vector<std::int64_t>;

search_space shape_space(std::int64_t n) {
  return search_space({make_factorization_parameter("tile_n", n, 3), make_discrete_parameter("unroll", {1, 2, 4, 8}),
                       make_categorical_parameter("layout", {std::string("packed"), std::string("plain")}),
                       make_permutation_parameter("order", 3)});
}

std::map<std::string, parameter_value> config_of(split tile, double unroll, const std::string& layout) {
  return {{"tile_n", tile}, {"unroll", unroll}, {"layout", layout}, {"order", split{2, 0, 1}}};
}

}  // namespace

TEST_CASE("nearest_configuration: a value the space has is kept", "[engine][nearest]") {
  auto space = shape_space(64);
  auto config = nearest_configuration(space, config_of({2, 4, 8}, 4, "plain"));
  REQUIRE(config);
  CHECK(space.to_json(*config) == R"({"tile_n": [2, 4, 8], "unroll": 4, "layout": "plain", "order": [2, 0, 1]})");
}

TEST_CASE("nearest_configuration: a split of another extent keeps the tile sizes that divide", "[engine][nearest]") {
  auto space = shape_space(128);
  // 64 = 2 x 4 x 8 becomes 128 = 4 x 4 x 8: only the outer factor changes.
  auto config = nearest_configuration(space, config_of({2, 4, 8}, 3, "packed"));
  REQUIRE(config);
  CHECK(space.to_json(*config) == R"({"tile_n": [4, 4, 8], "unroll": 2, "layout": "packed", "order": [2, 0, 1]})");
  // The nearest by the sum of |log ratio|: 32 = 1 x 4 x 8 onto 24's splits.
  auto odd = shape_space(24);
  auto near = nearest_configuration(odd, config_of({1, 4, 8}, 1, "packed"));
  REQUIRE(near);
  const auto tile = std::get<split>(odd.values(*near)[0].second);
  CHECK((tile == split{1, 3, 8} || tile == split{1, 4, 6}));
}

TEST_CASE("nearest_configuration: what cannot be carried maps nowhere", "[engine][nearest]") {
  auto space = shape_space(64);
  CHECK_FALSE(nearest_configuration(space, config_of({2, 4, 8}, 4, "tiled")));  // a category it lacks
  auto missing = config_of({2, 4, 8}, 4, "plain");
  missing.erase("unroll");
  CHECK_FALSE(nearest_configuration(space, missing));
  auto other_length = config_of({2, 4, 2, 4}, 4, "plain");  // a split into four
  CHECK_FALSE(nearest_configuration(space, other_length));
  auto bad_order = config_of({2, 4, 8}, 4, "plain");
  bad_order["order"] = split{3, 0, 1, 2};
  CHECK_FALSE(nearest_configuration(space, bad_order));
}

TEST_CASE("nearest_configuration: the result holds the space's constraints", "[engine][nearest]") {
  auto space = shape_space(128);
  space.add_constraints({"unroll <= 2"});
  auto config = nearest_configuration(space, config_of({2, 4, 8}, 8, "plain"));
  CHECK_FALSE(config);  // unroll 8 is kept as the space has it, and breaks the constraint
}

TEST_CASE("values_from_json: the values of a configuration, bad text refused", "[engine][nearest]") {
  auto values = values_from_json(R"({"a": 3, "b": "x", "c": [1, 2], "d": true})");
  CHECK(std::get<double>(values.at("a")) == 3);
  CHECK(std::get<std::string>(values.at("b")) == "x");
  CHECK(std::get<split>(values.at("c")) == split{1, 2});
  CHECK(std::get<double>(values.at("d")) == 1);
  CHECK_THROWS_WITH(values_from_json("[1]"), Catch::Contains("is not a JSON object"));
  CHECK_THROWS_WITH(values_from_json("{"), Catch::Contains("is not JSON"));
  CHECK_THROWS_WITH(values_from_json(R"({"a": [1.5]})"), Catch::Contains("parameter 'a' has the value [1.5]"));
}
