// random: uniform sampling without replacement over the valid configurations.
// Steady state is trivial: every propose(n) draws n unseen valid
// configurations; results only feed the dedup set. No hyperparameters.
#include "strategies.hpp"
#include "tune/engine/strategy_base.hpp"

namespace tune::detail {

const hyper_table& random_defaults() {
  static const hyper_table table;
  return table;
}

namespace {
class random_strategy final : public strategy_base {
 public:
  random_strategy(search_space_ptr space, const strategy_options& options)
      : strategy_base("random", std::move(space), options, random_defaults()) {}

 protected:
  // The base tops every request up with uniform unseen valid draws.
  void generate(std::size_t, std::vector<configuration>&) override {}
  void on_result(const trial_result&, double) override {}
};
}  // namespace

std::unique_ptr<strategy> make_random_strategy(search_space_ptr space, const strategy_options& options) {
  return std::make_unique<random_strategy>(std::move(space), options);
}

}  // namespace tune::detail
