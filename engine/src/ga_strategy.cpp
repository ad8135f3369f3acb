// ga: a plain genetic algorithm in the style of Kernel Tuner's
// genetic_algorithm: parents chosen by rank-weighted roulette (the best of P
// gets weight P, the worst 1), single-point crossover, per-gene uniform
// mutation, elitism.
//
// Steady state: the population is always the best `population` configurations
// observed so far (failures have fitness 0 and are never kept), so the elite
// survive by construction and each requested child is bred from the current
// population. Until `population` results with positive fitness exist the
// strategy proposes random configurations (the initial population). A child
// that is invalid, measured or in flight is mutated again (at most 20 times),
// then replaced by a random unseen one. Hyperparameters "population" and
// "mutation"; their defaults are ga_defaults() below.
#include <algorithm>

#include "strategies.hpp"
#include "tune/engine/strategy_base.hpp"

namespace tune::detail {

const hyper_table& ga_defaults() {
  static const hyper_table table = {{"population", 20}, {"mutation", 0.1}};
  return table;
}

namespace {
class ga_strategy final : public strategy_base {
 public:
  ga_strategy(search_space_ptr space, const strategy_options& options)
      : strategy_base("ga", std::move(space), options, ga_defaults()),
        population_(hyper_count("population", 2)),
        mutation_(hyper_in("mutation", 0, 1)),
        best_(population_) {}

 protected:
  void on_result(const trial_result& result, double fit) override { best_.insert(fit, result.config); }

  void generate(std::size_t n, std::vector<configuration>& out) override {
    if (best_.size() < population_) return;
    std::vector<double> rank_weights(best_.size());
    for (std::size_t i = 0; i < best_.size(); ++i) rank_weights[i] = static_cast<double>(best_.size() - i);
    while (out.size() < n) {
      const auto& a = best_.config(roulette(rank_weights));
      const auto& b = best_.config(roulette(rank_weights));
      auto child = single_point_crossover(a, b);
      uniform_mutation(child, mutation_);
      auto config = refresh(std::move(child), [this](configuration& c) { uniform_mutation(c, mutation_); });
      if (!config || !claim(out, *config)) break;
    }
  }

 private:
  std::size_t population_;
  double mutation_;
  ranked_configurations best_;
};
}  // namespace

std::unique_ptr<strategy> make_ga_strategy(search_space_ptr space, const strategy_options& options) {
  return std::make_unique<ga_strategy>(std::move(space), options);
}

}  // namespace tune::detail
