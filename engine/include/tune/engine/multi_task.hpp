#pragma once
// Many tasks in one search: a model's tasks tuned through one pipeline, each
// by its own strategy, the next trials of the run going where the task
// scheduler (task_scheduler.hpp) sends them.
//
// A configuration of such a run is *tagged*: its task's index first, then the
// task's own configuration ({2, 0, 3, 1} is task 2's {0, 3, 1}). Everything
// that carries a configuration through the pipeline carries its task with it;
// what measures or records one (the tasks' backends, their results) takes it
// untagged.
//
//   propose(n) ──> the open round's task proposes (its strategy, untagged),
//                  tagged; a round of `round_trials` hand-outs of one task,
//                  then the scheduler picks the next round's task, passing
//                  over tasks with a round still in flight while another has
//                  none (so each search stays close to sequential while the
//                  devices stay busy).
//   observe(r) <── to the task's strategy, untagged; once every result of a
//                  round is in, the scheduler records the round (the task's
//                  best time after it).
//
// With a transfer (set_transfer), a task whose first round opens before it
// has a result of its own starts from its family's results so far: they are
// carried onto its space and its strategy is made again with them as prior.

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tune/engine/space.hpp"
#include "tune/engine/strategy.hpp"
#include "tune/engine/task_scheduler.hpp"

namespace tune {

/// `config` of task `task`, tagged.
configuration tagged(std::uint32_t task, const configuration& config);

/// The task of a tagged configuration. Throws std::invalid_argument for an
/// empty one.
std::uint32_t task_of(const configuration& config);

/// The task's own configuration of a tagged one (its first element dropped).
/// Throws std::invalid_argument for an empty one.
configuration untagged(const configuration& config);

/// The space of tagged configurations over the tasks' spaces: valid when the
/// task exists and its space holds the rest; written as
/// {"task": 2, "configuration": {...the task's...}}. Throws
/// std::invalid_argument for no space or a null one.
search_space_ptr multi_task_space(std::vector<search_space_ptr> spaces);

/// Transfer within the run between tasks of one family (the scheduler's
/// scheduled_task::family; an empty family shares with none). In rounds, a
/// task's first round takes as prior the runs of its family's tasks that ran
/// before it; through one pipeline the tasks run together, so a task takes
/// what its family's tasks have measured when its first round opens: their
/// results (failures included) carried onto its space by
/// nearest_configuration, merged (merged_prior).
struct multi_task_transfer {
  /// Each task's own space, in the scheduler's task order.
  std::vector<search_space_ptr> spaces;
  /// Makes the task's strategy again with this prior; `from` are the tasks
  /// whose results gave some of it. Returning nullptr keeps the strategy the
  /// task has.
  std::function<std::unique_ptr<strategy>(std::size_t task, std::vector<trial_result> prior,
                                          const std::vector<std::size_t>& from)>
      remake;
};

class multi_task_strategy final : public strategy {
 public:
  /// One strategy per task, in the scheduler's task order. Throws
  /// std::invalid_argument when their count differs from the scheduler's
  /// tasks, one is null, or round_trials is 0.
  multi_task_strategy(std::vector<std::unique_ptr<strategy>> searches, task_scheduler scheduler,
                      std::uint32_t round_trials);

  /// The tasks' strategy's name (the first task's).
  std::string name() const override;
  /// Tagged configurations; fewer (even none) when no task has anything to
  /// offer now. Empty for good once the scheduler has every task done.
  std::vector<configuration> propose(std::size_t n) override;
  /// A tagged result: to its task's strategy. A result this strategy did not
  /// hand out (a recorded one, on resume) counts towards the task's best but
  /// no round. Throws std::invalid_argument for a task that does not exist.
  void observe(const trial_result& result) override;

  /// Starts each task from its family's results so far (see
  /// multi_task_transfer), from the next round that opens. Throws
  /// std::invalid_argument when the spaces are not one per task, one is
  /// null, or remake is empty.
  void set_transfer(multi_task_transfer transfer);

  const task_scheduler& scheduler() const { return scheduler_; }
  /// Rounds of the task whose every result is in.
  std::uint32_t rounds(std::size_t task) const { return scheduler_.rounds(task); }
  /// The task's fastest ok time observed (NaN: none yet).
  double best_ms(std::size_t task) const { return tasks_.at(task).best_ms; }

 private:
  struct task_state {
    /// Per round handed out and not yet recorded, oldest first: its results
    /// still to come.
    std::deque<std::uint32_t> pending;
    double best_ms;
    /// Results observed, recorded ones included.
    std::uint64_t observed = 0;
    /// Its first round has opened.
    bool opened = false;
    /// Its results, untagged, kept for its family's tasks (with a transfer).
    std::vector<trial_result> results;

    /// Handed out, results not yet in.
    std::uint64_t in_flight() const {
      std::uint64_t sum = 0;
      for (auto left : pending) sum += left;
      return sum;
    }
  };

  void close_open_round();
  void start_from_family(std::size_t task);
  void record_finished_rounds(std::size_t task);

  std::vector<std::unique_ptr<strategy>> searches_;
  task_scheduler scheduler_;
  std::uint32_t round_trials_;
  std::vector<task_state> tasks_;
  /// The task whose round is being handed out, and what it has left.
  std::optional<std::size_t> open_;
  std::uint32_t open_left_ = 0;
  std::uint32_t open_handed_ = 0;
  configuration_set handed_out_;  ///< tagged, results not yet observed
  bool started_ = false;
  std::optional<multi_task_transfer> transfer_;
};

}  // namespace tune
