#pragma once
// A small real backend and strategy for the pipeline's tests: a 2-parameter
// space with a deterministic objective, builds and runs that take a few
// milliseconds, and per-configuration failures, exceptions and hangs. The
// backend counts what the pipeline does to it (concurrency, order) so the
// tests can check the pipeline's guarantees.

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tune/actors/interfaces.hpp"
#include "tune/engine/parameter.hpp"
#include "tune/engine/space.hpp"
#include "tune/engine/strategy.hpp"
#include "tune/kernels/backend.hpp"

namespace tune::testing {

/// a in 0..a_count-1, b in 0..b_count-1; time_ms = 1 + (a-3)^2 + (b-1)^2.
inline search_space_ptr grid_space(int a_count = 8, int b_count = 4) {
  std::vector<double> as, bs;
  for (int i = 0; i < a_count; ++i) as.push_back(i);
  for (int i = 0; i < b_count; ++i) bs.push_back(i);
  return std::make_shared<search_space>(
      std::vector<parameter_ptr>{make_discrete_parameter("a", as), make_discrete_parameter("b", bs)}, "grid");
}

inline double grid_time_ms(const configuration& c) {
  double a = static_cast<double>(c[0]) - 3.0, b = static_cast<double>(c[1]) - 1.0;
  return 1.0 + a * a + b * b;
}

class grid_backend : public backend {
 public:
  explicit grid_backend(search_space_ptr space, int devices = 1)
      : space_(std::move(space)), running_(static_cast<std::size_t>(devices)) {
    for (auto& r : running_) r = 0;
  }

  std::chrono::milliseconds build_time{1};
  std::chrono::milliseconds run_time{2};
  std::set<configuration> fail_build, hang_build, fail_run, throw_run, hang_run;
  /// Runs that end too_slow (as a run stopped at its limit would).
  std::set<configuration> too_slow_run;
  /// Builds that take slow_build_time, stopped at the timeout they are given
  /// as a compiler is (build_timeout); compile_s is the time they took.
  std::set<configuration> slow_build;
  std::chrono::milliseconds slow_build_time{300};
  /// What real_builds() answers (false: builds replayed, as a replay's).
  bool real = true;
  std::chrono::milliseconds hang_time{600};
  /// Called at the start of every run (on the device's thread), e.g. to hold
  /// runs until a test has seen what it waits for.
  std::function<void()> before_run;

  /// builds_instantly(): the pool builds in its own actor, without workers.
  bool instant = false;
  /// What measuring_cores() answers for every device (none: not CPU cores).
  std::vector<int> device_cores;
  /// Builds on a thread at idle priority end as build_timeout (a background
  /// worker whose core stayed busy measuring).
  bool idle_builds_time_out = false;
  /// One per build, in the order they finished: the configuration, whether
  /// its thread ran at idle priority (SCHED_IDLE) and the cores it may run on.
  struct build_seen {
    configuration config;
    bool idle = false;
    std::vector<int> cores;
    double timeout_s = 0.0;  ///< the timeout the build was given
  };

  std::string name() const override { return "grid"; }
  bool builds_instantly() const override { return instant; }
  bool real_builds() const override { return real; }
  std::string task_key() const override { return "grid-test"; }
  std::string device_kind() const override { return "grid-device"; }
  search_space_ptr space() const override { return space_; }
  std::vector<int> measuring_cores(int) const override { return device_cores; }

  build_result build(const configuration& config, double timeout_s) override {
    enter(building_, max_building_);
    ++in_pipeline_;
    update_max(max_in_pipeline_, in_pipeline_.load());
    bool slow = slow_build.count(config) > 0, stopped = false;
    auto slow_time = std::chrono::duration<double>(slow_build_time);
    if (slow && timeout_s > 0 && timeout_s < slow_time.count()) {
      slow_time = std::chrono::duration<double>(timeout_s);
      stopped = true;
    }
    if (slow)
      std::this_thread::sleep_for(slow_time);
    else
      std::this_thread::sleep_for(hang_build.count(config) ? hang_time : build_time);
    --building_;
    build_seen seen{config, ::sched_getscheduler(0) == SCHED_IDLE, actors::thread_cpu_set(), timeout_s};
    {
      std::lock_guard<std::mutex> lock(mutex_);
      builds_.push_back(seen);
    }
    build_result out;
    out.compile_s = slow ? slow_time.count() : 0.001;
    out.state = fail_build.count(config) ? status::compile_error : stopped ? status::build_timeout : status::ok;
    if (out.state == status::build_timeout) out.message = "grid: build stopped at its timeout";
    if (out.state == status::ok && seen.idle && idle_builds_time_out) {
      out.state = status::build_timeout;
      out.message = "grid: the background build ran out of time";
    }
    if (out.state != status::ok) {
      if (out.message.empty()) out.message = "grid: this configuration does not compile";
      --in_pipeline_;
    }
    return out;
  }

  std::vector<build_seen> builds() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return builds_;
  }

  run_result run(const configuration& config, const build_result&, int device, const run_limits& limits) override {
    if (before_run) before_run();
    auto& here = running_.at(static_cast<std::size_t>(device));
    if (++here > 1) overlapping_runs_ = true;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      run_order_[device].push_back(config);
      references_[device].push_back(limits.reference_ms);
      first_limits_[device].push_back(limits.early_stop.first_limit_ms);
    }
    std::this_thread::sleep_for(hang_run.count(config) ? hang_time : run_time);
    --here;
    --in_pipeline_;
    if (throw_run.count(config)) throw std::runtime_error("grid: device fell over");
    run_result out;
    out.run_s = 0.002;
    if (fail_run.count(config)) {
      out.state = status::runtime_error;
      out.message = "grid: kernel crashed";
      return out;
    }
    if (too_slow_run.count(config)) {
      out.state = status::too_slow;
      out.message = "grid: stopped as too slow";
      return out;
    }
    out.state = status::ok;
    out.time_ms = grid_time_ms(config);
    return out;
  }

  int max_building() const { return max_building_; }
  int max_in_pipeline() const { return max_in_pipeline_; }
  bool overlapping_runs() const { return overlapping_runs_; }
  std::vector<configuration> run_order(int device) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = run_order_.find(device);
    return it == run_order_.end() ? std::vector<configuration>{} : it->second;
  }
  /// The best time each run on `device` was measured against
  /// (run_limits::reference_ms), in run order.
  std::vector<double> references(int device) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = references_.find(device);
    return it == references_.end() ? std::vector<double>{} : it->second;
  }
  /// The limit of the first runs (early_stop_policy::first_limit_ms) each
  /// run on `device` was given, in run order.
  std::vector<double> first_limits(int device) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = first_limits_.find(device);
    return it == first_limits_.end() ? std::vector<double>{} : it->second;
  }

 private:
  static void update_max(std::atomic<int>& max, int value) {
    int seen = max.load();
    while (value > seen && !max.compare_exchange_weak(seen, value)) {
    }
  }
  static void enter(std::atomic<int>& count, std::atomic<int>& max) { update_max(max, ++count); }

  search_space_ptr space_;
  std::vector<std::atomic<int>> running_;
  std::atomic<int> building_{0}, max_building_{0}, in_pipeline_{0}, max_in_pipeline_{0};
  std::atomic<bool> overlapping_runs_{false};
  mutable std::mutex mutex_;
  std::map<int, std::vector<configuration>> run_order_;
  std::map<int, std::vector<double>> references_, first_limits_;
  std::vector<build_seen> builds_;
};

/// What a sweep_strategy saw, shared with the test (the strategy itself is
/// owned by the generator).
struct sweep_log {
  std::mutex mutex;
  std::vector<configuration> observed;
  std::size_t proposals = 0;
};

/// Proposes the configurations in flat order; with `repeat`, every proposal
/// batch also repeats the previous batch's first configuration (a strategy
/// that forgets what it proposed), which the generator must drop.
class sweep_strategy : public strategy {
 public:
  sweep_strategy(search_space_ptr space, std::shared_ptr<sweep_log> log, bool repeat = false)
      : space_(std::move(space)), log_(std::move(log)), repeat_(repeat) {}

  std::string name() const override { return "sweep"; }

  std::vector<configuration> propose(std::size_t n) override {
    std::vector<configuration> out;
    if (repeat_ && last_) out.push_back(*last_);
    std::uint64_t size = *space_->cartesian_size();
    while (out.size() < n && next_ < size) out.push_back(space_->unflatten(next_++));
    if (!out.empty()) last_ = out.back();
    std::lock_guard<std::mutex> lock(log_->mutex);
    log_->proposals += out.size();
    return out;
  }

  void observe(const trial_result& result) override {
    std::lock_guard<std::mutex> lock(log_->mutex);
    log_->observed.push_back(result.config);
  }

 private:
  search_space_ptr space_;
  std::shared_ptr<sweep_log> log_;
  bool repeat_;
  std::uint64_t next_ = 0;
  std::optional<configuration> last_;
};

/// An actor system with the pipeline's message types and a blocking actor
/// to talk to the actor under test.
struct actor_test_system {
  static caf::actor_system_config& prepare(caf::actor_system_config& cfg) {
    actors::register_message_types(cfg);
    cfg.set("scheduler.max-threads", 2);
    return cfg;
  }
  caf::actor_system_config cfg;
  caf::actor_system system{prepare(cfg)};
  caf::scoped_actor self{system};
};

/// Trials as a results database would give them back on resume.
inline std::vector<actors::measured_trial> recorded_trials(const search_space& space,
                                                           const std::vector<std::uint64_t>& flats, double time_ms) {
  std::vector<actors::measured_trial> out;
  for (auto flat : flats) {
    actors::measured_trial trial;
    trial.candidate_id = flat;
    trial.config = space.unflatten(flat);
    trial.state = status::ok;
    trial.time_ms = time_ms;
    out.push_back(trial);
  }
  return out;
}

/// Timeouts of the tests' requests: generous, the work takes milliseconds.
constexpr auto reply_timeout = std::chrono::seconds(30);

}  // namespace tune::testing
