#pragma once
// Time keeping shared by the pipeline's actors: the steady clock their
// deadlines are checked against, wall-clock busy intervals of a stage's
// workers (to compute busy fractions over any window after the fact) and the
// CPU time an actor spends in its own handlers.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <set>
#include <vector>

namespace tune::detail {

/// The period of a stage's timer (compile pool, measurer, population) while
/// it has work outstanding: the deadlines of builds and measurements are
/// checked on it rather than set as request timeouts (CAF's clock thread
/// wakes for every request timeout and keeps its entry until the deadline,
/// answered or not), so a timeout is noticed within this much of it.
constexpr auto stage_tick_interval = std::chrono::milliseconds(250);

/// Seconds on the steady clock; the same epoch for every actor of a process.
inline double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

/// When a pipeline's warm-up ends and its steady window starts: once each of
/// its `devices` measurers (local ones and those of the nodes that answered
/// at the start; their device ids are distinct) has delivered a result, not
/// with the first result. A fast task's first trial can come back long
/// before a slow build reaches another device: with a model's tasks through
/// one pipeline, a 0 s build runs in a millisecond while a device waiting for
/// a second's build sits idle, warming up. Results of no device (< 0, a cache
/// hit) count as results but not towards a device. When some device never
/// delivers a result the window starts with the first result.
class warm_up_clock {
 public:
  explicit warm_up_clock(std::size_t devices) : devices_(devices > 0 ? devices : 1) {}

  /// A result of `device` at `now`.
  void result(std::int32_t device, double now) {
    if (first_ < 0) first_ = now;
    ++results_;
    if (end_ >= 0 || device < 0) return;
    seen_.insert(device);
    if (seen_.size() >= devices_) {
      end_ = now;
      results_at_end_ = results_;
      seen_.clear();
    }
  }

  /// The first result's time; -1 before it.
  double first_result_at() const { return first_; }
  /// When every device had delivered a result; -1 before.
  double ended_at() const { return end_; }

  /// Where a window that ends at `to` starts: the warm-up's end when it came
  /// before `to`, else the first result (-1 before any).
  double window_start(double to) const { return end_ >= 0 && end_ < to ? end_ : first_; }
  /// Results delivered up to window_start(to), that one included.
  std::uint64_t results_before(double to) const { return end_ >= 0 && end_ < to ? results_at_end_ : 1; }

 private:
  std::size_t devices_;
  std::set<std::int32_t> seen_;
  double first_ = -1.0;
  double end_ = -1.0;
  std::uint64_t results_ = 0;
  std::uint64_t results_at_end_ = 0;
};

/// Busy intervals of a fixed number of workers.
class busy_tracker {
 public:
  explicit busy_tracker(std::size_t workers = 0) : open_(workers, -1.0) {}

  std::size_t workers() const { return open_.size(); }

  /// One more worker (a node's compile worker that joined); returns its index.
  std::size_t add_worker() {
    open_.push_back(-1.0);
    return open_.size() - 1;
  }

  void start(std::size_t worker, double now = steady_seconds()) { open_[worker] = now; }

  void stop(std::size_t worker, double now = steady_seconds()) {
    if (open_[worker] >= 0.0) closed_.push_back({open_[worker], now});
    open_[worker] = -1.0;
  }

  /// Seconds all workers were busy inside [from, to]; open intervals count up to `to`.
  double busy_within(double from, double to) const {
    double total = 0.0;
    auto add = [&](double a, double b) {
      double lo = a > from ? a : from;
      double hi = b < to ? b : to;
      if (hi > lo) total += hi - lo;
    };
    for (const auto& iv : closed_) add(iv.begin, iv.end);
    for (double begin : open_)
      if (begin >= 0.0) add(begin, to);
    return total;
  }

 private:
  struct interval {
    double begin;
    double end;
  };
  std::vector<double> open_;
  std::vector<interval> closed_;
};

/// Adds the CPU time of the enclosing scope (one handler) to a counter.
/// Reading a thread's CPU clock is a system call (about half a microsecond,
/// more than many handlers take): a scope that begins within a millisecond of
/// the end of the previous one on the same thread starts from that one's
/// closing reading instead of its own. It then also counts what the thread
/// did in between (the actor framework's dispatch from one handler to the
/// next, on threads that run only the pipeline's actors), at most that
/// millisecond; the closing reading is the one system call left.
class cpu_scope {
 public:
  explicit cpu_scope(double& total) : total_(total) {
    auto& last = last_reading();
    auto now = std::chrono::steady_clock::now();
    start_ = last.cpu_s >= 0 && now - last.at < chain_within ? last.cpu_s : thread_cpu_seconds();
  }
  ~cpu_scope() {
    auto& last = last_reading();
    last.cpu_s = thread_cpu_seconds();
    last.at = std::chrono::steady_clock::now();
    total_ += last.cpu_s - start_;
  }
  cpu_scope(const cpu_scope&) = delete;
  cpu_scope& operator=(const cpu_scope&) = delete;

 private:
  static constexpr std::chrono::microseconds chain_within{1000};
  struct reading {
    double cpu_s = -1.0;
    std::chrono::steady_clock::time_point at;
  };
  static reading& last_reading() {
    thread_local reading last;
    return last;
  }

  double& total_;
  double start_;
};

}  // namespace tune::detail
