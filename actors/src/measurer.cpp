// A measurer serialises the runs on its device: one candidate runs on a
// detached device runner (backend::run blocks) while the compiled candidates
// the pool sent ahead wait in a short queue, so the next run starts the moment
// the last one ends.
#include <algorithm>
#include <caf/actor_system.hpp>
#include <caf/sec.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <exception>
#include <map>
#include <optional>

#include "stage_clock.hpp"
#include "tune/actors/interfaces.hpp"
#include "tune/engine/median.hpp"
#include "tune/engine/multi_task.hpp"

namespace tune::actors {
namespace {

using trial_promise = caf::typed_response_promise<measured_trial>;

device_runner_actor::behavior_type device_runner(device_runner_actor::pointer, backend_ptr backend, int device,
                                                 run_limits limits) {
  return {
      [backend, device, limits](run_atom, const compiled_candidate& compiled, double first_limit_ms) {
        run_result out;
        try {
          auto these = limits;
          these.reference_ms = compiled.cand.reference_ms;
          these.early_stop.first_limit_ms = first_limit_ms;
          out = backend->run(compiled.cand.config, compiled.build, device, these);
        } catch (const std::exception& e) {
          out.state = status::unknown;
          out.message = std::string("run threw: ") + e.what();
        }
        return out;
      },
      [backend, device, limits](duel_atom, const compiled_candidate& challenger, const compiled_candidate& best,
                                std::uint32_t rounds) {
        interleaved_times out;
        try {
          out = backend->run_interleaved({{challenger.cand.config, challenger.build}, {best.cand.config, best.build}},
                                         device, static_cast<int>(rounds), limits.timeout_s);
        } catch (const std::exception& e) {
          out.state = status::unknown;
          out.message = std::string("duel threw: ") + e.what();
        }
        return out;
      },
  };
}

/// What every run of the measurer's device may take (its candidate adds the
/// reference time).
run_limits runner_limits(const measurer_options& options) {
  run_limits limits(options.timing.timeouts.run_s);
  limits.early_stop = options.early_stop;
  return limits;
}

struct waiting_run {
  compiled_candidate compiled;
  trial_promise promise;
  bool probe = false;  ///< the drift probe: no promise, its time goes to the probe's series
  /// A duel of `compiled` against the device's best: the trial it decides,
  /// delivered when the duel ends.
  std::optional<measured_trial> duel_for;
};

/// The device's best so far (of one task), which a would-be new best meets
/// in a duel (duel_policy) before it becomes the best.
struct device_best {
  std::optional<compiled_candidate> config;
  double judged_ms = 0.0;  ///< trial::best_judged_ms of it

  /// True when `trial` would become the new best by a margin small enough
  /// to be luck: it must win a duel against this best first.
  bool duel_wanted(const duel_policy& policy, const measured_trial& trial) const {
    return policy.rounds > 0 && config && trial.ok() && !trial.stopped_early && trial.time_ms < judged_ms &&
           trial.time_ms >= judged_ms * (1.0 - policy.margin);
  }
  /// Takes a trial measured in full that no duel stopped, when it is faster.
  void offer(const compiled_candidate& compiled, const measured_trial& trial) {
    if (!trial.ok() || trial.stopped_early || trial.duel_lost()) return;
    if (config && !std::isfinite(trial.duel_ms) && trial.best_judged_ms() >= judged_ms) return;
    config = compiled;
    config->cand.reference_ms = std::nan("");
    judged_ms = trial.best_judged_ms();
  }
};

/// What the device's duels have cost, all tasks together.
struct device_duels {
  double measuring_s = 0.0;  ///< the device's trials' run_s so far
  double duels_s = 0.0;      ///< the wall seconds of its duels so far (duel_policy::max_share)
  /// The measurements the duels made (two per round), whose seconds tell
  /// what one of the end-of-run confirmation's will cost: both measure in
  /// turn (backend::run_interleaved), on this device.
  double duel_measurements = 0.0;

  /// True while the duels, with the confirmation's measurements to come
  /// (priced at what a duel's measurement has cost; the first duel, before
  /// any price is known, is not held back by them), have taken no more than
  /// their share of the device's measuring time.
  bool affordable(const duel_policy& policy) const {
    const double reserved_s = duel_measurements > 0 ? policy.reserved_runs * duels_s / duel_measurements : 0.0;
    return duels_s + reserved_s <= policy.max_share * measuring_s;
  }
};

/// The device's drift probe: a fixed configuration of the run measured in
/// full every so often; the policy is drift_policy's. Until the first probe
/// runs (after `every_trials` trials) the probe is the fastest configuration
/// measured in full so far, so that probing costs what a good candidate's
/// measurement costs (the first configuration that ran ok may take seconds);
/// from the first probe on it is fixed.
struct drift_probe {
  drift_policy policy;
  std::optional<compiled_candidate> config;
  double config_ms = 0.0;  ///< its time when it was chosen
  std::vector<double> baseline_times;
  device_drift state;
  std::uint32_t since = 0;                   ///< trials since the last probe
  double last_at = 0.0;                      ///< steady seconds of the last probe
  bool drifting = false;                     ///< the last probe was out of the band
  std::vector<std::uint64_t> since_in_band;  ///< candidates measured since the last probe in the band
  std::vector<std::uint64_t> suspects;       ///< to hand on with the next trial
  double pending_s = 0.0;                    ///< probe seconds to hand on with the next trial

  bool enabled() const { return policy.every_trials > 0 && config.has_value(); }
  /// True until the first probe has run: the probe may still change.
  bool choosing() const { return state.probes == 0 && baseline_times.empty(); }
  bool due(double now, double time_scale) const {
    if (!enabled()) return false;
    // The baseline's probes too come at this pace, not back to back, so that
    // its band holds the noise of the run's first minutes (three probes in a
    // row agreed within 7% where the next ones moved by 30% while the other
    // core compiled, and flagged nearly every trial of an undisturbed run).
    return since >= policy.every_trials || (policy.every_s > 0 && now - last_at >= policy.every_s * time_scale);
  }

  /// Takes one probe's result.
  void add(const run_result& run, double now) {
    since = 0;
    last_at = now;
    pending_s += std::max(0.0, run.run_s);
    if (run.state != status::ok || !(run.time_ms > 0)) {
      config.reset();  // it measured once but not now: no probe for this run
      return;
    }
    ++state.probes;
    if (baseline_times.size() < policy.baseline) {
      baseline_times.push_back(run.time_ms);
      since_in_band.clear();
      if (baseline_times.size() == policy.baseline) {
        auto sorted = baseline_times;
        std::sort(sorted.begin(), sorted.end());
        state.baseline_ms = sorted[sorted.size() / 2];
        double spread = (sorted.back() - sorted.front()) / state.baseline_ms;
        state.band = std::max(policy.min_band, 1.5 * spread);
      }
      return;
    }
    double ratio = run.time_ms / state.baseline_ms;
    state.min_ratio = std::min(state.min_ratio, ratio);
    state.max_ratio = std::max(state.max_ratio, ratio);
    bool out = std::fabs(ratio - 1.0) > state.band;
    if (out && !drifting) {
      // What was measured since the last probe in the band may already have drifted.
      state.flagged += since_in_band.size();
      suspects.insert(suspects.end(), since_in_band.begin(), since_in_band.end());
    }
    since_in_band.clear();
    drifting = out;
  }
};

struct measurer_state {
  backend_ptr backend;
  measurer_options options;
  device_runner_actor runner;
  std::deque<waiting_run> queue;
  /// The run in progress (none while the device is idle): what to deliver,
  /// its number (an answer for an earlier one, from a runner replaced after
  /// its deadline, is dropped) and its steady-clock deadline.
  std::optional<waiting_run> current;
  std::uint64_t run_number = 0;
  double started_at = 0.0;  ///< steady seconds the current job was sent
  double deadline = 0.0;
  bool ticking = false;
  detail::busy_tracker tracker{1};
  double cpu_s = 0.0;
  drift_probe drift;
  device_duels duels;
  /// The device's best of each task (one, numbered 0, unless
  /// measurer_options::multi_task).
  std::map<std::uint32_t, device_best> bests;
  /// The limit of a run of each task while it has no best (early_stop_
  /// policy::first_limit_ms), doubled after each run it stopped.
  std::map<std::uint32_t, double> first_limits;

  std::uint32_t task_of(const compiled_candidate& c) const {
    return options.multi_task && !c.cand.config.empty() ? tune::task_of(c.cand.config) : 0;
  }
  device_best& best_of(const compiled_candidate& c) { return bests[task_of(c)]; }
  double& first_limit_ms(const compiled_candidate& c) {
    return first_limits.try_emplace(task_of(c), options.early_stop.first_limit_ms).first->second;
  }
  static inline const char* name = "measurer";
};

using measurer_pointer = measurer_actor::stateful_pointer<measurer_state>;

measured_trial make_trial(const compiled_candidate& compiled, const run_result& run, int device) {
  measured_trial trial;
  trial.candidate_id = compiled.cand.id;
  trial.config = compiled.cand.config;
  trial.state = run.state;
  trial.time_ms = run.state == status::ok ? run.time_ms : std::nan("");
  trial.objectives = run.objectives;
  trial.compile_s = compiled.build.compile_s;
  trial.run_s = run.run_s;
  trial.device_id = device;
  trial.message = run.message;
  trial.repeats = run.repeats;
  trial.times_ms = run.times_ms;
  trial.stopped_early = run.stopped_early;
  trial.kernel_s = run.kernel_s;
  return trial;
}

void start_next(measurer_pointer self);
void start_current(measurer_pointer self);

/// The measurer's timer (stage_tick_interval) while a run is in progress:
/// the run's timeout is a deadline checked on it.
void schedule_tick(measurer_pointer self) {
  auto& st = self->state;
  if (st.ticking) return;
  st.ticking = true;
  self->delayed_send(self, detail::stage_tick_interval, tick_atom::value);
}

/// Delivers a finished trial and starts the next run.
void deliver(measurer_pointer self, waiting_run& job, measured_trial trial) {
  job.promise.deliver(std::move(trial));
  start_next(self);
}

void finish_run(measurer_pointer self, const run_result& run) {
  auto& st = self->state;
  st.tracker.stop(0);
  auto job = std::move(*st.current);
  st.current.reset();
  auto& drift = st.drift;
  if (job.probe) {
    drift.add(run, detail::steady_seconds());
    start_next(self);
    return;
  }
  auto trial = make_trial(job.compiled, run, st.options.device);
  // Stopped by the limit of the first runs (no best to measure it against):
  // the next run may take twice as long, so that a task whose kernels all
  // take longer reaches its first best after a few stops (the run timeout
  // stays the ceiling).
  if (run.state == status::too_slow && !(job.compiled.cand.reference_ms > 0)) {
    auto& limit = st.first_limit_ms(job.compiled);
    limit = std::min(2.0 * limit, 1000.0 * st.options.timing.timeouts.run_s);
  }
  if (drift.policy.every_trials > 0 && drift.choosing() && trial.ok() && !trial.stopped_early &&
      (!drift.config || trial.time_ms < drift.config_ms)) {
    if (!drift.config) drift.last_at = detail::steady_seconds();
    drift.config = job.compiled;  // the fastest measured in full so far
    drift.config->cand.reference_ms = std::nan("");
    drift.config_ms = trial.time_ms;
  }
  ++drift.since;
  if (drift.drifting) {
    trial.drift_flagged = true;
    ++drift.state.flagged;
  } else {
    drift.since_in_band.push_back(trial.candidate_id);
  }
  trial.drift_suspects = std::move(drift.suspects);
  drift.suspects.clear();
  trial.probe_s = drift.pending_s;
  drift.pending_s = 0.0;
  trial.drift = drift.state;
  st.duels.measuring_s += std::max(0.0, trial.run_s);
  auto& best = st.best_of(job.compiled);
  if (best.duel_wanted(st.options.duel, trial)) {
    if (st.duels.affordable(st.options.duel)) {
      // It runs next, before anything queued: the trial waits for it.
      job.duel_for = std::move(trial);
      st.current = std::move(job);
      start_current(self);
      return;
    }
    trial.duel_skipped = true;
  }
  best.offer(job.compiled, trial);
  deliver(self, job, std::move(trial));
}

/// The duel of a would-be new best has ended: the trial says how it went
/// (nothing when the duel failed: the trial keeps its own time and the best
/// does not change, the end-of-run confirmation has the last word).
void finish_duel(measurer_pointer self, const interleaved_times& times, double duel_s) {
  auto& st = self->state;
  st.tracker.stop(0);
  auto job = std::move(*st.current);
  st.current.reset();
  auto trial = std::move(*job.duel_for);
  trial.duel_s = duel_s;
  st.duels.duels_s += duel_s;
  st.duels.duel_measurements += 2.0 * st.options.duel.rounds;
  if (times.ok() && times.time_ms.size() == 2 && !times.time_ms[0].empty() && !times.time_ms[1].empty()) {
    trial.duel_ms = tune::statistic_of(times.time_ms[0], st.options.duel.statistic);
    trial.duel_best_ms = tune::statistic_of(times.time_ms[1], st.options.duel.statistic);
    st.best_of(job.compiled).offer(job.compiled, trial);
  } else {
    trial.message += (trial.message.empty() ? "" : "\n") + std::string("duel against the best failed: ") +
                     (times.message.empty() ? std::string(to_string(times.state)) : times.message);
  }
  deliver(self, job, std::move(trial));
}

/// The runner did not answer (an error, or the deadline passed): it may still
/// be blocked inside the backend, so a fresh one takes the next run; the
/// stale one ends when its call returns.
void runner_failed(measurer_pointer self, status state, std::string message) {
  auto& st = self->state;
  ++st.run_number;  // a late answer of the stale runner is dropped
  self->unlink_from(st.runner);
  self->send_exit(st.runner, caf::exit_reason::kill);
  st.runner =
      self->spawn<caf::detached + caf::linked>(device_runner, st.backend, st.options.device, runner_limits(st.options));
  if (st.current->duel_for) {
    interleaved_times times;
    times.state = state;
    times.message = std::move(message);
    finish_duel(self, times, detail::steady_seconds() - st.started_at);
    return;
  }
  run_result run;
  run.state = state;
  run.run_s = st.options.timing.timeouts.run_s;
  run.message = std::move(message);
  finish_run(self, run);
}

/// Sends the current job (a run, the drift probe or a duel) to the runner,
/// with its deadline.
void start_current(measurer_pointer self) {
  auto& st = self->state;
  st.tracker.start(0);
  st.started_at = detail::steady_seconds();
  // A duel measures 2 configurations, each checked once and then once per
  // round, each run within the run timeout (as the CPU backend's own limit).
  double runs = st.current->duel_for ? 2.0 * (1.0 + st.options.duel.rounds) : 1.0;
  st.deadline = st.started_at + runs * st.options.timing.timeouts.run_s * st.options.timing.time_scale +
                st.options.timing.request_grace_s;
  auto number = ++st.run_number;
  schedule_tick(self);
  auto failed = [self, number](caf::error& err) {
    detail::cpu_scope cpu(self->state.cpu_s);
    if (number != self->state.run_number || !self->state.current) return;
    runner_failed(self, status::unknown, "device runner gave no answer: " + self->system().render(err));
  };
  if (st.current->duel_for) {
    self->request(st.runner, caf::infinite, duel_atom::value, st.current->compiled,
                  *st.best_of(st.current->compiled).config, st.options.duel.rounds)
        .then(
            [self, number](interleaved_times& times) {
              detail::cpu_scope cpu(self->state.cpu_s);
              if (number != self->state.run_number || !self->state.current) return;
              finish_duel(self, times, detail::steady_seconds() - self->state.started_at);
            },
            failed);
    return;
  }
  // Measured against the best known now: the population's when the
  // candidate was issued, or this device's own since, whichever is faster (a
  // candidate that waited long for its build may have been issued before any
  // best existed, and would run unwatched up to the run timeout). A probe is
  // measured in full, against nothing.
  auto& reference = st.current->compiled.cand.reference_ms;
  const auto& best = st.best_of(st.current->compiled);
  if (!st.current->probe && best.config && !(reference <= best.judged_ms)) reference = best.judged_ms;
  double first_limit_ms = st.current->probe ? 0.0 : st.first_limit_ms(st.current->compiled);
  self->request(st.runner, caf::infinite, run_atom::value, st.current->compiled, first_limit_ms)
      .then(
          [self, number](run_result& run) {
            detail::cpu_scope cpu(self->state.cpu_s);
            if (number != self->state.run_number || !self->state.current) return;
            finish_run(self, run);
          },
          failed);
}

void start_next(measurer_pointer self) {
  auto& st = self->state;
  if (st.current || st.queue.empty()) return;
  // The probe runs between trials, when there is a trial to run after it.
  if (st.drift.due(detail::steady_seconds(), st.options.timing.time_scale)) {
    waiting_run probe;
    probe.compiled = *st.drift.config;
    probe.probe = true;
    st.current = std::move(probe);
  } else {
    st.current = std::move(st.queue.front());
    st.queue.pop_front();
  }
  start_current(self);
}

measurer_actor::behavior_type measurer(measurer_pointer self, backend_ptr backend, measurer_options options) {
  auto& st = self->state;
  st.backend = std::move(backend);
  st.options = options;
  st.drift.policy = options.drift;
  st.runner =
      self->spawn<caf::detached + caf::linked>(device_runner, st.backend, st.options.device, runner_limits(st.options));
  return {
      [self](measure_atom, compiled_candidate& compiled) {
        detail::cpu_scope cpu(self->state.cpu_s);
        auto promise = self->make_response_promise<measured_trial>();
        waiting_run job;
        job.compiled = std::move(compiled);
        job.promise = promise;
        self->state.queue.push_back(std::move(job));
        start_next(self);
        return promise;
      },
      [self](stats_atom, double from, double to) {
        return stage_stats{1, self->state.tracker.busy_within(from, to), to - from, self->state.cpu_s};
      },
      [self](tick_atom) {
        detail::cpu_scope cpu(self->state.cpu_s);
        auto& st = self->state;
        st.ticking = false;
        if (st.current && detail::steady_seconds() >= st.deadline) {
          char message[128];
          std::snprintf(
              message, sizeof message, "device runner gave no answer within the run timeout (%.3g s + %.3g s)",
              st.options.timing.timeouts.run_s * st.options.timing.time_scale, st.options.timing.request_grace_s);
          runner_failed(self, status::run_timeout, message);
        }
        if (st.current) schedule_tick(self);
      },
  };
}

}  // namespace

device_runner_actor spawn_device_runner(caf::actor_system& system, backend_ptr backend, int device,
                                        const run_limits& limits) {
  return system.spawn<caf::detached>(device_runner, std::move(backend), device, limits);
}

measurer_actor spawn_measurer(caf::actor_system& system, backend_ptr backend, const measurer_options& options) {
  return system.spawn(measurer, std::move(backend), options);
}

}  // namespace tune::actors
