// The compile pool: N detached build workers (backend::build blocks), a
// queue of candidates waiting for a worker, and an outbox of compiled
// candidates waiting for room at a measurer. Each measurer takes at most one
// running plus `prefetch` queued candidates, so compiled work never piles up
// in a mailbox and a device never waits for the compiler when it can be
// avoided.
#include <caf/actor_system.hpp>
#include <caf/sec.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>
#include <chrono>
#include <deque>
#include <exception>

#include "stage_clock.hpp"
#include "tune/actors/interfaces.hpp"

namespace tune::actors {
namespace {

using trial_promise = caf::typed_response_promise<measured_trial>;

build_worker_actor::behavior_type build_worker(build_worker_actor::pointer, backend_ptr backend, double timeout_s) {
  return {
      [backend, timeout_s](build_atom, candidate& cand) {
        compiled_candidate out;
        try {
          out.build = backend->build(cand.config, timeout_s);
        } catch (const std::exception& e) {
          out.build.state = status::unknown;
          out.build.message = std::string("build threw: ") + e.what();
        }
        out.cand = std::move(cand);
        return out;
      },
  };
}

measured_trial failed_trial(const candidate& cand, status state, double compile_s, std::string message) {
  measured_trial trial;
  trial.id = cand.id;
  trial.config = cand.config;
  trial.state = state;
  trial.compile_s = compile_s;
  trial.message = std::move(message);
  return trial;
}

struct waiting_build {
  candidate cand;
  trial_promise promise;
};

struct waiting_run {
  compiled_candidate compiled;
  trial_promise promise;
};

struct pool_state {
  backend_ptr backend;
  compile_pool_options options;
  std::vector<build_worker_actor> workers;
  std::vector<bool> working;
  std::deque<waiting_build> to_build;
  std::deque<waiting_run> to_measure;
  std::vector<std::uint32_t> outstanding;  // per measurer: running + queued
  detail::busy_tracker tracker;
  double cpu_s = 0.0;
  static inline const char* name = "compile_pool";
};

using pool_pointer = compile_pool_actor::stateful_pointer<pool_state>;

void pump_measure(pool_pointer self) {
  auto& st = self->state;
  while (!st.to_measure.empty()) {
    std::size_t best = st.outstanding.size();
    for (std::size_t d = 0; d < st.outstanding.size(); ++d) {
      if (st.outstanding[d] >= 1 + st.options.prefetch[d]) continue;
      if (best == st.outstanding.size() || st.outstanding[d] < st.outstanding[best]) best = d;
    }
    if (best == st.outstanding.size()) return;
    auto job = std::move(st.to_measure.front());
    st.to_measure.pop_front();
    ++st.outstanding[best];
    double per_run = st.options.run_timeout_s * st.options.time_scale + st.options.request_grace_s;
    auto timeout = detail::wall_timeout(per_run * (2.0 + st.options.prefetch[best]));
    auto promise = job.promise;
    auto cand = job.compiled.cand;
    double compile_s = job.compiled.build.compile_s;
    self->request(st.options.measurers[best], timeout, measure_atom::value, std::move(job.compiled))
        .then(
            [self, best, promise](measured_trial& trial) mutable {
              detail::cpu_scope cpu(self->state.cpu_s);
              --self->state.outstanding[best];
              promise.deliver(std::move(trial));
              pump_measure(self);
            },
            [self, best, promise, cand, compile_s](caf::error& err) mutable {
              detail::cpu_scope cpu(self->state.cpu_s);
              --self->state.outstanding[best];
              auto state = err == caf::sec::request_timeout ? status::run_timeout : status::unknown;
              auto trial =
                  failed_trial(cand, state, compile_s, "measurer gave no answer: " + self->system().render(err));
              trial.device = static_cast<std::int32_t>(best);
              promise.deliver(std::move(trial));
              pump_measure(self);
            });
  }
}

void replace_worker(pool_pointer self, std::size_t index) {
  auto& st = self->state;
  auto old = st.workers[index];
  self->unlink_from(old);
  self->send_exit(old, caf::exit_reason::kill);
  st.workers[index] = self->spawn<caf::detached + caf::linked>(build_worker, st.backend, st.options.compile_timeout_s);
}

void pump_build(pool_pointer self) {
  auto& st = self->state;
  for (std::size_t w = 0; w < st.workers.size() && !st.to_build.empty(); ++w) {
    if (st.working[w]) continue;
    auto job = std::move(st.to_build.front());
    st.to_build.pop_front();
    st.working[w] = true;
    st.tracker.start(w);
    auto timeout =
        detail::wall_timeout(st.options.compile_timeout_s * st.options.time_scale + st.options.request_grace_s);
    auto promise = job.promise;
    auto cand = job.cand;
    self->request(st.workers[w], timeout, build_atom::value, std::move(job.cand))
        .then(
            [self, w, promise](compiled_candidate& compiled) mutable {
              detail::cpu_scope cpu(self->state.cpu_s);
              auto& st = self->state;
              st.tracker.stop(w);
              st.working[w] = false;
              if (compiled.build.state == status::ok) {
                st.to_measure.push_back({std::move(compiled), promise});
                pump_measure(self);
              } else {
                promise.deliver(failed_trial(compiled.cand, compiled.build.state, compiled.build.compile_s,
                                             std::move(compiled.build.message)));
              }
              pump_build(self);
            },
            [self, w, promise, cand](caf::error& err) mutable {
              detail::cpu_scope cpu(self->state.cpu_s);
              auto& st = self->state;
              st.tracker.stop(w);
              st.working[w] = false;
              replace_worker(self, w);
              promise.deliver(failed_trial(cand, status::build_timeout, st.options.compile_timeout_s,
                                           "build worker gave no answer: " + self->system().render(err)));
              pump_build(self);
            });
  }
}

compile_pool_actor::behavior_type compile_pool(pool_pointer self, backend_ptr backend, compile_pool_options options) {
  auto& st = self->state;
  st.backend = std::move(backend);
  st.options = std::move(options);
  st.options.prefetch.resize(st.options.measurers.size(), 1);
  st.outstanding.assign(st.options.measurers.size(), 0);
  st.working.assign(st.options.workers, false);
  st.tracker = detail::busy_tracker(st.options.workers);
  for (std::uint32_t w = 0; w < st.options.workers; ++w)
    st.workers.push_back(
        self->spawn<caf::detached + caf::linked>(build_worker, st.backend, st.options.compile_timeout_s));
  return {
      [self](evaluate_atom, candidate& cand) {
        detail::cpu_scope cpu(self->state.cpu_s);
        auto promise = self->make_response_promise<measured_trial>();
        self->state.to_build.push_back({std::move(cand), promise});
        pump_build(self);
        return promise;
      },
      [self](stats_atom, double from, double to) {
        auto& st = self->state;
        return stage_stats{static_cast<std::uint32_t>(st.workers.size()), st.tracker.busy_within(from, to), to - from,
                           st.cpu_s};
      },
  };
}

}  // namespace

build_worker_actor spawn_build_worker(caf::actor_system& system, backend_ptr backend, double compile_timeout_s) {
  return system.spawn<caf::detached>(build_worker, std::move(backend), compile_timeout_s);
}

compile_pool_actor spawn_compile_pool(caf::actor_system& system, backend_ptr backend,
                                      const compile_pool_options& options) {
  return system.spawn(compile_pool, std::move(backend), options);
}

}  // namespace tune::actors
