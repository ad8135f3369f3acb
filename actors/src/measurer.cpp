// A measurer serialises the runs on its device: one candidate runs on a
// detached device runner (backend::run blocks) while the compiled candidates
// the pool sent ahead wait in a short queue, so the next run starts the moment
// the last one ends.
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

device_runner_actor::behavior_type device_runner(device_runner_actor::pointer, backend_ptr backend, int device,
                                                 double timeout_s) {
  return {
      [backend, device, timeout_s](run_atom, const compiled_candidate& compiled) {
        run_result out;
        try {
          out = backend->run(compiled.cand.config, compiled.build, device, timeout_s);
        } catch (const std::exception& e) {
          out.state = status::unknown;
          out.message = std::string("run threw: ") + e.what();
        }
        return out;
      },
  };
}

struct waiting_run {
  compiled_candidate compiled;
  trial_promise promise;
};

struct measurer_state {
  backend_ptr backend;
  measurer_options options;
  device_runner_actor runner;
  std::deque<waiting_run> queue;
  bool running = false;
  detail::busy_tracker tracker{1};
  double cpu_s = 0.0;
  static inline const char* name = "measurer";
};

using measurer_pointer = measurer_actor::stateful_pointer<measurer_state>;

measured_trial make_trial(const compiled_candidate& compiled, const run_result& run, int device) {
  measured_trial trial;
  trial.id = compiled.cand.id;
  trial.config = compiled.cand.config;
  trial.state = run.state;
  trial.time_ms = run.state == status::ok ? run.time_ms : std::nan("");
  trial.objectives = run.objectives;
  trial.compile_s = compiled.build.compile_s;
  trial.run_s = run.run_s;
  trial.device = device;
  trial.message = run.message;
  return trial;
}

void start_next(measurer_pointer self) {
  auto& st = self->state;
  if (st.running || st.queue.empty()) return;
  auto job = std::move(st.queue.front());
  st.queue.pop_front();
  st.running = true;
  st.tracker.start(0);
  double wall_s = st.options.run_timeout_s * st.options.time_scale + st.options.request_grace_s;
  auto timeout = detail::wall_timeout(wall_s);
  auto promise = job.promise;
  auto compiled = job.compiled;
  self->request(st.runner, timeout, run_atom::value, std::move(job.compiled))
      .then(
          [self, promise, compiled](run_result& run) mutable {
            detail::cpu_scope cpu(self->state.cpu_s);
            auto& st = self->state;
            st.tracker.stop(0);
            st.running = false;
            promise.deliver(make_trial(compiled, run, st.options.device));
            start_next(self);
          },
          [self, promise, compiled](caf::error& err) mutable {
            detail::cpu_scope cpu(self->state.cpu_s);
            auto& st = self->state;
            st.tracker.stop(0);
            st.running = false;
            // The runner may still be blocked inside the backend: a fresh one
            // takes the next run; the stale one ends when its call returns.
            self->unlink_from(st.runner);
            self->send_exit(st.runner, caf::exit_reason::kill);
            st.runner = self->spawn<caf::detached + caf::linked>(device_runner, st.backend, st.options.device,
                                                                 st.options.run_timeout_s);
            run_result run;
            run.state = err == caf::sec::request_timeout ? status::run_timeout : status::unknown;
            run.run_s = st.options.run_timeout_s;
            run.message = "device runner gave no answer: " + self->system().render(err);
            promise.deliver(make_trial(compiled, run, st.options.device));
            start_next(self);
          });
}

measurer_actor::behavior_type measurer(measurer_pointer self, backend_ptr backend, measurer_options options) {
  auto& st = self->state;
  st.backend = std::move(backend);
  st.options = options;
  st.runner =
      self->spawn<caf::detached + caf::linked>(device_runner, st.backend, st.options.device, st.options.run_timeout_s);
  return {
      [self](measure_atom, compiled_candidate& compiled) {
        detail::cpu_scope cpu(self->state.cpu_s);
        auto promise = self->make_response_promise<measured_trial>();
        self->state.queue.push_back({std::move(compiled), promise});
        start_next(self);
        return promise;
      },
      [self](stats_atom, double from, double to) {
        return stage_stats{1, self->state.tracker.busy_within(from, to), to - from, self->state.cpu_s};
      },
  };
}

}  // namespace

device_runner_actor spawn_device_runner(caf::actor_system& system, backend_ptr backend, int device,
                                        double run_timeout_s) {
  return system.spawn<caf::detached>(device_runner, std::move(backend), device, run_timeout_s);
}

measurer_actor spawn_measurer(caf::actor_system& system, backend_ptr backend, const measurer_options& options) {
  return system.spawn(measurer, std::move(backend), options);
}

}  // namespace tune::actors
