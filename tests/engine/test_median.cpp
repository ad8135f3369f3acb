// tune::median: the middle of a sample in any order, the mean of the two
// middle values for an even count, NaN for none; property tests over random
// samples.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "tune/engine/median.hpp"

TEST_CASE("median: small samples by hand", "[engine][median]") {
  CHECK(std::isnan(tune::median({})));
  CHECK(tune::median({4.0}) == 4.0);
  CHECK(tune::median({3.0, 1.0}) == 2.0);
  CHECK(tune::median({5.0, 1.0, 3.0}) == 3.0);
  CHECK(tune::median({10.0, 1.0, 3.0, 2.0}) == 2.5);
  CHECK(tune::sorted_median({1.0, 2.0, 3.0, 100.0}) == 2.5);
}

TEST_CASE("median: properties over random samples", "[engine][median]") {
  std::mt19937_64 rng(20261127);
  std::uniform_int_distribution<int> size(1, 40);
  std::normal_distribution<double> value(10.0, 3.0);
  for (int round = 0; round < 500; ++round) {
    std::vector<double> xs(static_cast<std::size_t>(size(rng)));
    for (auto& x : xs) x = value(rng);
    const double m = tune::median(xs);
    INFO("n = " << xs.size());
    // Order does not matter, and the sample is left as it was.
    auto shuffled = xs;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    CHECK(tune::median(shuffled) == m);
    // Between the extremes; an element itself for an odd count.
    auto [lo, hi] = std::minmax_element(xs.begin(), xs.end());
    CHECK(*lo <= m);
    CHECK(m <= *hi);
    if (xs.size() % 2) CHECK(std::find(xs.begin(), xs.end(), m) != xs.end());
    // At most half the values lie strictly on either side.
    auto below = std::count_if(xs.begin(), xs.end(), [&](double x) { return x < m; });
    auto above = std::count_if(xs.begin(), xs.end(), [&](double x) { return x > m; });
    CHECK(2 * below <= static_cast<long>(xs.size()));
    CHECK(2 * above <= static_cast<long>(xs.size()));
    // Equivariant under an increasing affine map.
    auto mapped = xs;
    for (auto& x : mapped) x = 2.0 * x + 7.0;
    CHECK(tune::median(mapped) == Approx(2.0 * m + 7.0));
    // sorted_median of the sorted sample agrees.
    auto sorted = xs;
    std::sort(sorted.begin(), sorted.end());
    CHECK(tune::sorted_median(sorted) == m);
  }
}
