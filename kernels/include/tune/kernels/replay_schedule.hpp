#pragma once
// A replayed search scheduled as the actor pipeline schedules it, on a
// virtual clock: compile workers and devices are simulated, each build and
// each measurement takes its recorded duration, and the clock jumps from one
// finished build or measurement to the next. The engine's own work (the
// strategy included) takes no simulated time, so the result is exact and the
// same on every machine, unlike `tune --dataset … --time-scale X`, which
// sleeps X × the recorded durations on real threads and counts the engine's
// time and the operating system's wake-ups at 1 / X.
//
// The policy is the pipeline's (actors/src/population.cpp, generator.cpp,
// compile_pool.cpp):
//   - steady: `capacity` = compile workers + Σ (1 + prefetch) candidates in
//     flight; each result is told to the strategy, then the free places are
//     asked for; generational: a batch of `batch` is asked for only when
//     nothing is in flight;
//   - proposals that are invalid or were handed out before are dropped;
//   - candidates wait in one queue for the lowest-numbered free compile
//     worker; a failed build is a trial at once (it cost its compile time);
//   - a built candidate goes to the device holding the fewest candidates
//     (lowest number on a tie) that holds fewer than 1 + prefetch; each
//     device measures what it holds in order;
//   - a recorded duration beyond the timeout costs the timeout and is a
//     build_timeout / run_timeout, as with the replay backend.
// With one compile worker, one device, generational batches of 1 every
// evaluation costs its compile plus its measurement, one after the other:
// replay_search's clock (Kernel Tuner's simulation mode's accounting).

#include <cstddef>
#include <vector>

#include "tune/kernels/replay.hpp"

namespace tune {

struct replay_schedule {
  std::size_t compile_workers = 8;
  std::size_t devices = 4;
  /// Candidates each device may hold queued besides the one it measures.
  std::size_t prefetch = 2;
  /// Generational batches (AutoTVM's way) instead of the steady state.
  bool generational = false;
  std::size_t batch = 8;
  /// Seconds; a recorded compile or measurement longer than this costs this
  /// and fails (0: no limit).
  double compile_timeout_s = 600;
  double run_timeout_s = 600;

  /// Candidates kept in flight in the steady state.
  std::size_t capacity() const { return compile_workers + devices * (1 + prefetch); }
  /// One compile worker and one device, compile then measure, one candidate
  /// at a time.
  static replay_schedule serial();
};

/// One search of `options.budget` evaluations scheduled by `schedule` on a
/// virtual clock. Steps are in the order the results arrive, each with the
/// virtual time it arrived (sim_time_s) and the best found by then; failures
/// are evaluations. Rejected (invalid) and repeated proposals are dropped, as
/// the pipeline's generator drops them, and counted. Throws
/// std::invalid_argument for a schedule without a worker, a device or a batch.
replay_run_result replay_scheduled_search(const replay_dataset& dataset, strategy& search,
                                          const replay_run_options& options, const replay_schedule& schedule);

/// The same with the strategy options.strategy / options.hyper / options.prior
/// made with options.seed.
replay_run_result replay_scheduled_search(const replay_dataset& dataset, const replay_run_options& options,
                                          const replay_schedule& schedule);

/// `runs` scheduled searches with seeds seed, seed+1, …, on at most `threads` threads.
std::vector<replay_run_result> replay_scheduled_searches(const replay_dataset& dataset,
                                                         const replay_run_options& options,
                                                         const replay_schedule& schedule, std::size_t runs,
                                                         unsigned threads = 2);

}  // namespace tune
