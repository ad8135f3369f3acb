#include <stdexcept>
#include <utility>

#include "strategies.hpp"
#include "tune/engine/strategy.hpp"
#include "tune/engine/text.hpp"

namespace tune {

namespace {
struct entry {
  std::string name;
  std::unique_ptr<strategy> (*make)(search_space_ptr, const strategy_options&);
  const detail::hyper_table& (*defaults)();
};

const std::vector<entry>& registry() {
  static const std::vector<entry> entries = {
      {"random", detail::make_random_strategy, detail::random_defaults},
      {"ga", detail::make_ga_strategy, detail::ga_defaults},
      {"opevo", detail::make_opevo_strategy, detail::opevo_defaults},
      {"nose", detail::make_nose_strategy, detail::nose_defaults},
      {"nsga2", detail::make_nsga2_strategy, detail::nsga2_defaults},
      {"opevo+knn", detail::make_opevo_knn_strategy, detail::opevo_knn_defaults},
      {"bo", detail::make_bo_strategy, detail::bo_defaults},
      {"xgb", detail::make_xgb_strategy, detail::xgb_defaults},
  };
  return entries;
}

const entry& find(std::string_view name) {
  for (auto& known : registry())
    if (known.name == name) return known;
  throw std::invalid_argument("unknown strategy '" + std::string(name) + "' (accepted: " + join(strategy_names()) +
                              ")");
}
}  // namespace

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (auto& known : registry()) names.push_back(known.name);
  return names;
}

std::string default_strategy_name() { return "bo"; }

std::map<std::string, double> strategy_defaults(std::string_view name) { return find(name).defaults(); }

std::unique_ptr<strategy> make_strategy(std::string_view name, search_space_ptr space,
                                        const strategy_options& options) {
  return find(name).make(std::move(space), options);
}

}  // namespace tune
