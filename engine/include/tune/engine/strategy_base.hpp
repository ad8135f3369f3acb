#pragma once
// Shared machinery for search strategies: the dedup set of measured and
// in-flight configurations, the seeded RNG, fitness, hyperparameters and the
// valid-sampling helpers. A new strategy derives from strategy_base and
// implements generate(): it offers candidates through claim(), and whatever it
// does not fill is topped up with uniform random unseen valid draws, so no
// strategy can stall while unseen valid configurations remain.
//
// Fitness: 1 / time_ms for a result that is ok (a positive throughput-like
// number, so maximising fitness minimises time); 0 for anything else. Failed
// configurations are never parents: their values are not inherited.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tune/engine/strategy.hpp"

namespace tune {

/// 1 / time_ms when the result is ok and its time positive, else 0.
double fitness(const trial_result& result);

/// Configurations with positive fitness, best first, at most `capacity`.
class ranked_configurations {
 public:
  explicit ranked_configurations(std::size_t capacity = static_cast<std::size_t>(-1)) : capacity_(capacity) {}
  /// Ignores fit <= 0 (failures are never parents).
  void insert(double fit, const configuration& config);
  std::size_t size() const { return entries_.size(); }
  double fitness(std::size_t i) const { return entries_[i].first; }
  const configuration& config(std::size_t i) const { return entries_[i].second; }
  /// Fitness of the best `top` (all when fewer).
  std::vector<double> fitnesses(std::size_t top) const;

 private:
  std::size_t capacity_;
  std::vector<std::pair<double, configuration>> entries_;
};

class strategy_base : public strategy {
 public:
  /// `defaults` lists every accepted hyperparameter with its default value;
  /// options.hyper may only override those names (std::invalid_argument naming
  /// the strategy, the name and the accepted names otherwise).
  strategy_base(std::string name, search_space_ptr space, const strategy_options& options,
                std::map<std::string, double> defaults);

  std::string name() const override { return name_; }
  std::vector<configuration> propose(std::size_t n) final;
  void observe(const trial_result& result) final;

 protected:
  /// Offers up to n - out.size() candidates through claim(out, ...).
  virtual void generate(std::size_t n, std::vector<configuration>& out) = 0;
  /// Called once per observed result (after the dedup bookkeeping).
  virtual void on_result(const trial_result& result, double fit) = 0;

  /// True when the configuration is valid, not measured and not in flight.
  bool fresh(const configuration& config) const;
  /// Appends the configuration to out and marks it in flight if fresh().
  bool claim(std::vector<configuration>& out, const configuration& config);
  /// A uniformly drawn valid configuration that is not seen yet; nullopt when
  /// the valid space is exhausted (or no unseen one could be found).
  std::optional<configuration> random_unseen();
  /// Claims the fresh candidates with the highest scores until out holds n.
  void claim_best(std::vector<std::pair<double, configuration>> scored, std::size_t n, std::vector<configuration>& out);
  /// Applies `mutate` to `config` until it is fresh (at most `tries` times),
  /// then falls back to random_unseen(). Each mutation starts from the last,
  /// so after 20 a candidate has moved about 20 steps per parameter (OpEvo's
  /// walk at q = 0.5) from the child: near the parents no longer, and a
  /// uniform unseen draw serves as well for less (the replay benchmark's
  /// scores at 20 and at 100 tries are the same within the seeds' spread).
  std::optional<configuration> refresh(configuration config, const std::function<void(configuration&)>& mutate,
                                       int tries = 20);

  /// Replaces each gene with a uniform draw with this probability.
  void uniform_mutation(configuration& config, double rate);
  /// Genes [0, cut) from a, the rest from b, with cut uniform in [1, dim).
  configuration single_point_crossover(const configuration& a, const configuration& b);
  /// Index drawn with probability proportional to weights (uniform if all 0).
  std::size_t roulette(const std::vector<double>& weights);

  double hyper(const std::string& name) const { return hyper_.at(name); }
  /// A hyperparameter that must be a whole number >= minimum.
  std::size_t hyper_count(const std::string& name, std::size_t minimum) const;
  /// A hyperparameter that must lie in [low, high].
  double hyper_in(const std::string& name, double low, double high) const;

  std::size_t observed_count() const { return observed_; }
  /// Results observed since the last one that was faster than every earlier
  /// one (all of them while none was ok): how long the search has stalled.
  std::size_t results_since_improvement() const { return observed_ - last_improvement_; }

  search_space_ptr space_;
  rng_type rng_;

 private:
  std::string name_;
  std::map<std::string, double> hyper_;
  /// Whether the configuration was measured or is in flight; marking it
  /// says whether it was new.
  bool seen(const configuration& config) const;
  bool mark_seen(const configuration& config);

  // Measured or in flight: by key where the space gives one (search_space::
  // key), the rest (a space too large for keys, out-of-range configurations
  // from a resumed file) by value.
  key_set seen_keys_;
  configuration_set seen_;
  std::size_t observed_ = 0;
  double best_fitness_ = 0;
  std::size_t last_improvement_ = 0;  // observed_ at the last new best
  std::size_t seen_valid_ = 0;
  std::optional<std::optional<std::uint64_t>> valid_count_;  // computed lazily
  // Once rejection sampling failed: the enumerated valid members that were
  // unseen then; seen ones are dropped as draws meet them.
  std::vector<const configuration*> unseen_;
  bool unseen_listed_ = false;
};

}  // namespace tune
