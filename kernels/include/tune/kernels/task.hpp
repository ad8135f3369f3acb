#pragma once
// Tasks: one tensor operator with its problem shape, written as a string.
//
//   matmul:NxKxM                      C[N,M] = A[N,K] · B[K,M]
//   bmm:BxNxKxM[:nn|tn|nt]            batched; t = that operand stored transposed
//   conv2d:BxCxHxW:FxKHxKW[:sS][:pP][:own]
//                                     direct 2D convolution, NCHW, stride S, padding P;
//                                     own: the kernel's own layouts, converted to and
//                                     from outside the timed kernel (CPU only)
//
// make_task_backend() turns a task into a backend that builds and measures
// its configurations on the CPU, (when built with NVRTC) on a CUDA GPU or
// (when built with hipcc) on an AMD GPU. The
// search space of a task depends on the backend (see docs/kernels.md).

#include <cstdint>
#include <string>
#include <vector>

#include "tune/engine/limits.hpp"
#include "tune/kernels/backend.hpp"
#include "tune/kernels/kernel_program.hpp"

namespace tune {

enum class operator_kind { matmul, batch_matmul, conv2d };

struct task_spec {
  operator_kind op = operator_kind::matmul;
  // matmul and bmm (batch == 1 for matmul)
  std::int64_t batch = 1, n = 0, k = 0, m = 0;
  bool transpose_a = false;  ///< A stored as [K,N]
  bool transpose_b = false;  ///< B stored as [M,K]
  // conv2d (batch above is the image count)
  std::int64_t in_channels = 0, height = 0, width = 0;
  std::int64_t out_channels = 0, kernel_h = 0, kernel_w = 0;
  std::int64_t stride = 1, pad = 0;
  /// The kernel keeps the image, the weights and the output in its own
  /// layouts: the conversions from and to the plain NCHW / OIHW tensors run
  /// outside the timed kernel (as in oneDNN's own-layout figure).
  bool own_layouts = false;

  std::int64_t out_height() const { return (height + 2 * pad - kernel_h) / stride + 1; }
  std::int64_t out_width() const { return (width + 2 * pad - kernel_w) / stride + 1; }
  /// Floating-point operations of one run (2 per multiply-add).
  double flops() const;
  /// The canonical task string (parse_task(to_string()) gives the same task).
  std::string to_string() const;
};

/// Parses a task string. Throws std::invalid_argument naming the expected form.
task_spec parse_task(const std::string& text);

struct task_backend_options {
  /// Where compiled kernels are kept; empty: $TUNE_CACHE_DIR, else
  /// $XDG_CACHE_HOME/tune-engine, else ~/.cache/tune-engine.
  std::string cache_dir;
  /// Host compiler for CPU kernels (looked up in PATH).
  std::string compiler = "c++";
  /// The host compiler runs with its large memory mappings on transparent
  /// huge pages (a preload library built in the cache; the same output, fewer
  /// page faults: compiler_huge_pages.hpp). false: as it runs by itself.
  bool compiler_huge_pages = true;
  /// Threads one CPU kernel may use; each CPU device is this many cores.
  int threads = 1;
  /// Core of CPU device 0; device d is pinned to cores first_core + d*threads ...
  int first_core = 0;
  /// How each configuration is timed (median of the timed runs).
  measurement_protocol measurement;
  /// Largest accepted |out - ref| / max(1, |ref|) per element.
  double tolerance = 1e-3;
  /// Address space of the process measuring a CPU kernel (RLIMIT_AS), in MiB:
  /// a kernel that allocates past it gets no memory and its run becomes a
  /// runtime_error instead of exhausting the machine. 0: half of the physical
  /// memory. GPU kernels are not limited (drivers reserve large address ranges).
  double memory_limit_mb = 0.0;
  /// Processes and threads the measurement of one kernel may have at once,
  /// the worker's included: past it a kernel's fork() or thread creation
  /// fails, so a fork bomb becomes a status instead of filling the machine.
  /// Enforced where a pids cgroup can be made (see process_limits); 0: none.
  int max_processes = 1024;
  /// CPU, CUDA and HIP kernels are measured by a resident worker process per
  /// device, started on the device's first run and kept (inputs filled once;
  /// CPU kernels each in a child forked from it). false: by a worker process
  /// of its own per trial, measured in full (no slow limit, no early stop),
  /// as before the resident process; kept for comparison.
  bool resident_measurer = true;
  /// The measuring worker program; empty: $TUNE_KERNEL_WORKER, then relative
  /// to the installed or built library (see kernel_worker_path()).
  std::string worker_path;
  /// CUDA: compute capability to compile for (80, 90, …); 0: the device's.
  int cuda_arch = 0;
  /// HIP: the AMD offload arch code objects are built for (gfx90a, gfx908, …),
  /// passed to hipcc as --offload-arch; it must match the device that runs
  /// them. Empty: $TUNE_HIP_ARCH, else gfx90a.
  std::string hip_arch;
};

/// "cpu" always; "cuda" when built with NVRTC; "hip" when built with hipcc.
std::vector<std::string> task_backend_names();

/// A backend for a built-in task. Throws std::invalid_argument for an unknown
/// backend name or a bad task string.
backend_ptr make_task_backend(const task_spec& task, const std::string& backend_name,
                              const task_backend_options& options = {});
backend_ptr make_task_backend(const std::string& task, const std::string& backend_name,
                              const task_backend_options& options = {});

/// The program the "cpu" backend builds for a task: its search space, the
/// source of each configuration, its flags.
kernel_program_ptr make_cpu_task_program(const task_spec& task, int threads = 1);

}  // namespace tune
