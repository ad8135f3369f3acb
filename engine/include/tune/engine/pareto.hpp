#pragma once
// Pareto dominance for minimised objective vectors (NSGA-II's fast
// non-dominated sort and crowding distance).

#include <cstddef>
#include <vector>

#include "tune/engine/parameter.hpp"
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

/// NSGA-II's environmental selection: indices of at most `size` points,
/// whole fronts first, the last front that does not fit cut by descending
/// crowding distance (ties keep the lower index).
std::vector<std::size_t> environmental_selection(const std::vector<std::vector<double>>& points, std::size_t size);

/// Keeps the environmental_selection() of `points` in both vectors (members[i]
/// belongs to points[i]), in selection order.
template <class Member>
void keep_survivors(std::vector<std::vector<double>>& points, std::vector<Member>& members, std::size_t size) {
  std::vector<std::vector<double>> kept_points;
  std::vector<Member> kept_members;
  for (auto i : environmental_selection(points, size)) {
    kept_points.push_back(std::move(points[i]));
    kept_members.push_back(std::move(members[i]));
  }
  points = std::move(kept_points);
  members = std::move(kept_members);
}

/// Front rank and crowding distance of every point, and NSGA-II's binary
/// tournament on them (lower rank wins, then larger crowding distance).
class crowded_ranking {
 public:
  crowded_ranking() = default;
  explicit crowded_ranking(const std::vector<std::vector<double>>& points);
  std::size_t size() const { return rank_.size(); }
  std::size_t rank(std::size_t i) const { return rank_[i]; }
  double crowding(std::size_t i) const { return crowding_[i]; }
  /// The winner of two uniformly drawn points (size() must be > 0).
  std::size_t tournament(rng_type& rng) const;

 private:
  std::vector<std::size_t> rank_;
  std::vector<double> crowding_;
};

/// The area dominated by the points (two minimised objectives) and bounded
/// by `reference`; points not better than the reference in both count 0.
double hypervolume_2d(std::vector<std::vector<double>> points, const std::vector<double>& reference);

/// The objectives a result is ranked on: `objectives`, or {time_ms} when empty.
std::vector<double> objectives_of(const trial_result& result);

/// The ok results that no other ok result dominates, in input order.
std::vector<trial_result> pareto_front(const std::vector<trial_result>& results);

}  // namespace tune
