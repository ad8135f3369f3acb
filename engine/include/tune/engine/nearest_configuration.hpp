#pragma once
// A configuration of one space carried onto a similar space: another shape of
// the same operator, whose factorization parameters split other extents. Each
// parameter takes the value it had when the space has it; otherwise a
// factorization takes the split of its own extent nearest to the old one
// (least sum over the factors of |log(new / old)|, the inner factors weighing
// more: the same inner tile sizes where they divide), a discrete parameter
// its nearest value; a categorical or
// permutation value the space lacks, or a parameter missing, maps nowhere.

#include <map>
#include <optional>
#include <string>

#include "tune/engine/parameter.hpp"
#include "tune/engine/space.hpp"

namespace tune {

/// The values of a configuration written as JSON (search_space::to_json);
/// throws std::invalid_argument quoting the text when it is not such an object.
std::map<std::string, parameter_value> values_from_json(const std::string& text);

/// The configuration of `space` nearest to these values (see above), valid in
/// it (its constraints hold); nullopt when none is.
std::optional<configuration> nearest_configuration(const search_space& space,
                                                   const std::map<std::string, parameter_value>& values);

}  // namespace tune
