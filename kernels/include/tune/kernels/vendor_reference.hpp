#pragma once
// The vendor libraries as a yardstick: oneDNN (Conv2D, MatMul, BatchMatMul)
// and OpenBLAS sgemm (MatMul, BatchMatMul) timed on a built-in task's problem
// on the same cores and threads as a tuned kernel. Each figure is measured by
// tune-vendor-worker in a process of its own (OpenBLAS reads its core type when
// it loads, so its default and its fastest core type each need a process).

#include <string>
#include <vector>

#include "tune/kernels/task.hpp"

namespace tune {

/// One vendor kernel's figure on a task.
struct vendor_figure {
  std::string library;  ///< "onednn" or "openblas"
  /// onednn: "own layouts" (Conv2D: the layouts it prefers, reorders left out
  /// of the time) or "plain" (the task's tensors); openblas: "default" (the
  /// core type it picks) or the core type it was given (e.g. "SkylakeX").
  std::string variant;
  double gflops = 0.0;  ///< 0: no figure (see note)
  std::string detail;   ///< what the library ran (oneDNN implementation, OpenBLAS core)
  std::string note;     ///< why there is no figure
  bool available() const { return gflops > 0.0; }
};

struct vendor_options {
  int threads = 1;          ///< threads (and cores) of the vendor kernel
  int first_core = 0;       ///< pinned to cores first_core .. first_core + threads - 1
  double min_time_s = 0.5;  ///< median of repeats after a warm-up, at least this long in all
  double timeout_s = 600.0;
  /// tune-vendor-worker; empty: $TUNE_VENDOR_WORKER, else beside tune-kernel-worker.
  std::string worker_path;
};

/// The OpenBLAS core type with the widest vectors this CPU can use:
/// "SkylakeX" with AVX-512, "Haswell" with AVX2, "" otherwise.
std::string openblas_fastest_coretype();

/// The worker `options` select (see vendor_options::worker_path).
std::string vendor_worker_path(const vendor_options& options);

/// Every vendor kernel of `task`, timed one after the other: Conv2D: oneDNN
/// in its own layouts and in the plain ones, and OpenBLAS as "no
/// convolution"; MatMul and BatchMatMul: oneDNN matmul, OpenBLAS with its
/// default core type and with openblas_fastest_coretype(). A library that is
/// missing or fails gives a figure with a note instead of a number.
std::vector<vendor_figure> vendor_figures(const task_spec& task, const vendor_options& options);

/// The best available figure of `figures`; nullptr when none is.
const vendor_figure* best_vendor(const std::vector<vendor_figure>& figures);

}  // namespace tune
