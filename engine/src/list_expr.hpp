#pragma once
// Value lists written as Python expressions, the way T1 specs write them:
// "[1, 2, 4]", "[2**i for i in range(0, 6)]", "[1, 2] + list(range(32, 1024+1, 32))".

#include <string>
#include <vector>

#include "tune/engine/parameter.hpp"

namespace tune {

/// Evaluates a list expression; throws std::invalid_argument saying what
/// could not be read.
std::vector<parameter_value> evaluate_list_expression(const std::string& text);

}  // namespace tune
