#pragma once
// Independent replayed runs 0 … runs-1 on at most `threads` threads; the
// first exception ends the others' taking of new runs and is rethrown.
#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace tune::detail {

template <class Run>
void parallel_runs(std::size_t runs, unsigned threads, Run&& run) {
  std::atomic<std::size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto worker = [&] {
    for (std::size_t r; (r = next++) < runs;) {
      try {
        run(r);
      } catch (...) {
        std::lock_guard lock(error_mutex);
        if (!error) error = std::current_exception();
        next = runs;
      }
    }
  };
  std::vector<std::thread> pool;
  threads = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(runs)));
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace tune::detail
