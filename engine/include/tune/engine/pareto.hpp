#pragma once
// Pareto dominance for minimised objective vectors (NSGA-II's fast
// non-dominated sort and crowding distance).

#include <cstddef>
#include <vector>

#include "tune/engine/result.hpp"

namespace tune {

/// True when a is no worse than b in every objective and better in one.
bool dominates(const std::vector<double>& a, const std::vector<double>& b);

/// Fronts of point indices: front 0 is non-dominated, front i is
/// non-dominated once fronts 0..i-1 are removed. Indices ascend in each front.
std::vector<std::vector<std::size_t>> non_dominated_sort(const std::vector<std::vector<double>>& points);

/// Crowding distance of each member of `front` (same order): the sum over
/// objectives of the normalised gap between its neighbours; the extremes of
/// each objective get infinity.
std::vector<double> crowding_distance(const std::vector<std::vector<double>>& points,
                                      const std::vector<std::size_t>& front);

/// The objectives a result is ranked on: `objectives`, or {time_ms} when empty.
std::vector<double> objectives_of(const trial_result& result);

/// The ok results that no other ok result dominates, in input order.
std::vector<trial_result> pareto_front(const std::vector<trial_result>& results);

}  // namespace tune
