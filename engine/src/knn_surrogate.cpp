// The k-d tree covers the rows present at its last build; rows added since
// (the tail) are searched exhaustively and merged, and the tree is rebuilt
// once the tail outgrows a sixteenth of it, so interleaved add/predict stays
// cheap and every answer is exact.
#include <algorithm>
#include <cmath>
#include <limits>
#include <nanoflann.hpp>
#include <stdexcept>
#include <unordered_map>

#include "tune/engine/surrogate.hpp"

namespace tune {

double canberra_distance(const double* a, const double* b, std::size_t n) {
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double den = std::abs(a[i]) + std::abs(b[i]);
    if (den > 0) sum += std::abs(a[i] - b[i]) / den;
  }
  return sum;
}

namespace {

struct rows_view {
  const std::vector<double>* data = nullptr;
  std::size_t dim = 0;
  std::size_t count = 0;  // rows covered by the tree

  std::size_t kdtree_get_point_count() const { return count; }
  double kdtree_get_pt(std::size_t row, std::size_t d) const { return (*data)[row * dim + d]; }
  template <class box>
  bool kdtree_get_bbox(box&) const {
    return false;
  }
};

struct canberra_metric {
  using ElementType = double;
  using DistanceType = double;
  const rows_view& data_source;
  explicit canberra_metric(const rows_view& source) : data_source(source) {}

  double evalMetric(const double* a, std::size_t row, std::size_t size, double worst = -1) const {
    const double* b = data_source.data->data() + row * data_source.dim;
    double sum = 0;
    for (std::size_t i = 0; i < size; ++i) {
      double den = std::abs(a[i]) + std::abs(b[i]);
      if (den > 0) sum += std::abs(a[i] - b[i]) / den;
      if (worst > 0 && sum > worst) return sum;
    }
    return sum;
  }
  // One dimension's term; for non-negative values it grows with |a - b|, which
  // is what makes the tree's bound on a splitting plane exact.
  template <class U, class V>
  double accum_dist(const U a, const V b, std::size_t) const {
    double den = std::abs(a) + std::abs(b);
    return den > 0 ? std::abs(a - b) / den : 0.0;
  }
};

using kd_tree = nanoflann::KDTreeSingleIndexAdaptor<canberra_metric, rows_view, -1, std::size_t>;

}  // namespace

struct knn_surrogate::impl {
  search_space_ptr space;
  std::size_t k;
  std::size_t dim;
  std::vector<double> data;
  std::vector<double> values;
  std::unordered_map<configuration, std::size_t, configuration_hash> rows;
  bool negative = false;  // any negative feature: the tree would not be exact
  rows_view view;
  std::unique_ptr<kd_tree> tree;

  std::size_t size() const { return values.size(); }

  void rebuild() {
    view = rows_view{&data, dim, size()};
    tree = std::make_unique<kd_tree>(dim, view, nanoflann::KDTreeSingleIndexAdaptorParams(16));
  }

  // The k nearest (distance, row), nearest first.
  std::vector<std::pair<double, std::size_t>> nearest(const double* query, bool exhaustive) {
    std::size_t n = size();
    std::size_t want = std::min(k, n);
    std::vector<std::pair<double, std::size_t>> best;
    std::size_t from = 0;
    if (!exhaustive && !negative) {
      std::size_t tail = n - (tree ? view.count : 0);
      if (!tree || tail > std::max<std::size_t>(64, view.count / 16)) rebuild();
      std::vector<std::size_t> idx(want);
      std::vector<double> dist(want);
      std::size_t found = tree->knnSearch(query, want, idx.data(), dist.data());
      for (std::size_t i = 0; i < found; ++i) best.emplace_back(dist[i], idx[i]);
      from = view.count;
    }
    for (std::size_t row = from; row < n; ++row)
      best.emplace_back(canberra_distance(query, data.data() + row * dim, dim), row);
    std::size_t keep = std::min(want, best.size());
    std::partial_sort(best.begin(), best.begin() + static_cast<std::ptrdiff_t>(keep), best.end());
    best.resize(keep);
    return best;
  }

  double predict(const configuration& config, bool exhaustive) {
    if (values.empty()) return 0.0;
    if (auto it = rows.find(config); it != rows.end()) return values[it->second];
    auto query = space->features(config);
    auto best = nearest(query.data(), exhaustive);
    double weighted = 0, total = 0, exact = 0;
    std::size_t exact_count = 0;
    for (auto& [d, row] : best) {
      if (d == 0) {
        exact += values[row];
        ++exact_count;
      } else {
        weighted += values[row] / d;
        total += 1.0 / d;
      }
    }
    // Equal features at distance 0 stand for the configuration itself.
    if (exact_count) return exact / static_cast<double>(exact_count);
    return weighted / total;
  }
};

knn_surrogate::knn_surrogate(search_space_ptr space, std::size_t k) : impl_(std::make_unique<impl>()) {
  if (!space) throw std::invalid_argument("knn_surrogate: no search space");
  if (k == 0) throw std::invalid_argument("knn_surrogate: k must be at least 1");
  impl_->space = std::move(space);
  impl_->k = k;
  impl_->dim = impl_->space->feature_count();
}

knn_surrogate::~knn_surrogate() = default;
knn_surrogate::knn_surrogate(knn_surrogate&&) noexcept = default;
knn_surrogate& knn_surrogate::operator=(knn_surrogate&&) noexcept = default;

void knn_surrogate::add(const configuration& config, double value) {
  auto& s = *impl_;
  if (auto it = s.rows.find(config); it != s.rows.end()) {
    s.values[it->second] = value;
    return;
  }
  auto features = s.space->features(config);
  for (double f : features) s.negative = s.negative || f < 0;
  s.data.insert(s.data.end(), features.begin(), features.end());
  s.rows.emplace(config, s.values.size());
  s.values.push_back(value);
}

double knn_surrogate::predict(const configuration& config) const { return impl_->predict(config, false); }
double knn_surrogate::predict_exhaustive(const configuration& config) const { return impl_->predict(config, true); }
std::size_t knn_surrogate::size() const { return impl_->size(); }
std::size_t knn_surrogate::k() const { return impl_->k; }

}  // namespace tune
