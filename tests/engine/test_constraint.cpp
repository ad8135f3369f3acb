#include <catch2/catch.hpp>
#include <map>
#include <thread>

#include "tune/engine/constraint.hpp"

using namespace tune;
using Catch::Matchers::Contains;

namespace {

/// A space over a, b, c in 0..7, a flag and a string choice.
search_space abc_space() {
  std::vector<double> values{0, 1, 2, 3, 4, 5, 6, 7};
  return search_space({make_discrete_parameter("a", values), make_discrete_parameter("b", values),
                       make_discrete_parameter("c", values), make_categorical_parameter("flag", {0.0, 1.0}),
                       make_categorical_parameter("method", {std::string("direct"), std::string("fft")})},
                      "abc");
}

configuration at(const search_space& space, double a, double b, double c, double flag = 0,
                 const std::string& method = "direct") {
  return space.from_values({{"a", a}, {"b", b}, {"c", c}, {"flag", flag}, {"method", method}});
}

bool holds(const std::string& expression, double a, double b, double c, double flag = 0,
           const std::string& method = "direct") {
  auto space = abc_space();
  auto set = make_constraint_set(space, {expression});
  return set->satisfied(at(space, a, b, c, flag, method));
}

}  // namespace

TEST_CASE("constraints follow Python's operators", "[engine][constraint]") {
  CHECK(holds("a % 3 == 1", 7, 0, 0));
  CHECK_FALSE(holds("a % 3 == 1", 6, 0, 0));
  CHECK(holds("a // 2 == 3", 7, 0, 0));   // floor division
  CHECK(holds("a / 2 == 3.5", 7, 0, 0));  // true division
  CHECK(holds("2 ** a == 128", 7, 0, 0));
  CHECK(holds("-2 ** 2 == -4", 0, 0, 0));  // ** binds tighter than unary minus
  CHECK(holds("a * b % c == (a * b) % c", 5, 3, 4));
  CHECK(holds("a - b % c == a - (b % c)", 5, 7, 4));
  CHECK(holds("(a - b) % 3 == 1", 1, 3, 0));  // Python's modulo is never negative for a positive divisor
  CHECK(holds("int(a / 2) == 3", 7, 0, 0));
  CHECK(holds("True", 0, 0, 0));
  CHECK_FALSE(holds("False", 0, 0, 0));
}

TEST_CASE("constraints follow Python's boolean structure", "[engine][constraint]") {
  CHECK(holds("a == 1 or b == 2 and c == 3", 1, 0, 0));  // and binds tighter than or
  CHECK_FALSE(holds("(a == 1 or b == 2) and c == 3", 1, 0, 0));
  CHECK(holds("not a == 1", 2, 0, 0));  // not binds looser than ==
  CHECK_FALSE(holds("not a == 1", 1, 0, 0));
  CHECK(holds("not (a == 1 and b == 1)", 1, 2, 0));
  CHECK(holds("a == 1 and not b == 1", 1, 2, 0));
  CHECK(holds("flag == 0 or a % 2 != 0", 3, 0, 0, 1));
  CHECK_FALSE(holds("flag == 0 or a % 2 != 0", 4, 0, 0, 1));
  CHECK(holds("method == 'fft'", 0, 0, 0, 0, "fft"));
  CHECK_FALSE(holds("method == \"fft\"", 0, 0, 0, 0, "direct"));
  CHECK(holds("method != 'unknown'", 0, 0, 0, 0, "direct"));
}

TEST_CASE("chained comparisons mean what they mean in Python", "[engine][constraint]") {
  CHECK(holds("2 <= a * b <= 12", 2, 3, 0));
  CHECK_FALSE(holds("2 <= a * b <= 12", 4, 4, 0));
  CHECK_FALSE(holds("2 <= a * b <= 12", 1, 1, 0));
  CHECK(holds("a < b < c", 1, 2, 3));
  CHECK_FALSE(holds("a < b < c", 1, 3, 2));  // (1 < 3) < 2 would be true in C
  CHECK(holds("a == b == c", 4, 4, 4));
  CHECK_FALSE(holds("a == b == c", 0, 0, 1));
}

TEST_CASE("a zero divisor makes a configuration invalid instead of failing", "[engine][constraint]") {
  CHECK_FALSE(holds("a % b == 0", 4, 0, 0));
  CHECK_FALSE(holds("a // b >= 0", 4, 0, 0));
  CHECK(holds("a % b == 0", 4, 2, 0));
}

TEST_CASE("bad constraints are rejected with the expression and the problem", "[engine][constraint]") {
  auto space = abc_space();
  CHECK_THROWS_WITH(make_constraint_set(space, {"a * d <= 3"}), Contains("a * d <= 3") && Contains("\"d\""));
  CHECK_THROWS_WITH(make_constraint_set(space, {"a * d <= 3"}), Contains("the names are: a b c flag method"));
  CHECK_THROWS_WITH(make_constraint_set(space, {"a * (b + 1"}), Contains("never closed"));
  CHECK_THROWS_WITH(make_constraint_set(space, {"a <= "}), Contains("lacks an operand"));
  CHECK_THROWS_WITH(make_constraint_set(space, {"a & b"}), Contains("unexpected character '&'"));
  CHECK_THROWS_WITH(make_constraint_set(space, {"a in [1, 2]"}), Contains("'in' is not supported"));
  CHECK_THROWS_WITH(make_constraint_set(space, {"   "}), Contains("empty"));
  CHECK_THROWS_AS(space.add_constraints({"a +* b"}), std::invalid_argument);
}

TEST_CASE("tuple parameters expose their parts as name_0, name_1, ...", "[engine][constraint]") {
  search_space space({make_factorization_parameter("tile", 16, 2), make_permutation_parameter("order", 3)});
  space.add_constraints({"tile_0 >= tile_1", "order_0 == 2"});
  // tile: (1,16) (2,8) (4,4) (8,2) (16,1) -> 3 satisfy; order: 2 of 6 start with 2.
  CHECK(space.count_valid() == 3u * 2u);
  for (const auto& config : *space.enumerate_valid()) {
    auto tile = std::get<std::vector<std::int64_t>>(space.parameters()[0]->value(config[0]));
    CHECK(tile[0] >= tile[1]);
  }
}

TEST_CASE("constraints count exactly what Python counts", "[engine][constraint]") {
  // 8^3 configurations of a < b < c: C(8, 3) = 56.
  auto space = abc_space();
  space.add_constraints({"a < b < c"});
  CHECK(space.count_valid() == 56u * 2u * 2u);
  space.add_constraints({"flag == 1"});  // constraints accumulate
  CHECK(space.count_valid() == 56u * 2u);
  CHECK(space.constraint_expressions().size() == 2);
}

TEST_CASE("a constraint set can be evaluated from many threads at once", "[engine][constraint]") {
  auto space = abc_space();
  auto set = make_constraint_set(space, {"(a + b) % 3 == c % 3", "a <= b or flag == 1"});
  auto total = *space.cartesian_size();
  std::vector<int> expected(total);
  for (std::uint64_t f = 0; f < total; ++f) expected[f] = set->satisfied(space.unflatten(f));
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 5; ++round)
        for (std::uint64_t f = 0; f < total; ++f)
          if (set->satisfied(space.unflatten(f)) != static_cast<bool>(expected[f])) ++mismatches[t];
    });
  }
  for (auto& th : threads) th.join();
  for (int m : mismatches) CHECK(m == 0);
}

TEST_CASE("Python syntax is rewritten for muParser", "[engine][constraint]") {
  CHECK(to_muparser_syntax("a ** 2") == "a^2");
  CHECK(to_muparser_syntax("a // 2") == "a#2");
  CHECK(to_muparser_syntax("1 < a <= 3") == "((1)<(a))&&((a)<=(3))");
  CHECK(to_muparser_syntax("not a") == "((a)==0)");
}
