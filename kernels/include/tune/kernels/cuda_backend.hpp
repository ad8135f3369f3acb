#pragma once
// The CUDA backend (built when the toolkit provides NVRTC): NVRTC compiles the
// configuration's source to a cubin for one compute capability, in a
// tune-kernel-worker process of its own (killed at the build's limit), kept
// in the compile cache; the device's resident tune-kernel-worker process (its
// context, buffers and events kept between trials) loads it through the
// driver API (dlopen'ed libcuda.so.1), checks the launch against the device's
// limits, times it with CUDA events and compares the output with the
// reference — on the device, with a comparison module compiled once per
// compute capability (cuda_check_module), so that a trial's cost does not
// grow with its output. A device error ends that process, a hang or a run far slower
// than the best time (and longer than a fresh process's set-up, which the kill
// costs the next trial) is ended by killing it; the next trial starts another.
// Without a driver, runs end as runtime_error with "no CUDA driver found
// (libcuda.so.1)".

#include <filesystem>
#include <string>

#include "tune/kernels/backend.hpp"
#include "tune/kernels/kernel_program.hpp"
#include "tune/kernels/task.hpp"

namespace tune {

struct nvrtc_output {
  status state = status::ok;  ///< ok, compile_error (cannot start or write), compile_error_device or build_timeout
  std::string log;
  double seconds = 0.0;
};

/// Compiles CUDA source to a cubin for sm_<arch> (e.g. 80, 90) with the NVRTC
/// library this one links (nvrtc_library_path), in a process of its own:
/// `worker` (tune-kernel-worker, as kernel_worker_path finds it) run with
/// --nvrtc, killed with what it started once `timeout_s` has passed
/// (build_timeout). NVRTC cannot be interrupted within a process, so a
/// compile on a thread of this one would run on past its limit, holding a
/// core, and could still be running when the process ends. The cubin is
/// written to `cubin` (the compile cache's temporary name: no copy through
/// memory), the source for the worker to `cubin` + ".cu", removed after; on
/// anything but ok no file is left at `cubin`.
nvrtc_output nvrtc_compile(const std::string& source, int arch, double timeout_s, const std::string& worker,
                           const std::filesystem::path& cubin);

/// The file of the NVRTC library loaded in this process.
std::string nvrtc_library_path();

/// "NVRTC major.minor".
std::string nvrtc_version();

/// The entry points of the comparison module, one per element type: each
/// compares `n` outputs with the expected ones as the host does
/// (|out - ref| <= tolerance * max(1, |ref|), or <= tolerance when absolute;
/// NaN is wrong) and leaves in result[0] the lowest index out of tolerance
/// (all bits set when none) and in result[1] the bits of the largest error
/// of the elements within it (a double), both reduced with atomics.
inline constexpr const char* cuda_check_entries[] = {"tune_check_f32", "tune_check_f64", "tune_check_i32"};

/// The comparison module for sm_<arch>, compiled with NVRTC (through
/// `worker`, as nvrtc_compile) once and kept in the compile cache under
/// `cache_dir` (the CUDA backend's folder): its path; empty with `why` when
/// it cannot be built (the comparison then happens on the host, as before).
std::string cuda_check_module(int arch, const std::string& cache_dir, const std::string& worker,
                              std::string* why = nullptr);

/// A CUDA backend for a program with launch geometry. options.cuda_arch 0
/// asks the driver for device 0's compute capability (80 when there is no
/// driver, so that building still works).
backend_ptr make_cuda_backend(kernel_program_ptr program, const task_backend_options& options);

}  // namespace tune
