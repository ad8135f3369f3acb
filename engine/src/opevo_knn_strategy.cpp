// opevo+knn: OpEvo's topology-aware children filtered by NoSE's k-NN
// surrogate, with a local search around the best and random exploration
// after a stall. Until `initial` results were observed and λ of them were
// positive it proposes random configurations (a wider first look than
// opevo's λ: on spaces where random search is strong, such as pnpoly and the
// 210-configuration KTT space, converging after 8 results costs more than it
// gains). Afterwards:
//
// - exploit: a request for n draws oversample × n fresh candidates, each one
//   with probability `local` a q-random-walk mutation of the best
//   configuration so far (every parameter walked as in Eq. 3), else an OpEvo
//   child (Eq. 2 recombination of the top-λ, q-random-walk mutation); the
//   weighted k-NN regressor over every observation (failures count as
//   fitness 0) predicts each one's fitness and the n best predicted are
//   proposed. The local share lets a new best that lies far from the other
//   top-λ parents be followed at once: recombination weighs it as one parent
//   of λ and mostly mixes it back into the old basin.
// - explore: each proposal is with probability `epsilon` a uniformly random
//   unseen valid configuration instead; once `stall` results in a row have
//   not improved the best, with probability `explore`, until the best
//   improves again. A run whose population converged on a second-best basin
//   (on convolution v1 the transposed tiling: tall blocks, tiles along x) can
//   only leave it by measuring a configuration of the other basin, which
//   neither the children nor the surrogate (it predicts from the nearest
//   measured configurations, all far away) would offer.
//
// Steady state as in opevo: no generation barrier; `initial` and the stall
// count results in the order they are observed. Defaults: opevo_knn_defaults()
// below (opevo's and its own), chosen on the replay benchmark over all six
// vendored datasets (docs/replay.md).
#include <algorithm>
#include <cmath>

#include "opevo.hpp"
#include "strategies.hpp"
#include "tune/engine/surrogate.hpp"

namespace tune::detail {

const hyper_table& opevo_knn_defaults() {
  static const hyper_table table = [] {
    hyper_table own = {{"initial", 24},  {"oversample", 10}, {"k", 9},        {"local", 0.25},
                       {"epsilon", 0.1}, {"stall", 40},      {"explore", 0.5}};
    own.insert(opevo_defaults().begin(), opevo_defaults().end());
    return own;
  }();
  return table;
}

namespace {
class opevo_knn_strategy final : public opevo_strategy {
 public:
  opevo_knn_strategy(search_space_ptr space, const strategy_options& options)
      : opevo_strategy("opevo+knn", space, options, opevo_knn_defaults()),
        initial_(hyper_count("initial", 0)),
        oversample_(hyper_in("oversample", 1, 1000)),
        local_(hyper_in("local", 0.0, 1.0)),
        epsilon_(hyper_in("epsilon", 0.0, 1.0)),
        stall_(hyper_count("stall", 1)),
        explore_(hyper_in("explore", 0.0, 1.0)),
        surrogate_(space, hyper_count("k", 1)) {}

 protected:
  void on_result(const trial_result& result, double fit) override {
    surrogate_.add(result.config, fit);
    opevo_strategy::on_result(result, fit);
  }

  void generate(std::size_t n, std::vector<configuration>& out) override {
    if (!evolving() || observed_count() < initial_) return;
    bool stalled = results_since_improvement() >= stall_;
    std::bernoulli_distribution coin(stalled ? explore_ : epsilon_);
    std::size_t random = 0;
    for (std::size_t i = 0; i < n; ++i) random += coin(rng_) ? 1 : 0;
    // The random share is left to strategy_base, which tops `out` up with
    // uniform random unseen valid configurations.
    exploit(n - random, out);
  }

 private:
  void exploit(std::size_t n, std::vector<configuration>& out) {
    if (n == 0) return;
    auto wanted = static_cast<std::size_t>(std::ceil(static_cast<double>(n) * oversample_));
    std::bernoulli_distribution near_best(local_);
    std::vector<std::pair<double, configuration>> scored;
    configuration_set drawn;
    for (std::size_t i = 0; i < wanted; ++i) {
      auto config = near_best(rng_) ? around_best() : child();
      if (!config) break;
      if (drawn.insert(*config).second) scored.emplace_back(surrogate_.predict(*config), std::move(*config));
    }
    claim_best(std::move(scored), n, out);
  }

  /// The best configuration with every parameter q-random-walked, re-walked
  /// until fresh (at most 20 times), then a random unseen one.
  std::optional<configuration> around_best() {
    auto config = ranked().config(0);
    mutate(config);
    return refresh(std::move(config), [this](configuration& c) { mutate(c); });
  }

  std::size_t initial_;
  double oversample_;
  double local_;
  double epsilon_;
  std::size_t stall_;
  double explore_;
  knn_surrogate surrogate_;
};
}  // namespace

std::unique_ptr<strategy> make_opevo_knn_strategy(search_space_ptr space, const strategy_options& options) {
  return std::make_unique<opevo_knn_strategy>(std::move(space), options);
}

}  // namespace tune::detail
