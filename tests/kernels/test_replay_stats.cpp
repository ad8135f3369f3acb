// The analytic random baseline against brute force, fractions of the optimum,
// and the Willemsen score.
#include <algorithm>
#include <catch2/catch.hpp>
#include <numeric>

#include "replay_fixtures.hpp"
#include "tune/kernels/replay_stats.hpp"

using namespace tune;

namespace {

/// E[f] after n draws without replacement, by enumerating every subset of size
/// n of `times` (NaN = failure).
double brute_force_f(const std::vector<double>& times, std::size_t n) {
  const std::size_t t = times.size();
  double best = *std::min_element(times.begin(), times.end(),
                                  [](double a, double b) { return std::isnan(b) || (!std::isnan(a) && a < b); });
  double sum = 0;
  std::size_t count = 0;
  for (std::uint32_t mask = 0; mask < (1u << t); ++mask) {
    if (static_cast<std::size_t>(__builtin_popcount(mask)) != n) continue;
    double found = std::nan("");
    for (std::size_t i = 0; i < t; ++i)
      if ((mask >> i) & 1u && !std::isnan(times[i]) && !(found <= times[i])) found = times[i];
    sum += std::isnan(found) ? 0.0 : best / found;
    ++count;
  }
  return sum / static_cast<double>(count);
}

/// Mean position of the first draw with f >= threshold over every ordering.
double brute_force_reach(std::vector<double> times, double threshold) {
  double best = std::nan("");
  for (double x : times)
    if (!std::isnan(x) && !(best <= x)) best = x;
  std::vector<std::size_t> order(times.size());
  std::iota(order.begin(), order.end(), 0);
  double sum = 0;
  std::size_t count = 0;
  do {
    for (std::size_t i = 0; i < order.size(); ++i) {
      double x = times[order[i]];
      if (!std::isnan(x) && best / x >= threshold) {
        sum += static_cast<double>(i + 1);
        break;
      }
    }
    ++count;
  } while (std::next_permutation(order.begin(), order.end()));
  return sum / static_cast<double>(count);
}

}  // namespace

TEST_CASE("the analytic random baseline equals brute-force enumeration", "[kernels]") {
  const double nan = std::nan("");
  // Ties and failures included.
  std::vector<double> times{3.0, 1.5, nan, 2.0, 1.5, 9.0, nan, 4.0, 2.5, 1.0, 7.0};
  std::vector<double> ok;
  for (double x : times)
    if (!std::isnan(x)) ok.push_back(x);
  std::sort(ok.begin(), ok.end());
  auto curve = random_fraction_curve(ok, times.size(), times.size());
  for (std::size_t n = 1; n <= times.size(); ++n) CHECK(curve[n - 1] == Approx(brute_force_f(times, n)).epsilon(1e-12));
  CHECK(curve.back() == Approx(1.0));

  std::vector<double> small{3.0, nan, 1.2, 2.0, 1.0, nan, 1.05};
  std::vector<double> small_ok{1.0, 1.05, 1.2, 2.0, 3.0};
  for (double threshold : {0.9, 0.95, 0.5, 1.0})
    CHECK(random_evals_to_reach(small_ok, small.size(), threshold) ==
          Approx(brute_force_reach(small, threshold)).epsilon(1e-12));
}

TEST_CASE("the analytic baseline agrees with simulated random search on a real slice", "[kernels]") {
  const auto& d = test::conv_slice();
  replay_run_options options;
  options.strategy = "random";
  options.budget = 30;
  auto runs = replay_searches(d, options, 400, 2);
  auto s = summarize(d, runs, options.budget);
  // 400 runs: the standard error of the mean f is below 0.01 here.
  for (std::size_t n : {1, 5, 10, 30}) CHECK(s.mean_f[n - 1] == Approx(s.random_f[n - 1]).margin(0.03));
  CHECK(std::abs(s.score) < 0.1);
}

TEST_CASE("fraction curves hold their last value and start at zero", "[kernels]") {
  replay_run_result run;
  run.steps.push_back({{}, status::compile_error, std::nan(""), 1.0, std::nan("")});
  run.steps.push_back({{}, status::ok, 4.0, 2.0, 4.0});
  run.steps.push_back({{}, status::ok, 2.0, 3.0, 2.0});
  auto f = fraction_curve(run, 1.0, 5);
  REQUIRE(f.size() == 5);
  CHECK(f[0] == 0.0);
  CHECK(f[1] == Approx(0.25));
  CHECK(f[2] == Approx(0.5));
  CHECK(f[4] == Approx(0.5));
}

TEST_CASE("the Willemsen score is 0 for random, 1 for the optimum and negative when worse", "[kernels]") {
  std::vector<double> random{0.2, 0.5, 0.8, 1.0};
  CHECK(willemsen_score(random, random) == Approx(0.0));
  CHECK(willemsen_score({1.0, 1.0, 1.0, 1.0}, random) == Approx(1.0));
  // The last point (random already optimal) is skipped.
  CHECK(willemsen_score({0.6, 0.75, 0.9, 1.0}, random) == Approx((0.5 + 0.5 + 0.5) / 3));
  CHECK(willemsen_score({0.0, 0.0, 0.0, 0.0}, random) < 0);
}

TEST_CASE("a summary counts runs that never reach a fraction", "[kernels]") {
  const auto& d = test::conv_slice();
  replay_run_result good;
  replay_run_result poor;
  auto sorted = d.sorted_ok_times();
  good.steps.push_back({d.configs[0], status::ok, sorted[0], 1.0, sorted[0]});
  poor.steps.push_back({d.configs[1], status::ok, sorted[0] * 2, 1.0, sorted[0] * 2});
  auto s = summarize(d, {good, poor}, 3);
  CHECK(s.mean_f[2] == Approx(0.75));
  CHECK(s.std_f[2] == Approx(std::sqrt(0.125)));
  REQUIRE(s.reaches.size() == 3);
  for (const auto& r : s.reaches) {
    CHECK(r.never == 1);
    REQUIRE(r.mean_evals);
    CHECK(*r.mean_evals == 1.0);
    CHECK(r.random_evals > 1.0);
  }
}

TEST_CASE("the exact random baseline reproduces the published numbers of the vendored caches", "[kernels]") {
  struct expected {
    const char* file;
    double f100, f200, f500;
  };
  // Published with the datasets (datasets/README.md): mean f of random search
  // without replacement, failures counted as evaluations.
  for (auto e : {expected{"datasets/gemm_clblast/RTX_3090.json.gz", 0.838, 0.870, 0.906},
                 expected{"datasets/convolution/A100.json.gz", 0.724, 0.780, 0.856}}) {
    auto d = read_replay_dataset(test::replay_data(e.file));
    auto curve = random_fraction_curve(d.sorted_ok_times(), d.configs.size(), 500);
    CHECK(curve[99] == Approx(e.f100).margin(0.0005));
    CHECK(curve[199] == Approx(e.f200).margin(0.0005));
    CHECK(curve[499] == Approx(e.f500).margin(0.0005));
  }
}
