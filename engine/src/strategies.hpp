#pragma once
// Factories of the built-in strategies (one .cpp each); used by make_strategy.

#include <memory>

#include "tune/engine/strategy.hpp"

namespace tune::detail {

std::unique_ptr<strategy> make_random_strategy(search_space_ptr space, const strategy_options& options);
std::unique_ptr<strategy> make_ga_strategy(search_space_ptr space, const strategy_options& options);
std::unique_ptr<strategy> make_opevo_strategy(search_space_ptr space, const strategy_options& options);
std::unique_ptr<strategy> make_opevo_knn_strategy(search_space_ptr space, const strategy_options& options);
std::unique_ptr<strategy> make_nose_strategy(search_space_ptr space, const strategy_options& options);
std::unique_ptr<strategy> make_nsga2_strategy(search_space_ptr space, const strategy_options& options);
std::unique_ptr<strategy> make_bo_strategy(search_space_ptr space, const strategy_options& options);

}  // namespace tune::detail
