#pragma once
// A search space: named parameters, constraints over their values, and
// optionally an explicit set of the configurations that exist (a measured
// dataset). A configuration holds one value index per parameter.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "tune/engine/key_set.hpp"
#include "tune/engine/parameter.hpp"

namespace tune {

/// One value index per parameter of its space, in the space's order.
using configuration = std::vector<std::uint64_t>;

struct configuration_hash {
  std::size_t operator()(const configuration& config) const noexcept;
};

using configuration_set = std::unordered_set<configuration, configuration_hash>;

class constraint_set;

/// How a space whose configurations are not one value index per parameter
/// (the edit lists of program-edit evolution) validates, writes and reads them.
class configuration_codec {
 public:
  virtual ~configuration_codec() = default;
  virtual bool is_valid(const configuration& config) const = 0;
  virtual std::string to_json(const configuration& config) const = 0;
  /// Throws std::invalid_argument quoting the text when it is not one.
  virtual configuration from_json(const std::string& text) const = 0;
};

class search_space {
 public:
  /// `origin` names where the space came from (a file path), for messages.
  explicit search_space(std::vector<parameter_ptr> parameters, std::string origin = {});

  /// A space of no parameters whose configurations `codec` validates
  /// (is_valid), writes (to_json) and reads (from_json).
  search_space(std::shared_ptr<const configuration_codec> codec, std::string origin);
  /// The codec of such a space; nullptr for a space of parameters.
  const configuration_codec* codec() const { return codec_.get(); }

  const std::vector<parameter_ptr>& parameters() const { return parameters_; }
  std::size_t dimension() const { return parameters_.size(); }
  const std::string& origin() const { return origin_; }

  /// Index of the parameter with this name; nullopt when there is none.
  std::optional<std::size_t> find(const std::string& name) const;

  /// Product of the parameters' cardinalities; nullopt when it exceeds 2^64.
  std::optional<std::uint64_t> cartesian_size() const;
  /// The same in decimal, exact below 2^128 (e.g. 5699975591374251264000),
  /// else rounded ("about 1.2e+45").
  std::string cartesian_size_text() const;
  /// log10 of the Cartesian size (any size).
  double cartesian_log10() const;

  /// Adds boolean expressions over parameter names that every valid
  /// configuration satisfies (see constraint.hpp for the accepted forms).
  /// Throws std::invalid_argument naming the expression and the problem.
  void add_constraints(const std::vector<std::string>& expressions);
  const std::vector<std::string>& constraint_expressions() const;

  /// Restricts the space to exactly these configurations (a dataset: what is
  /// absent broke the kernel's restrictions). Random sampling then draws from
  /// them.
  void restrict_to(std::vector<configuration> members);
  const std::vector<configuration>* members() const;

  /// True when the configuration has the right shape and index ranges,
  /// satisfies every constraint and (if restricted) is a member.
  bool is_valid(const configuration& config) const;
  /// is_valid() for a configuration whose key() is `key` (not checked): the
  /// member lookup takes the key rather than computing it again.
  bool is_valid(const configuration& config, std::uint64_t key) const;

  /// The configuration's flatten() index when the space has parameters, its
  /// Cartesian product fits in 64 bits and the configuration has one
  /// in-range value index per parameter; nullopt otherwise. Equal keys mean
  /// equal configurations: sets of them stand in for sets of configurations.
  std::optional<std::uint64_t> key(const configuration& config) const {
    if (!keyed_ || config.size() != radix_.size()) return std::nullopt;
    std::uint64_t flat = 0;
    for (std::size_t i = 0; i < radix_.size(); ++i) {
      if (config[i] >= radix_[i]) return std::nullopt;
      flat = flat * radix_[i] + config[i];
    }
    return flat;
  }

  /// Mixed-radix index of a configuration and back (parameter 0 varies
  /// slowest). Needs cartesian_size().
  std::uint64_t flatten(const configuration& config) const;
  configuration unflatten(std::uint64_t flat) const;

  /// A uniformly drawn configuration of the Cartesian product (maybe invalid).
  configuration draw(rng_type& rng) const;

  /// A uniformly drawn valid configuration: from the members if restricted,
  /// else by rejection (at most `tries` draws), else from the enumerated valid
  /// set when the Cartesian product is small enough to enumerate.
  std::optional<configuration> draw_valid(rng_type& rng, int tries = 10000) const;

  /// Every valid configuration, in flat order; nullopt when the Cartesian
  /// product exceeds `limit`. Cached after the first call; safe to call from
  /// several threads.
  const std::vector<configuration>* enumerate_valid(std::uint64_t limit = 20'000'000) const;

  /// Number of valid configurations; nullopt when it cannot be enumerated
  /// within `limit`. Cheap when there are no constraints.
  std::optional<std::uint64_t> count_valid(std::uint64_t limit = 20'000'000) const;

  /// An estimate of the valid share of the Cartesian product from `draws`
  /// uniform draws: for spaces with constraints too large to count.
  struct valid_estimate {
    std::size_t draws = 0;
    std::size_t valid = 0;
    double fraction = 0;  // valid / draws
    double low = 0;       // 95% Wilson score interval of the fraction
    double high = 0;
  };
  valid_estimate estimate_valid(std::size_t draws, rng_type& rng) const;

  /// Numeric features of a configuration (all parameters' features, concatenated).
  std::vector<double> features(const configuration& config) const;
  std::size_t feature_count() const { return feature_count_; }

  /// Values of a configuration by parameter name.
  std::vector<std::pair<std::string, parameter_value>> values(const configuration& config) const;

  /// `{"name": value, ...}` in parameter order, JSON text.
  std::string to_json(const configuration& config) const;

  /// The configuration with these values by name; throws std::invalid_argument
  /// naming the parameter when a name is missing or a value does not exist.
  configuration from_values(const std::map<std::string, parameter_value>& values) const;

  /// The configuration to_json() wrote (any key order); throws
  /// std::invalid_argument quoting the text when it is not a JSON object of
  /// this space's parameters and values (true and false read as 1 and 0).
  configuration from_json(const std::string& text) const;

 private:
  std::vector<parameter_ptr> parameters_;
  std::shared_ptr<const configuration_codec> codec_;
  std::string origin_;
  std::size_t feature_count_ = 0;
  std::shared_ptr<constraint_set> constraints_;
  std::shared_ptr<std::vector<configuration>> members_;
  std::shared_ptr<configuration_set> member_set_;  // the members, when key() does not exist
  std::shared_ptr<key_set> member_keys_;           // the members' keys, when key() exists
  std::vector<std::uint64_t> radix_;               // every parameter's cardinality
  bool keyed_ = false;                             // key() exists: parameters whose product fits 64 bits
  // Filled on first use by enumerate_valid(); the mutex makes that safe when
  // strategies in several threads share one space (copies share the mutex).
  mutable std::shared_ptr<const std::vector<configuration>> valid_cache_;
  std::shared_ptr<std::mutex> cache_mutex_ = std::make_shared<std::mutex>();
};

using search_space_ptr = std::shared_ptr<const search_space>;

}  // namespace tune
