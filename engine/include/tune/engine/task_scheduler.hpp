#pragma once
// Which task of a model to tune next. A model's latency is the weighted sum of
// its tasks' best times, sum_i w_i * g_i (w_i: how often the task runs per
// inference, g_i: its best time so far); tuning is spent in rounds of a few
// trials of one task each, and the scheduler picks the task of the next round.
//
//   round_robin  every live task in turn.
//   gradient     the task where the model's latency is expected to fall most
//                per round (Zheng et al., "Ansor", OSDI 2020, §6):
//
//       dL/dt_i ~ w_i * (alpha * backward_i + (1 - alpha) * forward_i)
//
//     backward_i  the task's own recent slope: (g_i now - g_i `window` rounds
//                 ago) / window; 0 until it has had window + 1 rounds;
//     forward_i   an optimistic guess of the next round: min(g_i - g_i / r_i,
//                 beta * flops_i / best throughput of a similar task) - g_i,
//                 r_i its rounds so far: the first term assumes the time could
//                 keep falling as fast as it has on average, the second that
//                 the task could reach beta times the throughput (flops per
//                 ms) a task of its family already reached.
//
//     With stall_half_life h > 0 (tune-engine's addition), the first term is
//     halved for every h rounds since the task's best last fell by more than
//     min_gain (1%; a smaller fall is noise to this rule and to patience): Ansor's
//     guess is proportional to the task's time, so a task that dominates the
//     model's latency but has stopped improving (it found its optimum) would
//     otherwise keep taking rounds from tasks that still improve (measured on
//     replayed models: bench/bench_model_scheduler.cpp, docs/models.md).
//
//     Every task first gets one round (the warm-up); then the most negative
//     slope wins (ties and an all-zero slope: the task with the fewest
//     rounds), and with probability epsilon a live task drawn at random.
//
// A task is done when its search has nothing left to propose (mark_done), or
// when it has had `patience` rounds since its best last fell by more than
// min_gain (0: never).
// The scheduler has no clock and draws from its own seeded RNG, so the same
// seed and the same round results give the same order.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tune/engine/parameter.hpp"

namespace tune {

struct scheduled_task {
  std::string name;
  /// Runs per inference of the model (its call count; merged identical
  /// workloads add theirs). > 0.
  double weight = 1.0;
  /// Floating-point operations of one run; 0: unknown (the task then has no
  /// similarity term in its forward slope).
  double flops = 0.0;
  /// Tasks of one family (one operator kind) are similar: a task's forward
  /// slope assumes it can reach beta times the best throughput of its family.
  /// Empty: similar to none.
  std::string family;
};

enum class scheduler_kind { gradient, round_robin };

std::string_view to_string(scheduler_kind kind);
/// "gradient" or "round_robin" (also "round-robin"); nullopt otherwise.
std::optional<scheduler_kind> scheduler_kind_from_string(std::string_view text);

struct task_scheduler_options {
  scheduler_kind kind = scheduler_kind::gradient;
  double alpha = 0.2;          ///< weight of the backward slope (TVM MetaSchedule's default)
  std::uint32_t window = 3;    ///< rounds the backward slope spans (the same)
  double beta = 2.0;           ///< throughput a task may reach over its family's best (Ansor's)
  double epsilon = 0.05;       ///< share of rounds given to a task drawn at random (the same)
  std::uint32_t patience = 0;  ///< rounds without improvement before a task is done; 0: never
  /// Rounds since the last improvement that halve the optimistic forward
  /// guess; 0: never (Ansor's rule exactly).
  double stall_half_life = 3.0;
  /// A round improves a task (for stall_half_life and patience) when it
  /// lowers its best by more than this fraction.
  double min_gain = 0.01;
  std::uint64_t seed = 0;
};

/// Throws std::invalid_argument naming the field and the accepted range
/// (alpha and epsilon in [0, 1], window >= 1, beta > 0, stall_half_life >= 0).
void validate(const task_scheduler_options& options);

class task_scheduler {
 public:
  /// Throws std::invalid_argument for no task, a weight that is not > 0, or
  /// invalid options.
  task_scheduler(std::vector<scheduled_task> tasks, task_scheduler_options options);

  /// The task of the next round; nullopt when every task is done.
  std::optional<std::size_t> next() { return next({}); }

  /// The same, passing over the tasks marked `busy` (a round of theirs still
  /// in flight) while a live task is not: the warm-up, the rule and round
  /// robin choose among those; when every live task is busy, among all of
  /// them. Tasks marked `excluded` (nothing to offer just now, though not
  /// done) are never chosen; nullopt when every live task is excluded.
  /// Missing entries are neither.
  std::optional<std::size_t> next(const std::vector<bool>& busy, const std::vector<bool>& excluded = {});

  /// A round of `task` has finished; `best_ms` is the task's best time after
  /// it (NaN: none yet).
  void record_round(std::size_t task, double best_ms);

  /// The task's search has nothing more to propose.
  void mark_done(std::size_t task);

  bool done(std::size_t task) const;
  bool all_done() const;

  /// sum_i weight_i * best_i over the tasks; NaN while a task has no best.
  double weighted_latency() const;

  /// The slope the gradient rule computes for a task now (<= 0; the more
  /// negative, the sooner it is picked); for tests and reports.
  double gradient(std::size_t task) const;

  std::size_t size() const { return tasks_.size(); }
  const scheduled_task& task(std::size_t i) const { return tasks_.at(i); }
  std::uint32_t rounds(std::size_t task) const { return state_.at(task).rounds(); }
  double best_ms(std::size_t task) const { return state_.at(task).best_ms; }

 private:
  struct task_state {
    std::vector<double> history;   ///< best_ms after each round
    std::uint32_t best_round = 0;  ///< the round after which best_ms last fell by more than min_gain
    double best_ms;
    bool exhausted = false;

    std::uint32_t rounds() const { return static_cast<std::uint32_t>(history.size()); }
  };

  std::optional<std::size_t> fewest_rounds(const std::vector<std::size_t>& live) const;

  std::vector<scheduled_task> tasks_;
  task_scheduler_options options_;
  std::vector<task_state> state_;
  std::size_t next_robin_ = 0;
  rng_type rng_;
};

/// The best any scheduler could do, for judging one: given every task's best
/// time after each of its rounds (curves[i][k - 1]: task i's best after k
/// rounds; NaN: none yet) and the weights, the lowest weighted latency
/// sum_i weights[i] * curves[i][k_i - 1] over every split of T rounds with
/// each k_i >= 1, for T = 1 .. rounds (index T - 1; +infinity while no split
/// has a best for every task), made non-increasing in T (a split of fewer
/// rounds is allowed). A task's search does not depend on when the other
/// tasks' rounds come, so curves measured by running each search alone are
/// the ones every scheduler draws from, and this "oracle" knows them in
/// advance. Dynamic programming over the tasks: O(tasks * rounds^2).
/// Throws std::invalid_argument when the sizes differ or a weight is not > 0.
std::vector<double> best_split_latency(const std::vector<double>& weights,
                                       const std::vector<std::vector<double>>& curves, std::size_t rounds);

}  // namespace tune
