#include "tune/engine/parameter.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <unordered_map>

namespace tune {

std::uint64_t fork_seed(std::uint64_t seed, std::uint64_t stream) {
  // splitmix64 over the pair: distinct streams give unrelated seeds.
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (stream + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

const char* to_string(parameter_kind kind) {
  switch (kind) {
    case parameter_kind::factorization:
      return "factorization";
    case parameter_kind::permutation:
      return "permutation";
    case parameter_kind::discrete:
      return "discrete";
    case parameter_kind::categorical:
      return "categorical";
  }
  return "?";
}

namespace {

std::string number_to_string(double x) {
  if (std::isfinite(x) && x == std::floor(x) && std::fabs(x) < 1e15) {
    return std::to_string(static_cast<long long>(x));
  }
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, x);
  if (ec != std::errc{}) return "nan";
  return std::string(buffer, end);
}

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
      out += buffer;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

std::string to_string(const parameter_value& value) {
  if (auto* number = std::get_if<double>(&value)) return number_to_string(*number);
  if (auto* text = std::get_if<std::string>(&value)) return quote(*text);
  const auto& tuple = std::get<std::vector<std::int64_t>>(value);
  std::string out = "[";
  for (std::size_t i = 0; i < tuple.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(tuple[i]);
  }
  return out + "]";
}

namespace {
/// The position among `count` neighbours that random_neighbour draws.
std::size_t pick_neighbour(std::size_t count, rng_type& rng) {
  std::uniform_int_distribution<std::size_t> pick(0, count - 1);
  return pick(rng);
}
}  // namespace

std::uint64_t parameter::draw(rng_type& rng) const {
  std::uniform_int_distribution<std::uint64_t> pick(0, cardinality() - 1);
  return pick(rng);
}

std::optional<std::uint64_t> parameter::random_neighbour(std::uint64_t index, rng_type& rng) const {
  auto next = neighbours(index);
  if (next.empty()) return std::nullopt;
  return next[pick_neighbour(next.size(), rng)];
}

std::uint64_t q_random_walk(const parameter& param, std::uint64_t start, double q, rng_type& rng) {
  if (!(q >= 0.0 && q < 1.0)) throw std::invalid_argument("q_random_walk: q must lie in [0, 1)");
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  std::uint64_t current = start;
  while (coin(rng) < q) {
    auto next = param.random_neighbour(current, rng);
    if (!next) break;
    current = *next;
  }
  return current;
}

q_walk::q_walk(parameter_ptr param, double q) : param_(std::move(param)), q_(q) {
  if (!param_) throw std::invalid_argument("q_walk: no parameter");
  if (!(q >= 0.0 && q < 1.0)) throw std::invalid_argument("q_walk: q must lie in [0, 1)");
  if (param_->cardinality() > max_tabled) return;
  const std::size_t n = n_ = param_->cardinality();
  // Gauss-Jordan on [A | I] with A = I - Q^T (row u: the walk's step from
  // u), so that the right half becomes (I - Q^T)^-1, whose row `from` times
  // (1 - q) is the stop distribution from `from`. A is strictly diagonally
  // dominant by rows (its off-diagonal row sums are q < 1): no pivoting.
  std::vector<double> a(n * 2 * n, 0.0);
  auto at = [&](std::size_t r, std::size_t c) -> double& { return a[r * 2 * n + c]; };
  for (std::size_t u = 0; u < n; ++u) {
    at(u, u) = 1.0;
    at(u, n + u) = 1.0;
    auto next = param_->neighbours(u);
    if (next.empty()) next.push_back(u);  // no neighbour: the walk stays
    for (auto v : next) at(u, v) -= q / static_cast<double>(next.size());
  }
  for (std::size_t c = 0; c < n; ++c) {
    double pivot = at(c, c);
    for (std::size_t k = c; k < 2 * n; ++k) at(c, k) /= pivot;
    for (std::size_t r = 0; r < n; ++r) {
      double f = r == c ? 0.0 : at(r, c);
      if (f == 0.0) continue;
      for (std::size_t k = c; k < 2 * n; ++k) at(r, k) -= f * at(c, k);
    }
  }
  cdf_.resize(n * n);
  for (std::size_t from = 0; from < n; ++from) {
    double* row = &cdf_[from * n];
    double sum = 0;
    std::size_t last = 0;
    for (std::size_t to = 0; to < n; ++to) {
      double p = std::max(0.0, (1.0 - q) * at(from, n + to));
      if (p > 0) last = to;
      row[to] = sum += p;
    }
    for (std::size_t to = 0; to < n; ++to) row[to] = to >= last ? 1.0 : row[to] / sum;
    last_.push_back(last);
    for (std::size_t to = 0; to < n; ++to)
      thresholds_.push_back(to >= last ? std::numeric_limits<std::uint64_t>::max()
                                       : static_cast<std::uint64_t>(std::ldexp(row[to], 64)));
  }
}

std::uint64_t q_walk::operator()(std::uint64_t start, rng_type& rng) const {
  // An index out of range (from a resumed file) is walked step by step, as
  // q_random_walk would.
  if (cdf_.empty() || start >= n_) return q_random_walk(*param_, start, q_, rng);
  if (n_ == 1) return start;
  // The first value whose threshold exceeds the draw: the count of those at
  // or below it, branch-free for a few values.
  std::uint64_t r = rng();
  const std::uint64_t* row = &thresholds_[start * n_];
  std::uint64_t at = 0;
  if (n_ <= 8)
    for (std::size_t to = 0; to < n_; ++to) at += row[to] <= r ? 1 : 0;
  else
    at = static_cast<std::uint64_t>(std::upper_bound(row, row + n_, r) - row);
  return std::min(at, last_[start]);  // a draw of the largest value: the last positive
}

double q_walk::probability(std::uint64_t from, std::uint64_t to) const {
  if (cdf_.empty()) throw std::logic_error("q_walk: '" + param_->name() + "' is walked step by step");
  if (from >= n_ || to >= n_) throw std::out_of_range("q_walk: value index out of range");
  const double* row = &cdf_[from * n_];
  return row[to] - (to == 0 ? 0.0 : row[to - 1]);
}

namespace {

using tuple_type = std::vector<std::int64_t>;

struct tuple_hash {
  std::size_t operator()(const tuple_type& t) const noexcept {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (auto v : t) h = (h ^ static_cast<std::uint64_t>(v)) * 0x100000001b3ULL;
    return static_cast<std::size_t>(h ^ (h >> 29));
  }
};

const tuple_type& as_tuple(const parameter_value& value, const std::string& name) {
  auto* tuple = std::get_if<tuple_type>(&value);
  if (!tuple) throw std::invalid_argument("parameter '" + name + "': expected a list of integers");
  return *tuple;
}

// ---------------------------------------------------------------- factorization

// Ordered factorizations are numbered in lexicographic order of their tuples.
// Up to `table_limit` of them are listed once (fast lookups for the spaces of
// OpEvo's tasks); beyond that an index is turned into its tuple and back by
// counting: the number of ordered k-factorizations of m = Π p^e is
// Π C(e + k - 1, k - 1), so each position's factor is found by walking the
// divisors of what is left in increasing order and skipping whole blocks.
class factorization_parameter final : public parameter {
 public:
  static constexpr std::uint64_t table_limit = 1'000'000;

  factorization_parameter(std::string name, std::int64_t product, int parts)
      : parameter(std::move(name)), product_(product), parts_(parts) {
    if (product < 1) throw std::invalid_argument("factorization '" + this->name() + "': product must be >= 1");
    if (parts < 1) throw std::invalid_argument("factorization '" + this->name() + "': parts must be >= 1");
    for (std::int64_t n = product, p = 2; n > 1; ++p) {
      if (p * p > n) p = n;
      if (n % p == 0) {
        primes_.push_back(p);
        while (n % p == 0) n /= p;
      }
    }
    cardinality_ = count(product_, parts_);
    if (cardinality_ <= table_limit) {
      tuple_type current(parts, 1);
      enumerate(0, product, current);
      for (std::size_t i = 0; i < tuples_.size(); ++i) index_.emplace(tuples_[i], i);
    }
  }

  parameter_kind kind() const override { return parameter_kind::factorization; }
  std::uint64_t cardinality() const override { return cardinality_; }
  parameter_value value(std::uint64_t index) const override { return tuple(index); }

  std::uint64_t index_of(const parameter_value& value) const override {
    const tuple_type& u = as_tuple(value, name());
    if (auto rank = rank_of(u)) return *rank;
    throw std::invalid_argument("parameter '" + name() + "': " + to_string(value) + " is not an ordered " +
                                std::to_string(parts_) + "-factorization of " + std::to_string(product_));
  }

  std::vector<std::uint64_t> neighbours(std::uint64_t index) const override {
    const tuple_type u = tuple(index);
    std::vector<std::uint64_t> out;
    tuple_type v = u;
    for (int from = 0; from < parts_; ++from) {
      for (std::int64_t z : primes_) {
        if (u[from] % z != 0) continue;
        for (int to = 0; to < parts_; ++to) {
          if (to == from) continue;
          v[from] = u[from] / z;
          v[to] = u[to] * z;
          out.push_back(*rank_of(v));
          v[from] = u[from];
          v[to] = u[to];
        }
      }
    }
    return out;
  }

  // The k-th of neighbours(index), in its order: blocks of parts - 1 per
  // (position, prime dividing it).
  std::optional<std::uint64_t> random_neighbour(std::uint64_t index, rng_type& rng) const override {
    if (parts_ < 2) return std::nullopt;
    tuple_type u = tuple(index);
    std::size_t blocks = 0;
    for (int from = 0; from < parts_; ++from)
      for (std::int64_t z : primes_) blocks += u[from] % z == 0 ? 1 : 0;
    if (blocks == 0) return std::nullopt;
    std::size_t block_size = static_cast<std::size_t>(parts_ - 1);
    std::size_t k = pick_neighbour(blocks * block_size, rng);
    std::size_t block = k / block_size;
    for (int from = 0; from < parts_; ++from)
      for (std::int64_t z : primes_) {
        if (u[from] % z != 0) continue;
        if (block-- > 0) continue;
        int to = static_cast<int>(k % block_size);
        if (to >= from) ++to;
        u[from] /= z;
        u[to] *= z;
        return *rank_of(u);
      }
    return std::nullopt;  // not reached: k < blocks * block_size
  }

  std::size_t feature_count() const override { return parts_; }
  void features(std::uint64_t index, std::vector<double>& out) const override {
    for (auto f : tuple(index)) out.push_back(static_cast<double>(f));
  }

 private:
  tuple_type tuple(std::uint64_t index) const {
    if (index >= cardinality_)
      throw std::out_of_range("parameter '" + name() + "': index " + std::to_string(index) + " of " +
                              std::to_string(cardinality_));
    if (!tuples_.empty()) return tuples_[index];
    tuple_type u(parts_, 1);
    std::int64_t rest = product_;
    for (int position = 0; position + 1 < parts_; ++position) {
      for (std::int64_t d : divisors(rest)) {
        std::uint64_t block = count(rest / d, parts_ - position - 1);
        if (index < block) {
          u[position] = d;
          rest /= d;
          break;
        }
        index -= block;
      }
    }
    u[parts_ - 1] = rest;
    return u;
  }

  std::optional<std::uint64_t> rank_of(const tuple_type& u) const {
    if (static_cast<int>(u.size()) != parts_) return std::nullopt;
    if (!tuples_.empty()) {
      auto it = index_.find(u);
      if (it == index_.end()) return std::nullopt;
      return it->second;
    }
    std::uint64_t rank = 0;
    std::int64_t rest = product_;
    for (int position = 0; position + 1 < parts_; ++position) {
      if (u[position] < 1 || rest % u[position] != 0) return std::nullopt;
      for (std::int64_t d : divisors(rest)) {
        if (d >= u[position]) break;
        rank += count(rest / d, parts_ - position - 1);
      }
      rest /= u[position];
    }
    if (u[parts_ - 1] != rest) return std::nullopt;
    return rank;
  }

  /// The divisors of m (a divisor of the product), in increasing order.
  std::vector<std::int64_t> divisors(std::int64_t m) const {
    std::vector<std::int64_t> out{1};
    for (std::int64_t p : primes_) {
      std::size_t before = out.size();
      for (std::int64_t power = p; m % power == 0; power *= p) {
        for (std::size_t i = 0; i < before; ++i) out.push_back(out[i] * power);
        if (power > m / p) break;
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  /// Ordered k-factorizations of m; std::invalid_argument past 2^64 - 1.
  std::uint64_t count(std::int64_t m, int k) const {
    unsigned __int128 total = 1;
    constexpr auto most = static_cast<unsigned __int128>(~std::uint64_t{0});
    for (std::int64_t p : primes_) {
      int e = 0;
      for (; m % p == 0; m /= p) ++e;
      // C(e + k - 1, e), built up factor by factor (each step stays whole).
      unsigned __int128 binomial = 1;
      for (int i = 1; i <= e; ++i) {
        binomial = binomial * static_cast<unsigned>(k - 1 + i) / static_cast<unsigned>(i);
        if (binomial > most) throw too_many();
      }
      total *= binomial;
      if (total > most) throw too_many();
    }
    return static_cast<std::uint64_t>(total);
  }

  std::invalid_argument too_many() const {
    return std::invalid_argument("factorization '" + name() + "': " + std::to_string(product_) +
                                 " has more than 2^64 " + "ordered factorizations into " + std::to_string(parts_) +
                                 " parts; use fewer parts");
  }

  void enumerate(int position, std::int64_t rest, tuple_type& current) {
    if (position == parts_ - 1) {
      current[position] = rest;
      tuples_.push_back(current);
      return;
    }
    for (std::int64_t d : divisors(rest)) {
      current[position] = d;
      enumerate(position + 1, rest / d, current);
    }
  }

  std::int64_t product_;
  int parts_;
  std::uint64_t cardinality_ = 0;
  std::vector<std::int64_t> primes_;
  std::vector<tuple_type> tuples_;  // in index order, when there are at most table_limit
  // Hashed: q-random walks and neighbour lists look a tuple's index up for
  // every step.
  std::unordered_map<tuple_type, std::uint64_t, tuple_hash> index_;
};

// ---------------------------------------------------------------- permutation

class permutation_parameter final : public parameter {
 public:
  permutation_parameter(std::string name, int n) : parameter(std::move(name)), n_(n) {
    if (n < 1 || n > 12) {
      throw std::invalid_argument("permutation '" + this->name() + "': size must be between 1 and 12");
    }
    factorial_.assign(n + 1, 1);
    for (int i = 1; i <= n; ++i) factorial_[i] = factorial_[i - 1] * i;
  }

  parameter_kind kind() const override { return parameter_kind::permutation; }
  std::uint64_t cardinality() const override { return factorial_[n_]; }

  // Lexicographic rank <-> permutation (Lehmer code).
  parameter_value value(std::uint64_t index) const override { return unrank(index); }

  std::uint64_t index_of(const parameter_value& value) const override {
    const tuple_type& perm = as_tuple(value, name());
    std::vector<bool> used(n_, false);
    if (static_cast<int>(perm.size()) != n_) {
      throw std::invalid_argument("parameter '" + name() + "': a permutation of 0.." + std::to_string(n_ - 1) +
                                  " has " + std::to_string(n_) + " entries, got " + to_string(value));
    }
    std::uint64_t rank = 0;
    for (int i = 0; i < n_; ++i) {
      auto e = perm[i];
      if (e < 0 || e >= n_ || used[e]) {
        throw std::invalid_argument("parameter '" + name() + "': " + to_string(value) + " is not a permutation of 0.." +
                                    std::to_string(n_ - 1));
      }
      std::uint64_t smaller_unused = 0;
      for (int j = 0; j < e; ++j) smaller_unused += used[j] ? 0 : 1;
      rank += smaller_unused * factorial_[n_ - 1 - i];
      used[e] = true;
    }
    return rank;
  }

  std::vector<std::uint64_t> neighbours(std::uint64_t index) const override {
    tuple_type perm = unrank(index);
    std::vector<std::uint64_t> out;
    for (int i = 0; i < n_; ++i) {
      for (int j = i + 1; j < n_; ++j) {
        std::swap(perm[i], perm[j]);
        out.push_back(index_of(perm));
        std::swap(perm[i], perm[j]);
      }
    }
    return out;
  }

  // The k-th transposition (i, j), i < j, in neighbours()' order.
  std::optional<std::uint64_t> random_neighbour(std::uint64_t index, rng_type& rng) const override {
    if (n_ < 2) return std::nullopt;
    std::size_t n = static_cast<std::size_t>(n_);
    std::size_t k = pick_neighbour(n * (n - 1) / 2, rng);
    std::size_t i = 0;
    while (k >= n - 1 - i) k -= n - 1 - i++;
    tuple_type perm = unrank(index);
    std::swap(perm[i], perm[i + 1 + k]);
    return index_of(perm);
  }

  std::size_t feature_count() const override { return n_; }
  void features(std::uint64_t index, std::vector<double>& out) const override {
    // Position of each element, shifted by one so that Canberra distances
    // never divide zero by zero.
    tuple_type perm = unrank(index);
    std::vector<double> position(n_);
    for (int i = 0; i < n_; ++i) position[perm[i]] = i + 1.0;
    out.insert(out.end(), position.begin(), position.end());
  }

 private:
  tuple_type unrank(std::uint64_t index) const {
    if (index >= cardinality()) throw std::out_of_range("permutation index out of range");
    std::vector<std::int64_t> pool(n_);
    std::iota(pool.begin(), pool.end(), 0);
    tuple_type out;
    for (int i = n_ - 1; i >= 0; --i) {
      auto q = index / factorial_[i];
      index %= factorial_[i];
      out.push_back(pool[q]);
      pool.erase(pool.begin() + static_cast<std::ptrdiff_t>(q));
    }
    return out;
  }

  int n_;
  std::vector<std::uint64_t> factorial_;
};

// ---------------------------------------------------------------- discrete

class discrete_parameter final : public parameter {
 public:
  discrete_parameter(std::string name, std::vector<double> values)
      : parameter(std::move(name)), values_(std::move(values)) {
    if (values_.empty()) throw std::invalid_argument("discrete '" + this->name() + "': needs at least one value");
    for (double v : values_) {
      if (!std::isfinite(v)) throw std::invalid_argument("discrete '" + this->name() + "': values must be finite");
    }
    std::sort(values_.begin(), values_.end());
    if (std::adjacent_find(values_.begin(), values_.end()) != values_.end()) {
      throw std::invalid_argument("discrete '" + this->name() + "': values must be distinct");
    }
  }

  parameter_kind kind() const override { return parameter_kind::discrete; }
  std::uint64_t cardinality() const override { return values_.size(); }
  parameter_value value(std::uint64_t index) const override { return values_.at(index); }

  std::uint64_t index_of(const parameter_value& value) const override {
    auto* number = std::get_if<double>(&value);
    if (number) {
      auto it = std::lower_bound(values_.begin(), values_.end(), *number);
      if (it != values_.end() && *it == *number) return static_cast<std::uint64_t>(it - values_.begin());
    }
    throw std::invalid_argument("parameter '" + name() + "': " + to_string(value) + " is not one of its values");
  }

  std::vector<std::uint64_t> neighbours(std::uint64_t index) const override {
    std::vector<std::uint64_t> out;
    if (index > 0) out.push_back(index - 1);
    if (index + 1 < values_.size()) out.push_back(index + 1);
    return out;
  }

  std::optional<std::uint64_t> random_neighbour(std::uint64_t index, rng_type& rng) const override {
    bool down = index > 0, up = index + 1 < values_.size();
    if (!down && !up) return std::nullopt;
    if (down && up) return pick_neighbour(2, rng) == 0 ? index - 1 : index + 1;
    pick_neighbour(1, rng);  // the list's one-element draw
    return down ? index - 1 : index + 1;
  }

  std::size_t feature_count() const override { return 1; }
  void features(std::uint64_t index, std::vector<double>& out) const override { out.push_back(values_.at(index)); }

 private:
  std::vector<double> values_;
};

// ---------------------------------------------------------------- categorical

class categorical_parameter final : public parameter {
 public:
  categorical_parameter(std::string name, std::vector<parameter_value> values)
      : parameter(std::move(name)), values_(std::move(values)) {
    if (values_.empty()) throw std::invalid_argument("categorical '" + this->name() + "': needs at least one value");
    for (std::size_t i = 0; i < values_.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        if (values_[i] == values_[j]) {
          throw std::invalid_argument("categorical '" + this->name() + "': value " + to_string(values_[i]) +
                                      " appears twice");
        }
      }
    }
  }

  parameter_kind kind() const override { return parameter_kind::categorical; }
  std::uint64_t cardinality() const override { return values_.size(); }
  parameter_value value(std::uint64_t index) const override { return values_.at(index); }

  std::uint64_t index_of(const parameter_value& value) const override {
    for (std::size_t i = 0; i < values_.size(); ++i) {
      if (values_[i] == value) return i;
    }
    throw std::invalid_argument("parameter '" + name() + "': " + to_string(value) + " is not one of its values");
  }

  std::vector<std::uint64_t> neighbours(std::uint64_t index) const override {
    std::vector<std::uint64_t> out;
    for (std::size_t i = 0; i < values_.size(); ++i) {
      if (i != index) out.push_back(i);
    }
    return out;
  }

  std::optional<std::uint64_t> random_neighbour(std::uint64_t index, rng_type& rng) const override {
    std::size_t others = values_.size() - (index < values_.size() ? 1 : 0);
    if (others == 0) return std::nullopt;
    std::size_t k = pick_neighbour(others, rng);
    return k < index ? k : k + 1;
  }

  std::size_t feature_count() const override { return 1; }
  void features(std::uint64_t index, std::vector<double>& out) const override {
    const auto& v = values_.at(index);
    auto* number = std::get_if<double>(&v);
    out.push_back(number ? *number : static_cast<double>(index + 1));
  }

 private:
  std::vector<parameter_value> values_;
};

}  // namespace

parameter_ptr make_factorization_parameter(std::string name, std::int64_t product, int parts) {
  return std::make_shared<factorization_parameter>(std::move(name), product, parts);
}

parameter_ptr make_permutation_parameter(std::string name, int n) {
  return std::make_shared<permutation_parameter>(std::move(name), n);
}

parameter_ptr make_discrete_parameter(std::string name, std::vector<double> values) {
  return std::make_shared<discrete_parameter>(std::move(name), std::move(values));
}

parameter_ptr make_categorical_parameter(std::string name, std::vector<parameter_value> values) {
  return std::make_shared<categorical_parameter>(std::move(name), std::move(values));
}

}  // namespace tune
