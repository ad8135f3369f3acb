#pragma once
// The four parameter kinds of OpEvo (section 3), each with its topology.
//
// A parameter's values are numbered 0 .. cardinality()-1; a configuration
// stores one such index per parameter. Each kind knows how to turn an index
// into its value (for code generation and printing), into numeric features
// (for the surrogate's distance), and which indices are adjacent to it.

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <variant>
#include <vector>

namespace tune {

/// The random engine used everywhere: every random choice of a run flows from
/// one seeded instance of it (or from instances forked off it).
using rng_type = std::mt19937_64;

/// Derives an independent, reproducible seed for a named stream of a run.
std::uint64_t fork_seed(std::uint64_t seed, std::uint64_t stream);

enum class parameter_kind { factorization, permutation, discrete, categorical };

const char* to_string(parameter_kind kind);

/// A parameter value as a user sees it: a number, a string, or a tuple of
/// integers (a factorization, or a permutation of 0 .. n-1).
using parameter_value = std::variant<double, std::string, std::vector<std::int64_t>>;

/// Renders a value the way the search-space files write it (JSON-like).
std::string to_string(const parameter_value& value);

class parameter {
 public:
  virtual ~parameter() = default;

  const std::string& name() const { return name_; }
  virtual parameter_kind kind() const = 0;

  /// Number of values; exact.
  virtual std::uint64_t cardinality() const = 0;

  /// The value with this index, 0 <= index < cardinality().
  virtual parameter_value value(std::uint64_t index) const = 0;

  /// The index of a value; throws std::invalid_argument if it is not one.
  virtual std::uint64_t index_of(const parameter_value& value) const = 0;

  /// The indices adjacent to `index` in the kind's topology (never itself).
  virtual std::vector<std::uint64_t> neighbours(std::uint64_t index) const = 0;

  /// One of neighbours(index), drawn uniformly: the element at a
  /// std::uniform_int_distribution<std::size_t>(0, count - 1) draw, so the
  /// same draw as picking from the list, without building it; nullopt (and no
  /// draw) when there is none. Kinds override it to skip the list.
  virtual std::optional<std::uint64_t> random_neighbour(std::uint64_t index, rng_type& rng) const;

  /// Number of numeric features of a value (for distances); at least 1.
  virtual std::size_t feature_count() const = 0;

  /// Appends the numeric features of the value with this index to `out`.
  virtual void features(std::uint64_t index, std::vector<double>& out) const = 0;

  /// A uniformly drawn index.
  std::uint64_t draw(rng_type& rng) const;

 protected:
  explicit parameter(std::string name) : name_(std::move(name)) {}

 private:
  std::string name_;
};

using parameter_ptr = std::shared_ptr<const parameter>;

/// Ordered nu-tuples of positive integers whose product is `product`. Two are
/// adjacent when one prime factor moves from one position to another.
parameter_ptr make_factorization_parameter(std::string name, std::int64_t product, int parts);

/// All orderings of 0 .. n-1; adjacent when one transposition maps one onto
/// the other.
parameter_ptr make_permutation_parameter(std::string name, int n);

/// Ordered numbers; adjacent when consecutive in sorted order. Values are
/// sorted and must be distinct.
parameter_ptr make_discrete_parameter(std::string name, std::vector<double> values);

/// Unordered choices, all adjacent to each other. Values may be numbers or
/// strings (features: the number itself, or index + 1 for strings).
parameter_ptr make_categorical_parameter(std::string name, std::vector<parameter_value> values);

/// One step of OpEvo's q-random walk (Eq. 3) is taken with probability q to a
/// uniformly chosen neighbour; the walk stops with probability 1 - q. Returns
/// the vertex where it stops.
std::uint64_t q_random_walk(const parameter& param, std::uint64_t start, double q, rng_type& rng);

/// OpEvo's q-random walk on one parameter, drawn in one step where the
/// parameter has at most `max_tabled` values: the distribution of the vertex
/// where the walk stops, from every start, is computed once (appendix A of the
/// paper: S = (1 - q)(I - Q)^-1 p0, with Q the uniform step to a neighbour and
/// a vertex without neighbours keeping its place) and sampled with one
/// 64-bit draw (none for a parameter with one value). Same distribution as
/// q_random_walk (to 2^-64), for fewer draws and no branch per step (q = 0.5:
/// one draw instead of three on average per parameter); a different stream
/// of draws, so not the same walk for a seed. Larger parameters take
/// q_random_walk's steps. Immutable once built.
class q_walk {
 public:
  static constexpr std::uint64_t max_tabled = 256;
  /// Throws std::invalid_argument unless 0 <= q < 1.
  q_walk(parameter_ptr param, double q);
  /// Where a walk from `start` stops.
  std::uint64_t operator()(std::uint64_t start, rng_type& rng) const;
  /// Whether the walk is drawn from the table (else step by step).
  bool tabled() const { return !cdf_.empty(); }
  /// The probability that a walk from `from` stops at `to` (tabled only;
  /// std::logic_error otherwise).
  double probability(std::uint64_t from, std::uint64_t to) const;

 private:
  parameter_ptr param_;
  double q_;
  std::size_t n_ = 0;
  std::vector<double> cdf_;  // row `from`: cumulative stop probabilities, the last positive one 1
  // Row `from`: the same scaled to 2^64 (from the last positive one on, the
  // largest 64-bit value), and the index of that last positive one.
  std::vector<std::uint64_t> thresholds_;
  std::vector<std::uint64_t> last_;
};

}  // namespace tune
