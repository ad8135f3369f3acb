#pragma once
// The vendor libraries as a yardstick: oneDNN (Conv2D, MatMul, BatchMatMul)
// and OpenBLAS sgemm (MatMul, BatchMatMul) on a built-in task's problem, each
// timed alternately with the tuned kernel — tuned, vendor, tuned, vendor, …
// for a number of rounds, in one tune-vendor-worker process pinned to the
// tuned kernel's cores, on the same threads — so that every round's ratio
// compares two times taken a fraction of a second apart, and load on a shared
// machine weighs on both sides of it alike. A process per vendor kernel:
// OpenBLAS reads its core type when it loads, so its default and its fastest
// core type each need one (the tuned kernel runs in each of them too).

#include <string>
#include <vector>

#include "tune/kernels/backend.hpp"
#include "tune/kernels/kernel_program.hpp"
#include "tune/kernels/task.hpp"

namespace tune {

/// A tuned CPU kernel as tune-vendor-worker loads it: the shared object the
/// CPU backend built and how tune-kernel-worker calls it.
struct tuned_kernel_ref {
  std::string library;  ///< the shared object (build_result::artifact of the "cpu" backend)
  std::string entry = "tune_entry";
  std::string prepare, finish;  ///< run once before the timed runs (empty: none)
  std::vector<kernel_argument> arguments;
};

/// The tuned kernel of `config` on the "cpu" backend `cpu` of `task` with
/// `threads` threads: built by it (the compile cache answers at once for a
/// configuration the search built) and called as make_cpu_task_program(task,
/// threads) says. Throws std::invalid_argument when `cpu` is not a CPU backend
/// and std::runtime_error when the configuration does not build.
tuned_kernel_ref cpu_tuned_kernel(const task_spec& task, int threads, backend& cpu, const configuration& config,
                                  double timeout_s = 300.0);

struct vendor_options {
  int threads = 1;     ///< threads (and cores) of both kernels
  int first_core = 0;  ///< pinned to cores first_core .. first_core + threads - 1
  int rounds = 5;      ///< rounds of tuned, vendor
  /// Seconds of one side's burst in a round: after a warm-up run, runs until
  /// at least three and this long in all; the burst's time is their median.
  double min_time_s = 0.2;
  double timeout_s = 600.0;  ///< per vendor kernel (its process)
  /// tune-vendor-worker; empty: $TUNE_VENDOR_WORKER, else beside tune-kernel-worker.
  std::string worker_path;
};

/// One round: the tuned kernel's burst, then the vendor kernel's.
struct vendor_round {
  double tuned_s = 0.0, vendor_s = 0.0;        ///< each burst's median time of one run
  double tuned_at_s = 0.0, vendor_at_s = 0.0;  ///< when each burst began (seconds after the first)
  /// How many times faster the tuned kernel ran: vendor_s / tuned_s.
  double ratio() const { return vendor_s / tuned_s; }
};

/// The median (of an even count, the mean of the middle two), the least and
/// the greatest of some values; all 0 when there are none.
struct spread {
  double median = 0.0, min = 0.0, max = 0.0;
};
spread spread_of(std::vector<double> values);

/// One vendor kernel against the tuned kernel.
struct vendor_result {
  std::string library;  ///< "onednn" or "openblas"
  /// onednn: "own layouts" (Conv2D: the layouts it prefers, reorders left out
  /// of the time) or "plain" (the task's tensors); openblas: "default" (the
  /// core type it picks) or the core type it was given (e.g. "SkylakeX").
  std::string variant;
  std::string detail;                ///< what the library ran (oneDNN implementation, OpenBLAS core)
  std::string note;                  ///< why there is no comparison
  std::vector<vendor_round> rounds;  ///< in the order they ran; empty: see note
  spread ratio;                      ///< of the rounds' ratios (tuned / vendor speed)
  double vendor_gflops = 0.0;        ///< the task's FLOPs / the median of vendor_s
  double tuned_gflops = 0.0;         ///< the task's FLOPs / the median of tuned_s
  bool available() const { return !rounds.empty(); }
  /// Sets ratio, vendor_gflops and tuned_gflops from the rounds (a run of
  /// the task being `flops` floating-point operations).
  void summarize(double flops);
};

struct vendor_comparison {
  std::vector<vendor_result> vendors;
  /// The task's FLOPs / the median of every round's tuned time; 0 without any.
  double tuned_gflops = 0.0;
  /// The available vendor kernel the tuned kernel is least ahead of (lowest
  /// median ratio); nullptr when none is available.
  const vendor_result* best() const;
};

/// Every vendor kernel of `task` against `tuned`, one process after the
/// other: Conv2D: oneDNN in its own layouts and in the plain ones, and
/// OpenBLAS as "no convolution"; MatMul and BatchMatMul: oneDNN matmul,
/// OpenBLAS with its default core type and with openblas_fastest_coretype().
/// A library that is missing or fails gives a result with a note instead of
/// rounds. Throws std::invalid_argument when `tuned` names no shared object
/// that exists or options.rounds is below 1.
vendor_comparison compare_with_vendors(const task_spec& task, const tuned_kernel_ref& tuned,
                                       const vendor_options& options);

/// The OpenBLAS core type with the widest vectors this CPU can use:
/// "SkylakeX" with AVX-512, "Haswell" with AVX2, "" otherwise.
std::string openblas_fastest_coretype();

/// The worker `options` select (see vendor_options::worker_path).
std::string vendor_worker_path(const vendor_options& options);

}  // namespace tune
