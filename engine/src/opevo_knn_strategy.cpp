// opevo+knn: OpEvo's topology-aware children filtered by NoSE's k-NN
// surrogate. Before λ positive results exist it proposes random
// configurations, like opevo. Afterwards a request for n draws
// oversample × n fresh OpEvo children (Eq. 2 recombination of the top-λ,
// q-random-walk mutation), predicts each one's fitness with the weighted k-NN
// regressor over every observation (failures count as fitness 0) and proposes
// the n best predicted. Steady state as in opevo: no generation barrier.
// Defaults: λ = ρ = 8, q = 0.5, oversample = 5, k = 9.
#include <algorithm>
#include <cmath>

#include "opevo.hpp"
#include "strategies.hpp"
#include "tune/engine/surrogate.hpp"

namespace tune::detail {

namespace {
class opevo_knn_strategy final : public opevo_strategy {
 public:
  opevo_knn_strategy(search_space_ptr space, const strategy_options& options)
      : opevo_strategy("opevo+knn", space, options, {{"oversample", 5}, {"k", 9}}),
        oversample_(hyper_in("oversample", 1, 1000)),
        surrogate_(space, hyper_count("k", 1)) {}

 protected:
  void on_result(const trial_result& result, double fit) override {
    surrogate_.add(result.config, fit);
    opevo_strategy::on_result(result, fit);
  }

  void generate(std::size_t n, std::vector<configuration>& out) override {
    if (!evolving()) return;
    auto wanted = static_cast<std::size_t>(std::ceil(static_cast<double>(n) * oversample_));
    std::vector<std::pair<double, configuration>> scored;
    configuration_set drawn;
    for (std::size_t i = 0; i < wanted; ++i) {
      auto config = child();
      if (!config) break;
      if (drawn.insert(*config).second) scored.emplace_back(surrogate_.predict(*config), std::move(*config));
    }
    claim_best(std::move(scored), n, out);
  }

 private:
  double oversample_;
  knn_surrogate surrogate_;
};
}  // namespace

std::unique_ptr<strategy> make_opevo_knn_strategy(search_space_ptr space, const strategy_options& options) {
  return std::make_unique<opevo_knn_strategy>(std::move(space), options);
}

}  // namespace tune::detail
