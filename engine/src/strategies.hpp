#pragma once
// Factories of the built-in strategies (one .cpp each) and the tables of
// their hyperparameters' defaults; used by make_strategy and
// strategy_defaults. Each strategy passes its table to strategy_base, which
// takes the defaults from it and nowhere else.

#include <map>
#include <memory>
#include <string>

#include "tune/engine/strategy.hpp"

namespace tune::detail {

using hyper_table = std::map<std::string, double>;

const hyper_table& random_defaults();
const hyper_table& ga_defaults();
const hyper_table& opevo_defaults();
const hyper_table& opevo_knn_defaults();
const hyper_table& nose_defaults();
const hyper_table& nsga2_defaults();
const hyper_table& bo_defaults();
const hyper_table& xgb_defaults();

std::unique_ptr<strategy> make_random_strategy(search_space_ptr space, const strategy_options& options);
std::unique_ptr<strategy> make_ga_strategy(search_space_ptr space, const strategy_options& options);
std::unique_ptr<strategy> make_opevo_strategy(search_space_ptr space, const strategy_options& options);
std::unique_ptr<strategy> make_opevo_knn_strategy(search_space_ptr space, const strategy_options& options);
std::unique_ptr<strategy> make_nose_strategy(search_space_ptr space, const strategy_options& options);
std::unique_ptr<strategy> make_nsga2_strategy(search_space_ptr space, const strategy_options& options);
std::unique_ptr<strategy> make_bo_strategy(search_space_ptr space, const strategy_options& options);
std::unique_ptr<strategy> make_xgb_strategy(search_space_ptr space, const strategy_options& options);

}  // namespace tune::detail
