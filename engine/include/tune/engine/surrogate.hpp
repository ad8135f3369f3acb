#pragma once
// NoSE's weighted k-NN regressor (Eq. 1-4): the prediction for a
// configuration is the average of the values of its k nearest observed
// neighbours in feature space, weighted by 1 / Canberra distance. A
// configuration that was observed returns its observed value.
//
// Canberra distance: sum over features of |x - z| / (|x| + |z|), a 0/0 term
// counting 0. Every search below is exact:
// - value tables (the default where parameters have few values): the distance
//   is a sum over parameters of a term that depends only on the query's and
//   the point's value of that parameter, so each query first tabulates that
//   term for every value of every parameter, then scans the observations with
//   one lookup per parameter and no division, bucketed by the values of the
//   first parameters so that a bucket whose own terms already exceed the k-th
//   distance found is skipped (about 11 µs for 10,000 observations of three
//   factorization parameters and 27 µs for 100,000, bench/bench_surrogate);
// - a nanoflann k-d tree: for non-negative features each term grows with
//   |x - z|, so pruning on a splitting plane is exact (negative features fall
//   back to the exhaustive scan);
// - an exhaustive scan over the feature vectors.

#include <cstddef>
#include <memory>
#include <vector>

#include "tune/engine/space.hpp"

namespace tune {

/// Canberra distance of two equally long feature vectors.
double canberra_distance(const double* a, const double* b, std::size_t n);

enum class knn_search { automatic, value_tables, kd_tree, exhaustive };

class knn_surrogate {
 public:
  explicit knn_surrogate(search_space_ptr space, std::size_t k = 9);
  ~knn_surrogate();
  knn_surrogate(knn_surrogate&&) noexcept;
  knn_surrogate& operator=(knn_surrogate&&) noexcept;

  /// Records an observed value; observing a configuration again replaces it.
  void add(const configuration& config, double value);
  /// The weighted k-NN prediction; 0 when nothing was added yet. `automatic`
  /// uses value tables when the parameters have at most 65536 values in all,
  /// else the k-d tree.
  double predict(const configuration& config, knn_search search = knn_search::automatic) const;

  std::size_t size() const;
  std::size_t k() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace tune
