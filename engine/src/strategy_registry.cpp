#include <functional>
#include <stdexcept>
#include <utility>

#include "strategies.hpp"
#include "tune/engine/strategy.hpp"
#include "tune/engine/text.hpp"

namespace tune {

namespace {
using factory = std::unique_ptr<strategy> (*)(search_space_ptr, const strategy_options&);

const std::vector<std::pair<std::string, factory>>& registry() {
  static const std::vector<std::pair<std::string, factory>> entries = {
      {"random", detail::make_random_strategy}, {"ga", detail::make_ga_strategy},
      {"opevo", detail::make_opevo_strategy},   {"nose", detail::make_nose_strategy},
      {"nsga2", detail::make_nsga2_strategy},   {"opevo+knn", detail::make_opevo_knn_strategy},
      {"bo", detail::make_bo_strategy},
  };
  return entries;
}
}  // namespace

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (auto& [name, make] : registry()) names.push_back(name);
  return names;
}

std::string default_strategy_name() { return "bo"; }

std::unique_ptr<strategy> make_strategy(std::string_view name, search_space_ptr space,
                                        const strategy_options& options) {
  for (auto& [known, make] : registry())
    if (known == name) return make(std::move(space), options);
  throw std::invalid_argument("unknown strategy '" + std::string(name) + "' (accepted: " + join(strategy_names()) +
                              ")");
}

}  // namespace tune
