#include "tune/engine/space_filling.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace tune {

std::vector<double> latin_hypercube(std::size_t points, std::size_t dimension, rng_type& rng) {
  std::vector<double> out(points * dimension);
  std::vector<std::size_t> strata(points);
  std::uniform_real_distribution<double> within(0.0, 1.0);
  for (std::size_t d = 0; d < dimension; ++d) {
    std::iota(strata.begin(), strata.end(), std::size_t{0});
    for (std::size_t i = points; i > 1; --i) {
      std::uniform_int_distribution<std::size_t> pick(0, i - 1);
      std::swap(strata[i - 1], strata[pick(rng)]);
    }
    for (std::size_t i = 0; i < points; ++i) {
      double u = (static_cast<double>(strata[i]) + within(rng)) / static_cast<double>(points);
      // Rounding may reach the stratum's upper end; keep it inside.
      double upper = static_cast<double>(strata[i] + 1) / static_cast<double>(points);
      out[i * dimension + d] = std::min(u, std::nextafter(upper, 0.0));
    }
  }
  return out;
}

double minimum_distance(const std::vector<double>& points, std::size_t dimension) {
  double best = std::numeric_limits<double>::infinity();
  if (dimension == 0) return best;
  std::size_t rows = points.size() / dimension;
  for (std::size_t a = 0; a < rows; ++a)
    for (std::size_t b = a + 1; b < rows; ++b) {
      double squared = 0;
      for (std::size_t d = 0; d < dimension; ++d) {
        double diff = points[a * dimension + d] - points[b * dimension + d];
        squared += diff * diff;
      }
      best = std::min(best, squared);
    }
  return std::sqrt(best);
}

namespace {
// A value of a parameter present in the pool: how many members hold it and the
// middle of its interval of the pool's cumulative distribution.
struct present_value {
  std::uint64_t value;
  double count;
  double mid;
};

// The values of parameter p present in the pool, in increasing index order:
// no table over all of a parameter's values (a factorization may have 10^13).
std::vector<present_value> present_values(std::size_t p, const std::vector<configuration>& pool) {
  std::vector<std::uint64_t> values;
  values.reserve(pool.size());
  for (const auto& config : pool) values.push_back(config[p]);
  std::sort(values.begin(), values.end());
  std::vector<present_value> out;
  double total = static_cast<double>(pool.size());
  for (std::size_t i = 0; i < values.size();) {
    std::size_t j = i;
    while (j < values.size() && values[j] == values[i]) ++j;
    double count = static_cast<double>(j - i);
    out.push_back({values[i], count, (static_cast<double>(i) + 0.5 * count) / total});
    i = j;
  }
  return out;
}
}  // namespace

std::vector<std::vector<double>> quantile_coordinates(const search_space& space,
                                                      const std::vector<configuration>& pool) {
  std::vector<std::vector<double>> tables;
  for (std::size_t p = 0; p < space.dimension(); ++p) {
    auto present = present_values(p, pool);
    std::vector<double> table(space.parameters()[p]->cardinality(), 0.5);  // 0.5 for an empty pool
    // An absent value maps to where it would start: the share below it.
    std::size_t next = 0;
    double below = 0, total = static_cast<double>(pool.size());
    for (std::uint64_t v = 0; v < table.size() && !pool.empty(); ++v) {
      if (next < present.size() && present[next].value == v) {
        table[v] = present[next].mid;
        below += present[next++].count;
      } else {
        table[v] = below / total;
      }
    }
    tables.push_back(std::move(table));
  }
  return tables;
}

std::vector<std::size_t> space_filling_design(const search_space& space, const std::vector<configuration>& pool,
                                              const std::vector<bool>& taken, std::size_t count, std::size_t tries,
                                              rng_type& rng) {
  if (tries == 0) throw std::invalid_argument("space_filling_design: tries must be at least 1");
  if (!taken.empty() && taken.size() != pool.size())
    throw std::invalid_argument("space_filling_design: taken must have one flag per pool member");
  const std::size_t dim = space.dimension();
  std::vector<std::vector<present_value>> present;
  for (std::size_t p = 0; p < dim; ++p) present.push_back(present_values(p, pool));
  std::vector<float> coords;  // the pool's quantile coordinates, row-major
  coords.reserve(pool.size() * dim);
  for (const auto& config : pool)
    for (std::size_t p = 0; p < dim; ++p) {
      auto at = std::lower_bound(present[p].begin(), present[p].end(), config[p],
                                 [](const present_value& a, std::uint64_t v) { return a.value < v; });
      coords.push_back(static_cast<float>(at->mid));
    }
  std::size_t available = 0;
  for (std::size_t c = 0; c < pool.size(); ++c) available += taken.empty() || !taken[c];
  count = std::min(count, available);

  std::vector<std::size_t> best;
  double best_spread = -1;
  std::vector<bool> used;
  for (std::size_t t = 0; t < tries; ++t) {
    auto design = latin_hypercube(count, dim, rng);
    used = taken.empty() ? std::vector<bool>(pool.size(), false) : taken;
    std::vector<std::size_t> members;
    std::vector<double> snapped;
    for (std::size_t i = 0; i < count; ++i) {
      const double* target = design.data() + i * dim;
      std::size_t nearest = pool.size();
      double nearest_squared = std::numeric_limits<double>::infinity();
      for (std::size_t c = 0; c < pool.size(); ++c) {
        if (used[c]) continue;
        const float* point = coords.data() + c * dim;
        double squared = 0;
        for (std::size_t d = 0; d < dim && squared < nearest_squared; ++d) {
          double diff = static_cast<double>(point[d]) - target[d];
          squared += diff * diff;
        }
        if (squared < nearest_squared) nearest_squared = squared, nearest = c;
      }
      used[nearest] = true;
      members.push_back(nearest);
      snapped.insert(snapped.end(), coords.begin() + static_cast<std::ptrdiff_t>(nearest * dim),
                     coords.begin() + static_cast<std::ptrdiff_t>((nearest + 1) * dim));
    }
    double spread = minimum_distance(snapped, dim);
    if (spread > best_spread) best_spread = spread, best = std::move(members);
  }
  return best;
}

}  // namespace tune
