#pragma once
// The median of a sample: what the measuring path reports of a kernel's timed
// runs, of a duel's or a confirmation's rounds, and of a vendor comparison's
// ratios; one definition for all of them.

#include <algorithm>
#include <cmath>
#include <vector>

namespace tune {

/// The median of values already sorted ascending: the middle one, the mean of
/// the two middle ones for an even count; NaN when there are none.
inline double sorted_median(const std::vector<double>& sorted) {
  const auto n = sorted.size();
  if (n == 0) return std::nan("");
  return n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}

/// The median of `values` in any order (sorted_median of them sorted).
inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return sorted_median(values);
}

}  // namespace tune
