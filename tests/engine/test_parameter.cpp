#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <set>

#include "tune/engine/parameter.hpp"

using namespace tune;
using tuple = std::vector<std::int64_t>;

namespace {

std::set<tuple> neighbour_values(const parameter& p, const tuple& of) {
  std::set<tuple> out;
  for (auto n : p.neighbours(p.index_of(of))) out.insert(std::get<tuple>(p.value(n)));
  return out;
}

// S = (1 - q) (I - Q)^{-1} p0, appendix A of the OpEvo paper, by Gaussian
// elimination on (I - Q) S = (1 - q) p0.
std::vector<double> q_walk_closed_form(const parameter& p, std::uint64_t start, double q) {
  const std::size_t n = p.cardinality();
  std::vector<std::vector<double>> a(n, std::vector<double>(n + 1, 0.0));
  for (std::size_t i = 0; i < n; ++i) a[i][i] = 1.0;
  for (std::size_t u = 0; u < n; ++u) {
    auto nb = p.neighbours(u);
    for (auto v : nb) a[v][u] -= q / static_cast<double>(nb.size());
  }
  a[start][n] = 1.0 - q;
  for (std::size_t c = 0; c < n; ++c) {
    std::size_t pivot = c;
    for (std::size_t r = c + 1; r < n; ++r) {
      if (std::fabs(a[r][c]) > std::fabs(a[pivot][c])) pivot = r;
    }
    std::swap(a[c], a[pivot]);
    for (std::size_t r = 0; r < n; ++r) {
      if (r == c) continue;
      double f = a[r][c] / a[c][c];
      for (std::size_t k = c; k <= n; ++k) a[r][k] -= f * a[c][k];
    }
  }
  std::vector<double> s(n);
  for (std::size_t i = 0; i < n; ++i) s[i] = a[i][n] / a[i][i];
  return s;
}

}  // namespace

TEST_CASE("factorization cardinalities match the closed form", "[engine][parameter]") {
  CHECK(make_factorization_parameter("n", 512, 4)->cardinality() == 220);
  CHECK(make_factorization_parameter("m", 1024, 4)->cardinality() == 286);
  CHECK(make_factorization_parameter("k", 1024, 3)->cardinality() == 66);
  CHECK(make_factorization_parameter("c", 8, 3)->cardinality() == 10);
  // 55 = 5 * 11: each prime placed independently in one of 4 positions.
  CHECK(make_factorization_parameter("h", 55, 4)->cardinality() == 16);
  CHECK(make_factorization_parameter("one", 1, 3)->cardinality() == 1);
  // 720 = 2^4 3^2 5: C(7,3) * C(5,3) * 4 ordered 4-tuples.
  CHECK(make_factorization_parameter("x", 720, 4)->cardinality() == 35 * 10 * 4);
}

TEST_CASE("every factorization multiplies to the product and round-trips", "[engine][parameter]") {
  auto p = make_factorization_parameter("n", 360, 3);
  std::set<tuple> seen;
  for (std::uint64_t i = 0; i < p->cardinality(); ++i) {
    auto t = std::get<tuple>(p->value(i));
    REQUIRE(t.size() == 3);
    CHECK(t[0] * t[1] * t[2] == 360);
    CHECK(p->index_of(t) == i);
    seen.insert(t);
  }
  CHECK(seen.size() == p->cardinality());
  CHECK_THROWS_AS(p->index_of(tuple{2, 2, 2}), std::invalid_argument);
  CHECK_THROWS_AS(p->index_of(1.0), std::invalid_argument);
}

TEST_CASE("factorization neighbours move one prime factor (OpEvo Figure 1a)", "[engine][parameter]") {
  auto p = make_factorization_parameter("c", 8, 3);
  CHECK(neighbour_values(*p, {8, 1, 1}) == std::set<tuple>{{4, 2, 1}, {4, 1, 2}});
  CHECK(neighbour_values(*p, {2, 2, 2}) ==
        std::set<tuple>{{4, 1, 2}, {4, 2, 1}, {1, 4, 2}, {2, 4, 1}, {1, 2, 4}, {2, 1, 4}});
  CHECK(neighbour_values(*p, {2, 1, 4}) == std::set<tuple>{{4, 1, 2}, {1, 2, 4}, {2, 2, 2}, {1, 1, 8}});

  // Adjacency is symmetric and never reflexive, with several primes too.
  auto q = make_factorization_parameter("q", 12, 3);
  for (std::uint64_t u = 0; u < q->cardinality(); ++u) {
    for (auto v : q->neighbours(u)) {
      CHECK(v != u);
      auto back = q->neighbours(v);
      CHECK(std::count(back.begin(), back.end(), u) == 1);
    }
  }
}

TEST_CASE("a factorization too large to list is ranked by counting", "[engine][parameter][property]") {
  // 2^40 into 16 parts: C(55, 15) = 11,899,700,525,790 ordered factorizations,
  // far past what is listed; indices and values still map both ways, in
  // lexicographic order, and neighbours are those of the listed kind.
  auto p = make_factorization_parameter("t", std::int64_t{1} << 40, 16);
  REQUIRE(p->cardinality() == 11'899'700'525'790ULL);
  tuple first(16, 1), last(16, 1);
  first.back() = std::int64_t{1} << 40;
  last.front() = std::int64_t{1} << 40;
  CHECK(std::get<tuple>(p->value(0)) == first);
  CHECK(std::get<tuple>(p->value(p->cardinality() - 1)) == last);
  rng_type rng(5);
  for (int trial = 0; trial < 300; ++trial) {
    auto i = p->draw(rng);
    auto v = std::get<tuple>(p->value(i));
    std::int64_t product = 1;
    for (auto f : v) product *= f;
    CHECK(product == std::int64_t{1} << 40);
    CHECK(p->index_of(v) == i);
    if (i + 1 < p->cardinality()) CHECK(v < std::get<tuple>(p->value(i + 1)));
    for (auto n : p->neighbours(i)) {
      auto w = std::get<tuple>(p->value(n));
      int moved = 0;
      for (std::size_t k = 0; k < v.size(); ++k) moved += v[k] != w[k];
      CHECK(moved == 2);
    }
  }
  CHECK_THROWS_AS(p->index_of(tuple(16, 2)), std::invalid_argument);
  CHECK_THROWS_AS(p->value(p->cardinality()), std::out_of_range);
}

TEST_CASE("ranking by counting gives the listed order", "[engine][parameter][property]") {
  // 2^20 * 3^2 into 6 parts is 53,130 * 21 = 1,115,730: just past the listed
  // limit; its order must be the sorted order a list would have.
  auto big = make_factorization_parameter("t", (std::int64_t{1} << 20) * 9, 6);
  REQUIRE(big->cardinality() == 1'115'730);
  tuple previous;
  for (std::uint64_t i = 0; i < big->cardinality(); i += 997) {
    auto v = std::get<tuple>(big->value(i));
    if (!previous.empty()) CHECK(previous < v);
    CHECK(big->index_of(v) == i);
    previous = v;
  }
  // The neighbours relation is symmetric.
  for (std::uint64_t i : {0ULL, 12345ULL, 999'999ULL}) {
    for (auto n : big->neighbours(i)) {
      auto back = big->neighbours(n);
      CHECK(std::find(back.begin(), back.end(), i) != back.end());
    }
  }
}

TEST_CASE("a factorization with more than 2^64 orderings is refused", "[engine][parameter]") {
  CHECK_THROWS_WITH(make_factorization_parameter("t", std::int64_t{1} << 62, 40),
                    Catch::Matchers::Contains("more than 2^64") && Catch::Matchers::Contains("'t'"));
}

TEST_CASE("bad factorization arguments are rejected", "[engine][parameter]") {
  CHECK_THROWS_AS(make_factorization_parameter("x", 0, 3), std::invalid_argument);
  CHECK_THROWS_AS(make_factorization_parameter("x", 8, 0), std::invalid_argument);
}

TEST_CASE("permutations: n! orderings adjacent by one transposition", "[engine][parameter]") {
  auto p = make_permutation_parameter("order", 3);
  REQUIRE(p->cardinality() == 6);
  CHECK(std::get<tuple>(p->value(0)) == tuple{0, 1, 2});
  CHECK(std::get<tuple>(p->value(5)) == tuple{2, 1, 0});
  for (std::uint64_t i = 0; i < 6; ++i) CHECK(p->index_of(p->value(i)) == i);
  CHECK(neighbour_values(*p, {0, 1, 2}) == std::set<tuple>{{1, 0, 2}, {2, 1, 0}, {0, 2, 1}});

  auto p5 = make_permutation_parameter("order", 5);
  CHECK(p5->cardinality() == 120);
  for (std::uint64_t i = 0; i < p5->cardinality(); i += 7) {
    auto nb = p5->neighbours(i);
    CHECK(nb.size() == 10);  // C(5, 2) transpositions
    for (auto v : nb) {
      auto a = std::get<tuple>(p5->value(i));
      auto b = std::get<tuple>(p5->value(v));
      int differ = 0;
      for (int k = 0; k < 5; ++k) differ += a[k] != b[k];
      CHECK(differ == 2);
    }
  }
  CHECK_THROWS_AS(p->index_of(tuple{0, 0, 1}), std::invalid_argument);
  CHECK_THROWS_AS(p->index_of(tuple{0, 1}), std::invalid_argument);
  CHECK_THROWS_AS(make_permutation_parameter("bad", 0), std::invalid_argument);
}

TEST_CASE("discrete values are ordered, neighbours are consecutive", "[engine][parameter]") {
  auto p = make_discrete_parameter("unroll", {256, 0, 125});
  CHECK(p->cardinality() == 3);
  CHECK(std::get<double>(p->value(0)) == 0);
  CHECK(std::get<double>(p->value(2)) == 256);
  CHECK(p->neighbours(0) == std::vector<std::uint64_t>{1});
  CHECK(p->neighbours(1) == std::vector<std::uint64_t>{0, 2});
  CHECK(p->index_of(125.0) == 1);
  CHECK_THROWS_AS(p->index_of(3.0), std::invalid_argument);
  CHECK_THROWS_AS(make_discrete_parameter("d", {}), std::invalid_argument);
  CHECK_THROWS_AS(make_discrete_parameter("d", {1, 1}), std::invalid_argument);
}

TEST_CASE("categorical values are all adjacent", "[engine][parameter]") {
  auto p = make_categorical_parameter("axis", {std::string("a"), std::string("b"), std::string("c"), 4.0});
  CHECK(p->cardinality() == 4);
  CHECK(p->neighbours(2) == std::vector<std::uint64_t>{0, 1, 3});
  CHECK(p->index_of(std::string("b")) == 1);
  std::vector<double> f;
  p->features(1, f);
  p->features(3, f);
  CHECK(f == std::vector<double>{2.0, 4.0});
  CHECK_THROWS_AS(make_categorical_parameter("c", {1.0, 1.0}), std::invalid_argument);
}

TEST_CASE("q-random walk matches its closed form S = (1-q)(I-Q)^-1 p0", "[engine][parameter][property]") {
  auto p = make_factorization_parameter("c", 8, 3);
  const auto start = p->index_of(tuple{8, 1, 1});
  const auto i222 = p->index_of(tuple{2, 2, 2});
  const auto i214 = p->index_of(tuple{2, 1, 4});

  for (double q : {0.3, 0.5, 0.8}) {
    DYNAMIC_SECTION("q = " << q) {
      auto s = q_walk_closed_form(*p, start, q);
      double total = 0;
      for (double x : s) total += x;
      CHECK(total == Approx(1.0).epsilon(1e-12));
      // Same distance from (8,1,1), but (2,2,2) has the larger degree.
      CHECK(s[i222] > s[i214]);

      rng_type rng(fork_seed(42, static_cast<std::uint64_t>(q * 10)));
      const int samples = 100000;
      std::vector<int> counts(p->cardinality(), 0);
      for (int i = 0; i < samples; ++i) ++counts[q_random_walk(*p, start, q, rng)];

      // Pearson chi-square with 9 degrees of freedom; 27.88 is the 0.999 quantile.
      double chi2 = 0;
      for (std::size_t v = 0; v < s.size(); ++v) {
        double expected = samples * s[v];
        chi2 += (counts[v] - expected) * (counts[v] - expected) / expected;
      }
      CHECK(chi2 < 27.88);
      CHECK(counts[i222] > counts[i214]);
    }
  }
}

TEST_CASE("random_neighbour draws what picking from neighbours() draws, for every kind",
          "[engine][parameter][property]") {
  std::vector<parameter_ptr> params = {make_factorization_parameter("f", 8, 3),
                                       make_factorization_parameter("g", 360, 4),
                                       make_factorization_parameter("h", 7, 1),
                                       make_factorization_parameter("one", 1, 3),
                                       make_permutation_parameter("p", 4),
                                       make_permutation_parameter("p1", 1),
                                       make_discrete_parameter("d", {1, 2, 4, 8}),
                                       make_discrete_parameter("d1", {3}),
                                       make_categorical_parameter("c", {std::string("a"), 2.0, std::string("b")}),
                                       make_categorical_parameter("c1", {std::string("only")})};
  for (const auto& p : params) {
    DYNAMIC_SECTION(p->name()) {
      for (std::uint64_t i = 0; i < p->cardinality(); ++i) {
        auto list = p->neighbours(i);
        for (std::uint64_t seed = 0; seed < 8; ++seed) {
          // The base implementation picks from the list; the kind's own must
          // give the same index and leave the generator in the same state.
          rng_type a(fork_seed(seed, i)), b(fork_seed(seed, i));
          auto from_list = p->parameter::random_neighbour(i, a);
          auto own = p->random_neighbour(i, b);
          REQUIRE(own == from_list);
          REQUIRE(a() == b());
          if (list.empty()) CHECK(!own);
          if (own) CHECK(std::find(list.begin(), list.end(), *own) != list.end());
        }
      }
    }
  }
}

TEST_CASE("q-random walk rejects q outside 0 to 1 and stays put at q = 0", "[engine][parameter]") {
  auto p = make_discrete_parameter("d", {1, 2, 3, 4});
  rng_type rng(1);
  CHECK(q_random_walk(*p, 2, 0.0, rng) == 2);
  CHECK_THROWS_AS(q_random_walk(*p, 2, 1.0, rng), std::invalid_argument);
  CHECK_THROWS_AS(q_random_walk(*p, 2, -0.1, rng), std::invalid_argument);
  auto single = make_factorization_parameter("one", 1, 2);
  CHECK(q_random_walk(*single, 0, 0.9, rng) == 0);
}

TEST_CASE("q_walk's stop distribution is the closed form's from every start", "[engine][parameter][property]") {
  std::vector<parameter_ptr> params = {make_factorization_parameter("f", 8, 3), make_permutation_parameter("p", 3),
                                       make_discrete_parameter("d", {1, 2, 4, 8}),
                                       make_categorical_parameter("c", {std::string("a"), 2.0, std::string("b")}),
                                       make_discrete_parameter("two", {1, 2})};
  for (const auto& p : params) {
    for (double q : {0.0, 0.3, 0.5, 0.8}) {
      DYNAMIC_SECTION(p->name() << ", q = " << q) {
        q_walk walk(p, q);
        REQUIRE(walk.tabled());
        for (std::uint64_t from = 0; from < p->cardinality(); ++from) {
          auto s = q_walk_closed_form(*p, from, q);
          for (std::uint64_t to = 0; to < p->cardinality(); ++to)
            CHECK(walk.probability(from, to) == Approx(s[to]).margin(1e-12));
        }
      }
    }
  }
  // Two values: from either, the walk stops where it started after an even
  // number of steps, (1 - q) / (1 - q^2) = 1 / (1 + q).
  q_walk two(params.back(), 0.5);
  CHECK(two.probability(0, 0) == Approx(2.0 / 3.0).epsilon(1e-14));
  CHECK(two.probability(1, 0) == Approx(1.0 / 3.0).epsilon(1e-14));
}

TEST_CASE("q_walk draws its stop distribution, by count and by search", "[engine][parameter][property]") {
  // Four values take the branch-free count, ten (the factorizations of 8
  // into three parts) the binary search.
  std::vector<parameter_ptr> params = {make_discrete_parameter("d", {1, 2, 4, 8}),
                                       make_factorization_parameter("f", 8, 3)};
  for (const auto& p : params) {
    DYNAMIC_SECTION(p->name()) {
      const double q = 0.5;
      q_walk walk(p, q);
      for (std::uint64_t start : {std::uint64_t{0}, p->cardinality() - 1}) {
        auto s = q_walk_closed_form(*p, start, q);
        rng_type rng(fork_seed(7, start));
        const int samples = 100000;
        std::vector<int> counts(p->cardinality(), 0);
        for (int i = 0; i < samples; ++i) ++counts[walk(start, rng)];
        // Pearson chi-square; 27.88 and 16.27 are the 0.999 quantiles for 9
        // and 3 degrees of freedom.
        double chi2 = 0;
        for (std::size_t v = 0; v < s.size(); ++v) {
          double expected = samples * s[v];
          chi2 += (counts[v] - expected) * (counts[v] - expected) / expected;
        }
        CHECK(chi2 < (p->cardinality() == 10 ? 27.88 : 16.27));
      }
    }
  }
}

TEST_CASE("q_walk steps like q_random_walk where it keeps no table, and refuses a bad q", "[engine][parameter]") {
  // 2^12 into four parts: 455 values, more than a table holds.
  auto large = make_factorization_parameter("large", 4096, 4);
  REQUIRE(large->cardinality() > q_walk::max_tabled);
  q_walk walk(large, 0.5);
  CHECK_FALSE(walk.tabled());
  CHECK_THROWS_AS(walk.probability(0, 0), std::logic_error);
  rng_type a(3), b(3);
  for (std::uint64_t start = 0; start < 50; ++start) REQUIRE(walk(start, a) == q_random_walk(*large, start, 0.5, b));

  auto d = make_discrete_parameter("d", {1, 2, 3, 4});
  CHECK_THROWS_AS(q_walk(d, 1.0), std::invalid_argument);
  CHECK_THROWS_AS(q_walk(d, -0.1), std::invalid_argument);
  CHECK_THROWS_AS(q_walk(nullptr, 0.5), std::invalid_argument);
  rng_type rng(1);
  q_walk still(d, 0.0);
  for (std::uint64_t v = 0; v < 4; ++v) CHECK(still(v, rng) == v);
  CHECK_THROWS_AS(still.probability(4, 0), std::out_of_range);
  // One value: no draw at all.
  q_walk single(make_discrete_parameter("one", {3}), 0.9);
  rng_type c(5), untouched(5);
  CHECK(single(0, c) == 0);
  CHECK(c() == untouched());
  // A start out of range (from a resumed file) is walked step by step.
  rng_type e(9), f(9);
  CHECK(q_walk(d, 0.5)(7, e) == q_random_walk(*d, 7, 0.5, f));
}

TEST_CASE("fork_seed gives distinct reproducible streams", "[engine][parameter]") {
  CHECK(fork_seed(1, 0) == fork_seed(1, 0));
  CHECK(fork_seed(1, 0) != fork_seed(1, 1));
  CHECK(fork_seed(1, 0) != fork_seed(2, 0));
}
