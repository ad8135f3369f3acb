#pragma once
// NoSE's weighted k-NN regressor (Eq. 1-4): the prediction for a
// configuration is the average of the values of its k nearest observed
// neighbours in feature space, weighted by 1 / Canberra distance. A
// configuration that was observed returns its observed value.
//
// Canberra distance: sum over features of |x - z| / (|x| + |z|), a 0/0 term
// counting 0. For non-negative features each term grows with |x - z|, so a
// k-d tree prunes exactly; spaces with negative features fall back to an
// exhaustive search.

#include <cstddef>
#include <memory>
#include <vector>

#include "tune/engine/space.hpp"

namespace tune {

/// Canberra distance of two equally long feature vectors.
double canberra_distance(const double* a, const double* b, std::size_t n);

class knn_surrogate {
 public:
  explicit knn_surrogate(search_space_ptr space, std::size_t k = 9);
  ~knn_surrogate();
  knn_surrogate(knn_surrogate&&) noexcept;
  knn_surrogate& operator=(knn_surrogate&&) noexcept;

  /// Records an observed value; observing a configuration again replaces it.
  void add(const configuration& config, double value);
  /// The weighted k-NN prediction; 0 when nothing was added yet.
  double predict(const configuration& config) const;
  /// The same prediction by exhaustive search (for checks and tiny sets).
  double predict_exhaustive(const configuration& config) const;

  std::size_t size() const;
  std::size_t k() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace tune
