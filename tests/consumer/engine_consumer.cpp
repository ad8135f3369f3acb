// Tunes a function of two parameters with a tune::engine strategy (ask/tell)
// and checks what the strategy promises: valid configurations, none twice.
#include <cmath>
#include <cstdio>
#include <memory>
#include <tune/engine/parameter.hpp>
#include <tune/engine/space.hpp>
#include <tune/engine/strategy.hpp>

int main() {
  std::vector<double> values;
  for (int i = 0; i < 16; ++i) values.push_back(i);
  auto space = std::make_shared<tune::search_space>(std::vector<tune::parameter_ptr>{
      tune::make_discrete_parameter("x", values), tune::make_discrete_parameter("y", values)});
  auto strategy = tune::make_strategy("opevo", space, {.seed = 7, .hyper = {}});
  tune::configuration_set seen;
  double best = INFINITY;
  while (seen.size() < 32) {
    auto batch = strategy->propose(4);
    if (batch.empty()) break;
    for (const auto& config : batch) {
      if (!space->is_valid(config) || !seen.insert(config).second) return 1;
      double x = std::get<double>(space->parameters()[0]->value(config[0]));
      double y = std::get<double>(space->parameters()[1]->value(config[1]));
      tune::trial_result result{config, tune::status::ok, (x - 3) * (x - 3) + (y - 11) * (y - 11) + 1.0, {}};
      strategy->observe(result);
      best = std::min(best, result.time_ms);
    }
  }
  std::printf("engine_consumer: %s, %zu configurations, best %.1f\n", strategy->name().c_str(), seen.size(), best);
  return seen.size() == 32 ? 0 : 1;
}
