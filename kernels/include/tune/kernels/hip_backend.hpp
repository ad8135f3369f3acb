#pragma once
// The HIP backend (built when CMake finds hipcc and the HIP headers): the
// configuration's source — the CUDA templates with the HIP runtime header in
// front — is compiled offline by hipcc into an AMD code object for one offload
// arch, kept in the compile cache; the device's resident tune-kernel-worker
// process (as for CUDA) loads it through the HIP runtime (dlopen'ed
// libamdhip64.so.5), times it with HIP events and compares the output with
// the reference. Without the runtime or an AMD GPU,
// runs end as runtime_error with a message beginning "no AMD GPU found".
//
//   source(config) ──hipcc --genco --offload-arch=<hip_arch> -O3──> <cache>/hip/<hash>.co
//       ──resident tune-kernel-worker: hipModuleLoadData, hipModuleLaunchKernel, hipEvent──> check, median time

#include <string>
#include <vector>

#include "tune/kernels/backend.hpp"
#include "tune/kernels/kernel_program.hpp"
#include "tune/kernels/task.hpp"

namespace tune {

/// The hipcc this build found, and its first two --version lines (HIP and
/// clang versions); part of every cache key.
std::string hipcc_path();
std::string hipcc_version();

/// hipcc's flags (after the compiler) for a code object of `arch`.
std::vector<std::string> hip_compile_flags(const std::string& arch);

/// The offload arch `options` selects: options.hip_arch, else $TUNE_HIP_ARCH,
/// else gfx90a. Throws std::invalid_argument unless it looks like an AMD
/// offload arch (gfx followed by hex digits, optionally :feature+/- suffixes).
std::string hip_offload_arch(const task_backend_options& options);

/// A HIP backend for a program with launch geometry (the built-in templates,
/// or any kernel_program whose source is HIP with an extern "C" entry).
backend_ptr make_hip_backend(kernel_program_ptr program, const task_backend_options& options);

}  // namespace tune
