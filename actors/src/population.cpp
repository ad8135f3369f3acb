// The population keeps the pipeline full: it knows the capacity (compile
// workers plus every device's prefetch) and whenever a slot frees it asks the
// generator for that many candidates. It takes every trial as it arrives,
// tells the generator (and so the strategy), reports it once to its listener,
// tracks the best, and decides when the budget is spent; then it waits for the
// work in flight and reports a summary.
#include <unistd.h>

#include <algorithm>
#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <map>
#include <unordered_map>

#include "stage_clock.hpp"
#include "tune/actors/interfaces.hpp"
#include "tune/engine/multi_task.hpp"

namespace tune::actors {
namespace {

constexpr auto stats_timeout = std::chrono::seconds(10);

struct population_state {
  population_options options;
  /// Per measurer: gone (a lost node's); not asked for its busy time, which
  /// would only end by the stats timeout.
  std::vector<bool> measurer_down;
  generator_actor generator;
  compile_pool_actor pool;
  caf::actor done_to;

  double start = 0.0;  // steady seconds
  std::uint64_t issued = 0;
  std::uint64_t completed = 0;
  std::uint64_t in_flight = 0;
  /// Candidates handed to the compile pool and not answered yet, by id: the
  /// wall deadline (steady seconds) and the configuration. The evaluation
  /// timeout is checked on the tick, not given to the request: CAF keeps a
  /// request's timeout entry until its deadline even when the answer came
  /// long before (about 190 bytes each), so a fast run held one per trial of
  /// the last evaluate_timeout_s.
  struct awaited {
    double deadline = 0.0;
    configuration config;
  };
  std::unordered_map<std::uint64_t, awaited> awaiting;
  bool demand_pending = false;
  double demand_sent_at = 0.0;        // steady seconds
  double demand_noticed_at = 0.0;     // steady seconds of the last notice of a silent generator
  double progress_printed_at = -1.0;  // steady seconds of the last progress line into a file or pipe; -1: none
  bool handing_out = true;
  bool finished = false;
  /// Set when hand-out closes; a run always closes it before it finishes.
  std::optional<end_reason> reason;

  /// The best trial of each task (one, numbered 0, unless
  /// population_options::multi_task): what its candidates are measured
  /// against.
  std::map<std::uint32_t, measured_trial> bests;
  /// The task a configuration belongs to.
  std::uint32_t task_of(const configuration& config) const {
    return options.multi_task && !config.empty() ? tune::task_of(config) : 0;
  }
  const measured_trial* best_of(std::uint32_t task) const {
    auto it = bests.find(task);
    return it == bests.end() ? nullptr : &it->second;
  }
  /// Whether `trial`, measured in full, becomes its task's best.
  bool improves(const measured_trial& trial) const {
    if (!trial.ok() || trial.stopped_early || trial.duel_lost()) return false;
    const auto* best = best_of(task_of(trial.config));
    return !best || (std::isfinite(trial.duel_ms) && trial.device_id == best->device_id) ||
           trial.best_judged_ms() < best->best_judged_ms();
  }
  std::vector<std::pair<std::int32_t, device_time>> device_times;
  std::vector<std::pair<std::int32_t, device_drift>> device_drifts;
  double build_s = 0.0;
  std::vector<best_point> trace;

  // Warm-up ends once every device (local or remote) has delivered a result (the
  // pipeline is full by then); the steady window ends when the last
  // candidate is handed out.
  detail::warm_up_clock warm_up{0};
  double hand_out_end_at = -1.0;
  std::uint64_t completed_at_hand_out_end = 0;

  // Latest busy fractions after warm-up, for the progress line.
  double compile_busy = 0.0;
  std::vector<double> device_busy;

  run_summary summary;
  std::size_t stats_pending = 0;
  double cpu_s = 0.0;
  static inline const char* name = "population";
};

using population_pointer = population_actor::stateful_pointer<population_state>;

double backend_seconds(const population_state& st, double steady) {
  return (steady - st.start) / st.options.timing.time_scale;
}

std::uint64_t left_in_budget(const population_state& st) {
  std::uint64_t done = st.options.prior.size() + st.issued;
  return st.options.budget.trials > done ? st.options.budget.trials - done : 0;
}

/// What may still be handed out: the budget's rest, and no more than the
/// hand-out limit's (population_options::hand_out_limit).
std::uint64_t left_to_hand_out(const population_state& st) {
  std::uint64_t left = left_in_budget(st);
  const auto limit = st.options.hand_out_limit;
  if (limit > 0) left = std::min(left, limit > st.issued ? limit - st.issued : 0);
  return left;
}

/// Why nothing more may be handed out (left_to_hand_out() is 0): the budget
/// is spent, or else the hand-out limit was reached, which ends the run as a
/// stop does.
end_reason spent(const population_state& st) {
  return left_in_budget(st) == 0 ? end_reason::budget : end_reason::stopped;
}

void close_hand_out(population_state& st, end_reason reason) {
  if (!st.handing_out) return;
  st.handing_out = false;
  st.hand_out_end_at = detail::steady_seconds();
  st.completed_at_hand_out_end = st.completed;
  st.reason = reason;
}

double mean(const std::vector<double>& xs) {
  if (xs.empty()) return 0.0;
  double sum = 0.0;
  for (double x : xs) sum += x;
  return sum / static_cast<double>(xs.size());
}

/// A progress line into a file or a pipe (stderr not a terminal) comes at
/// most this often, each on a line of its own.
constexpr double progress_log_interval_s = 10.0;

/// On a terminal, one status line rewritten in place (\r) at every tick; into
/// a file or a pipe, a line every progress_log_interval_s and the last one, so
/// that a log reads line by line (redirected, the \r lines made one line of
/// hundreds of statuses).
void print_progress(population_state& st, bool final_line) {
  if (!st.options.progress_line) return;
  const bool terminal = isatty(fileno(stderr)) != 0;
  const double now = detail::steady_seconds();
  if (!terminal && !final_line) {
    if (st.progress_printed_at >= 0 && now - st.progress_printed_at < progress_log_interval_s) return;
    st.progress_printed_at = now;
  }
  std::uint64_t trials = st.options.prior.size() + st.completed;
  double at = backend_seconds(st, now);
  char best[64] = "-";
  if (const auto* b = st.best_of(0); b && !st.options.multi_task)
    std::snprintf(best, sizeof best, "%.4g ms", b->best_judged_ms());
  std::fprintf(stderr, "%strials %llu/%llu  best %s  %.2f trials/s  compile %3.0f%%  devices %3.0f%%  in flight %llu%s",
               terminal ? "\r" : "", static_cast<unsigned long long>(trials),
               static_cast<unsigned long long>(st.options.budget.trials), best,
               at > 0 ? static_cast<double>(st.completed) / at : 0.0, 100.0 * st.compile_busy,
               100.0 * mean(st.device_busy), static_cast<unsigned long long>(st.in_flight),
               terminal ? (final_line ? "   \n" : "   ") : "\n");
  std::fflush(stderr);
}

void send_summary(population_pointer self) {
  auto& st = self->state;
  auto& sum = st.summary;
  double now = detail::steady_seconds();
  if (const auto* b = st.best_of(0)) sum.best = *b;
  if (st.options.multi_task)
    for (const auto& [task, best] : st.bests) {
      if (sum.task_bests.size() <= task) sum.task_bests.resize(task + 1);
      sum.task_bests[task] = best;
    }
  sum.trials = st.completed;
  sum.prior_trials = st.options.prior.size();
  sum.wall_s = now - st.start;
  sum.sim_s = sum.wall_s / st.options.timing.time_scale;
  sum.reason = st.reason.value_or(end_reason::failed);
  sum.trace = st.trace;
  sum.device_times = st.device_times;
  sum.build_s = st.build_s;
  sum.device_drifts = st.device_drifts;
  const double from = st.warm_up.window_start(st.hand_out_end_at);
  if (from >= 0 && st.hand_out_end_at > from)
    sum.steady_rate =
        static_cast<double>(st.completed_at_hand_out_end - st.warm_up.results_before(st.hand_out_end_at)) /
        ((st.hand_out_end_at - from) / st.options.timing.time_scale);
  sum.engine_cpu_s += st.cpu_s;
  print_progress(st, true);
  caf::anon_send(st.done_to, done_atom::value, sum);
  self->quit();
}

// Collects the stages' busy time over the steady window, then reports.
void finish(population_pointer self) {
  auto& st = self->state;
  if (st.finished) return;
  st.finished = true;
  double from = st.warm_up.window_start(st.hand_out_end_at);
  if (from < 0) from = st.start;
  double to = st.hand_out_end_at > from ? st.hand_out_end_at : detail::steady_seconds();
  st.summary.devices.resize(st.options.measurers.size());
  st.stats_pending = 2 + st.options.measurers.size();
  auto arrived = [self] {
    if (--self->state.stats_pending == 0) send_summary(self);
  };
  self->request(st.pool, stats_timeout, stats_atom::value, from, to)
      .then(
          [self, arrived](stage_stats& s) {
            self->state.summary.compile = s;
            self->state.summary.engine_cpu_s += s.cpu_s;
            arrived();
          },
          [arrived](caf::error&) { arrived(); });
  self->request(st.generator, stats_timeout, stats_atom::value, from, to)
      .then(
          [self, arrived](stage_stats& s) {
            self->state.summary.engine_cpu_s += s.cpu_s;
            arrived();
          },
          [arrived](caf::error&) { arrived(); });
  for (std::size_t d = 0; d < st.options.measurers.size(); ++d) {
    if (st.measurer_down[d]) {
      arrived();
      continue;
    }
    self->request(st.options.measurers[d], stats_timeout, stats_atom::value, from, to)
        .then(
            [self, arrived, d](stage_stats& s) {
              self->state.summary.devices[d] = s;
              self->state.summary.engine_cpu_s += s.cpu_s;
              arrived();
            },
            [arrived](caf::error&) { arrived(); });
  }
}

void maybe_finish(population_pointer self) {
  auto& st = self->state;
  if (!st.handing_out && st.in_flight == 0 && !st.demand_pending) finish(self);
}

void on_trial(population_pointer self, measured_trial trial);

/// A trial for a candidate the compile pool did not answer for.
measured_trial unanswered(std::uint64_t id, configuration config, std::string message) {
  measured_trial trial;
  trial.candidate_id = id;
  trial.config = std::move(config);
  trial.state = status::unknown;
  trial.message = std::move(message);
  return trial;
}

void hand_out(population_pointer self, std::vector<candidate>& batch) {
  auto& st = self->state;
  for (auto& cand : batch) {
    ++st.in_flight;
    ++st.issued;
    if (st.options.cache) {
      if (auto hit = st.options.cache(cand.config)) {
        hit->candidate_id = cand.id;
        hit->config = cand.config;
        // Delivered as a message, like a measured trial, so that the
        // population's bookkeeping sees one path.
        self->send(self, cached_atom::value, std::move(*hit));
        continue;
      }
    }
    auto id = cand.id;
    // Measured against the best known now (a later best is only faster).
    if (const auto* best = st.best_of(st.task_of(cand.config))) cand.reference_ms = best->best_judged_ms();
    st.awaiting[id] = {detail::steady_seconds() + st.options.evaluate_timeout_s, cand.config};
    // An answer for a candidate no longer awaited (its timeout was reported
    // on the tick) is dropped: the trial was recorded once, as unknown.
    self->request(st.pool, caf::infinite, evaluate_atom::value, std::move(cand))
        .then(
            [self, id](measured_trial& trial) {
              if (self->state.awaiting.erase(id) == 0) return;
              on_trial(self, std::move(trial));
            },
            [self, id](caf::error& err) {
              auto waited = self->state.awaiting.extract(id);
              if (waited.empty()) return;
              on_trial(self, unanswered(id, std::move(waited.mapped().config),
                                        "the compile pool ended without answering: " + self->system().render(err)));
            });
  }
}

/// On the tick: every candidate not answered within evaluate_timeout_s is a
/// trial of status unknown.
void expire_overdue(population_pointer self) {
  auto& st = self->state;
  double now = detail::steady_seconds();
  std::vector<std::pair<std::uint64_t, configuration>> overdue;
  for (auto it = st.awaiting.begin(); it != st.awaiting.end();) {
    if (it->second.deadline <= now) {
      overdue.emplace_back(it->first, std::move(it->second.config));
      it = st.awaiting.erase(it);
    } else {
      ++it;
    }
  }
  if (overdue.empty()) return;
  std::sort(overdue.begin(), overdue.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  char message[96];
  std::snprintf(message, sizeof message, "no trial within the evaluation timeout (%.1f s)",
                st.options.evaluate_timeout_s);
  for (auto& [id, config] : overdue) on_trial(self, unanswered(id, std::move(config), message));
}

void maybe_demand(population_pointer self) {
  auto& st = self->state;
  if (!st.handing_out || st.demand_pending) return;
  std::uint64_t left = left_to_hand_out(st);
  if (left == 0) {
    close_hand_out(st, spent(st));
    return;
  }
  std::uint64_t want = 0;
  if (st.options.mode == pipeline_mode::generational)
    want = st.in_flight == 0 ? st.options.batch : 0;
  else
    want = st.options.capacity > st.in_flight ? st.options.capacity - st.in_flight : 0;
  want = std::min(want, left);
  if (want == 0) return;
  st.demand_pending = true;
  st.demand_sent_at = st.demand_noticed_at = detail::steady_seconds();
  // No timeout: the generator is local, and ending answers with an error; a
  // slow one is reported by the tick (notice_silent_generator).
  self->request(st.generator, caf::infinite, demand_atom::value, static_cast<std::uint32_t>(want))
      .then(
          [self](std::vector<candidate>& batch) {
            detail::cpu_scope cpu(self->state.cpu_s);
            auto& st = self->state;
            st.demand_pending = false;
            bool got_some = !batch.empty();
            hand_out(self, batch);
            if (!got_some && st.in_flight == 0) close_hand_out(st, end_reason::exhausted);
            if (left_to_hand_out(st) == 0) close_hand_out(st, spent(st));
            // In steady mode a partial answer is topped up at once; an empty
            // one waits for the next result (the strategy may learn from it).
            if (got_some && st.options.mode == pipeline_mode::steady) maybe_demand(self);
            maybe_finish(self);
          },
          [self](caf::error& err) {
            auto& st = self->state;
            st.demand_pending = false;
            std::fprintf(stderr, "\npopulation: the generator ended without answering: %s\n",
                         self->system().render(err).c_str());
            if (st.in_flight == 0) close_hand_out(st, end_reason::failed);
            maybe_finish(self);
          });
}

/// Says on stderr, every demand_notice_s, that the generator is still
/// working on a demand (the run is waiting, not stuck).
void notice_silent_generator(population_state& st) {
  if (!st.demand_pending || st.options.demand_notice_s <= 0) return;
  double now = detail::steady_seconds();
  if (now - st.demand_noticed_at < st.options.demand_notice_s) return;
  st.demand_noticed_at = now;
  std::fprintf(stderr,
               "\npopulation: the strategy has been choosing the next candidates for %.1f s (%llu trials in flight); "
               "waiting for it\n",
               now - st.demand_sent_at, static_cast<unsigned long long>(st.in_flight));
}

void on_trial(population_pointer self, measured_trial trial) {
  detail::cpu_scope cpu(self->state.cpu_s);
  auto& st = self->state;
  double now = detail::steady_seconds();
  --st.in_flight;
  if (trial.abandoned) {
    // Not a trial: the candidate stays unmeasured and a resume hands it out again.
    close_hand_out(st, end_reason::stopped);
    maybe_finish(self);
    return;
  }
  ++st.completed;
  trial.finished_s = backend_seconds(st, now);
  st.warm_up.result(trial.device_id, now);
  // A time from timing stopped early (the candidate was clearly slower than
  // the best) is never the best, nor one that lost its duel against the best
  // before it; one that won it against this best is (its duel median may be
  // above the best's figure from an earlier, quieter moment).
  bool new_best = st.improves(trial);
  if (trial.device_id >= 0) {
    auto it = std::find_if(st.device_times.begin(), st.device_times.end(),
                           [&](const auto& entry) { return entry.first == trial.device_id; });
    if (it == st.device_times.end()) it = st.device_times.insert(it, {trial.device_id, device_time{}});
    it->second.add(trial);
  }
  if (!trial.reused()) st.build_s += std::max(0.0, trial.compile_s);
  if (trial.device_id >= 0) {
    auto time = std::find_if(st.device_times.begin(), st.device_times.end(),
                             [&](const auto& entry) { return entry.first == trial.device_id; });
    if (time != st.device_times.end()) {
      time->second.probe_s += trial.probe_s;
      time->second.duel_s += trial.duel_s;
    }
    auto drift = std::find_if(st.device_drifts.begin(), st.device_drifts.end(),
                              [&](const auto& entry) { return entry.first == trial.device_id; });
    if (drift == st.device_drifts.end())
      st.device_drifts.emplace_back(trial.device_id, trial.drift);
    else
      drift->second = trial.drift;
  }
  if (new_best) {
    st.bests[st.task_of(trial.config)] = trial;
    // The trace follows one task's best; a multi-task run's tasks have theirs
    // in their own runs.
    if (!st.options.multi_task)
      st.trace.push_back({trial.finished_s, st.options.prior.size() + st.completed, trial.best_judged_ms()});
  }
  self->send(st.generator, observe_atom::value, trial);
  if (st.options.listener) {
    try {
      st.options.listener->on_trial(trial, new_best);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "\npopulation: could not record trial %llu: %s\n",
                   static_cast<unsigned long long>(trial.candidate_id), e.what());
      close_hand_out(st, end_reason::failed);
    }
  }
  if (st.options.budget.seconds > 0 && trial.finished_s >= st.options.budget.seconds)
    close_hand_out(st, end_reason::time);
  if (st.options.stop_requested && st.options.stop_requested()) close_hand_out(st, end_reason::stopped);
  maybe_demand(self);
  maybe_finish(self);
}

void refresh_busy(population_pointer self) {
  auto& st = self->state;
  double to = detail::steady_seconds();
  double from = st.warm_up.window_start(to);
  if (from < 0) return;
  self->request(st.pool, stats_timeout, stats_atom::value, from, to)
      .then([self](stage_stats& s) { self->state.compile_busy = s.busy_fraction(); }, [](caf::error&) {});
  st.device_busy.resize(st.options.measurers.size());
  for (std::size_t d = 0; d < st.options.measurers.size(); ++d)
    if (!st.measurer_down[d])
      self->request(st.options.measurers[d], stats_timeout, stats_atom::value, from, to)
          .then([self, d](stage_stats& s) { self->state.device_busy[d] = s.busy_fraction(); }, [](caf::error&) {});
}

population_actor::behavior_type population(population_pointer self, generator_actor generator, compile_pool_actor pool,
                                           population_options options, caf::actor done_to) {
  auto& st = self->state;
  st.options = std::move(options);
  st.warm_up = detail::warm_up_clock(st.options.measurers.size());
  if (st.options.timing.time_scale <= 0) st.options.timing.time_scale = 1.0;
  st.generator = std::move(generator);
  st.pool = std::move(pool);
  st.done_to = std::move(done_to);
  st.measurer_down.assign(st.options.measurers.size(), false);
  for (const auto& m : st.options.measurers) self->monitor(m);
  self->set_down_handler([self](caf::down_msg& down) {
    auto& st = self->state;
    for (std::size_t d = 0; d < st.options.measurers.size(); ++d)
      if (st.options.measurers[d].address() == down.source) st.measurer_down[d] = true;
  });
  for (const auto& trial : st.options.prior) {
    const auto* best = st.best_of(st.task_of(trial.config));
    if (trial.ok() && !trial.stopped_early && !trial.duel_lost() &&
        (!best || trial.best_judged_ms() < best->best_judged_ms()))
      st.bests[st.task_of(trial.config)] = trial;
  }
  return {
      [self](start_atom) {
        auto& st = self->state;
        st.start = detail::steady_seconds();
        if (const auto* b = st.best_of(0); b && !st.options.multi_task)
          st.trace.push_back({0.0, st.options.prior.size(), b->best_judged_ms()});
        self->delayed_send(self, detail::stage_tick_interval, tick_atom::value);
        maybe_demand(self);
        maybe_finish(self);
      },
      [self](cached_atom, measured_trial& trial) { on_trial(self, std::move(trial)); },
      [self](stop_atom) {
        close_hand_out(self->state, end_reason::stopped);
        maybe_finish(self);
      },
      [self](tick_atom) {
        auto& st = self->state;
        if (st.finished) return;
        double at = backend_seconds(st, detail::steady_seconds());
        if (st.options.budget.seconds > 0 && at >= st.options.budget.seconds) {
          close_hand_out(st, end_reason::time);
          maybe_finish(self);
        }
        expire_overdue(self);
        if (st.finished) return;
        notice_silent_generator(st);
        refresh_busy(self);
        print_progress(st, false);
        if (st.options.listener) {
          progress_report report;
          report.trials = st.options.prior.size() + st.completed;
          report.at_s = at;
          report.rate = at > 0 ? static_cast<double>(st.completed) / at : 0.0;
          report.compile_busy = st.compile_busy;
          report.device_busy = st.device_busy;
          if (const auto* b = st.best_of(0); b && !st.options.multi_task) report.best_time_ms = b->best_judged_ms();
          report.in_flight = st.in_flight;
          st.options.listener->on_progress(report);
        }
        self->delayed_send(self, detail::stage_tick_interval, tick_atom::value);
      },
  };
}

}  // namespace

population_actor spawn_population(caf::actor_system& system, generator_actor generator, compile_pool_actor pool,
                                  population_options options, caf::actor done_to) {
  return system.spawn(population, std::move(generator), std::move(pool), std::move(options), std::move(done_to));
}

}  // namespace tune::actors
