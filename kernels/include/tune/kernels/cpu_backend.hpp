#pragma once
// The CPU backend: the configuration is baked into generated C++ source, the
// system compiler builds a shared object into a cache keyed by everything that
// changes the binary, and the device's resident tune-kernel-worker process
// (started on its first run, pinned to its cores, inputs filled once) measures
// it in a child forked for the trial:
//
//   source(config) ──c++ -O3 -march=native -shared──> <cache>/<hash>.so
//       ──resident worker ──fork──> child: dlopen, check vs reference, median time
//
// A crash of the kernel is a runtime_error, a hang a run_timeout, a run far
// slower than the best time too_slow, a mismatch with the reference a
// wrong_answer; the engine goes on in every case.

#include <string>
#include <vector>

#include "tune/kernels/backend.hpp"
#include "tune/kernels/kernel_program.hpp"
#include "tune/kernels/task.hpp"

namespace tune {

/// A CPU backend for any kernel program (built-in template or user kernel).
backend_ptr make_cpu_backend(kernel_program_ptr program, const task_backend_options& options);

/// The flags a CPU kernel of `program` is compiled with besides -std=c++20
/// -fPIC -shared (and, with GCC, the program's gcc_build_flags, which change
/// no code): optimisation for this machine and the program's own. A tuned
/// kernel compiled into another program needs them too.
std::vector<std::string> cpu_kernel_flags(const kernel_program& program, const configuration& config);

/// Every flag the CPU backend builds a kernel of `program` with, `compiler`
/// being the host compiler: -std=c++20 -fPIC -shared, cpu_kernel_flags, and
/// the program's gcc_build_flags when `compiler` is GCC.
std::vector<std::string> cpu_build_flags(const kernel_program& program, const configuration& config,
                                         const std::string& compiler);

/// Whether `compiler` (a name looked up in PATH, or a path) is GCC: its
/// --version names the Free Software Foundation and not clang. Asked once
/// per compiler in a process.
bool compiler_is_gcc(const std::string& compiler);

/// Builds `source` (kept beside the shared object with `source_extension`)
/// with `compiler` and `flags` into the CPU compile cache, keyed by the
/// source, the compiler's identity and the flags, unless it is there already.
/// A failed, timed out or unstartable compile is a status.
build_result compile_shared_object(const task_backend_options& options, const std::string& compiler,
                                   const std::string& source, const std::string& source_extension,
                                   const std::vector<std::string>& flags, double timeout_s);

/// The compile cache folder of `options` (see task_backend_options::cache_dir).
std::string kernel_cache_dir(const task_backend_options& options);

/// The worker program that `options` selects: options.worker_path, else
/// $TUNE_KERNEL_WORKER, else the first of kernel_worker_candidates() of the
/// folder of the library holding this code (found with dladdr) that exists,
/// else tune-kernel-worker next to the running program, else (static builds)
/// where the build put it.
std::string kernel_worker_path(const task_backend_options& options);

/// Where the worker may lie relative to the folder of an installed or built
/// libtune_kernels: the install layout's libexec folder
/// (../libexec/tune-engine), ../bin, and the folder itself (the build tree).
std::vector<std::string> kernel_worker_candidates(const std::string& library_dir);

/// The expected outputs of a program: its reference source compiled once and
/// run once by the worker, kept in the cache. Empty path and a message when it
/// fails. Thread-safe (concurrent callers wait for one computation).
struct reference_outputs {
  std::string path;
  std::string message;
};
reference_outputs prepare_reference(const kernel_program& program, const task_backend_options& options,
                                    double timeout_s = 1800.0);

/// Builds `config` of a CPU kernel program (as its backend does) and runs it
/// once on its inputs, in the worker; every array as it is after the run goes
/// to `arrays_path` (raw elements, in argument order). Kernel Tuner's
/// run_kernel.
run_result run_cpu_program_once(const kernel_program& program, const task_backend_options& options,
                                const configuration& config, const std::string& arrays_path, double timeout_s = 600.0);

/// Runs the worker once with a request (JSON text), in a process of its own;
/// maps a crash, a timeout and the worker's reply to a run_result. (The
/// reference outputs, program mode, and runs with
/// task_backend_options::resident_measurer off.) At most max_processes processes and threads
/// at once (see process_limits; 0: no limit): past it a kernel's fork fails.
run_result run_worker(const std::string& worker, const std::string& request, double timeout_s,
                      int max_processes = 1024);

}  // namespace tune
