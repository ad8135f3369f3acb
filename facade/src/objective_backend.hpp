#pragma once
// A backend around a callable: build() has nothing to compile, run() calls the
// objective with the configuration and takes its return value as the time.
// A throw, or a value that is not finite, is a runtime_error trial with the
// message; the run goes on.

#include <string>

#include "tune/tune.hpp"

namespace tune::detail {

/// `task_name` names the task in the results database; device_kind() is
/// "callable". Throws input_error for an empty objective or space.
backend_ptr make_objective_backend(objective_fn objective, search_space_ptr space, const std::string& task_name);

}  // namespace tune::detail
