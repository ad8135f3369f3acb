#include "tune/engine/nearest_configuration.hpp"

#include <cmath>
#include <limits>

namespace tune {
namespace {

/// Distance between two splits of (possibly different) extents: sum of
/// w_i |log(a_i / b_i)|, the later (inner) factors weighing more, w_i = 1 +
/// i / length, so that of equally near splits the one that keeps the inner
/// tile sizes wins; infinite for different lengths.
double split_distance(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double d = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] <= 0 || b[i] <= 0) return std::numeric_limits<double>::infinity();
    const double weight = 1.0 + static_cast<double>(i) / static_cast<double>(a.size());
    d += weight * std::abs(std::log(static_cast<double>(a[i]) / static_cast<double>(b[i])));
  }
  return d;
}

std::optional<std::uint64_t> nearest_index(const parameter& p, const parameter_value& wanted) {
  try {
    return p.index_of(wanted);
  } catch (const std::invalid_argument&) {
  }
  const auto kind = p.kind();
  if (kind != parameter_kind::factorization && kind != parameter_kind::discrete) return std::nullopt;
  std::optional<std::uint64_t> best;
  double best_distance = std::numeric_limits<double>::infinity();
  for (std::uint64_t i = 0; i < p.cardinality(); ++i) {
    const auto v = p.value(i);
    double d = std::numeric_limits<double>::infinity();
    if (kind == parameter_kind::factorization && std::holds_alternative<std::vector<std::int64_t>>(wanted) &&
        std::holds_alternative<std::vector<std::int64_t>>(v))
      d = split_distance(std::get<std::vector<std::int64_t>>(wanted), std::get<std::vector<std::int64_t>>(v));
    else if (kind == parameter_kind::discrete && std::holds_alternative<double>(wanted) &&
             std::holds_alternative<double>(v))
      d = std::abs(std::get<double>(wanted) - std::get<double>(v));
    if (d < best_distance) {
      best_distance = d;
      best = i;
    }
  }
  return best;
}

}  // namespace

std::optional<configuration> nearest_configuration(const search_space& space,
                                                   const std::map<std::string, parameter_value>& values) {
  configuration config(space.parameters().size());
  for (std::size_t i = 0; i < config.size(); ++i) {
    const auto& p = *space.parameters()[i];
    auto it = values.find(p.name());
    if (it == values.end()) return std::nullopt;
    auto index = nearest_index(p, it->second);
    if (!index) return std::nullopt;
    config[i] = *index;
  }
  if (!space.is_valid(config)) return std::nullopt;
  return config;
}

}  // namespace tune
