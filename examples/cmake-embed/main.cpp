// Runs the MatMul tuned at build time (mm.hpp, written by
// tune_engine_add_tuned_kernel), checks it against a naive reference and
// prints its GFLOP/s.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "mm.hpp"

int main() {
  long n = 0, k = 0, m = 0;
  if (std::sscanf(mm::task, "matmul:%ldx%ldx%ld", &n, &k, &m) != 3) {
    std::fprintf(stderr, "embed_matmul: %s is not a matmul task\n", mm::task);
    return 2;
  }
  std::vector<float> a(mm::A_elements), b(mm::B_elements), c(mm::C_elements);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (auto& x : a) x = uniform(rng);
  for (auto& x : b) x = uniform(rng);

  mm::run(c.data(), a.data(), b.data());
  double worst = 0.0;
  for (long i = 0; i < n; ++i)
    for (long j = 0; j < m; ++j) {
      double sum = 0.0;
      for (long p = 0; p < k; ++p) sum += double(a[i * k + p]) * b[p * m + j];
      worst = std::max(worst, std::fabs(c[i * m + j] - sum) / (std::fabs(sum) + 1.0));
    }
  if (!(worst <= 1e-3)) {
    std::fprintf(stderr, "embed_matmul: %s differs from the reference by %.3g\n", mm::task, worst);
    return 1;
  }

  // The median of calls over 0.2 s, as tune-engine measured it.
  using clock = std::chrono::steady_clock;
  std::vector<double> seconds;
  for (auto start = clock::now(); clock::now() - start < std::chrono::milliseconds(200);) {
    auto call = clock::now();
    mm::run(c.data(), a.data(), b.data());
    seconds.push_back(std::chrono::duration<double>(clock::now() - call).count());
  }
  std::nth_element(seconds.begin(), seconds.begin() + seconds.size() / 2, seconds.end());
  double median_s = seconds[seconds.size() / 2];
  std::printf("embed_matmul: %s %s\n  matches the naive reference (max error %.2g)\n", mm::task, mm::configuration_json,
              worst);
  std::printf("  %.2f GFLOP/s here, %.2f GFLOP/s when tuned\n", mm::flops / median_s / 1e9,
              mm::flops / (mm::tuned_time_ms * 1e-3) / 1e9);
  return 0;
}
