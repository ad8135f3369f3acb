// nsga2: NSGA-II over the objective vector of each result
// (trial_result::objectives, or {time_ms} when empty), all minimised. Parents
// are picked by binary tournament on (front rank, crowding distance), bred by
// single-point crossover and per-gene uniform mutation. Failed results are
// not ranked (their values are not inherited).
//
// Steady state: the pool holds the current population plus every ok result
// that arrived since the last propose(). Each propose() first runs NSGA-II's
// environmental selection on the pool (whole fronts, the last one cut by
// crowding distance) down to `population`, then breeds every requested child
// from that population. Until `population` ok results exist, proposals are
// random (the initial population). A child that is invalid, measured or in
// flight is mutated again (at most 20 times), then replaced by a random
// unseen one. Hyperparameters "population" and "mutation"; their defaults are
// nsga2_defaults() below.
#include "strategies.hpp"
#include "tune/engine/pareto.hpp"
#include "tune/engine/strategy_base.hpp"

namespace tune::detail {

const hyper_table& nsga2_defaults() {
  static const hyper_table table = {{"population", 32}, {"mutation", 0.1}};
  return table;
}

namespace {
class nsga2_strategy final : public strategy_base {
 public:
  nsga2_strategy(search_space_ptr space, const strategy_options& options)
      : strategy_base("nsga2", std::move(space), options, nsga2_defaults()),
        population_(hyper_count("population", 2)),
        mutation_(hyper_in("mutation", 0, 1)) {}

 protected:
  void on_result(const trial_result& result, double) override {
    if (!result.ok()) return;
    points_.push_back(objectives_of(result));
    configs_.push_back(result.config);
    dirty_ = true;
  }

  void generate(std::size_t n, std::vector<configuration>& out) override {
    if (points_.size() < population_) return;
    if (dirty_) select();
    while (out.size() < n) {
      const auto& a = configs_[ranking_.tournament(rng_)];
      const auto& b = configs_[ranking_.tournament(rng_)];
      auto child = single_point_crossover(a, b);
      uniform_mutation(child, mutation_);
      auto config = refresh(std::move(child), [this](configuration& c) { uniform_mutation(c, mutation_); });
      if (!config || !claim(out, *config)) break;
    }
  }

 private:
  // Environmental selection down to population_, then rank and crowding of
  // the survivors.
  void select() {
    keep_survivors(points_, configs_, population_);
    ranking_ = crowded_ranking(points_);
    dirty_ = false;
  }

  std::size_t population_;
  double mutation_;
  bool dirty_ = false;
  std::vector<std::vector<double>> points_;  // ok results in the pool
  std::vector<configuration> configs_;
  crowded_ranking ranking_;
};
}  // namespace

std::unique_ptr<strategy> make_nsga2_strategy(search_space_ptr space, const strategy_options& options) {
  return std::make_unique<nsga2_strategy>(std::move(space), options);
}

}  // namespace tune::detail
