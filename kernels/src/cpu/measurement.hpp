#pragma once
// What the compiling backends (CPU, CUDA, HIP) share around tune-kernel-worker:
// the checks before a build and the measurement request.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "tune/kernels/backend.hpp"
#include "tune/kernels/kernel_program.hpp"
#include "tune/kernels/task.hpp"

namespace tune {

/// A failed build result when the configuration is outside the space or
/// breaks the program's resource check; nullopt when it may be built.
std::optional<build_result> instantiation_failure(const kernel_program& program, const configuration& config);

/// The worker's measurement request for a built artifact, without the device
/// fields; a failed run result instead when the build failed or the reference
/// cannot be had.
struct measurement_plan {
  nlohmann::json request;
  std::optional<run_result> failure;
};
measurement_plan plan_measurement(const kernel_program& program, const task_backend_options& options,
                                  const build_result& build);

}  // namespace tune
