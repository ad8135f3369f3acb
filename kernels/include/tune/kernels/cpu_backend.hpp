#pragma once
// The CPU backend: the configuration is baked into generated C++ source, the
// system compiler builds a shared object into a cache keyed by everything that
// changes the binary, and tune-kernel-worker measures it in a process of its
// own pinned to the device's cores:
//
//   source(config) ──c++ -O3 -march=native -shared──> <cache>/<hash>.so
//       ──tune-kernel-worker (fork/exec, pinned)──> check vs reference, median time
//
// A crash of the kernel is a runtime_error, a hang a run_timeout, a mismatch
// with the reference a wrong_answer; the engine goes on in every case.

#include <string>
#include <vector>

#include "tune/kernels/backend.hpp"
#include "tune/kernels/kernel_program.hpp"
#include "tune/kernels/task.hpp"

namespace tune {

/// A CPU backend for any kernel program (built-in template or user kernel).
backend_ptr make_cpu_backend(kernel_program_ptr program, const task_backend_options& options);

/// The compile cache folder of `options` (see task_backend_options::cache_dir).
std::string kernel_cache_dir(const task_backend_options& options);

/// The worker program that `options` selects: options.worker_path, else
/// $TUNE_KERNEL_WORKER, else tune-kernel-worker next to the running program,
/// else where the build put it.
std::string kernel_worker_path(const task_backend_options& options);

/// The expected outputs of a program: its reference source compiled once and
/// run once by the worker, kept in the cache. Empty path and a message when it
/// fails. Thread-safe (concurrent callers wait for one computation).
struct reference_outputs {
  std::string path;
  std::string message;
};
reference_outputs prepare_reference(const kernel_program& program, const task_backend_options& options,
                                    double timeout_s = 1800.0);

/// Runs the worker with a request (JSON text); maps a crash, a timeout and the
/// worker's reply to a run_result.
run_result run_worker(const std::string& worker, const std::string& request, double timeout_s);

}  // namespace tune
