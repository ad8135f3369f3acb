// Tunes an objective through tune::session (the actor pipeline, no database)
// and checks the report: the budget spent, the best configuration and its
// value the ones the objective saw.
#include <cmath>
#include <cstdio>
#include <mutex>
#include <tune/engine/parameter.hpp>
#include <tune/tune.hpp>

int main() {
  std::vector<double> values;
  for (int i = 0; i < 16; ++i) values.push_back(i);
  tune::session_options options;
  options.space = std::make_shared<tune::search_space>(std::vector<tune::parameter_ptr>{
      tune::make_discrete_parameter("x", values), tune::make_discrete_parameter("y", values)});
  std::mutex mutex;
  double lowest = INFINITY;
  options.objective = [&](const tune::configuration& config) {
    double x = std::get<double>(options.space->parameters()[0]->value(config[0]));
    double y = std::get<double>(options.space->parameters()[1]->value(config[1]));
    double value = (x - 3) * (x - 3) + (y - 11) * (y - 11) + 1.0;
    std::lock_guard lock(mutex);
    lowest = std::min(lowest, value);
    return value;
  };
  options.budget.trials = 24;
  options.seed = 5;
  auto report = tune::tune_once(options);
  std::printf("session_consumer: tune-engine %s, %llu trials, ended by %s, best %s = %g\n",
              std::string(tune::version()).c_str(), static_cast<unsigned long long>(report.trials),
              std::string(tune::to_string(report.reason)).c_str(),
              report.best ? report.best->config_json.c_str() : "none", report.best ? report.best->time_ms : NAN);
  return report.trials == 24 && report.best && report.best->time_ms == lowest ? 0 : 1;
}
