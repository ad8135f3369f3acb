#pragma once
// The check of a kernel's outputs against the expected ones, element by
// element: |out - ref| <= tolerance * max(1, |ref|) (relative), or
// |out - ref| <= tolerance (absolute), in double precision; NaN is never
// within tolerance. The resident measurer checks every trial's outputs, and
// a batched MatMul's are tens of megabytes: the element-by-element loop in
// double precision (a division per element, an exit per element) took 19-50
// ms on 15.7 M floats, most of such a trial's overhead, so float outputs are
// screened in single precision first, four lanes at a time (9 ms) or, where
// the processor has AVX2, eight (5 ms), and only what the screen cannot
// settle is checked in double precision. The answer is the double-precision
// rule's either way.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace tune::worker {

/// The error of `got` against `ref`: relative to max(1, |ref|), or absolute.
inline double output_error(double got, double ref, bool absolute) {
  return std::fabs(got - ref) / (absolute ? 1.0 : std::max(1.0, std::fabs(ref)));
}

/// The first of `n` elements out of tolerance (or NaN), or n; the largest
/// error before it goes into max_error. In double precision, element by
/// element.
template <typename T>
std::size_t first_wrong_exact(const T* got, const T* ref, std::size_t n, double tolerance, bool absolute,
                              double& max_error) {
  for (std::size_t i = 0; i < n; ++i) {
    double error = output_error(static_cast<double>(got[i]), static_cast<double>(ref[i]), absolute);
    if (!(error <= tolerance)) return i;
    max_error = std::max(max_error, error);
  }
  return n;
}

namespace output_screen {

/// Elements per block of the screen.
constexpr std::size_t block = 1024;
/// A single-precision error is within 3 roundings (relative 2^-22, 2.4e-7)
/// of the double-precision one; the screen keeps a margin of 1e-5 from
/// every bound it decides on.
constexpr double margin = 1e-5;

using f32x4 = float __attribute__((vector_size(16)));
using i32x4 = std::int32_t __attribute__((vector_size(16)));
using f32x8 = float __attribute__((vector_size(32)));
using i32x8 = std::int32_t __attribute__((vector_size(32)));

/// One full block in single precision, F (float lanes) and I (int32 lanes)
/// at a time: whether every element's error is at most `pass` (false for
/// NaN), and the largest error. Always inlined, so that it is compiled for
/// the instruction set of the function that calls it.
template <class F, class I>
[[gnu::always_inline]] inline bool screen_lanes(const float* got, const float* ref, float pass, bool absolute,
                                                float& largest) {
  constexpr std::size_t lanes = sizeof(F) / sizeof(float);
  const F zero{}, one = zero + 1.0f, bound = zero + pass;
  F most = zero;
  I within = I{} - 1;
  for (std::size_t i = 0; i < block; i += lanes) {
    F g, r;
    std::memcpy(&g, got + i, sizeof g);
    std::memcpy(&r, ref + i, sizeof r);
    F difference = g - r;
    difference = difference < zero ? -difference : difference;
    F error = difference;
    if (!absolute) {
      F scale = r < zero ? -r : r;
      scale = scale > one ? scale : one;  // NaN: 1, as std::max(1.0, NaN)
      error = difference / scale;
    }
    within &= error <= bound;  // false for NaN
    most = most > error ? most : error;
  }
  float top = most[0];
  std::int32_t all = within[0];
  for (std::size_t k = 1; k < lanes; ++k) {
    top = std::max(top, most[k]);
    all &= within[k];
  }
  largest = top;
  return all != 0;
}

/// Four lanes (SSE2, every x86-64).
inline bool screen_block(const float* got, const float* ref, float pass, bool absolute, float& largest) {
  return screen_lanes<f32x4, i32x4>(got, ref, pass, absolute, largest);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/// Eight lanes (AVX2): the same operations on each element, so the same
/// answer. BMM1's 15.7 M outputs: 8.6 ms with four lanes, 5.0 with eight,
/// where only reading both arrays takes 5.1 (the division was the bound).
__attribute__((target("avx2"))) inline bool screen_block_avx2(const float* got, const float* ref, float pass,
                                                              bool absolute, float& largest) {
  return screen_lanes<f32x8, i32x8>(got, ref, pass, absolute, largest);
}
#endif

/// Which screen first_wrong_f32 uses: the widest the processor has, or the
/// four-lane one (tests compare the two).
enum class width { widest, four_lanes };

using screen_function = bool (*)(const float*, const float*, float, bool, float&);

inline screen_function pick_screen(width w) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (w == width::widest && avx2) return screen_block_avx2;
#endif
  (void)w;
  return screen_block;
}

}  // namespace output_screen

/// first_wrong_exact() for float outputs, with the same answer: the first
/// element out of tolerance (max_error then only a lower bound of the errors
/// before it), or n and max_error the largest double-precision error,
/// exactly. Blocks of 1024 are screened in single precision; a block with an error
/// near the tolerance (within the margin), over it or NaN is checked in
/// double precision from its start, and so, at the end, are the blocks whose
/// largest single-precision error comes within the margin of the largest of
/// all (the others cannot hold the largest error). Differences and errors
/// under single precision's normal range (1.2e-38) may read as 0 (a
/// kernel's library that turns on flush-to-zero does the same to the
/// double-precision loop's conversions).
inline std::size_t first_wrong_f32(const float* got, const float* ref, std::size_t n, double tolerance, bool absolute,
                                   double& max_error, output_screen::width width = output_screen::width::widest) {
  using namespace output_screen;
  const screen_function screen = pick_screen(width);
  // No screen decides reliably for a tolerance of (almost) zero.
  double pass_bound = tolerance * (1.0 - margin);
  if (!(pass_bound >= 1e-30)) return first_wrong_exact(got, ref, n, tolerance, absolute, max_error);
  const float pass = static_cast<float>(std::min<double>(pass_bound, std::numeric_limits<float>::max()));
  std::vector<float> block_largest;  // per screened block; -1: checked in double precision already
  block_largest.reserve(n / block + 1);
  float largest_screened = 0.0f;
  double largest_checked = max_error;
  std::size_t start = 0;
  for (; start + block <= n; start += block) {
    float largest = 0.0f;
    if (screen(got + start, ref + start, pass, absolute, largest)) {
      block_largest.push_back(largest);
      largest_screened = std::max(largest_screened, largest);
      continue;
    }
    std::size_t i = first_wrong_exact(got + start, ref + start, block, tolerance, absolute, largest_checked);
    if (i < block) {
      max_error = largest_checked;  // the screened blocks before left out: a lower bound
      return start + i;
    }
    block_largest.push_back(-1.0f);
  }
  if (start < n) {
    std::size_t i = first_wrong_exact(got + start, ref + start, n - start, tolerance, absolute, largest_checked);
    if (i < n - start) {
      max_error = largest_checked;
      return start + i;
    }
  }
  // The largest error: exact where a block may hold it. An error of 0 in
  // single precision is 0 in double precision too (equal elements).
  if (largest_screened > 0.0f) {
    const double near = static_cast<double>(largest_screened) * (1.0 - margin);
    for (std::size_t b = 0; b < block_largest.size(); ++b)
      if (block_largest[b] >= 0.0f && static_cast<double>(block_largest[b]) >= near)
        first_wrong_exact(got + b * block, ref + b * block, block, tolerance, absolute, largest_checked);
  }
  max_error = largest_checked;
  return n;
}

}  // namespace tune::worker
