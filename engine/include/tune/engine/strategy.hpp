#pragma once
// Search strategies are ask/tell:
//
//   propose(n) ──> up to n new, valid, never-seen configurations
//   observe(r) <── one result at a time, in any order, failures included
//
// The pipeline never waits for a generation: each strategy maps its
// generations onto this steady state (see each implementation's comment).
// Every random choice comes from an RNG seeded with the run's seed, so the
// same seed and the same order of results give the same proposals.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tune/engine/result.hpp"
#include "tune/engine/space.hpp"

namespace tune {

struct strategy_options {
  std::uint64_t seed = 0;
  /// Hyperparameters by name (e.g. "lambda", "rho", "q" for opevo); a name the
  /// strategy does not know is an error.
  std::map<std::string, double> hyper;
  /// Results of the same search space measured elsewhere — on another device
  /// or in an earlier run — to transfer from: configurations of this space
  /// with their status and time (failures included). They are not
  /// measurements of this run: a strategy never counts them as seen, and
  /// proposes a prior configuration when it wants it measured here. `bo`
  /// proposes the prior's fastest configurations first and uses the prior's
  /// log times as a trend of its model, whose slope it fits to this run's
  /// results (docs/strategies.md, "`bo`'s start, cost cap and transfer from
  /// a prior"); the other strategies ignore it.
  std::vector<trial_result> prior;
  /// Valid configurations handed out first (Kernel Tuner's x0, a starting
  /// point): proposed before any of the strategy's own, which then knows
  /// their results as it knows every result it is told. The strategy never
  /// proposes one of them again. make_strategy throws std::invalid_argument
  /// for one that is not a valid configuration of the space.
  std::vector<configuration> start;
};

class strategy {
 public:
  virtual ~strategy() = default;
  virtual std::string name() const = 0;

  /// Up to n configurations that are valid, not yet measured and not in
  /// flight. Fewer (even none) when the strategy has nothing to offer now.
  virtual std::vector<configuration> propose(std::size_t n) = 0;

  /// Takes one result of a configuration this strategy proposed (or, on
  /// resume, one recorded earlier).
  virtual void observe(const trial_result& result) = 0;
};

/// Names accepted by make_strategy: random, ga, opevo, nose, nsga2, opevo+knn, bo, xgb.
std::vector<std::string> strategy_names();

/// The strategy used when none is named ("bo"): the best across the vendored
/// replay datasets by mean Willemsen score and mean f after 20 to 500
/// evaluations (docs/replay.md, "The default: `bo`").
std::string default_strategy_name();

/// The hyperparameters a strategy accepts, each with its default value: the
/// one table the strategy reads its defaults from (docs/strategies.md states
/// them, and a test holds the two equal). Empty for `random`. Throws
/// std::invalid_argument for an unknown name, listing the names.
std::map<std::string, double> strategy_defaults(std::string_view name);

/// A prior with one result per configuration, from results of several
/// sources (runs, devices, tasks) that may share configurations: a
/// configuration's time is the geometric mean of its ok times; one that
/// failed in any source keeps its first failure (an ok time that is not
/// positive counts as a runtime_error). Ordered by configuration.
std::vector<trial_result> merged_prior(const std::vector<trial_result>& results);

/// Throws std::invalid_argument for an unknown name or hyperparameter.
std::unique_ptr<strategy> make_strategy(std::string_view name, search_space_ptr space, const strategy_options& options);

}  // namespace tune
