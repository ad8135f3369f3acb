// A replayed search on simulated compile workers and devices, on a virtual
// clock: a discrete-event simulation of the actor pipeline's scheduling.
#include <chrono>
#include <cmath>
#include <deque>
#include <optional>
#include <queue>
#include <stdexcept>
#include <vector>

#include "parallel_runs.hpp"
#include "tune/engine/strategy.hpp"
#include "tune/kernels/replay_schedule.hpp"

namespace tune {

replay_schedule replay_schedule::serial() {
  replay_schedule s;
  s.compile_workers = 1;
  s.devices = 1;
  s.prefetch = 0;
  s.generational = true;
  s.batch = 1;
  // Kernel Tuner's simulation mode charges whatever was recorded.
  s.compile_timeout_s = 0;
  s.run_timeout_s = 0;
  return s;
}

namespace {

bool build_failure(status s) {
  return s == status::compile_error || s == status::compile_error_device || s == status::instantiation_error ||
         s == status::build_timeout;
}

class scheduler {
 public:
  scheduler(const replay_dataset& dataset, strategy& search, const replay_run_options& options,
            const replay_schedule& schedule)
      : dataset_(dataset),
        search_(search),
        schedule_(schedule),
        noise_rng_(fork_seed(options.seed, 0x6e6f697365)),
        noise_(options.noise),
        budget_(std::min(options.budget, dataset.configs.size())),
        workers_(schedule.compile_workers),
        devices_(schedule.devices) {
    if (schedule.compile_workers == 0 || schedule.devices == 0 || (schedule.generational && schedule.batch == 0))
      throw std::invalid_argument("replay schedule: needs at least one compile worker, one device and a batch of one");
  }

  replay_run_result run() {
    auto started = std::chrono::steady_clock::now();
    demand();
    pump();
    while (!events_.empty()) {
      auto ev = events_.top();
      events_.pop();
      now_ = ev.at;
      if (ev.build) {
        finish_build(ev.index);
      } else {
        finish_run(ev.index);
      }
    }
    out_.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return std::move(out_);
  }

 private:
  struct event {
    double at;
    std::uint64_t seq;
    bool build;
    std::size_t index;
    bool operator>(const event& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };

  void schedule_event(double duration, bool build, std::size_t index) {
    events_.push({now_ + duration, next_seq_++, build, index});
  }

  // The generator: proposals until `n` fresh ones, dropping invalid and
  // repeated ones, at most as many rounds as the pipeline's generator asks.
  std::vector<configuration> fresh(std::size_t n) {
    std::vector<configuration> got;
    std::size_t rounds = 16 + handed_out_.size() / n;
    for (std::size_t round = 0; round < rounds && got.size() < n; ++round) {
      auto proposals = search_.propose(n - got.size());
      if (proposals.empty()) break;
      for (auto& config : proposals) {
        if (got.size() >= n) break;
        if (!dataset_.space->is_valid(config)) {
          ++out_.rejected;
          continue;
        }
        if (!handed_out_.insert(config).second) {
          ++out_.duplicates;
          continue;
        }
        got.push_back(std::move(config));
      }
    }
    return got;
  }

  // The population: keep the pipeline full, or hand out a batch when empty.
  void demand() {
    while (handing_out_) {
      std::size_t left = budget_ - issued_;
      if (left == 0) {
        handing_out_ = false;
        return;
      }
      std::size_t want = 0;
      if (schedule_.generational)
        want = in_flight_ == 0 ? schedule_.batch : 0;
      else
        want = schedule_.capacity() > in_flight_ ? schedule_.capacity() - in_flight_ : 0;
      want = std::min(want, left);
      if (want == 0) return;
      auto batch = fresh(want);
      for (auto& config : batch) to_build_.push_back(std::move(config));
      in_flight_ += batch.size();
      issued_ += batch.size();
      if (batch.empty()) {
        // Nothing now: wait for the next result, or end when none will come.
        if (in_flight_ == 0) handing_out_ = false;
        return;
      }
    }
  }

  // The compile pool: free workers in order, then built candidates to the
  // least loaded device with room.
  void pump() {
    for (std::size_t w = 0; w < workers_.size() && !to_build_.empty(); ++w) {
      if (workers_[w]) continue;
      workers_[w] = std::move(to_build_.front());
      to_build_.pop_front();
      const replay_record* rec = dataset_.find(*workers_[w]);
      double cost = rec ? rec->compile_s : 0.0;
      if (schedule_.compile_timeout_s > 0 && cost > schedule_.compile_timeout_s) cost = schedule_.compile_timeout_s;
      schedule_event(cost, true, w);
    }
    while (!to_measure_.empty()) {
      std::size_t best = devices_.size();
      for (std::size_t d = 0; d < devices_.size(); ++d) {
        if (devices_[d].size() >= 1 + schedule_.prefetch) continue;
        if (best == devices_.size() || devices_[d].size() < devices_[best].size()) best = d;
      }
      if (best == devices_.size()) return;
      devices_[best].push_back(std::move(to_measure_.front()));
      to_measure_.pop_front();
      if (devices_[best].size() == 1) start_run(best);
    }
  }

  double run_cost(const configuration& config) const {
    const replay_record* rec = dataset_.find(config);
    double cost = rec->benchmark_s + rec->verification_s;
    if (schedule_.run_timeout_s > 0 && cost > schedule_.run_timeout_s) cost = schedule_.run_timeout_s;
    return cost;
  }

  void start_run(std::size_t d) { schedule_event(run_cost(devices_[d].front()), false, d); }

  void finish_build(std::size_t w) {
    configuration config = std::move(*workers_[w]);
    workers_[w].reset();
    const replay_record* rec = dataset_.find(config);
    std::optional<status> failed;
    if (!rec)
      failed = status::instantiation_error;
    else if (schedule_.compile_timeout_s > 0 && rec->compile_s > schedule_.compile_timeout_s)
      failed = status::build_timeout;
    else if (build_failure(rec->state))
      failed = rec->state;
    if (!failed) to_measure_.push_back(std::move(config));
    pump();
    if (failed) deliver(std::move(config), *failed, std::nan(""));
  }

  void finish_run(std::size_t d) {
    configuration config = std::move(devices_[d].front());
    devices_[d].pop_front();
    if (!devices_[d].empty()) start_run(d);
    pump();
    const replay_record* rec = dataset_.find(config);
    if (schedule_.run_timeout_s > 0 && rec->benchmark_s + rec->verification_s > schedule_.run_timeout_s) {
      deliver(std::move(config), status::run_timeout, std::nan(""));
      return;
    }
    auto ev = evaluate(dataset_, config, noise_ ? &noise_rng_ : nullptr);
    deliver(std::move(config), ev.state, ev.time_ms);
  }

  // A result: recorded, told to the strategy, and the free places refilled.
  void deliver(configuration config, status state, double time_ms) {
    --in_flight_;
    trial_result tr;
    tr.config = std::move(config);
    tr.state = state;
    if (state == status::ok) tr.time_ms = time_ms;
    if (tr.ok() && !(best_measured_ <= tr.time_ms)) {
      best_measured_ = tr.time_ms;
      best_ = dataset_.find(tr.config)->time_ms;
    }
    out_.steps.push_back({tr.config, tr.state, tr.time_ms, now_, best_});
    search_.observe(tr);
    demand();
    pump();
  }

  const replay_dataset& dataset_;
  strategy& search_;
  replay_schedule schedule_;
  rng_type noise_rng_;
  bool noise_;
  std::size_t budget_;

  double now_ = 0.0;
  std::uint64_t next_seq_ = 0;
  std::priority_queue<event, std::vector<event>, std::greater<event>> events_;
  configuration_set handed_out_;
  std::deque<configuration> to_build_;
  std::deque<configuration> to_measure_;
  std::vector<std::optional<configuration>> workers_;
  std::vector<std::deque<configuration>> devices_;  ///< front: being measured
  std::size_t in_flight_ = 0;
  std::size_t issued_ = 0;
  bool handing_out_ = true;
  double best_measured_ = std::nan("");
  double best_ = std::nan("");
  replay_run_result out_;
};

}  // namespace

replay_run_result replay_scheduled_search(const replay_dataset& dataset, strategy& search,
                                          const replay_run_options& options, const replay_schedule& schedule) {
  return scheduler(dataset, search, options, schedule).run();
}

replay_run_result replay_scheduled_search(const replay_dataset& dataset, const replay_run_options& options,
                                          const replay_schedule& schedule) {
  strategy_options sopt;
  sopt.seed = options.seed;
  sopt.hyper = options.hyper;
  sopt.prior = options.prior;
  auto search = make_strategy(options.strategy, dataset.space, sopt);
  return replay_scheduled_search(dataset, *search, options, schedule);
}

std::vector<replay_run_result> replay_scheduled_searches(const replay_dataset& dataset,
                                                         const replay_run_options& options,
                                                         const replay_schedule& schedule, std::size_t runs,
                                                         unsigned threads) {
  std::vector<replay_run_result> out(runs);
  detail::parallel_runs(runs, threads, [&](std::size_t r) {
    auto o = options;
    o.seed = options.seed + r;
    out[r] = replay_scheduled_search(dataset, o, schedule);
  });
  return out;
}

}  // namespace tune
