#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "../../../kernels/worker/output_compare.hpp"

using tune::worker::first_wrong_exact;
using tune::worker::first_wrong_f32;
using tune::worker::output_screen::block;
using screen_width = tune::worker::output_screen::width;

namespace {

struct outputs {
  std::vector<float> got, ref;
};

// A reference of mixed magnitudes (under and over 1, both signs) and outputs
// off by a relative error of up to `spread`.
outputs near_reference(std::size_t n, double spread, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> value(-1.0, 1.0), off(-spread, spread);
  std::uniform_int_distribution<int> exponent(-6, 6);
  outputs o;
  for (std::size_t i = 0; i < n; ++i) {
    double r = value(rng) * std::ldexp(1.0, exponent(rng));
    o.ref.push_back(static_cast<float>(r));
    o.got.push_back(static_cast<float>(r * (1.0 + off(rng))));
  }
  return o;
}

// Both checks' answers; the screened one must be the exact one's, with the
// widest screen the processor has and with the four-lane one.
void same_answer(const outputs& o, double tolerance, bool absolute, double carried = 0.0) {
  double exact_max = carried;
  auto n = o.got.size();
  auto exact = first_wrong_exact(o.got.data(), o.ref.data(), n, tolerance, absolute, exact_max);
  for (auto width : {screen_width::widest, screen_width::four_lanes}) {
    double screened_max = carried;
    auto screened = first_wrong_f32(o.got.data(), o.ref.data(), n, tolerance, absolute, screened_max, width);
    INFO("n " << n << ", tolerance " << tolerance << (absolute ? " absolute" : " relative")
              << (width == screen_width::widest ? ", widest screen" : ", four lanes"));
    REQUIRE(screened == exact);
    if (exact == n) CHECK(screened_max == exact_max);  // exactly, not nearly
  }
}

}  // namespace

TEST_CASE("the screened float check gives the exact check's answer on random outputs") {
  std::mt19937_64 rng(11);
  for (std::size_t n : {std::size_t{0}, std::size_t{3}, block - 1, block, block + 5, 7 * block + 333}) {
    for (double spread : {0.0, 1e-7, 1e-5, 2e-3}) {
      auto o = near_reference(n, spread, rng);
      for (double tolerance : {1e-3, 1e-4, 1e-6})
        for (bool absolute : {false, true}) {
          same_answer(o, tolerance, absolute);
          same_answer(o, tolerance, absolute, 5e-4);  // a largest error carried from an earlier output
        }
    }
  }
}

TEST_CASE("the screened float check finds a wrong element wherever it is") {
  std::mt19937_64 rng(12);
  const std::size_t n = 9 * block + 17;
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::uniform_int_distribution<std::size_t> where(0, n - 1);
  for (int trial = 0; trial < 60; ++trial) {
    auto o = near_reference(n, 1e-6, rng);
    auto i = trial < 3 ? std::size_t{trial == 0 ? 0 : trial == 1 ? n - 1 : block} : where(rng);
    float bad[] = {nan, inf, -inf, o.ref[i] * 1.01f + 0.5f, -o.got[i]};
    o.got[i] = bad[trial % 5];
    if (trial % 7 == 0) o.ref[i] = nan;  // a NaN expected is never matched
    double exact_max = 0.0, screened_max = 0.0, four_lanes_max = 0.0;
    auto exact = first_wrong_exact(o.got.data(), o.ref.data(), n, 1e-3, false, exact_max);
    auto screened = first_wrong_f32(o.got.data(), o.ref.data(), n, 1e-3, false, screened_max);
    auto four_lanes =
        first_wrong_f32(o.got.data(), o.ref.data(), n, 1e-3, false, four_lanes_max, screen_width::four_lanes);
    INFO("trial " << trial << ", element " << i << " set to " << o.got[i]);
    CHECK(exact <= i);
    CHECK(screened == exact);
    CHECK(four_lanes == exact);
  }
}

TEST_CASE("the screened float check decides errors at the tolerance itself as the exact rule does") {
  // Elements whose double-precision error lies within a relative 5e-6 of
  // the tolerance, on both sides: the single-precision screen cannot tell
  // them apart and must hand them to the double-precision check.
  const double tolerance = 0.1;
  for (bool absolute : {false, true}) {
    std::vector<std::pair<float, float>> close;  // (got, ref)
    int over = 0, under = 0;
    for (int k = 0; k < 20000 && (over < 16 || under < 16); ++k) {
      float r = absolute ? 0.5f + 0.00037f * static_cast<float>(k % 1000) : 1000.0f + 0.37f * static_cast<float>(k);
      double scale = absolute ? 1.0 : static_cast<double>(r);
      float g = static_cast<float>(r + tolerance * scale);
      for (int step = 0; step < 8; ++step) g = std::nextafter(g, 0.0f);
      for (int step = 0; step < 16; ++step, g = std::nextafter(g, 1e9f)) {
        double error = tune::worker::output_error(g, r, absolute);
        int& side = error > tolerance ? over : under;
        if (std::fabs(error - tolerance) > tolerance * 5e-6 || side >= 16) continue;
        close.emplace_back(g, r);
        ++side;
      }
    }
    REQUIRE(over == 16);
    REQUIRE(under == 16);
    for (std::size_t at : {std::size_t{0}, block + 7}) {
      for (const auto& [g, r] : close) {
        outputs o;
        for (std::size_t i = 0; i < 2 * block + 1; ++i) {
          o.ref.push_back(r);
          o.got.push_back(r);
        }
        o.got[at] = g;
        same_answer(o, tolerance, absolute);
      }
    }
  }
}

TEST_CASE("the screened float check with a tolerance of zero, or a huge one, is the exact check") {
  std::mt19937_64 rng(13);
  auto o = near_reference(4 * block + 3, 0.0, rng);
  same_answer(o, 0.0, false);
  o.got[2 * block + 1] = std::nextafter(o.got[2 * block + 1], 10.0f);
  same_answer(o, 0.0, false);
  same_answer(o, 0.0, true);
  same_answer(o, 1e300, false);
  o.got[3 * block] = std::numeric_limits<float>::infinity();  // over even a huge tolerance
  same_answer(o, 1e300, false);
  same_answer(o, 1e300, true);
}

TEST_CASE("the screened float check's largest error is exact where single precision ties errors") {
  // Errors k / m (k units in the last place off a reference of mantissa m)
  // for neighbouring m: often equal in single precision, never in double
  // precision. Each block that reaches the largest single-precision error
  // may hold the largest error.
  std::mt19937_64 rng(14);
  std::uniform_int_distribution<std::uint32_t> mantissa(1u << 23, (1u << 24) - 2);
  auto single = [](float g, float r) { return std::fabs(g - r) / std::max(1.0f, std::fabs(r)); };
  int found = 0;
  for (int k = 0; k < 20000 && found < 8; ++k) {
    auto m = mantissa(rng);
    float r = std::ldexp(static_cast<float>(m), -20), r2 = std::ldexp(static_cast<float>(m + 1), -20);  // in [8, 16)
    float g = std::ldexp(static_cast<float>(m + 839), -20), g2 = std::ldexp(static_cast<float>(m + 1 + 839), -20);
    double exact = tune::worker::output_error(g, r, false), exact2 = tune::worker::output_error(g2, r2, false);
    if (single(g, r) != single(g2, r2) || exact == exact2) continue;
    for (bool larger_first : {false, true}) {
      outputs o;
      for (std::size_t i = 0; i < 5 * block; ++i) {
        o.ref.push_back(1.0f);
        o.got.push_back(1.0f);
      }
      bool first_is_1 = (exact > exact2) == larger_first;
      o.got[block + 3] = first_is_1 ? g : g2, o.ref[block + 3] = first_is_1 ? r : r2;
      o.got[3 * block + 100] = first_is_1 ? g2 : g, o.ref[3 * block + 100] = first_is_1 ? r2 : r;
      same_answer(o, 1e-3, false);
    }
    ++found;
  }
  REQUIRE(found == 8);

  // Equal errors in every block (the largest reached in many places) and one
  // a rounding larger.
  outputs o;
  for (std::size_t i = 0; i < 6 * block; ++i) {
    o.ref.push_back(1.0f);
    o.got.push_back(1.0f + 1e-4f);
  }
  o.got[4 * block + 9] = std::nextafter(1.0f + 1e-4f, 2.0f);
  same_answer(o, 1e-3, false);
  same_answer(o, 1e-3, true);
}
