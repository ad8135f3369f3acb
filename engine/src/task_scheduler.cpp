#include "tune/engine/task_scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace tune {

std::string_view to_string(scheduler_kind kind) {
  return kind == scheduler_kind::gradient ? "gradient" : "round_robin";
}

std::optional<scheduler_kind> scheduler_kind_from_string(std::string_view text) {
  if (text == "gradient") return scheduler_kind::gradient;
  if (text == "round_robin" || text == "round-robin") return scheduler_kind::round_robin;
  return std::nullopt;
}

void validate(const task_scheduler_options& options) {
  auto in_unit = [](double v) { return std::isfinite(v) && v >= 0.0 && v <= 1.0; };
  if (!in_unit(options.alpha))
    throw std::invalid_argument("scheduler alpha: " + std::to_string(options.alpha) + " is not in [0, 1]");
  if (!in_unit(options.epsilon))
    throw std::invalid_argument("scheduler epsilon: " + std::to_string(options.epsilon) + " is not in [0, 1]");
  if (options.window < 1) throw std::invalid_argument("scheduler window: must be at least 1 round");
  if (!std::isfinite(options.stall_half_life) || options.stall_half_life < 0.0)
    throw std::invalid_argument("scheduler stall_half_life: " + std::to_string(options.stall_half_life) +
                                " must be a number of rounds >= 0 (0: off)");
  if (!(options.min_gain >= 0.0 && options.min_gain < 1.0))
    throw std::invalid_argument("scheduler min_gain: " + std::to_string(options.min_gain) +
                                " is not in [0, 1) (the fraction a best time must fall by to count as a gain)");
  if (!std::isfinite(options.beta) || options.beta <= 0.0)
    throw std::invalid_argument("scheduler beta: " + std::to_string(options.beta) + " must be a number > 0");
}

task_scheduler::task_scheduler(std::vector<scheduled_task> tasks, task_scheduler_options options)
    : tasks_(std::move(tasks)), options_(options), rng_(options.seed) {
  validate(options_);
  if (tasks_.empty()) throw std::invalid_argument("task scheduler: a model needs at least one task");
  for (const auto& t : tasks_) {
    if (!std::isfinite(t.weight) || t.weight <= 0.0)
      throw std::invalid_argument("task scheduler: task '" + t.name + "' has weight " + std::to_string(t.weight) +
                                  "; a task's count must be a number > 0");
    if (!std::isfinite(t.flops) || t.flops < 0.0)
      throw std::invalid_argument("task scheduler: task '" + t.name + "' has flops " + std::to_string(t.flops));
  }
  state_.resize(tasks_.size());
  for (auto& s : state_) s.best_ms = std::nan("");
}

bool task_scheduler::done(std::size_t task) const {
  const auto& s = state_.at(task);
  if (s.exhausted) return true;
  return options_.patience > 0 && s.rounds() - s.best_round >= options_.patience;
}

bool task_scheduler::all_done() const {
  for (std::size_t i = 0; i < state_.size(); ++i)
    if (!done(i)) return false;
  return true;
}

void task_scheduler::mark_done(std::size_t task) { state_.at(task).exhausted = true; }

void task_scheduler::record_round(std::size_t task, double best_ms) {
  auto& s = state_.at(task);
  if (std::isfinite(best_ms) && (!std::isfinite(s.best_ms) || best_ms < s.best_ms)) {
    // A fall of less than min_gain is noise to the stall and patience rules.
    if (!std::isfinite(s.best_ms) || best_ms < s.best_ms * (1.0 - options_.min_gain)) s.best_round = s.rounds() + 1;
    s.best_ms = best_ms;
  }
  s.history.push_back(s.best_ms);
}

double task_scheduler::weighted_latency() const {
  double sum = 0.0;
  for (std::size_t i = 0; i < tasks_.size(); ++i) {
    if (!std::isfinite(state_[i].best_ms)) return std::nan("");
    sum += tasks_[i].weight * state_[i].best_ms;
  }
  return sum;
}

double task_scheduler::gradient(std::size_t task) const {
  const auto& s = state_.at(task);
  const auto& t = tasks_.at(task);
  if (!std::isfinite(s.best_ms)) {
    // Nothing measured yet: the most urgent task, but only until it has had
    // as many rounds as a slope needs; past that it shows no slope (so a task
    // whose configurations all fail cannot take every round).
    return s.rounds() <= options_.window ? -std::numeric_limits<double>::infinity() : 0.0;
  }
  const double g = s.best_ms;
  double backward = 0.0;
  if (s.history.size() > options_.window) {
    const double then = s.history[s.history.size() - 1 - options_.window];
    if (std::isfinite(then)) backward = (g - then) / options_.window;
  }
  double guess = s.rounds() > 0 ? g / s.rounds() : 0.0;
  if (options_.stall_half_life > 0)
    guess *= std::exp2(-static_cast<double>(s.rounds() - s.best_round) / options_.stall_half_life);
  double next = g - guess;
  if (t.flops > 0.0 && !t.family.empty()) {
    double best_throughput = 0.0;
    for (std::size_t j = 0; j < tasks_.size(); ++j) {
      const auto& other = tasks_[j];
      if (other.family != t.family || other.flops <= 0.0 || !std::isfinite(state_[j].best_ms)) continue;
      best_throughput = std::max(best_throughput, other.flops / state_[j].best_ms);
    }
    if (best_throughput > 0.0) next = std::min(next, options_.beta * t.flops / best_throughput);
  }
  const double forward = next - g;
  const double slope = t.weight * (options_.alpha * backward + (1.0 - options_.alpha) * forward);
  return std::min(slope, 0.0);
}

std::optional<std::size_t> task_scheduler::fewest_rounds(const std::vector<std::size_t>& live) const {
  std::optional<std::size_t> pick;
  for (std::size_t i : live)
    if (!pick || state_[i].rounds() < state_[*pick].rounds()) pick = i;
  return pick;
}

std::optional<std::size_t> task_scheduler::next(const std::vector<bool>& busy, const std::vector<bool>& excluded) {
  auto marked = [](const std::vector<bool>& v, std::size_t i) { return i < v.size() && v[i]; };
  auto open = [&](std::size_t i) { return !done(i) && !marked(excluded, i); };
  std::vector<std::size_t> live;
  for (std::size_t i = 0; i < state_.size(); ++i)
    if (open(i) && !marked(busy, i)) live.push_back(i);
  if (live.empty())  // every live task busy: choose among them all
    for (std::size_t i = 0; i < state_.size(); ++i)
      if (open(i)) live.push_back(i);
  if (live.empty()) return std::nullopt;

  if (options_.kind == scheduler_kind::round_robin) {
    // The next live task at or after the cursor, in model order.
    for (std::size_t step = 0; step < state_.size(); ++step) {
      const std::size_t i = (next_robin_ + step) % state_.size();
      if (std::find(live.begin(), live.end(), i) != live.end()) {
        next_robin_ = (i + 1) % state_.size();
        return i;
      }
    }
    return std::nullopt;
  }

  // Warm-up: one round of every task before any slope is trusted.
  for (std::size_t i : live)
    if (state_[i].rounds() == 0) return i;

  // Drawn every time, used or not, so the RNG's stream depends only on the
  // number of rounds.
  const double draw = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
  const std::size_t random_pick = live[std::uniform_int_distribution<std::size_t>(0, live.size() - 1)(rng_)];
  if (draw < options_.epsilon) return random_pick;

  std::optional<std::size_t> pick;
  double pick_slope = 0.0;
  for (std::size_t i : live) {
    const double slope = gradient(i);
    if (!pick || slope < pick_slope || (slope == pick_slope && state_[i].rounds() < state_[*pick].rounds())) {
      pick = i;
      pick_slope = slope;
    }
  }
  if (pick_slope >= 0.0) return fewest_rounds(live);
  return pick;
}

std::vector<double> best_split_latency(const std::vector<double>& weights,
                                       const std::vector<std::vector<double>>& curves, std::size_t rounds) {
  if (weights.size() != curves.size())
    throw std::invalid_argument("best_split_latency: " + std::to_string(weights.size()) + " weights for " +
                                std::to_string(curves.size()) + " curves");
  for (double w : weights)
    if (!std::isfinite(w) || w <= 0.0) throw std::invalid_argument("best_split_latency: a weight is not > 0");
  const double inf = std::numeric_limits<double>::infinity();
  // cost[r]: the lowest weighted sum over the tasks so far with r rounds among them.
  std::vector<double> cost(rounds + 1, inf);
  cost[0] = 0.0;
  for (std::size_t t = 0; t < curves.size(); ++t) {
    std::vector<double> next(rounds + 1, inf);
    for (std::size_t used = 0; used < rounds; ++used) {
      if (cost[used] == inf) continue;
      for (std::size_t k = 1; used + k <= rounds && k <= curves[t].size(); ++k) {
        const double g = curves[t][k - 1];
        if (std::isfinite(g)) next[used + k] = std::min(next[used + k], cost[used] + weights[t] * g);
      }
    }
    cost = std::move(next);
  }
  std::vector<double> best(rounds, inf);
  for (std::size_t r = 1; r <= rounds; ++r) best[r - 1] = std::min(cost[r], r > 1 ? best[r - 2] : inf);
  return best;
}

}  // namespace tune
