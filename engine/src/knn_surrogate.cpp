// The k-d tree covers the rows present at its last build; rows added since
// (the tail) are searched exhaustively and merged, and the tree is rebuilt
// once the tail outgrows a sixteenth of it, so interleaved add/predict stays
// cheap and every answer is exact.
//
// Value tables: a parameter with one value adds 0 to every distance and is
// left out (adding 0 changes no sum). The rows sit in buckets by the values
// of the first `keyed` other parameters (as many as keep the possible keys at
// most 1024; one at least), each bucket holding its rows' other value indices
// row by row, in the order the rows were added. A bucket's key sum (its key
// values' terms) bounds its rows' distances: the terms are non-negative and a
// row's distance adds them in parameter order from the first, so a partial
// sum never exceeds the whole. A query takes the bucket of its own key first
// (its key sum is 0, the least; else the bucket of the least key sum), then
// every other bucket whose key sum does not exceed the k-th distance found so
// far, and leaves a row as soon as its partial sum exceeds it: the answer is
// that of a scan of every row. With more buckets than the tree of keys has
// nodes, the buckets are reached through that tree instead, depth first, the
// query's own value first at each level, and a subtree whose partial key sum
// exceeds the k-th distance is passed over whole. A parameter's table (each
// of its values' term for the query) depends only on the query's value of
// that parameter: tables are kept per (parameter, value) once computed, when
// all of them together would take at most 32 MiB, and computed per query
// otherwise.
//
// Remembered answers (value tables only): a strategy asks about the same
// unobserved configurations again and again (opevo+knn's candidates around
// its best: five of six of its queries on GEMM's dataset repeat one), and
// rows are only ever appended. A query's k nearest (distance, row) pairs are
// kept with the count of rows they cover; asked again, only the rows added
// since are offered, each summed in the same order as the full search, so the
// pairs are those a full search would find, and the prediction is computed
// afresh from them (a row's value may have been replaced). Two generations of
// at most 4,096 answers each bound the memory: a full generation becomes the
// old one, the old one is dropped, and an answer found in the old one moves
// to the new. An answer is forgotten when its configuration is observed.
// Rows and answers are found by the configuration's search_space::key()
// where it has one, else by value.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <nanoflann.hpp>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <utility>

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

// The k smallest (distance, row) pairs offered, in any order: among equal
// distances the lowest rows, as a scan in row order keeps. `worst` is the
// k-th distance once k are held (infinity before); a row farther than it can
// never enter.
struct nearest_rows {
  std::size_t want;
  std::vector<std::pair<double, std::size_t>>& best;  // sorted, at most want
  double worst = std::numeric_limits<double>::infinity();

  void offer(double d, std::size_t row) {
    std::pair<double, std::size_t> entry{d, row};
    best.insert(std::upper_bound(best.begin(), best.end(), entry), entry);
    if (best.size() > want) best.pop_back();
    if (best.size() == want) worst = best.back().first;
  }
};

using kd_tree = nanoflann::KDTreeSingleIndexAdaptor<canberra_metric, rows_view, -1, std::size_t>;

// A map from configurations: by their search_space::key() where they have
// one (an integer: the configuration is neither hashed whole nor copied),
// else by value.
template <class T>
struct configuration_map {
  std::unordered_map<std::uint64_t, T> by_key;
  std::unordered_map<configuration, T, configuration_hash> by_value;

  T* find(const configuration& config, std::optional<std::uint64_t> key) {
    if (key) {
      auto it = by_key.find(*key);
      return it == by_key.end() ? nullptr : &it->second;
    }
    auto it = by_value.find(config);
    return it == by_value.end() ? nullptr : &it->second;
  }
  T& insert(const configuration& config, std::optional<std::uint64_t> key, T value) {
    if (key) return by_key.insert_or_assign(*key, std::move(value)).first->second;
    return by_value.insert_or_assign(config, std::move(value)).first->second;
  }
  void erase(const configuration& config, std::optional<std::uint64_t> key) {
    if (key)
      by_key.erase(*key);
    else
      by_value.erase(config);
  }
  std::size_t size() const { return by_key.size() + by_value.size(); }
};

}  // namespace

struct knn_surrogate::impl {
  search_space_ptr space;
  std::size_t k;
  std::size_t dim;
  std::vector<double> data;
  std::vector<double> values;
  configuration_map<std::size_t> rows;
  bool negative = false;  // any negative feature: the tree would not be exact
  // Per parameter: its features offset and count, and every value's features
  // (empty unless the space is small enough for value tables).
  std::vector<std::size_t> offsets, widths;
  // Per parameter and feature, the distinct feature values; per parameter,
  // each value's features as indices into those (few divisions per query).
  std::vector<std::vector<std::vector<double>>> distinct;
  std::vector<std::vector<std::uint32_t>> feature_codes;
  std::vector<double> terms;                 // per query scratch
  std::vector<double> bounds;                // per query scratch: each bucket's key sum
  std::vector<std::vector<double>> scratch;  // per parameter: the query's table when not kept
  // Per parameter and value: that value's table, once computed (empty when
  // all of them would not fit in 32 MiB); per query, each parameter's table.
  std::vector<std::vector<std::vector<double>>> kept;
  std::vector<const double*> tables;  // per active parameter
  bool tables_possible = false;
  // The parameters with more than one value, in order (the first parameter
  // when none has): the value-table search's; the rest add 0 to a distance.
  std::vector<std::size_t> active, single;  // `single`: the other parameters
  // Per key (the keyed parameters' value indices in mixed radix), the index
  // of its bucket or -1; per bucket, its rows and their other active
  // parameters' value indices (row-major).
  struct bucket {
    std::vector<std::uint32_t> rows;
    std::vector<std::uint32_t> codes;
  };
  std::size_t keyed = 0;
  std::vector<std::int32_t> bucket_of;
  std::vector<bucket> buckets;
  // Per bucket, side by side for the pass over all of them: its key's value
  // indices (`keyed` each) and its last row.
  std::vector<std::uint32_t> bucket_keys;
  std::vector<std::uint32_t> last_rows;
  // The keyed parameters' cardinalities; the count of nodes of the tree of
  // keys below its root (see visit_keys).
  std::vector<std::uint64_t> keyed_radix;
  std::size_t key_partials = 0;
  // Per query: its own key's bucket (or -1) and its keyed values.
  std::int32_t query_bucket = -1;
  std::vector<std::uint32_t> query_key;
  std::vector<std::uint32_t> row_codes;  // per row, every active parameter's value index
  // Remembered answers: a query's k nearest pairs and the rows they cover.
  struct answer {
    std::vector<std::pair<double, std::size_t>> best;
    std::size_t covered = 0;
  };
  using answers = configuration_map<answer>;
  static constexpr std::size_t generation = 4096;
  answers recent, older;
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
    scratch.resize(params.size());
    if (!tables_possible) return;
    for (std::size_t p = 0; p < params.size(); ++p) (params[p]->cardinality() > 1 ? active : single).push_back(p);
    if (active.empty()) active.push_back(0), single.erase(single.begin());
    tables.resize(active.size());
    std::uint64_t entries = 0;
    for (auto& p : params) entries += p->cardinality() * p->cardinality();
    if (entries <= (std::uint64_t{32} << 20) / sizeof(double))
      for (auto& p : params) kept.emplace_back(p->cardinality());
    std::uint64_t keys = params[active.front()]->cardinality();
    keyed = 1;
    while (keyed + 1 < active.size() && keys * params[active[keyed]]->cardinality() <= 1024)
      keys *= params[active[keyed++]]->cardinality();
    bucket_of.assign(keys, -1);
    std::uint64_t level = 1;
    for (std::size_t j = 0; j < keyed; ++j) {
      keyed_radix.push_back(params[active[j]]->cardinality());
      key_partials += level *= keyed_radix.back();
    }
  }

  void insert_row(const configuration& config, std::optional<std::uint64_t> config_key, std::uint32_t row) {
    std::uint64_t key = 0;
    for (std::size_t j = 0; j < keyed; ++j) key = key * keyed_radix[j] + config[active[j]];
    auto& index = bucket_of[key];
    if (index < 0) {
      index = static_cast<std::int32_t>(buckets.size());
      buckets.emplace_back();
      last_rows.push_back(row);
      for (std::size_t j = 0; j < keyed; ++j) bucket_keys.push_back(static_cast<std::uint32_t>(config[active[j]]));
    }
    last_rows[static_cast<std::size_t>(index)] = row;
    auto& b = buckets[static_cast<std::size_t>(index)];
    b.rows.push_back(row);
    for (std::size_t j = keyed; j < active.size(); ++j)
      b.codes.push_back(static_cast<std::uint32_t>(config[active[j]]));
    for (auto p : active) row_codes.push_back(static_cast<std::uint32_t>(config[p]));
    recent.erase(config, config_key);
    older.erase(config, config_key);
  }

  double key_sum(std::size_t i) const {
    const std::uint32_t* key = &bucket_keys[i * keyed];
    double sum = 0;
    for (std::size_t p = 0; p < keyed; ++p) sum += tables[p][key[p]];
    return sum;
  }

  // A bucket's rows: the key's sum plus the other parameters' terms, in
  // parameter order. P > 0: exactly P other parameters, their tables in
  // locals so that the loop is a few loads and adds; P = 0: any number, each
  // row left once its partial sum exceeds the k-th distance.
  template <std::size_t P>
  void scan_bucket(const bucket& b, std::size_t from, double first, nearest_rows& out) const {
    const std::size_t others = tables.size() - keyed;
    const double* t[P > 0 ? P : 1];
    for (std::size_t p = 0; p < P; ++p) t[p] = tables[keyed + p];
    const std::uint32_t* code = b.codes.data() + from * others;
    std::size_t n = b.rows.size();
    for (std::size_t i = from; i < n; ++i, code += others) {
      double d = first;
      if constexpr (P > 0) {
        for (std::size_t p = 0; p < P; ++p) d += t[p][code[p]];
      } else {
        std::size_t p = 0;
        for (; p < others && d <= out.worst; ++p) d += tables[keyed + p][code[p]];
        if (p < others) continue;
      }
      if (d <= out.worst) [[unlikely]]
        out.offer(d, b.rows[i]);
    }
  }

  template <std::size_t... P>
  static constexpr auto make_scanners(std::index_sequence<P...>) {
    return std::array{&impl::scan_bucket<P>...};
  }

  // The bucket's rows from its `from`-th on.
  void scan(const bucket& b, std::size_t from, double first, nearest_rows& out) const {
    // The loop specialised for this count of remaining parameters (up to
    // eight), else the general one.
    static constexpr auto scanners = make_scanners(std::make_index_sequence<9>());
    std::size_t others = tables.size() - keyed;
    (this->*scanners[others < scanners.size() ? others : 0])(b, from, first, out);
  }

  // Parameter p's table for a query whose features are `query`: the term of
  // each of p's values.
  void fill_table(std::size_t p, const double* query, std::vector<double>& sums) {
    std::size_t w = widths[p];
    std::size_t count = feature_codes[p].size() / w;
    sums.assign(count, 0.0);
    // Feature by feature, so that the sums of different values do not wait
    // on each other; each value's terms are still added in feature order.
    for (std::size_t f = 0; f < w; ++f) {
      double x = query[offsets[p] + f];
      terms.clear();
      for (double z : distinct[p][f]) terms.push_back(canberra_distance(&x, &z, 1));
      const std::uint32_t* fc = feature_codes[p].data() + f;
      const double* term = terms.data();
      for (std::size_t v = 0; v < count; ++v) sums[v] += term[fc[v * w]];
    }
  }

  // Points `tables` at the query's table of every active parameter; the query's
  // features are computed only when a table has to be.
  void load_tables(const configuration& config) {
    query_key.clear();
    std::uint64_t key = 0;
    bool in_range = true;  // else no bucket (and the query is refused below)
    for (std::size_t j = 0; j < keyed; ++j) {
      auto v = config[active[j]];
      in_range = in_range && v < keyed_radix[j];
      key = key * keyed_radix[j] + v;
      query_key.push_back(static_cast<std::uint32_t>(v));
    }
    query_bucket = in_range ? bucket_of[key] : -1;
    std::vector<double> query;
    // A single-value parameter's value out of range is refused by the
    // features' own check, as any other parameter's is.
    for (auto p : single)
      if (config[p] != 0) space->features(config);
    for (std::size_t j = 0; j < active.size(); ++j) {
      std::size_t p = active[j];
      bool keep = !kept.empty() && config[p] < kept[p].size();
      auto& table = keep ? kept[p][config[p]] : scratch[p];
      if (!keep || table.empty()) {
        if (query.empty()) query = space->features(config);
        fill_table(p, query.data(), table);
      }
      tables[j] = table.data();
    }
  }

  // Offers rows [from, size()) to `best` (the k nearest of the rows before
  // `from`), each one's distance summed as the full search sums it: the keyed
  // parameters' terms from zero, then the others in order, left once the sum
  // exceeds the k-th distance. For a few rows: it visits every one.
  void offer_rows_since(std::size_t from, std::vector<std::pair<double, std::size_t>>& best) const {
    nearest_rows out{k, best};
    if (best.size() == k) out.worst = best.back().first;
    std::size_t params = tables.size();
    const std::uint32_t* code = row_codes.data() + from * params;
    for (std::size_t row = from; row < size(); ++row, code += params) {
      double d = 0;
      std::size_t p = 0;
      for (; p < keyed; ++p) d += tables[p][code[p]];
      for (; p < params && d <= out.worst; ++p) d += tables[p][code[p]];
      if (p == params && d <= out.worst) out.offer(d, row);
    }
  }

  // The k nearest by value tables, from a remembered answer when there is one
  // (else in `scratch`).
  const std::vector<std::pair<double, std::size_t>>& nearest_remembered(
      const configuration& config, std::optional<std::uint64_t> config_key,
      std::vector<std::pair<double, std::size_t>>& scratch) {
    load_tables(config);
    if (size() < k) {  // k grows with the rows until there are k: nothing to remember
      nearest_by_tables(scratch, 0);
      return scratch;
    }
    answer* it = recent.find(config, config_key);
    if (!it) {
      if (recent.size() >= generation) {
        older = std::move(recent);
        recent = answers();
      }
      answer remembered;
      if (auto* old = older.find(config, config_key)) {
        remembered = std::move(*old);
        older.erase(config, config_key);
      }
      it = &recent.insert(config, config_key, std::move(remembered));
    }
    auto& [best, covered] = *it;
    // Rows since: one by one while they are fewer than the buckets, else by
    // bucket (a bucket's rows are in row order), its key sum bounding them.
    if (size() - covered < buckets.size())
      offer_rows_since(covered, best);
    else
      nearest_by_tables(best, covered);
    covered = size();
    return best;
  }

  // The k nearest by the per-parameter value tables load_tables() set, of
  // `best` (the k nearest of the rows before `from`; empty when from is 0)
  // and the rows from `from` on.
  void nearest_by_tables(std::vector<std::pair<double, std::size_t>>& best, std::size_t from) {
    best.reserve(k + 1);
    nearest_rows out{std::min(k, size()), best};
    if (!best.empty() && best.size() == out.want) out.worst = best.back().first;
    const std::size_t count = buckets.size();
    if (count == 0) return;
    // With more buckets than keys' partial sums, by the tree of keys;
    // otherwise bucket by bucket, each one's key sum added one by one. A
    // bucket without rows from `from` on has nothing to offer: it is passed
    // over.
    if (count * keyed > key_partials) {
      visit_keys(0, 0, 0.0, from, out);
      return;
    }
    bounds.resize(count);
    for (std::size_t i = 0; i < count; ++i)
      bounds[i] = last_rows[i] < from ? std::numeric_limits<double>::infinity() : key_sum(i);
    // The nearest bucket first, so that the k-th distance is small early:
    // the query's own key's (its key sum is 0, the least) when it has rows to
    // offer, else the one of the least key sum.
    std::size_t nearest_bucket = 0;
    if (query_bucket >= 0 && last_rows[static_cast<std::size_t>(query_bucket)] >= from) {
      nearest_bucket = static_cast<std::size_t>(query_bucket);
    } else {
      for (std::size_t i = 1; i < count; ++i) nearest_bucket = bounds[i] < bounds[nearest_bucket] ? i : nearest_bucket;
    }
    auto scan_from = [&](std::size_t i) {
      if (last_rows[i] < from || bounds[i] > out.worst) return;
      scan(buckets[i], first_row_from(i, from), bounds[i], out);
    };
    scan_from(nearest_bucket);
    for (std::size_t i = 0; i < count; ++i)
      if (i != nearest_bucket) scan_from(i);
  }

  // The position in bucket i of its first row from `from` on (its size when
  // none), counted from its end: a catch-up's rows are few and last.
  std::size_t first_row_from(std::size_t i, std::size_t from) const {
    if (from == 0) return 0;
    const auto& rows_of = buckets[i].rows;
    std::size_t start = rows_of.size();
    while (start > 0 && rows_of[start - 1] >= from) --start;
    return start;
  }

  // The buckets by the tree of keys, depth first: a node at depth j is a
  // value of each of the first j keyed parameters, `partial` the sum of their
  // terms (added in key_sum's order), and a subtree whose partial sum exceeds
  // the k-th distance is passed over whole (terms are non-negative). Each
  // node's children are taken the query's own value first, so the query's
  // own key is the first leaf, then the others in order.
  void visit_keys(std::size_t j, std::uint64_t key, double partial, std::size_t from, nearest_rows& out) {
    if (j == keyed) {
      auto b = bucket_of[key];
      if (b < 0) return;
      auto i = static_cast<std::size_t>(b);
      if (last_rows[i] < from) return;
      scan(buckets[i], first_row_from(i, from), partial, out);
      return;
    }
    const std::size_t radix = keyed_radix[j];
    const std::size_t own = query_key[j];
    const double* t = tables[j];
    for (std::size_t n = 0; n < radix; ++n) {
      std::size_t v = n == 0 ? own : (n <= own ? n - 1 : n);
      double sum = partial + t[v];
      if (sum > out.worst) continue;
      visit_keys(j + 1, key * radix + v, sum, from, out);
    }
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
    auto config_key = space->key(config);
    if (auto* row = rows.find(config, config_key)) return values[*row];
    if (search == knn_search::automatic) search = tables_possible ? knn_search::value_tables : knn_search::kd_tree;
    if (search == knn_search::value_tables && !tables_possible)
      throw std::invalid_argument("knn_surrogate: the space has too many values for value tables");
    std::vector<std::pair<double, std::size_t>> found;
    if (search != knn_search::value_tables)
      found = nearest(space->features(config).data(), search == knn_search::exhaustive);
    const auto& best = search == knn_search::value_tables ? nearest_remembered(config, config_key, found) : found;
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
  auto key = s.space->key(config);
  if (auto* row = s.rows.find(config, key)) {
    s.values[*row] = value;
    return;
  }
  auto features = s.space->features(config);
  for (double f : features) s.negative = s.negative || f < 0;
  s.data.insert(s.data.end(), features.begin(), features.end());
  if (s.tables_possible)  // the value-table search's buckets; the k-d tree reads `data`
    s.insert_row(config, key, static_cast<std::uint32_t>(s.values.size()));
  s.rows.insert(config, key, s.values.size());
  s.values.push_back(value);
}

double knn_surrogate::predict(const configuration& config, knn_search search) const {
  return impl_->predict(config, search);
}
std::size_t knn_surrogate::size() const { return impl_->size(); }
std::size_t knn_surrogate::k() const { return impl_->k; }

}  // namespace tune
