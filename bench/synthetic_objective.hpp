#pragma once
// The smooth synthetic objective of the strategy benchmarks on the OpEvo
// MatMul space: the squared distance of log2 of each factor from a target
// tiling; 1 ms at the optimum.

#include <algorithm>
#include <cmath>

#include "tune/engine/space.hpp"

namespace tune::bench {

inline double synthetic_ms(const search_space& space, const configuration& config) {
  static const double target[] = {3, 2, 2, 2, 4, 3, 2, 1, 4, 3, 3};
  auto features = space.features(config);
  double squared = 0;
  for (std::size_t i = 0; i < features.size() && i < 11; ++i) {
    double d = std::log2(std::max(features[i], 1.0)) - target[i];
    squared += d * d;
  }
  return 1.0 + 0.1 * squared;
}

}  // namespace tune::bench
