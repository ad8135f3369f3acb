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
  bool negative = false;             // any negative feature: the tree would not be exact
  std::vector<std::uint32_t> codes;  // value index per parameter, row-major
  // Per parameter: its features offset and count, and every value's features
  // (empty unless the space is small enough for value tables).
  std::vector<std::size_t> offsets, widths;
  // Per parameter and feature, the distinct feature values; per parameter,
  // each value's features as indices into those (few divisions per query).
  std::vector<std::vector<std::vector<double>>> distinct;
  std::vector<std::vector<std::uint32_t>> feature_codes;
  std::vector<double> terms;                // per query scratch
  std::vector<std::vector<double>> tables;  // per query scratch
  bool tables_possible = false;
  // Rows by the value of the parameter with the most values: the table term
  // of that parameter bounds every distance in a bucket from below, so
  // buckets are visited nearest first and the scan stops at the k-th best.
  std::size_t bucket_param = 0;
  std::vector<std::vector<std::uint32_t>> buckets;
  rows_view view;
  std::unique_ptr<kd_tree> tree;

  std::size_t size() const { return values.size(); }

  void rebuild() {
    view = rows_view{&data, dim, size()};
    tree = std::make_unique<kd_tree>(dim, view, nanoflann::KDTreeSingleIndexAdaptorParams(16));
  }

  void prepare_tables() {
    const auto& params = space->parameters();
    std::uint64_t total = 0;
    for (auto& p : params) total += std::min<std::uint64_t>(p->cardinality(), 1u << 20);
    tables_possible = total <= (1u << 16);
    std::size_t offset = 0;
    for (auto& p : params) {
      offsets.push_back(offset);
      widths.push_back(p->feature_count());
      offset += p->feature_count();
      std::vector<double> all;
      if (tables_possible)
        for (std::uint64_t v = 0; v < p->cardinality(); ++v) p->features(v, all);
      std::size_t w = p->feature_count();
      std::vector<std::vector<double>> per_feature(w);
      for (std::size_t i = 0; i < all.size(); ++i) per_feature[i % w].push_back(all[i]);
      for (auto& values : per_feature) {
        std::sort(values.begin(), values.end());
        values.erase(std::unique(values.begin(), values.end()), values.end());
      }
      std::vector<std::uint32_t> codes_of_values(all.size());
      for (std::size_t i = 0; i < all.size(); ++i) {
        auto& values = per_feature[i % w];
        codes_of_values[i] =
            static_cast<std::uint32_t>(std::lower_bound(values.begin(), values.end(), all[i]) - values.begin());
      }
      distinct.push_back(std::move(per_feature));
      feature_codes.push_back(std::move(codes_of_values));
    }
    tables.resize(params.size());
    if (!tables_possible) return;
    for (std::size_t p = 0; p < params.size(); ++p)
      if (params[p]->cardinality() > params[bucket_param]->cardinality()) bucket_param = p;
    buckets.resize(params[bucket_param]->cardinality());
  }

  // Exact k nearest by per-parameter value tables.
  std::vector<std::pair<double, std::size_t>> nearest_by_tables(const double* query) {
    std::size_t params = tables.size();
    for (std::size_t p = 0; p < params; ++p) {
      std::size_t w = widths[p];
      std::vector<std::size_t> start(w + 1, 0);
      terms.clear();
      for (std::size_t f = 0; f < w; ++f) {
        start[f] = terms.size();
        double x = query[offsets[p] + f];
        for (double z : distinct[p][f]) terms.push_back(canberra_distance(&x, &z, 1));
      }
      std::size_t count = feature_codes[p].size() / w;
      tables[p].resize(count);
      const std::uint32_t* fc = feature_codes[p].data();
      for (std::size_t v = 0; v < count; ++v, fc += w) {
        double d = 0;
        for (std::size_t f = 0; f < w; ++f) d += terms[start[f] + fc[f]];
        tables[p][v] = d;
      }
    }
    std::size_t want = std::min(k, size());
    std::vector<std::pair<double, std::size_t>> best;  // sorted, at most want
    best.reserve(want + 1);
    std::pair<double, std::size_t> worst{std::numeric_limits<double>::infinity(), 0};
    const double* bound = tables[bucket_param].data();
    std::vector<std::uint32_t> order;
    for (std::uint32_t v = 0; v < buckets.size(); ++v)
      if (!buckets[v].empty()) order.push_back(v);
    // A heap, not a sort: only the few nearest buckets are usually visited.
    auto farther = [&](std::uint32_t a, std::uint32_t b) { return bound[a] > bound[b]; };
    std::make_heap(order.begin(), order.end(), farther);
    // Table pointers hoisted out of the vectors: the scan is loads and adds;
    // worst stays infinite until k rows are held. Ties keep the lowest rows,
    // as the exhaustive scan does.
    std::vector<const double*> table(params);
    for (std::size_t p = 0; p < params; ++p) table[p] = tables[p].data();
    for (auto end = order.end(); end != order.begin(); --end) {
      std::pop_heap(order.begin(), end, farther);
      auto v = *(end - 1);
      if (bound[v] > worst.first) break;
      for (auto row : buckets[v]) {
        const std::uint32_t* code = codes.data() + static_cast<std::size_t>(row) * params;
        double d = 0;
        for (std::size_t p = 0; p < params; ++p) d += table[p][code[p]];
        if (d > worst.first) continue;
        std::pair<double, std::size_t> entry{d, row};
        if (!(entry < worst)) continue;
        best.insert(std::upper_bound(best.begin(), best.end(), entry), entry);
        if (best.size() > want) best.pop_back();
        if (best.size() == want) worst = best.back();
      }
    }
    return best;
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

  double predict(const configuration& config, knn_search search) {
    if (values.empty()) return 0.0;
    if (auto it = rows.find(config); it != rows.end()) return values[it->second];
    auto query = space->features(config);
    if (search == knn_search::automatic) search = tables_possible ? knn_search::value_tables : knn_search::kd_tree;
    if (search == knn_search::value_tables && !tables_possible)
      throw std::invalid_argument("knn_surrogate: the space has too many values for value tables");
    auto best = search == knn_search::value_tables ? nearest_by_tables(query.data())
                                                   : nearest(query.data(), search == knn_search::exhaustive);
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
  impl_->prepare_tables();
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
  for (auto index : config) s.codes.push_back(static_cast<std::uint32_t>(index));
  if (s.tables_possible) s.buckets[config[s.bucket_param]].push_back(static_cast<std::uint32_t>(s.values.size()));
  s.rows.emplace(config, s.values.size());
  s.values.push_back(value);
}

double knn_surrogate::predict(const configuration& config, knn_search search) const {
  return impl_->predict(config, search);
}
std::size_t knn_surrogate::size() const { return impl_->size(); }
std::size_t knn_surrogate::k() const { return impl_->k; }

}  // namespace tune
