// The Gaussian process against a direct dense computation of its posterior,
// expected improvement against numerical integration, and the encoding.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>

#include "tune/engine/gaussian_process.hpp"

using namespace tune;

namespace {

// Solves A x = b by Gaussian elimination with partial pivoting.
std::vector<double> solve(std::vector<std::vector<double>> a, std::vector<double> b) {
  std::size_t n = b.size();
  for (std::size_t col = 0; col < n; ++col) {
    std::size_t pivot = col;
    for (std::size_t r = col + 1; r < n; ++r)
      if (std::abs(a[r][col]) > std::abs(a[pivot][col])) pivot = r;
    std::swap(a[col], a[pivot]);
    std::swap(b[col], b[pivot]);
    for (std::size_t r = col + 1; r < n; ++r) {
      double f = a[r][col] / a[col][col];
      for (std::size_t c = col; c < n; ++c) a[r][c] -= f * a[col][c];
      b[r] -= f * b[col];
    }
  }
  std::vector<double> x(n);
  for (std::size_t i = n; i-- > 0;) {
    double sum = b[i];
    for (std::size_t c = i + 1; c < n; ++c) sum -= a[i][c] * x[c];
    x[i] = sum / a[i][i];
  }
  return x;
}

double matern52(double r, double length) {
  double s = std::sqrt(5.0) * r / length;
  return (1 + s + s * s / 3) * std::exp(-s);
}

double distance(const double* a, const double* b, std::size_t dim) {
  double sum = 0;
  for (std::size_t d = 0; d < dim; ++d) sum += (a[d] - b[d]) * (a[d] - b[d]);
  return std::sqrt(sum);
}

}  // namespace

TEST_CASE("the kernel is Matérn 5/2 with unit variance", "[engine][gp]") {
  gaussian_process gp(2, 0.5, 1e-4);
  double a[] = {0.1, 0.2}, b[] = {0.4, 0.6};
  CHECK(gp.kernel(a, a) == Approx(1.0));
  CHECK(gp.kernel(a, b) == Approx(matern52(0.5, 0.5)));
  CHECK(gp.kernel(a, b) == Approx(gp.kernel(b, a)));
}

TEST_CASE("the incremental posterior equals the dense one", "[engine][gp]") {
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    INFO("seed " << seed);
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> unit(0, 1);
    const std::size_t dim = 3, observed = 15, candidates = 40;
    const double length = 0.6, noise = 1e-3;
    std::vector<double> cand(candidates * dim), obs(observed * dim), y(observed);
    for (double& v : cand) v = unit(rng);
    for (std::size_t i = 0; i < observed; ++i) {
      // Half the observations are candidates themselves.
      for (std::size_t d = 0; d < dim; ++d) obs[i * dim + d] = i % 2 ? cand[i * dim + d] : unit(rng);
      y[i] = std::sin(5 * obs[i * dim]) + obs[i * dim + 1] + 3.0;
    }
    gaussian_process gp(dim, length, noise);
    gp.set_candidates(cand);
    // Every third observation carries extra noise of its own.
    auto extra = [](std::size_t i) { return i % 3 == 2 ? 0.3 : 0.0; };
    for (std::size_t i = 0; i < observed; ++i) gp.add(obs.data() + i * dim, y[i], extra(i));
    REQUIRE(gp.size() == observed);

    double mean = 0, sq = 0;
    for (double v : y) mean += v;
    mean /= observed;
    for (double v : y) sq += (v - mean) * (v - mean);
    double scale = std::sqrt(sq / observed);
    CHECK(gp.shift() == Approx(mean));
    CHECK(gp.scale() == Approx(scale));
    std::vector<double> standard(observed);
    for (std::size_t i = 0; i < observed; ++i) standard[i] = (y[i] - mean) / scale;
    CHECK(gp.best() == Approx(*std::min_element(standard.begin(), standard.end())));

    std::vector<std::vector<double>> k(observed, std::vector<double>(observed));
    for (std::size_t i = 0; i < observed; ++i)
      for (std::size_t j = 0; j < observed; ++j)
        k[i][j] = matern52(distance(&obs[i * dim], &obs[j * dim], dim), length) + (i == j ? noise + extra(i) : 0);
    auto alpha = solve(k, standard);
    for (std::size_t c = 0; c < candidates; ++c) {
      std::vector<double> ks(observed);
      for (std::size_t j = 0; j < observed; ++j) ks[j] = matern52(distance(&cand[c * dim], &obs[j * dim], dim), length);
      auto w = solve(k, ks);
      double m = 0, q = 0;
      for (std::size_t j = 0; j < observed; ++j) {
        m += ks[j] * alpha[j];
        q += ks[j] * w[j];
      }
      // Candidate vectors are kept in single precision.
      CHECK(gp.candidate_mean(c) == Approx(m).margin(1e-4));
      CHECK(gp.candidate_variance(c) == Approx(1 + noise - q).margin(1e-4));
      auto [pm, pv] = gp.predict(&cand[c * dim]);
      CHECK(pm == Approx(m).margin(1e-9));
      CHECK(pv == Approx(1 + noise - q).margin(1e-9));
    }
  }
}

TEST_CASE("the posterior nearly interpolates with little noise", "[engine][gp]") {
  gaussian_process gp(1, 0.3, 1e-8);
  double xs[] = {0.0, 0.25, 0.5, 1.0}, ys[] = {2.0, 1.0, 4.0, 3.0};
  gp.set_candidates({0.0, 0.25, 0.5, 1.0, 0.75});
  for (int i = 0; i < 4; ++i) gp.add(&xs[i], ys[i]);
  for (int i = 0; i < 4; ++i) {
    CHECK(gp.candidate_mean(static_cast<std::size_t>(i)) * gp.scale() + gp.shift() == Approx(ys[i]).margin(1e-3));
    CHECK(gp.candidate_variance(static_cast<std::size_t>(i)) < 1e-4);
  }
  CHECK(gp.candidate_variance(4) > 0.01);  // between observations: uncertain
}

TEST_CASE("a Gaussian process rejects bad arguments", "[engine][gp]") {
  CHECK_THROWS_AS(gaussian_process(0, 1, 1e-4), std::invalid_argument);
  CHECK_THROWS_AS(gaussian_process(2, 0, 1e-4), std::invalid_argument);
  CHECK_THROWS_AS(gaussian_process(2, 1, 0), std::invalid_argument);
  gaussian_process gp(2, 1, 1e-4);
  CHECK_THROWS_AS(gp.set_candidates({1.0, 2.0, 3.0}), std::invalid_argument);
  double x[] = {0.5, 0.5};
  CHECK_THROWS_AS(gp.add(x, std::nan("")), std::invalid_argument);
  CHECK_THROWS_AS(gp.add(x, 1.0, -0.1), std::invalid_argument);
  CHECK_THROWS_AS(gp.add(x, 1.0, std::numeric_limits<double>::infinity()), std::invalid_argument);
  CHECK(gp.size() == 0);
  CHECK(gp.best() == std::numeric_limits<double>::infinity());
  gp.add(x, 1.0);
  CHECK(gp.scale() == 1.0);  // one target: no spread
  CHECK_THROWS_AS(gp.set_candidates({0.0, 0.0}), std::logic_error);
}

TEST_CASE("expected improvement matches numerical integration", "[engine][gp]") {
  // E[max(best - xi - Y, 0)], Y ~ N(mean, sd²), by the midpoint rule.
  for (auto [mean, sd, best, xi] : std::vector<std::tuple<double, double, double, double>>{
           {0.0, 1.0, 0.0, 0.0}, {0.5, 0.3, 0.0, 0.01}, {-1.0, 2.0, 0.2, 0.1}, {2.0, 0.5, 0.0, 0.0}}) {
    double sum = 0, step = sd * 1e-3;
    for (double y = mean - 12 * sd; y < mean + 12 * sd; y += step) {
      double mid = y + step / 2, z = (mid - mean) / sd;
      sum += std::max(best - xi - mid, 0.0) * std::exp(-0.5 * z * z) / (sd * std::sqrt(2 * M_PI)) * step;
    }
    CHECK(expected_improvement(mean, sd, best, xi) == Approx(sum).epsilon(1e-4).margin(1e-9));
  }
  CHECK(expected_improvement(1.0, 0.0, 3.0, 0.5) == 1.5);
  CHECK(expected_improvement(3.0, 0.0, 1.0, 0.0) == 0.0);
}

TEST_CASE("the expected-improvement bound holds and is tight far below the best", "[engine][gp]") {
  // Property: for random means, deviations and gains the bound is never below
  // expected_improvement; deep in the tail it is close: 1 + 2/z² to leading
  // order, about 3% at z = -8.
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> gain_of(-6.0, 3.0), sd_of(1e-3, 3.0);
  for (int i = 0; i < 20000; ++i) {
    double gain = gain_of(rng), sd = sd_of(rng);
    if (gain / sd < -25) continue;  // EI below 1e-130: both are rounding noise there
    double ei = expected_improvement(-gain, sd, 0.0, 0.0);
    INFO("gain " << gain << ", sd " << sd);
    CHECK(expected_improvement_bound(gain, sd) >= ei * (1 - 1e-12));
  }
  double ei = expected_improvement(8.0, 1.0, 0.0, 0.0);
  REQUIRE(ei > 0);
  CHECK(expected_improvement_bound(-8.0, 1.0) / ei == Approx(1.0 + 2.0 / 64).epsilon(0.01));
  CHECK(expected_improvement_bound(0.5, 0.0) == 0.5);
  CHECK(expected_improvement_bound(-0.5, 0.0) == 0.0);
}

TEST_CASE("the encoding maps every parameter kind into the unit interval", "[engine][gp]") {
  auto space = std::make_shared<search_space>(std::vector<parameter_ptr>{
      make_discrete_parameter("d", {16, 32, 64, 128, 256}),
      make_categorical_parameter("flag", {parameter_value(0.0), parameter_value(1.0)}),
      make_categorical_parameter("kind", {parameter_value(std::string("a")), parameter_value(std::string("b")),
                                          parameter_value(std::string("c"))}),
      make_factorization_parameter("tile", 16, 2)});
  gp_encoding encoding(*space);
  CHECK(encoding.dimension() == 1 + 1 + 3 + 2);
  std::vector<double> a, b;
  encoding.encode({2, 1, 0, 0}, a);
  encoding.encode({4, 0, 2, 0}, b);
  CHECK(a[0] == Approx(0.5));
  CHECK(b[0] == Approx(1.0));
  CHECK(a[1] == 1.0);
  CHECK(b[1] == 0.0);
  // Two different categories are at distance 1 in their one-hot block.
  double squared = 0;
  for (int i = 2; i < 5; ++i) squared += (a[i] - b[i]) * (a[i] - b[i]);
  CHECK(squared == Approx(1.0));
  for (std::uint64_t v = 0; v < space->parameters()[3]->cardinality(); ++v) {
    std::vector<double> c;
    encoding.encode({0, 0, 0, v}, c);
    CHECK(c[5] >= 0.0);
    CHECK(c[5] <= 1.0);
    CHECK(c[6] >= 0.0);
    CHECK(c[6] <= 1.0);
  }
  CHECK_THROWS_AS(encoding.encode({0, 0}, a), std::invalid_argument);
}

TEST_CASE("the alignment coordinate follows the power of two dividing a value", "[engine][gp]") {
  auto space = std::make_shared<search_space>(std::vector<parameter_ptr>{
      make_discrete_parameter("block", {16, 32, 48, 64, 80}),  // 2^4, 2^5, 2^4, 2^6, 2^4
      make_discrete_parameter("pow2", {16, 32, 64, 128}),      // follows the index: nothing added
      make_discrete_parameter("tile", {1, 2, 3}),              // 2^0, 2^1, 2^0
      make_discrete_parameter("fraction", {0.5, 1, 3}),        // not all integers: nothing added
      make_discrete_parameter("odd", {1, 3, 5})});             // no variation: nothing added
  gp_encoding plain(*space);
  CHECK(plain.dimension() == 5);
  gp_encoding aligned(*space, 0.5);
  REQUIRE(aligned.dimension() == 2 + 1 + 2 + 1 + 1);
  auto coordinates = [&](std::uint64_t block, std::uint64_t tile) {
    std::vector<double> out;
    aligned.encode({block, 3, tile, 1, 2}, out);
    return out;
  };
  std::vector<double> expected_block{0.0, 0.25, 0.0, 0.5, 0.0};
  for (std::uint64_t b = 0; b < 5; ++b) {
    INFO(b);
    auto c = coordinates(b, 0);
    CHECK(c[0] == Approx(b / 4.0));
    CHECK(c[1] == Approx(expected_block[b]));
    CHECK(c[2] == Approx(1.0));
  }
  CHECK(coordinates(0, 1)[4] == Approx(0.5));
  CHECK(coordinates(0, 2)[4] == Approx(0.0));
  CHECK(coordinates(0, 2)[3] == Approx(1.0));
  // 32 and 48 are a quarter apart by index and further apart once aligned;
  // 16 and 48 share their alignment and stay half apart.
  auto distance = [](const std::vector<double>& a, const std::vector<double>& b) {
    double squared = 0;
    for (std::size_t i = 0; i < a.size(); ++i) squared += (a[i] - b[i]) * (a[i] - b[i]);
    return std::sqrt(squared);
  };
  CHECK(distance(coordinates(1, 0), coordinates(2, 0)) > 0.25 + 0.05);
  CHECK(distance(coordinates(0, 0), coordinates(2, 0)) == Approx(0.5));
  CHECK_THROWS_AS(gp_encoding(*space, -0.1), std::invalid_argument);
}

TEST_CASE("a prior trend's slope and means equal the dense generalised least squares", "[engine][gp]") {
  // 1-D points; targets follow the trend p (slope 2) plus a wiggle; a second
  // run gives a trend that runs against the targets, whose slope is clamped
  // at 0 so the means are the trend-free process's.
  const double length = 0.4, noise = 1e-3, strength = 0.5, prior_slope = 1.0;
  std::vector<double> cand;
  for (int i = 0; i <= 20; ++i) cand.push_back(i / 20.0);
  std::vector<double> xs = {0.05, 0.3, 0.5, 0.55, 0.9};
  for (double sign : {1.0, -1.0}) {
    INFO("trend sign " << sign);
    auto trend_at = [&](double x) { return sign * (x - 0.5) * 3.0; };
    auto target_at = [&](double x) { return 2.0 * (x - 0.5) * 3.0 + 0.3 * std::sin(9 * x); };
    std::vector<double> cand_trend;
    for (double c : cand) cand_trend.push_back(trend_at(c));
    gaussian_process gp(1, length, noise), plain(1, length, noise);
    gp.set_candidates(cand);
    plain.set_candidates(cand);
    gp.set_trend(cand_trend, prior_slope, strength);
    std::vector<double> ys;
    for (double x : xs) {
      ys.push_back(target_at(x));
      gp.add(&x, ys.back(), 0.0, trend_at(x));
      plain.add(&x, ys.back());
    }
    // Dense: standardised targets, K, β, mean.
    std::size_t n = xs.size();
    std::vector<double> ystd(n), p(n);
    for (std::size_t i = 0; i < n; ++i) ystd[i] = (ys[i] - gp.shift()) / gp.scale(), p[i] = trend_at(xs[i]);
    std::vector<std::vector<double>> k(n, std::vector<double>(n));
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j) k[i][j] = matern52(std::abs(xs[i] - xs[j]), length) + (i == j ? noise : 0);
    auto k_inv_y = solve(k, ystd), k_inv_p = solve(k, p);
    double py = 0, pp = 0;
    for (std::size_t i = 0; i < n; ++i) py += p[i] * k_inv_y[i], pp += p[i] * k_inv_p[i];
    double beta = std::max((py + strength * prior_slope) / (pp + strength), 0.0);
    CHECK(gp.trend_slope() == Approx(beta).margin(1e-6));
    if (sign > 0) CHECK(beta > 1.0);
    if (sign < 0) CHECK(beta == 0.0);
    std::vector<double> residual(n);
    for (std::size_t i = 0; i < n; ++i) residual[i] = ystd[i] - beta * p[i];
    auto alpha = solve(k, residual);
    for (std::size_t c = 0; c < cand.size(); ++c) {
      double mean = beta * cand_trend[c];
      for (std::size_t i = 0; i < n; ++i) mean += matern52(std::abs(cand[c] - xs[i]), length) * alpha[i];
      CHECK(gp.candidate_mean(c) == Approx(mean).margin(1e-4));
      CHECK(gp.predict(&cand[c], cand_trend[c]).first == Approx(mean).margin(1e-4));
      // Without the trend: the process alone, as if no trend was set.
      CHECK(gp.candidate_mean(c, false) == Approx(plain.candidate_mean(c)).margin(1e-9));
      CHECK(gp.candidate_variance(c) == Approx(plain.candidate_variance(c)).margin(1e-9));
    }
  }
}

TEST_CASE("a prior trend is checked and set before the first observation", "[engine][gp]") {
  gaussian_process gp(1, 0.5, 1e-4);
  gp.set_candidates({0.0, 0.5, 1.0});
  CHECK_THROWS_WITH(gp.set_trend({1.0, 2.0}, 1.0, 1.0), Catch::Contains("one trend value per candidate"));
  CHECK_THROWS_WITH(gp.set_trend({1.0, 2.0, 3.0}, 1.0, 0.0), Catch::Contains("strength positive"));
  CHECK_THROWS_WITH(gp.set_trend({1.0, 2.0, 3.0}, std::nan(""), 1.0), Catch::Contains("slope must be finite"));
  CHECK(gp.trend_slope() == 0.0);
  double x = 0.2;
  gp.add(&x, 1.0);
  CHECK_THROWS_AS(gp.set_trend({1.0, 2.0, 3.0}, 1.0, 1.0), std::logic_error);
}

TEST_CASE("factorizations too large to tabulate are encoded with the table's scaling", "[engine][gp]") {
  // 2^20 into 6 parts (53,130 values) is tabulated, 2^24 into 6 parts
  // (118,755) and the orders of 9 loops (362,880) are computed: all give
  // log2(factor) / log2(product) and (position - 1) / (n - 1).
  auto check = [](std::int64_t product, int parts) {
    INFO("product " << product << " parts " << parts);
    auto space = std::make_shared<search_space>(std::vector<parameter_ptr>{
        make_factorization_parameter("t", product, parts), make_permutation_parameter("p", 9)});
    gp_encoding encoding(*space);
    REQUIRE(encoding.dimension() == static_cast<std::size_t>(parts) + 9);
    rng_type rng(11);
    for (int i = 0; i < 200; ++i) {
      auto config = space->draw(rng);
      std::vector<double> x;
      encoding.encode(config, x);
      auto factors = std::get<std::vector<std::int64_t>>(space->parameters()[0]->value(config[0]));
      auto order = std::get<std::vector<std::int64_t>>(space->parameters()[1]->value(config[1]));
      for (int k = 0; k < parts; ++k)
        CHECK(x[k] == Approx(std::log2(static_cast<double>(factors[k])) / std::log2(static_cast<double>(product))));
      for (int k = 0; k < 9; ++k) CHECK(x[parts + order[k]] == Approx(k / 8.0));
    }
  };
  check(std::int64_t{1} << 20, 6);
  check(std::int64_t{1} << 24, 6);
}
