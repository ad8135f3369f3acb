#pragma once
// Several sessions (a model's tasks) through one pipeline: each session's run
// recorded as it would be alone, their strategies and backends joined into a
// multi_task_strategy and a multi_task_backend (tune/engine/multi_task.hpp),
// the next rounds given by the task scheduler.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tune/engine/task_scheduler.hpp"
#include "tune/tune.hpp"

namespace tune::detail {

struct together_options {
  /// The model file, for messages.
  std::string origin;
  /// One per session, in the same order (the scheduler's tasks).
  std::vector<scheduled_task> tasks;
  task_scheduler_options scheduler;
  std::uint32_t round_trials = 16;
  /// Trials of every task in all, recorded ones included.
  std::uint64_t budget_trials = 0;
  /// A task whose first round opens before it has a result of its own
  /// starts from its family's results so far (multi_task_transfer); the
  /// model's auto_prior.
  bool transfer = true;
  /// About four times a second while the pipeline runs, and once at its end
  /// (`final`), on the pipeline's thread: each task's trials (recorded ones
  /// included) and its best time so far (NaN: none), after committing what
  /// waits.
  std::function<void(const std::vector<std::uint64_t>& trials, const std::vector<double>& best_ms, bool final)>
      on_progress;
};

struct together_result {
  /// Each session's report; its run ends stopped (resumable), as a round of
  /// a model's task does, unless the pipeline failed.
  std::vector<run_report> reports;
  std::vector<std::uint32_t> rounds;  ///< each task's rounds whose results all came in
  std::vector<bool> done;             ///< the scheduler ended the task
  /// budget, exhausted (every task done), stopped or failed.
  end_reason reason = end_reason::budget;
  /// Each device's busy share and the compile workers', from the end of the
  /// warm-up (the first trial) to the last hand-out (stage_stats).
  std::vector<double> device_busy;
  double compile_busy = 0.0;
};

/// Runs the sessions (not run before; their options' confirm.top 0 and their
/// stop_after_trials 0: the model's end confirms each task) through one
/// pipeline on the first session's topology, which leases the devices; its
/// nodes, if any, are sent every task (a node_task of kind multi). Throws
/// input_error for sessions of different backends or two of one task key
/// (their runs could not be told apart).
together_result run_together(const std::vector<session*>& sessions, const together_options& options);

/// The refusal of a model's two tasks `a` and `b` that are one task `key` to
/// the results database: their runs could not be told apart.
input_error same_task_key(const std::string& origin, const std::string& a, const std::string& b,
                          const std::string& key);

}  // namespace tune::detail
