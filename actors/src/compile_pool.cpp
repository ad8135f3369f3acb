// The compile pool: N detached build workers (backend::build blocks), a
// queue of candidates waiting for a worker, and an outbox of compiled
// candidates waiting for room at a measurer. Each measurer takes at most one
// running plus `prefetch` queued candidates, so compiled work never piles up
// in a mailbox and a device never waits for the compiler when it can be
// avoided.
#include <sched.h>

#include <algorithm>
#include <caf/actor_cast.hpp>
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

#include "running_median.hpp"
#include "stage_clock.hpp"
#include "tune/actors/interfaces.hpp"
#include "tune/actors/nodes.hpp"
#include "tune/engine/multi_task.hpp"

namespace tune::actors {
namespace {

using trial_promise = caf::typed_response_promise<measured_trial>;

build_worker_actor::behavior_type build_worker(build_worker_actor::pointer, backend_ptr backend, double timeout_s,
                                               build_placement placement) {
  return {
      [backend, timeout_s, placement](build_atom, candidate& cand) {
        // Before each build: the actor's thread is its own (detached), and
        // placing it again costs two system calls against a compiler's run.
        apply_build_placement(placement);
        return build_candidate(*backend, std::move(cand), timeout_s);
      },
  };
}

measured_trial failed_trial(const candidate& cand, status state, double compile_s, std::string message) {
  measured_trial trial;
  trial.candidate_id = cand.id;
  trial.config = cand.config;
  trial.state = state;
  trial.compile_s = compile_s;
  trial.message = std::move(message);
  return trial;
}

struct waiting_build {
  candidate cand;
  trial_promise promise;
  std::uint32_t requeues = 0;
  /// A background worker could not build it in time: only the others may.
  bool background_tried = false;
  /// The median build of its task when its build_limit_s was set.
  double limit_median_s = 0.0;
};

struct built_candidate_waiting {
  compiled_candidate compiled;
  trial_promise promise;
  std::uint32_t requeues = 0;
  double deadline = 0.0;  ///< steady seconds by which its measurer must answer
  /// Unbuilt: the median build of its task when its build_limit_s was set.
  double limit_median_s = 0.0;
};

/// One measurer as the pool sees it: what it holds, by candidate id.
struct measurer_slot {
  measurer_actor handle;
  std::uint32_t prefetch = 1;
  std::int32_t device = -1;  ///< written into its trials; -1: the measurer's own
  bool remote = false;
  bool alive = true;
  double weight = 1.0;
  std::map<std::uint64_t, built_candidate_waiting> held;
};

/// One compile worker: a local detached actor, or a node's (remote).
struct worker_slot {
  build_worker_actor handle;
  bool remote = false;
  bool background = false;  ///< compile_pool_options::background_cores
  build_placement placement;
  bool alive = true;
  /// Bumped when the worker is replaced or lost: a late answer is dropped.
  std::uint64_t generation = 0;
  std::optional<waiting_build> job;  ///< the candidate it builds now
  double deadline = 0.0;             ///< steady seconds by which it must answer for the job
  std::size_t track = 0;             ///< its index in the busy tracker
};

struct pool_state {
  backend_ptr backend;
  compile_pool_options options;
  std::vector<worker_slot> workers;
  std::deque<waiting_build> to_build;
  std::deque<built_candidate_waiting> to_measure;
  std::vector<measurer_slot> slots;
  detail::busy_tracker tracker;             ///< the workers but the background ones
  detail::busy_tracker background_tracker;  ///< the background workers
  double background_build_s = 0.0;          ///< compile_s of what the background workers built
  /// compile_s of each task's builds so far that ended ok at normal priority,
  /// on a worker or on a node that measured what it built (a background
  /// build's wait for its core is not the build's): the typical build a slow
  /// one is held against.
  std::map<std::uint32_t, detail::running_median> build_times;
  double cpu_s = 0.0;
  double lost_since = -1.0;  ///< steady seconds since no measurer is alive; -1: one is
  double status_at = -1.0;   ///< when the last waiting line was printed
  bool ticking = false;
  bool giving_up = false;  ///< lost timeout passed: queued candidates are abandoned
  static inline const char* name = "compile_pool";
};

using pool_pointer = compile_pool_actor::stateful_pointer<pool_state>;
constexpr std::size_t none = static_cast<std::size_t>(-1);

void pump(pool_pointer self);

/// The pool's timer: about four times a second while a build or a
/// measurement is outstanding or no measurer is alive. The timeouts of
/// builds and measurements are deadlines checked here (stage_tick_interval):
/// request timeouts cost more than the rest of a trial's hand-offs on a fast
/// run.
void schedule_tick(pool_pointer self) {
  auto& st = self->state;
  if (st.ticking) return;
  st.ticking = true;
  self->delayed_send(self, detail::stage_tick_interval, tick_atom::value);
}

void abandon_queue(pool_pointer self) {
  auto& st = self->state;
  auto abandon = [](const candidate& cand, double compile_s, trial_promise& promise) {
    auto trial = failed_trial(cand, status::unknown, compile_s, "abandoned: no measurer left within the lost timeout");
    trial.abandoned = true;
    promise.deliver(std::move(trial));
  };
  for (auto& job : st.to_measure) abandon(job.compiled.cand, job.compiled.build.compile_s, job.promise);
  st.to_measure.clear();
  for (auto& job : st.to_build) abandon(job.cand, 0.0, job.promise);
  st.to_build.clear();
}

bool any_alive(const pool_state& st) {
  for (const auto& slot : st.slots)
    if (slot.alive) return true;
  return false;
}

/// With work queued and no measurer alive: a status line, and after the lost
/// timeout the queued candidates are given up.
void watch_lost(pool_pointer self) {
  auto& st = self->state;
  if (any_alive(st) || (st.to_measure.empty() && st.to_build.empty())) {
    if (st.lost_since >= 0 && any_alive(st)) std::fprintf(stderr, "\nnodes: a measurer is back; the run goes on\n");
    if (any_alive(st)) st.lost_since = st.status_at = -1.0;
    return;
  }
  double now = detail::steady_seconds();
  if (st.lost_since < 0) st.lost_since = now;
  double waited = now - st.lost_since;
  if (waited >= st.options.lost_timeout_s) {
    if (!st.giving_up)
      std::fprintf(stderr, "\nnodes: no measurer came back within %.0f s; the run ends and can be resumed\n",
                   st.options.lost_timeout_s);
    st.giving_up = true;
    abandon_queue(self);
    return;
  }
  if (st.status_at < 0 || now - st.status_at >= 5.0) {
    st.status_at = now;
    std::fprintf(stderr, "\nnodes: no measurer left; waiting for a node to come back (%.0f s of %.0f s)\n", waited,
                 st.options.lost_timeout_s);
  }
  schedule_tick(self);
}

/// True for a measurer that builds what it measures (a node's, real kernels).
bool builds_itself(const pool_state& st, const measurer_slot& slot) { return slot.remote && st.options.remote_builds; }

/// Whether `slot` can take `job`: an unbuilt candidate only a measurer that
/// builds itself; one built here only a measurer of this machine (or of a
/// node measuring simulated builds); one built on a node (bytes) any.
bool accepts(const pool_state& st, const measurer_slot& slot, const compiled_candidate& job) {
  if (job.unbuilt) return builds_itself(st, slot);
  return !builds_itself(st, slot) || !job.artifact_bytes.empty();
}

/// The live measurer with room that holds the fewest candidates per weight
/// and accepts `job`; `none` when there is none.
std::size_t choose_slot(const pool_state& st, const compiled_candidate& job) {
  std::size_t best = none;
  double best_load = 0.0;
  for (std::size_t d = 0; d < st.slots.size(); ++d) {
    const auto& slot = st.slots[d];
    if (!slot.alive || slot.held.size() >= 1 + slot.prefetch || !accepts(st, slot, job)) continue;
    double load = static_cast<double>(slot.held.size() + 1) / slot.weight;
    if (best == none || load < best_load) {
      best = d;
      best_load = load;
    }
  }
  return best;
}

/// Puts what a lost remote measurer held back at the front of the queue.
void requeue_held(pool_pointer self, std::size_t index) {
  auto& st = self->state;
  auto& slot = st.slots[index];
  slot.alive = false;
  for (auto it = slot.held.rbegin(); it != slot.held.rend(); ++it) {
    auto job = std::move(it->second);
    if (++job.requeues > st.options.max_requeues) {
      auto trial = failed_trial(job.compiled.cand, status::unknown, job.compiled.build.compile_s,
                                "lost its measurer " + std::to_string(job.requeues) + " times");
      trial.device_id = slot.device;
      job.promise.deliver(std::move(trial));
      continue;
    }
    st.to_measure.push_front(std::move(job));
  }
  slot.held.clear();
}

/// The measurer of `best` failed to answer for candidate `id` (an error, or
/// its deadline passed): a remote one's candidate is measured elsewhere (up
/// to max_requeues times), else it becomes a trial of status `state`.
void measure_failed(pool_pointer self, std::size_t best, std::uint64_t id, const measurer_actor& handle, status state,
                    const std::string& message) {
  auto& st = self->state;
  auto& slot = st.slots[best];
  auto it = slot.held.find(id);
  if (slot.handle != handle || it == slot.held.end()) return;
  if (slot.remote) {
    // The network failed this request: measure it elsewhere.
    auto job = std::move(it->second);
    slot.held.erase(it);
    if (++job.requeues <= st.options.max_requeues) {
      st.to_measure.push_front(std::move(job));
      pump(self);
      return;
    }
    it = slot.held.emplace(id, std::move(job)).first;
  }
  auto job = std::move(it->second);
  slot.held.erase(it);
  auto trial = failed_trial(job.compiled.cand, state, job.compiled.build.compile_s, message);
  trial.device_id = slot.device >= 0 ? slot.device : static_cast<std::int32_t>(best);
  job.promise.deliver(std::move(trial));
  pump(self);
}

/// Builds of a task that must be known before one is held against them.
constexpr std::size_t min_builds_known = 5;

std::uint32_t build_task(const pool_state& st, const candidate& cand) {
  return st.options.multi_task && !cand.config.empty() ? task_of(cand.config) : 0;
}

/// The limit of `cand`'s build relative to the run's builds of its task
/// (early_stop_policy::build_factor); NaN where none applies or it would not
/// come before the compile timeout; `median` gets the median it was set from.
double build_limit(const pool_state& st, const candidate& cand, double& median) {
  const auto& policy = st.options.early_stop;
  if (!(policy.build_factor > 0) || !st.backend->real_builds()) return std::nan("");
  auto known = st.build_times.find(build_task(st, cand));
  if (known == st.build_times.end() || known->second.size() < min_builds_known) return std::nan("");
  median = known->second.median();
  double limit = std::max(policy.build_factor * median, policy.min_build_s);
  double timeout = st.options.timing.timeouts.compile_s;
  return timeout > 0 && limit >= timeout ? std::nan("") : limit;
}

/// A build at normal priority ended (a worker's, or a node's of a candidate
/// it measures): an ok one is part of its task's typical build; one stopped
/// at its relative limit (set from `limit_median_s`) says so in `message`.
void note_build(pool_state& st, const candidate& cand, double limit_median_s, status state, double compile_s,
                std::string& message) {
  if (state == status::ok && compile_s > 0) st.build_times[build_task(st, cand)].add(compile_s);
  if (state != status::build_timeout || !(cand.build_limit_s > 0)) return;
  char text[320];
  std::snprintf(text, sizeof text,
                "build stopped at its limit of %.3g s, the larger of %g times the median build of its task so far "
                "(%.3g s) and %g s: far slower to build than its peers (with build_factor 0, --early-stop "
                "build_factor=0, builds run to the compile timeout of %g s)",
                cand.build_limit_s, st.options.early_stop.build_factor, limit_median_s,
                st.options.early_stop.min_build_s, st.options.timing.timeouts.compile_s);
  message = text;
}

/// What a trial of a measurer that built it says of its build: ok once the
/// build ended ok (whatever the run did), else the build's own status.
status build_state_of(const measured_trial& trial) {
  switch (trial.state) {
    case status::instantiation_error:
    case status::compile_error:
    case status::compile_error_device:
    case status::build_timeout:
    case status::unknown:
      return trial.state;
    default:
      return status::ok;
  }
}

void send_to_measurer(pool_pointer self, std::size_t best, built_candidate_waiting job) {
  auto& st = self->state;
  auto& slot = st.slots[best];
  if (!slot.remote && !job.compiled.artifact_bytes.empty()) {
    // Built on a node: its bytes become a file of this machine's cache.
    if (auto problem = materialize_artifact(job.compiled); !problem.empty()) {
      job.promise.deliver(failed_trial(job.compiled.cand, status::unknown, job.compiled.build.compile_s,
                                       "cannot store the artifact built on a node: " + problem));
      return;
    }
  }
  const auto& timing = st.options.timing;
  double per_run = timing.timeouts.run_s * timing.time_scale + timing.request_grace_s;
  // The node builds an unbuilt candidate (and those ahead of it) before running it.
  if (builds_itself(st, slot)) per_run += timing.timeouts.compile_s * timing.time_scale;
  job.deadline = detail::steady_seconds() + per_run * (2.0 + slot.prefetch);
  auto id = job.compiled.cand.id;
  auto compiled = job.compiled;
  slot.held.emplace(id, std::move(job));
  auto handle = slot.handle;
  schedule_tick(self);
  // No request timeout: the deadline is checked on the tick (expire_overdue),
  // and an answer that comes after it finds the candidate gone and is dropped.
  self->request(handle, caf::infinite, measure_atom::value, std::move(compiled))
      .then(
          [self, best, id, handle](measured_trial& trial) mutable {
            detail::cpu_scope cpu(self->state.cpu_s);
            auto& slot = self->state.slots[best];
            auto it = slot.held.find(id);
            // Gone: the measurer was lost or overdue and the candidate went elsewhere.
            if (slot.handle != handle || it == slot.held.end()) return;
            auto promise = it->second.promise;
            // The measurer built it: a build of the run like a worker's,
            // unless it built at idle priority (its time includes waits).
            if (it->second.compiled.unbuilt && !trial.built_idle)
              note_build(self->state, it->second.compiled.cand, it->second.limit_median_s, build_state_of(trial),
                         trial.compile_s, trial.message);
            slot.held.erase(it);
            if (slot.device >= 0) trial.device_id = slot.device;
            promise.deliver(std::move(trial));
            pump(self);
          },
          [self, best, id, handle](caf::error& err) mutable {
            detail::cpu_scope cpu(self->state.cpu_s);
            measure_failed(self, best, id, handle, status::unknown,
                           "measurer gave no answer: " + self->system().render(err));
          });
}

void pump_measure(pool_pointer self) {
  auto& st = self->state;
  if (st.giving_up) abandon_queue(self);
  for (auto it = st.to_measure.begin(); it != st.to_measure.end();) {
    auto best = choose_slot(st, it->compiled);
    if (best == none) {
      ++it;
      continue;
    }
    auto job = std::move(*it);
    it = st.to_measure.erase(it);
    send_to_measurer(self, best, std::move(job));
  }
  // What no compile worker took goes unbuilt to a measurer that builds itself.
  compiled_candidate unbuilt;
  unbuilt.unbuilt = true;
  while (!st.to_build.empty()) {
    auto best = choose_slot(st, unbuilt);
    if (best == none) break;
    auto job = std::move(st.to_build.front());
    st.to_build.pop_front();
    built_candidate_waiting waiting{compiled_candidate{std::move(job.cand), {}, true, {}}, job.promise, job.requeues};
    waiting.compiled.cand.build_limit_s = build_limit(st, waiting.compiled.cand, waiting.limit_median_s);
    send_to_measurer(self, best, std::move(waiting));
  }
  watch_lost(self);
}

void add_slot(pool_pointer self, measurer_actor handle, std::uint32_t prefetch, std::int32_t device, bool remote,
              double weight) {
  auto& st = self->state;
  if (remote) self->monitor(handle);
  for (auto& slot : st.slots) {
    if (remote && slot.remote && !slot.alive && slot.device == device) {
      slot.handle = std::move(handle);
      slot.prefetch = prefetch;
      slot.alive = true;
      return;
    }
  }
  measurer_slot slot;
  slot.handle = std::move(handle);
  slot.prefetch = prefetch;
  slot.device = device;
  slot.remote = remote;
  slot.weight = weight > 0 ? weight : 1.0;
  st.slots.push_back(std::move(slot));
}

detail::busy_tracker& tracker_of(pool_state& st, const worker_slot& worker) {
  return worker.background ? st.background_tracker : st.tracker;
}

build_worker_actor spawn_local_worker(pool_pointer self, const build_placement& placement) {
  auto& st = self->state;
  return self->spawn<caf::detached + caf::linked>(build_worker, st.backend, st.options.timing.timeouts.compile_s,
                                                  placement);
}

void add_local_worker(pool_pointer self, build_placement placement, bool background) {
  auto& st = self->state;
  worker_slot worker;
  worker.handle = spawn_local_worker(self, placement);
  worker.background = background;
  worker.placement = std::move(placement);
  worker.track = tracker_of(st, worker).add_worker();
  st.workers.push_back(std::move(worker));
}

void add_worker(pool_pointer self, build_worker_actor handle, bool remote) {
  auto& st = self->state;
  if (remote) {
    self->monitor(handle);
    for (auto& worker : st.workers) {
      if (worker.remote && !worker.alive) {
        worker.handle = std::move(handle);
        worker.alive = true;
        ++worker.generation;
        return;
      }
    }
  }
  worker_slot worker;
  worker.handle = std::move(handle);
  worker.remote = remote;
  worker.track = st.tracker.add_worker();
  st.workers.push_back(std::move(worker));
}

void replace_worker(pool_pointer self, std::size_t index) {
  auto& st = self->state;
  auto& worker = st.workers[index];
  self->unlink_from(worker.handle);
  self->send_exit(worker.handle, caf::exit_reason::kill);
  worker.handle = spawn_local_worker(self, worker.placement);
  ++worker.generation;
}

/// A node's compile worker is gone: its candidate is built again elsewhere.
void lose_worker(pool_pointer self, std::size_t index) {
  auto& st = self->state;
  auto& worker = st.workers[index];
  worker.alive = false;
  ++worker.generation;
  if (!worker.job) return;
  tracker_of(st, worker).stop(worker.track);
  auto job = std::move(*worker.job);
  worker.job.reset();
  if (++job.requeues > st.options.max_requeues) {
    job.promise.deliver(failed_trial(job.cand, status::unknown, 0.0,
                                     "lost its compile worker " + std::to_string(job.requeues) + " times"));
    return;
  }
  st.to_build.push_front(std::move(job));
}

/// Whether a compile worker's builds can be measured: a node's always (its
/// artifacts travel as bytes); one of this machine's only when a measurer
/// of this machine, or one that measures what the pool built, is in the run.
bool worker_useful(const pool_state& st, const worker_slot& worker) {
  if (worker.remote || !st.options.remote_builds) return true;
  for (const auto& slot : st.slots)
    if (!slot.remote) return true;
  return false;
}

/// A background worker ran out of time on `job`: its core was measuring, so
/// the time says nothing of the candidate. It goes first in the queue, for
/// the other workers only.
void retry_after_background(pool_state& st, waiting_build job) {
  job.background_tried = true;
  st.to_build.push_front(std::move(job));
}

/// Whether the local devices would wait for builds: they have room for more
/// candidates than are being built and already built. A background worker
/// builds only then, so that it never takes a measuring core the device
/// needs and never holds a candidate a free worker could build sooner.
bool devices_would_wait(const pool_state& st) {
  std::size_t room = 0;
  for (const auto& slot : st.slots)
    if (!slot.remote && slot.alive && slot.held.size() < 1 + slot.prefetch)
      room += 1 + slot.prefetch - slot.held.size();
  std::size_t coming = st.to_measure.size();
  for (const auto& worker : st.workers)
    if (worker.job) ++coming;
  return room > coming;
}

/// Worker `w` of `generation` failed to answer for its job: an error
/// (`error` true) or its deadline passed. A node's worker that the network
/// failed is lost and its candidate built elsewhere; otherwise the candidate
/// becomes build_timeout and a worker of this machine is replaced (it may
/// still be blocked in the backend; it ends when the call returns).
void build_failed(pool_pointer self, std::size_t w, std::uint64_t generation, bool error, const std::string& message) {
  auto& st = self->state;
  auto& worker = st.workers[w];
  if (worker.generation != generation || !worker.job) return;
  if (worker.remote && error) {
    lose_worker(self, w);  // the network failed it: build it elsewhere
    pump(self);
    return;
  }
  tracker_of(st, worker).stop(worker.track);
  auto job = std::move(*worker.job);
  worker.job.reset();
  if (worker.remote)
    ++worker.generation;  // its late answer must not be taken for its next job's
  else
    replace_worker(self, w);
  if (worker.background && !error) {
    retry_after_background(st, std::move(job));
  } else {
    job.promise.deliver(failed_trial(job.cand, status::build_timeout, st.options.timing.timeouts.compile_s, message));
  }
  pump(self);
}

/// On the tick: builds and measurements past their deadlines.
void expire_overdue(pool_pointer self) {
  auto& st = self->state;
  double now = detail::steady_seconds();
  for (std::size_t w = 0; w < st.workers.size(); ++w) {
    auto& worker = st.workers[w];
    if (!worker.job || worker.deadline > now) continue;
    char message[128];
    std::snprintf(message, sizeof message, "build worker gave no answer within the compile timeout (%.3g s + %.3g s)",
                  st.options.timing.timeouts.compile_s * st.options.timing.time_scale,
                  st.options.timing.request_grace_s);
    build_failed(self, w, worker.generation, false, message);
  }
  for (std::size_t d = 0; d < st.slots.size(); ++d) {
    std::vector<std::uint64_t> overdue;
    for (const auto& [id, job] : st.slots[d].held)
      if (job.deadline <= now) overdue.push_back(id);
    for (auto id : overdue)
      measure_failed(self, d, id, st.slots[d].handle, status::run_timeout,
                     "measurer gave no answer within its deadline (the run timeout and grace for each candidate it "
                     "held)");
  }
}

bool outstanding(const pool_state& st) {
  for (const auto& worker : st.workers)
    if (worker.job) return true;
  for (const auto& slot : st.slots)
    if (!slot.held.empty()) return true;
  return false;
}

/// A finished build of `job`: to the outbox for a measurer, or back as a
/// failed trial.
void take_build(pool_state& st, waiting_build& job, compiled_candidate& compiled) {
  if (compiled.build.state == status::ok)
    st.to_measure.push_back({std::move(compiled), job.promise, job.requeues});
  else
    job.promise.deliver(
        failed_trial(compiled.cand, compiled.build.state, compiled.build.compile_s, std::move(compiled.build.message)));
}

/// A backend whose builds return at once: each waiting candidate is built
/// here, in order, without a worker.
void build_here(pool_pointer self) {
  auto& st = self->state;
  while (!st.to_build.empty()) {
    auto job = std::move(st.to_build.front());
    st.to_build.pop_front();
    auto compiled = build_candidate(*st.backend, std::move(job.cand), st.options.timing.timeouts.compile_s);
    take_build(st, job, compiled);
  }
}

void pump_build(pool_pointer self) {
  auto& st = self->state;
  if (st.backend->builds_instantly() && !st.options.remote_builds) {
    build_here(self);
    return;
  }
  for (std::size_t w = 0; w < st.workers.size() && !st.to_build.empty(); ++w) {
    auto& worker = st.workers[w];
    if (worker.job || !worker.alive || !worker_useful(st, worker)) continue;
    auto next = st.to_build.begin();
    if (worker.background) {
      if (!devices_would_wait(st)) continue;
      next = std::find_if(st.to_build.begin(), st.to_build.end(),
                          [](const waiting_build& job) { return !job.background_tried; });
      if (next == st.to_build.end()) continue;
    }
    worker.job = std::move(*next);
    st.to_build.erase(next);
    worker.job->cand.build_limit_s = build_limit(st, worker.job->cand, worker.job->limit_median_s);
    tracker_of(st, worker).start(worker.track);
    worker.deadline = detail::steady_seconds() + st.options.timing.timeouts.compile_s * st.options.timing.time_scale +
                      st.options.timing.request_grace_s;
    auto generation = worker.generation;
    schedule_tick(self);
    // No request timeout: the deadline is checked on the tick (expire_overdue);
    // an answer after it comes from a replaced generation and is dropped.
    self->request(worker.handle, caf::infinite, build_atom::value, worker.job->cand)
        .then(
            [self, w, generation](compiled_candidate& compiled) {
              detail::cpu_scope cpu(self->state.cpu_s);
              auto& st = self->state;
              auto& worker = st.workers[w];
              if (worker.generation != generation || !worker.job) return;
              tracker_of(st, worker).stop(worker.track);
              auto job = std::move(*worker.job);
              worker.job.reset();
              if (worker.background && compiled.build.state == status::build_timeout) {
                retry_after_background(st, std::move(job));
              } else {
                if (worker.background)
                  st.background_build_s += compiled.build.compile_s;
                else
                  note_build(st, job.cand, job.limit_median_s, compiled.build.state, compiled.build.compile_s,
                             compiled.build.message);
                take_build(st, job, compiled);
              }
              pump(self);
            },
            [self, w, generation](caf::error& err) {
              detail::cpu_scope cpu(self->state.cpu_s);
              build_failed(self, w, generation, true, "build worker gave no answer: " + self->system().render(err));
            });
  }
}

void pump(pool_pointer self) {
  pump_build(self);
  pump_measure(self);
}

compile_pool_actor::behavior_type compile_pool(pool_pointer self, backend_ptr backend, compile_pool_options options) {
  auto& st = self->state;
  st.backend = std::move(backend);
  st.options = std::move(options);
  st.options.prefetch.resize(st.options.measurers.size(), 1);
  st.options.remote.resize(st.options.measurers.size(), false);
  st.options.device_ids.resize(st.options.measurers.size(), -1);
  st.options.weight.resize(st.options.measurers.size(), 1.0);
  for (std::size_t d = 0; d < st.options.measurers.size(); ++d)
    add_slot(self, st.options.measurers[d], st.options.prefetch[d], st.options.device_ids[d], st.options.remote[d],
             st.options.weight[d]);
  self->set_down_handler([self](caf::down_msg& down) {
    auto& st = self->state;
    for (std::size_t d = 0; d < st.slots.size(); ++d) {
      if (!st.slots[d].remote || !st.slots[d].alive || st.slots[d].handle.address() != down.source) continue;
      std::fprintf(stderr, "\nnodes: lost the measurer of device %d (%s); %zu candidates go back to the queue\n",
                   st.slots[d].device, self->system().render(down.reason).c_str(), st.slots[d].held.size());
      requeue_held(self, d);
    }
    for (std::size_t w = 0; w < st.workers.size(); ++w)
      if (st.workers[w].remote && st.workers[w].alive && st.workers[w].handle.address() == down.source)
        lose_worker(self, w);
    pump(self);
  });
  for (std::uint32_t w = 0; w < st.options.workers; ++w)
    add_local_worker(self, {st.options.worker_cores, false}, false);
  for (const auto& cores : st.options.background_cores) add_local_worker(self, {cores, true}, true);
  for (const auto& remote : st.options.remote_workers) add_worker(self, remote, true);
  return {
      [self](evaluate_atom, candidate& cand) {
        detail::cpu_scope cpu(self->state.cpu_s);
        auto promise = self->make_response_promise<measured_trial>();
        self->state.to_build.push_back({std::move(cand), promise});
        pump(self);
        return promise;
      },
      [self](stats_atom, double from, double to) {
        auto& st = self->state;
        stage_stats out{static_cast<std::uint32_t>(st.workers.size() - st.options.background_cores.size()),
                        st.tracker.busy_within(from, to), to - from, st.cpu_s};
        out.background_workers = static_cast<std::uint32_t>(st.options.background_cores.size());
        out.background_busy_s = st.background_tracker.busy_within(from, to);
        out.background_build_s = st.background_build_s;
        return out;
      },
      [self](join_atom, std::vector<caf::actor>& measurers, std::vector<std::int32_t>& devices, std::uint32_t prefetch,
             std::vector<caf::actor>& builders) {
        for (std::size_t d = 0; d < measurers.size() && d < devices.size(); ++d)
          add_slot(self, caf::actor_cast<measurer_actor>(measurers[d]), prefetch, devices[d], true, 1.0);
        for (auto& b : builders) add_worker(self, caf::actor_cast<build_worker_actor>(b), true);
        pump(self);
      },
      [self](tick_atom) {
        detail::cpu_scope cpu(self->state.cpu_s);
        self->state.ticking = false;
        expire_overdue(self);
        pump(self);
        if (outstanding(self->state)) schedule_tick(self);
      },
  };
}

}  // namespace

compiled_candidate build_candidate(backend& backend, candidate cand, double timeout_s) {
  compiled_candidate out;
  if (cand.build_limit_s > 0 && (timeout_s <= 0 || cand.build_limit_s < timeout_s))  // false for NaN
    timeout_s = cand.build_limit_s;
  try {
    out.build = backend.build(cand.config, timeout_s);
  } catch (const std::exception& e) {
    out.build.state = status::unknown;
    out.build.message = std::string("build threw: ") + e.what();
  }
  out.cand = std::move(cand);
  return out;
}

build_plan plan_builds(const std::vector<int>& measuring, const std::vector<int>& available, bool background) {
  build_plan plan;
  std::vector<int> cores;  // measuring, each once
  for (int core : measuring)
    if (std::find(cores.begin(), cores.end(), core) == cores.end()) cores.push_back(core);
  if (cores.empty()) return plan;
  for (int core : available)
    if (std::find(cores.begin(), cores.end(), core) == cores.end()) plan.worker_cores.push_back(core);
  if (background)
    for (int core : cores) plan.background_cores.push_back({core});
  return plan;
}

std::vector<int> thread_cpu_set() {
  std::vector<int> cores;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0)
    for (int core = 0; core < CPU_SETSIZE; ++core)
      if (CPU_ISSET(core, &set)) cores.push_back(core);
  return cores;
}

bool apply_build_placement(const build_placement& placement) {
  bool applied = true;
  if (!placement.cores.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int core : placement.cores)
      if (core >= 0 && core < CPU_SETSIZE) CPU_SET(core, &set);
    applied = ::sched_setaffinity(0, sizeof set, &set) == 0;
  }
  if (placement.idle_priority) {
    sched_param none{};
    applied = ::sched_setscheduler(0, SCHED_IDLE, &none) == 0 && applied;
  }
  return applied;
}

build_worker_actor spawn_build_worker(caf::actor_system& system, backend_ptr backend, double compile_timeout_s,
                                      build_placement placement) {
  return system.spawn<caf::detached>(build_worker, std::move(backend), compile_timeout_s, std::move(placement));
}

compile_pool_actor spawn_compile_pool(caf::actor_system& system, backend_ptr backend,
                                      const compile_pool_options& options) {
  return system.spawn(compile_pool, std::move(backend), options);
}

}  // namespace tune::actors
