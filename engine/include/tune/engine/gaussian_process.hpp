#pragma once
// Gaussian-process regression for Bayesian optimisation over a search space.
//
// Kernel: Matérn 5/2 with unit signal variance and one length scale ℓ,
//   k(a, b) = (1 + √5 r/ℓ + 5 r² / (3 ℓ²)) exp(-√5 r/ℓ),  r = |a - b|,
// plus `noise` on the diagonal of the observed points. The posterior at a
// point x given observed points X with targets y (which the caller
// standardises) is
//   mean = k(x, X) K⁻¹ y,  variance = k(x, x) + noise - k(x, X) K⁻¹ k(X, x),
// with K = k(X, X) + noise I = L Lᵀ (Cholesky). For a fixed set of candidate
// points the vectors v = L⁻¹ k(X, x) are extended by one entry per added
// observation (O(candidates × observations) per add). The targets are
// standardised by their running mean m and deviation s, and
//   v · L⁻¹ (y - m) / s = (v · L⁻¹ y - m v · L⁻¹ 1) / s,
// where both dot products grow by one term per add (earlier entries of L⁻¹ y
// do not change), so a candidate's posterior costs O(1). Arbitrary points go
// through a triangular solve (O(observations²)).
//
// gp_encoding maps a configuration to coordinates in [0, 1]: a discrete
// parameter to index / (count - 1), plus, with an alignment weight w > 0 and
// positive integer values, w (a - min a) / (max a - min a) where a is the
// exponent of the largest power of two dividing the value (block and tile
// sizes of 32 and 128 behave alike on a GPU, unlike their neighbours 48 and
// 112), added only when a varies and does not simply follow the value order;
// a two-valued categorical parameter to 0 or 1,
// a categorical one with more values to a one-hot vector scaled by 1/√2 (any
// two categories at distance 1), a factorization or permutation to its
// features, each scaled to [0, 1] over the parameter's values (factors on a
// log scale).

#include <cstddef>
#include <map>
#include <utility>
#include <vector>

#include "tune/engine/space.hpp"

namespace tune {

class gp_encoding {
 public:
  /// The features of a factorization or permutation parameter of at most
  /// `tabulated` values are tabulated, those of a larger one computed per
  /// configuration with the same scaling. Throws std::invalid_argument when
  /// the alignment weight is negative; 0 leaves the alignment out.
  explicit gp_encoding(const search_space& space, double alignment = 0.0);
  std::size_t dimension() const { return dimension_; }
  /// Appends the coordinates of a configuration to out.
  void encode(const configuration& config, std::vector<double>& out) const;

 private:
  std::size_t dimension_ = 0;
  // Per parameter: the coordinates of each value index, concatenated.
  std::vector<std::size_t> widths_;
  std::vector<std::vector<double>> tables_;
  static constexpr std::uint64_t tabulated = 100000;
  struct computed {
    parameter_ptr param;
    bool logarithmic = false;  // log2 of a factor (factorization) or a position (permutation)
    double low = 0, high = 1;
  };
  std::map<std::size_t, computed> computed_;  // by parameter position
};

/// Expected improvement below `best` (minimisation) of a normal posterior
/// with this mean and standard deviation, less a margin xi:
/// (best - mean - xi) Φ(z) + sd φ(z), z = (best - mean - xi) / sd; for sd = 0
/// it is max(best - mean - xi, 0).
double expected_improvement(double mean, double sd, double best, double xi);

/// An upper bound of expected_improvement with gain = best - mean - xi, cheap
/// enough to skip candidates: gain + sd φ(0) for gain >= 0; for gain < 0,
/// with z = gain / sd, EI = sd (φ(z) + z Φ(z)) <= sd φ(z) / (1 + z²) by the
/// Mills-ratio bound Φ(z) >= φ(z) |z| / (1 + z²) for z < 0.
double expected_improvement_bound(double gain, double sd);

class gaussian_process {
 public:
  /// Throws std::invalid_argument unless dimension >= 1, length_scale > 0
  /// and noise > 0.
  gaussian_process(std::size_t dimension, double length_scale, double noise);

  double kernel(const double* a, const double* b) const;

  /// Points whose posterior is tracked (row-major, count × dimension). Only
  /// before the first add().
  void set_candidates(std::vector<double> points);
  std::size_t candidate_count() const { return candidates_; }

  /// A prior trend (transfer from another device or run): each candidate's
  /// value p of a known predictor (the standardised log time measured
  /// elsewhere), and a prior belief `slope` ± 1/√`strength` in the slope β
  /// of the standardised targets on p. The model becomes y = β p + g with g
  /// the Gaussian process, and β its generalised least-squares estimate
  /// ridged towards `slope`, β = (pᵀK⁻¹y + strength·slope) / (pᵀK⁻¹p +
  /// strength), clamped at 0 so that a predictor that runs against the data
  /// is ignored rather than inverted. Only before the first add().
  void set_trend(std::vector<double> candidate_trend, double slope, double strength);
  /// The current slope β (0 without a trend).
  double trend_slope() const { return beta_; }

  /// Adds an observed point with its target. O(candidates × observations).
  /// extra_noise (>= 0) adds to this observation's noise only: the model
  /// need not pass through a target that is a guess (a failed
  /// configuration's stand-in time). `trend` is the point's predictor value
  /// (unused without set_trend()).
  void add(const double* x, double y, double extra_noise = 0.0, double trend = 0.0);
  std::size_t size() const { return observed_; }
  double noise() const { return noise_; }
  double length_scale() const { return length_; }

  /// The model is fitted to the standardised targets (y - shift) / scale:
  /// shift is their mean, scale their standard deviation (1 while it is 0).
  double shift() const { return shift_; }
  double scale() const { return scale_; }
  /// Smallest standardised target (+inf before the first add()).
  double best() const;

  /// Posterior mean and variance of candidate i (< candidate_count()), in
  /// standardised units. Without the trend (with_trend false, or none set)
  /// the mean is that of the Gaussian process alone fitted to the targets.
  double candidate_mean(std::size_t i, bool with_trend = true) const;
  double candidate_variance(std::size_t i) const;
  /// Posterior mean and variance at any point with this predictor value, in
  /// standardised units (O(observations²)).
  std::pair<double, double> predict(const double* x, double trend = 0.0) const;

 private:
  // Forward solve L z = b for the first `rows` rows of L.
  void forward(std::vector<double>& b, std::size_t rows) const;
  // v = L⁻¹ k(X, x) with |v|², v · L⁻¹ y and v · L⁻¹ 1.
  struct solved {
    std::vector<double> v;
    double squared = 0, dot_y = 0, dot_1 = 0, dot_p = 0;
  };
  solved solve_point(const double* x) const;
  // Posterior mean from v · L⁻¹ y and v · L⁻¹ 1, variance from |v|².
  double mean_of(double dot_y, double dot_1) const;
  double variance_of(double squared) const;

  std::size_t dim_;
  double length_;
  double noise_;
  std::size_t candidates_ = 0;
  std::size_t observed_ = 0;
  std::vector<double> points_;  // observed, row-major
  double sum_ = 0, sum_squares_ = 0, lowest_ = 0;
  double shift_ = 0, scale_ = 1;  // from sum_ and sum_squares_, updated by add()
  std::vector<double> lower_;     // L packed by rows: row i holds i + 1 entries
  std::vector<double> solved_;    // L⁻¹ y (raw targets), extended one entry per add
  std::vector<double> ones_;      // L⁻¹ 1
  std::vector<double> cand_;      // candidates, row-major
  // v vectors: column j (observation) holds one entry per candidate, in
  // single precision to halve the memory each add() streams through; the
  // running sums stay in double.
  std::vector<float> columns_;
  std::vector<double> squares_;  // per candidate: |v|²
  std::vector<double> dot_y_;    // per candidate: v · L⁻¹ y
  std::vector<double> dot_1_;    // per candidate: v · L⁻¹ 1
  // Prior trend: per candidate p and v · L⁻¹ p; L⁻¹ p of the observations;
  // the running sums (L⁻¹p)·(L⁻¹p), ·(L⁻¹y), ·(L⁻¹1).
  bool trend_ = false;
  double slope_ = 0, strength_ = 0, beta_ = 0;
  std::vector<double> cand_trend_, dot_p_, trend_solved_;
  double pp_ = 0, py_ = 0, p1_ = 0;
};

}  // namespace tune
