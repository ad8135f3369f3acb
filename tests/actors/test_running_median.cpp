#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <vector>

#include "../../actors/src/running_median.hpp"

using tune::detail::running_median;

namespace {

double median_of_sorted_copy(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

}  // namespace

TEST_CASE("running_median: nothing, one value, two values", "[actors]") {
  running_median m;
  CHECK(m.size() == 0);
  CHECK(m.median() == 0.0);
  m.add(3.0);
  CHECK(m.median() == 3.0);
  m.add(1.0);
  CHECK(m.size() == 2);
  CHECK(m.median() == 2.0);
}

TEST_CASE("running_median: after every value, the median of a sort of all of them (property)", "[actors]") {
  for (std::uint64_t seed = 1; seed <= 50; ++seed) {
    std::mt19937_64 rng(seed);
    // Ties, sorted and reversed runs and heavy tails, as build times have.
    std::uniform_int_distribution<int> shape(0, 3);
    std::lognormal_distribution<double> build(-2.0, 1.5);
    std::uniform_int_distribution<int> few(0, 4);
    running_median m;
    std::vector<double> seen;
    int kind = shape(rng);
    for (int i = 0; i < 200; ++i) {
      double x = kind == 0   ? build(rng)
                 : kind == 1 ? static_cast<double>(few(rng))
                 : kind == 2 ? static_cast<double>(i)
                             : static_cast<double>(200 - i);
      m.add(x);
      seen.push_back(x);
      INFO("seed " << seed << ", value " << i);
      REQUIRE(m.size() == seen.size());
      REQUIRE(m.median() == Approx(median_of_sorted_copy(seen)).epsilon(1e-12));
    }
  }
}
