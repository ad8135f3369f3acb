// opevo: OpEvo (Algorithm 1). The priority queue holds every observed
// configuration with positive fitness (1 / time_ms); failed ones get fitness 0
// and never become parents.
//
// Steady state: while fewer than λ positive results exist, propose() returns
// random unseen valid configurations (the λ random initial ones, plus
// replacements for failures). Afterwards every requested child is recombined
// from the current top-λ: for each parameter, the parent is chosen with
// probability proportional to its fitness (Eq. 2), then each parameter is
// mutated by the q-random walk on its topology (Eq. 3). A child that is
// invalid, measured or in flight is re-mutated (at most 20 times), then
// replaced by a fresh random valid configuration. Without a generation
// barrier ρ (children per generation in Algorithm 1) has no effect: each child
// is drawn from the top-λ at the moment it is requested. It is still accepted
// and checked so that run files written for the paper's settings work.
// Hyperparameters "lambda" (λ), "rho" (ρ), "q"; their defaults, the paper's
// settings, are opevo_defaults() below.
#include "opevo.hpp"

#include <algorithm>

#include "strategies.hpp"

namespace tune::detail {

const hyper_table& opevo_defaults() {
  static const hyper_table table = {{"lambda", 8}, {"rho", 8}, {"q", 0.5}};
  return table;
}

opevo_strategy::opevo_strategy(std::string name, search_space_ptr space, const strategy_options& options,
                               const hyper_table& defaults)
    : strategy_base(std::move(name), std::move(space), options, defaults) {
  lambda_ = hyper_count("lambda", 1);
  // Only the top λ are ever read (the parents, the best, whether λ exist):
  // keeping no more makes an insertion O(λ) rather than O(results).
  ranked_ = ranked_configurations(lambda_);
  hyper_count("rho", 1);
  double q = hyper_in("q", 0.0, 0.999);
  for (const auto& param : space_->parameters()) walks_.emplace_back(param, q);
}

void opevo_strategy::on_result(const trial_result& result, double fit) { ranked_.insert(fit, result.config); }

void opevo_strategy::mutate(configuration& config) {
  for (std::size_t i = 0; i < config.size(); ++i) config[i] = walks_[i](config[i], rng_);
}

std::optional<configuration> opevo_strategy::child() {
  std::size_t top = std::min(lambda_, ranked_.size());
  auto weights = ranked_.fitnesses(top);
  configuration config(space_->dimension());
  for (std::size_t i = 0; i < config.size(); ++i) config[i] = ranked_.config(roulette(weights))[i];
  mutate(config);
  return refresh(std::move(config), [this](configuration& c) { mutate(c); });
}

void opevo_strategy::generate(std::size_t n, std::vector<configuration>& out) {
  if (!evolving()) return;
  while (out.size() < n) {
    auto config = child();
    if (!config || !claim(out, *config)) break;
  }
}

std::unique_ptr<strategy> make_opevo_strategy(search_space_ptr space, const strategy_options& options) {
  return std::make_unique<opevo_strategy>("opevo", std::move(space), options, opevo_defaults());
}

}  // namespace tune::detail
