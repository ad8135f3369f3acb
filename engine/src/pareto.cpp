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
