#include "tune/engine/gaussian_process.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

namespace tune {

namespace {
// Scales each of the `width` interleaved columns of table to [0, 1] (a
// constant column to 0).
void scale_columns_to_unit(std::vector<double>& table, std::size_t width) {
  if (width == 0) return;
  std::size_t rows = table.size() / width;
  for (std::size_t f = 0; f < width; ++f) {
    double low = table[f], high = table[f];
    for (std::size_t v = 0; v < rows; ++v) {
      low = std::min(low, table[v * width + f]);
      high = std::max(high, table[v * width + f]);
    }
    for (std::size_t v = 0; v < rows; ++v) {
      double& x = table[v * width + f];
      x = high > low ? (x - low) / (high - low) : 0.0;
    }
  }
}

// The exponent of the largest power of two dividing each value of a discrete
// parameter whose values are all positive integers, scaled to [0, 1], when
// that exponent varies and does not merely follow the value order (for 16,
// 32, 64 it adds nothing to the index); empty otherwise.
std::vector<double> power_of_two_alignment(const parameter& param) {
  std::vector<double> levels;
  for (std::uint64_t v = 0; v < param.cardinality(); ++v) {
    auto value = param.value(v);
    const double* number = std::get_if<double>(&value);
    if (!number || !(*number >= 1 && *number <= 9007199254740992.0) || std::floor(*number) != *number) return {};
    auto integer = static_cast<std::uint64_t>(*number);
    levels.push_back(std::countr_zero(integer));
  }
  bool rising = std::is_sorted(levels.begin(), levels.end());
  bool falling = std::is_sorted(levels.rbegin(), levels.rend());
  if (rising || falling) return {};
  scale_columns_to_unit(levels, 1);
  return levels;
}
}  // namespace

gp_encoding::gp_encoding(const search_space& space, double alignment) {
  if (!(alignment >= 0)) throw std::invalid_argument("gp_encoding: alignment weight must be non-negative");
  for (const auto& param : space.parameters()) {
    std::uint64_t count = param->cardinality();
    std::vector<double> table;
    std::size_t width = 0;
    switch (param->kind()) {
      case parameter_kind::discrete: {
        auto aligned = alignment > 0 ? power_of_two_alignment(*param) : std::vector<double>{};
        width = aligned.empty() ? 1 : 2;
        for (std::uint64_t v = 0; v < count; ++v) {
          table.push_back(count > 1 ? static_cast<double>(v) / static_cast<double>(count - 1) : 0.0);
          if (width == 2) table.push_back(alignment * aligned[v]);
        }
        break;
      }
      case parameter_kind::categorical:
        if (count <= 2) {
          width = 1;
          for (std::uint64_t v = 0; v < count; ++v) table.push_back(static_cast<double>(v));
        } else {
          width = count;
          table.assign(count * count, 0.0);
          for (std::uint64_t v = 0; v < count; ++v) table[v * count + v] = 1.0 / std::sqrt(2.0);
        }
        break;
      case parameter_kind::factorization:
      case parameter_kind::permutation: {
        width = param->feature_count();
        bool logarithmic = param->kind() == parameter_kind::factorization;
        if (count > tabulated) {
          // Too many to tabulate: computed per configuration, scaled by the
          // bounds every column of the whole table would have (log2 of the
          // factor in [0, log2 product], or a position in [1, n]).
          computed c;
          c.param = param;
          c.logarithmic = logarithmic;
          if (logarithmic) {
            auto first = std::get<std::vector<std::int64_t>>(param->value(0));
            c.low = 0;
            c.high = std::log2(static_cast<double>(first.back()));
          } else {
            c.low = 1;
            c.high = static_cast<double>(width);
          }
          computed_.emplace(tables_.size(), c);
          break;
        }
        std::vector<double> features;
        for (std::uint64_t v = 0; v < count; ++v) {
          features.clear();
          param->features(v, features);
          for (double f : features) table.push_back(logarithmic ? std::log2(std::max(f, 1.0)) : f);
        }
        scale_columns_to_unit(table, width);
        break;
      }
    }
    widths_.push_back(width);
    dimension_ += width;
    tables_.push_back(std::move(table));
  }
}

void gp_encoding::encode(const configuration& config, std::vector<double>& out) const {
  if (config.size() != tables_.size()) throw std::invalid_argument("gp_encoding: configuration of the wrong size");
  for (std::size_t p = 0; p < tables_.size(); ++p) {
    if (auto it = computed_.find(p); it != computed_.end()) {
      const auto& c = it->second;
      std::size_t at = out.size();
      c.param->features(config[p], out);
      for (std::size_t i = at; i < out.size(); ++i) {
        double x = c.logarithmic ? std::log2(std::max(out[i], 1.0)) : out[i];
        out[i] = c.high > c.low ? (x - c.low) / (c.high - c.low) : 0.0;
      }
      continue;
    }
    const double* row = tables_[p].data() + config[p] * widths_[p];
    out.insert(out.end(), row, row + widths_[p]);
  }
}

double expected_improvement(double mean, double sd, double best, double xi) {
  double gain = best - mean - xi;
  if (!(sd > 0)) return std::max(gain, 0.0);
  double z = gain / sd;
  double cdf = 0.5 * std::erfc(-z / std::sqrt(2.0));
  double pdf = std::exp(-0.5 * z * z) / std::sqrt(2.0 * M_PI);
  return gain * cdf + sd * pdf;
}

double expected_improvement_bound(double gain, double sd) {
  constexpr double phi0 = 0.3989422804014327;  // 1 / √(2π)
  if (gain >= 0) return gain + std::max(sd, 0.0) * phi0;
  if (!(sd > 0)) return 0;
  double z = gain / sd;
  return sd * phi0 * std::exp(-0.5 * z * z) / (1 + z * z);
}

gaussian_process::gaussian_process(std::size_t dimension, double length_scale, double noise)
    : dim_(dimension), length_(length_scale), noise_(noise) {
  if (dimension == 0) throw std::invalid_argument("gaussian_process: dimension must be at least 1");
  if (!(length_scale > 0)) throw std::invalid_argument("gaussian_process: length scale must be positive");
  if (!(noise > 0)) throw std::invalid_argument("gaussian_process: noise must be positive");
}

double gaussian_process::kernel(const double* a, const double* b) const {
  double squared = 0;
  for (std::size_t d = 0; d < dim_; ++d) squared += (a[d] - b[d]) * (a[d] - b[d]);
  double r = std::sqrt(5.0 * squared) / length_;
  return (1.0 + r + r * r / 3.0) * std::exp(-r);
}

void gaussian_process::set_candidates(std::vector<double> points) {
  if (observed_ > 0) throw std::logic_error("gaussian_process: candidates must be set before the first observation");
  if (points.size() % dim_ != 0) throw std::invalid_argument("gaussian_process: candidate points of the wrong size");
  candidates_ = points.size() / dim_;
  cand_ = std::move(points);
  squares_.assign(candidates_, 0.0);
  dot_y_.assign(candidates_, 0.0);
  dot_1_.assign(candidates_, 0.0);
}

void gaussian_process::set_trend(std::vector<double> candidate_trend, double slope, double strength) {
  if (observed_ > 0) throw std::logic_error("gaussian_process: the trend must be set before the first observation");
  if (candidate_trend.size() != candidates_)
    throw std::invalid_argument("gaussian_process: one trend value per candidate is needed");
  if (!std::isfinite(slope) || !(strength > 0) || !std::isfinite(strength))
    throw std::invalid_argument("gaussian_process: the trend's slope must be finite and its strength positive");
  trend_ = true;
  slope_ = slope;
  strength_ = strength;
  beta_ = std::max(slope, 0.0);
  cand_trend_ = std::move(candidate_trend);
  dot_p_.assign(candidates_, 0.0);
}

void gaussian_process::forward(std::vector<double>& b, std::size_t rows) const {
  for (std::size_t i = 0; i < rows; ++i) {
    const double* row = lower_.data() + i * (i + 1) / 2;
    double sum = b[i];
    for (std::size_t j = 0; j < i; ++j) sum -= row[j] * b[j];
    b[i] = sum / row[i];
  }
}

gaussian_process::solved gaussian_process::solve_point(const double* x) const {
  solved out;
  out.v.resize(observed_);
  for (std::size_t j = 0; j < observed_; ++j) out.v[j] = kernel(points_.data() + j * dim_, x);
  forward(out.v, observed_);
  for (std::size_t j = 0; j < observed_; ++j) {
    out.squared += out.v[j] * out.v[j];
    out.dot_y += out.v[j] * solved_[j];
    out.dot_1 += out.v[j] * ones_[j];
    if (trend_) out.dot_p += out.v[j] * trend_solved_[j];
  }
  return out;
}

void gaussian_process::add(const double* x, double y, double extra_noise, double trend) {
  if (!std::isfinite(y)) throw std::invalid_argument("gaussian_process: target must be finite");
  if (!(extra_noise >= 0) || !std::isfinite(extra_noise))
    throw std::invalid_argument("gaussian_process: extra noise must be finite and non-negative");
  std::size_t n = observed_;
  // New row of L: l = L⁻¹ k(X, x), diagonal sqrt(k(x, x) + noise - |l|²).
  auto [row, squared, dot_y, dot_1, dot_p] = solve_point(x);
  double diagonal = std::sqrt(std::max(1.0 + noise_ + extra_noise - squared, noise_ * 1e-6));
  lower_.insert(lower_.end(), row.begin(), row.end());
  lower_.push_back(diagonal);
  points_.insert(points_.end(), x, x + dim_);
  double u = (y - dot_y) / diagonal, e = (1.0 - dot_1) / diagonal;
  solved_.push_back(u);
  ones_.push_back(e);
  sum_ += y;
  sum_squares_ += y * y;
  lowest_ = n == 0 ? y : std::min(lowest_, y);
  // Standardisation, once per add rather than per posterior query.
  double count = static_cast<double>(n + 1);
  shift_ = sum_ / count;
  double variance = sum_squares_ / count - shift_ * shift_;
  scale_ = variance > 1e-24 * std::max(1.0, shift_ * shift_) ? std::sqrt(variance) : 1.0;
  double t = 0;
  if (trend_) {
    t = (trend - dot_p) / diagonal;
    trend_solved_.push_back(t);
    pp_ += t * t;
    py_ += t * u;
    p1_ += t * e;
    // pᵀK⁻¹y on the standardised targets, ridged towards the prior slope.
    double py = (py_ - shift_ * p1_) / scale_;
    beta_ = std::max((py + strength_ * slope_) / (pp_ + strength_), 0.0);
  }

  // Each candidate's v gains the entry (k(x, c) - l · v) / diagonal.
  std::vector<double> column(candidates_);
  for (std::size_t c = 0; c < candidates_; ++c) column[c] = kernel(cand_.data() + c * dim_, x);
  for (std::size_t j = 0; j < n; ++j) {
    const float* v = columns_.data() + j * candidates_;
    double l = row[j];
    for (std::size_t c = 0; c < candidates_; ++c) column[c] -= l * static_cast<double>(v[c]);
  }
  std::size_t at = columns_.size();
  columns_.resize(at + candidates_);
  for (std::size_t c = 0; c < candidates_; ++c) {
    double v = column[c] / diagonal;
    columns_[at + c] = static_cast<float>(v);
    squares_[c] += v * v;
    dot_y_[c] += v * u;
    dot_1_[c] += v * e;
    if (trend_) dot_p_[c] += v * t;
  }
  ++observed_;
}

double gaussian_process::best() const {
  return observed_ ? (lowest_ - shift_) / scale_ : std::numeric_limits<double>::infinity();
}

double gaussian_process::mean_of(double dot_y, double dot_1) const { return (dot_y - shift_ * dot_1) / scale_; }

double gaussian_process::variance_of(double squared) const { return std::max(1.0 + noise_ - squared, 0.0); }

double gaussian_process::candidate_mean(std::size_t i, bool with_trend) const {
  double mean = mean_of(dot_y_[i], dot_1_[i]);
  return trend_ && with_trend ? mean + beta_ * (cand_trend_[i] - dot_p_[i]) : mean;
}

double gaussian_process::candidate_variance(std::size_t i) const { return variance_of(squares_[i]); }

std::pair<double, double> gaussian_process::predict(const double* x, double trend) const {
  auto p = solve_point(x);
  double mean = mean_of(p.dot_y, p.dot_1);
  if (trend_) mean += beta_ * (trend - p.dot_p);
  return {mean, variance_of(p.squared)};
}

}  // namespace tune
