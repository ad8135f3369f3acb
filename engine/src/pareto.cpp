#include "tune/engine/pareto.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

namespace tune {

bool dominates(const std::vector<double>& a, const std::vector<double>& b) {
  bool better = false;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (a[i] > b[i]) return false;
    if (a[i] < b[i]) better = true;
  }
  return better;
}

std::vector<std::vector<std::size_t>> non_dominated_sort(const std::vector<std::vector<double>>& points) {
  std::size_t n = points.size();
  std::vector<std::vector<std::size_t>> dominated(n);  // whom i dominates
  std::vector<std::size_t> dominators(n, 0);
  std::vector<std::vector<std::size_t>> fronts(1);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      if (dominates(points[i], points[j])) {
        dominated[i].push_back(j);
        ++dominators[j];
      } else if (dominates(points[j], points[i])) {
        dominated[j].push_back(i);
        ++dominators[i];
      }
    }
  }
  for (std::size_t i = 0; i < n; ++i)
    if (dominators[i] == 0) fronts[0].push_back(i);
  while (!fronts.back().empty()) {
    std::vector<std::size_t> next;
    for (auto i : fronts.back())
      for (auto j : dominated[i])
        if (--dominators[j] == 0) next.push_back(j);
    std::sort(next.begin(), next.end());
    fronts.push_back(std::move(next));
  }
  fronts.pop_back();
  return fronts;
}

std::vector<double> crowding_distance(const std::vector<std::vector<double>>& points,
                                      const std::vector<std::size_t>& front) {
  std::size_t n = front.size();
  std::vector<double> distance(n, 0.0);
  if (n == 0) return distance;
  constexpr double inf = std::numeric_limits<double>::infinity();
  std::size_t objectives = points[front[0]].size();
  std::vector<std::size_t> order(n);
  for (std::size_t m = 0; m < objectives; ++m) {
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return points[front[a]][m] < points[front[b]][m]; });
    double low = points[front[order.front()]][m];
    double high = points[front[order.back()]][m];
    distance[order.front()] = inf;
    distance[order.back()] = inf;
    if (!(high > low)) continue;
    for (std::size_t i = 1; i + 1 < n; ++i)
      distance[order[i]] += (points[front[order[i + 1]]][m] - points[front[order[i - 1]]][m]) / (high - low);
  }
  return distance;
}

std::vector<std::size_t> environmental_selection(const std::vector<std::vector<double>>& points, std::size_t size) {
  std::vector<std::size_t> keep;
  for (auto& front : non_dominated_sort(points)) {
    if (keep.size() + front.size() <= size) {
      keep.insert(keep.end(), front.begin(), front.end());
      continue;
    }
    auto crowd = crowding_distance(points, front);
    std::vector<std::size_t> order(front.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return crowd[a] > crowd[b]; });
    for (std::size_t i = 0; keep.size() < size; ++i) keep.push_back(front[order[i]]);
    break;
  }
  return keep;
}

crowded_ranking::crowded_ranking(const std::vector<std::vector<double>>& points)
    : rank_(points.size(), 0), crowding_(points.size(), 0.0) {
  auto fronts = non_dominated_sort(points);
  for (std::size_t r = 0; r < fronts.size(); ++r) {
    auto crowd = crowding_distance(points, fronts[r]);
    for (std::size_t i = 0; i < fronts[r].size(); ++i) {
      rank_[fronts[r][i]] = r;
      crowding_[fronts[r][i]] = crowd[i];
    }
  }
}

std::size_t crowded_ranking::tournament(rng_type& rng) const {
  std::uniform_int_distribution<std::size_t> pick(0, rank_.size() - 1);
  std::size_t a = pick(rng);
  std::size_t b = pick(rng);
  if (rank_[a] != rank_[b]) return rank_[a] < rank_[b] ? a : b;
  return crowding_[a] >= crowding_[b] ? a : b;
}

double hypervolume_2d(std::vector<std::vector<double>> points, const std::vector<double>& reference) {
  std::vector<std::vector<double>> inside;
  for (auto& p : points)
    if (p.size() >= 2 && p[0] < reference[0] && p[1] < reference[1]) inside.push_back(p);
  std::sort(inside.begin(), inside.end());
  double volume = 0.0;
  double ceiling = reference[1];  // lowest second objective seen so far
  for (auto& p : inside) {
    if (p[1] >= ceiling) continue;  // dominated by an earlier point
    volume += (reference[0] - p[0]) * (ceiling - p[1]);
    ceiling = p[1];
  }
  return volume;
}

std::vector<double> objectives_of(const trial_result& result) {
  if (!result.objectives.empty()) return result.objectives;
  return {result.time_ms};
}

std::vector<trial_result> pareto_front(const std::vector<trial_result>& results) {
  std::vector<std::size_t> ok;
  std::vector<std::vector<double>> points;
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (!results[i].ok()) continue;
    ok.push_back(i);
    points.push_back(objectives_of(results[i]));
  }
  std::vector<trial_result> front;
  if (points.empty()) return front;
  auto fronts = non_dominated_sort(points);
  for (auto i : fronts.front()) front.push_back(results[ok[i]]);
  return front;
}

}  // namespace tune
