#include <sched.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tune/kernels/blas_reference.hpp"

#ifdef TUNE_WITH_OPENBLAS
#include <cblas.h>
extern "C" void openblas_set_num_threads(int);
#endif

namespace tune {

bool blas_reference_available() {
#ifdef TUNE_WITH_OPENBLAS
  return true;
#else
  return false;
#endif
}

#ifdef TUNE_WITH_OPENBLAS
namespace {

template <typename F>
double median_seconds(F&& run, double min_time) {
  run();  // warm-up
  std::vector<double> times;
  double total = 0;
  while (times.size() < 3 || total < min_time) {
    auto start = std::chrono::steady_clock::now();
    run();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    times.push_back(s);
    total += s;
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

/// Pins the calling thread (and the threads it starts) to the given cores for
/// its lifetime, then restores the previous mask.
class pinned {
 public:
  pinned(int first_core, int count) {
    have_old_ = sched_getaffinity(0, sizeof old_, &old_) == 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c = first_core; c < first_core + count; ++c) CPU_SET(c, &set);
    sched_setaffinity(0, sizeof set, &set);
  }
  ~pinned() {
    if (have_old_) sched_setaffinity(0, sizeof old_, &old_);
  }

 private:
  cpu_set_t old_;
  bool have_old_ = false;
};

}  // namespace
#endif

double blas_reference_gflops(const task_spec& task, int threads, double min_time_s, int first_core) {
  if (task.op == operator_kind::conv2d)
    throw std::invalid_argument("task " + task.to_string() + ": no BLAS reference for a convolution");
  if (threads < 1) throw std::invalid_argument("BLAS reference: threads must be at least 1");
#ifndef TUNE_WITH_OPENBLAS
  (void)min_time_s;
  (void)first_core;
  throw std::invalid_argument("BLAS reference: built without OpenBLAS (install libopenblas-dev and rebuild)");
#else
  pinned pin(first_core, threads);
  auto n = static_cast<int>(task.n), k = static_cast<int>(task.k), m = static_cast<int>(task.m);
  std::vector<float> a(task.batch * n * k, 0.5f), b(task.batch * k * m, 0.25f), c(task.batch * n * m);
  auto batch_range = [&](long first, long last) {
    for (long p = first; p < last; ++p)
      cblas_sgemm(CblasRowMajor, task.transpose_a ? CblasTrans : CblasNoTrans,
                  task.transpose_b ? CblasTrans : CblasNoTrans, n, m, k, 1.0f, a.data() + p * n * k,
                  task.transpose_a ? n : k, b.data() + p * k * m, task.transpose_b ? k : m, 0.0f, c.data() + p * n * m,
                  m);
  };
  double seconds = 0;
  if (task.batch == 1) {
    openblas_set_num_threads(threads);
    seconds = median_seconds([&] { batch_range(0, 1); }, min_time_s);
  } else {
    openblas_set_num_threads(1);
    seconds = median_seconds(
        [&] {
          std::vector<std::thread> workers;
          for (int t = 0; t < threads; ++t)
            workers.emplace_back(batch_range, task.batch * t / threads, task.batch * (t + 1) / threads);
          for (auto& w : workers) w.join();
        },
        min_time_s);
  }
  return task.flops() / seconds / 1e9;
#endif
}

}  // namespace tune
