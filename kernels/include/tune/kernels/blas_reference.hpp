#pragma once
// The vendor library as a yardstick: OpenBLAS sgemm on the same MatMul or
// BatchMatMul problem, timed on the same number of threads as a tuned kernel.

#include "tune/kernels/task.hpp"

namespace tune {

/// True when the library was built with OpenBLAS (libopenblas-dev).
bool blas_reference_available();

/// GFLOP/s of OpenBLAS sgemm on `task` with `threads` threads pinned to cores
/// first_core .. first_core + threads - 1: one sgemm (MatMul) or one per
/// matrix with the batch split over the threads (BatchMatMul); median of
/// repeats after a warm-up, at least `min_time_s` in all. Throws
/// std::invalid_argument for a convolution (no BLAS equivalent) or when
/// OpenBLAS is not available.
double blas_reference_gflops(const task_spec& task, int threads, double min_time_s = 0.5, int first_core = 0);

}  // namespace tune
