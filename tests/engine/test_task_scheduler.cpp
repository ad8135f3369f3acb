// tune::task_scheduler: the warm-up, round robin, Ansor's gradient rule (its
// backward and forward slopes by hand), patience, epsilon's draws, bad input;
// a property test that a slope is never positive; best_split_latency (the
// oracle) against brute force.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <stdexcept>

#include "tune/engine/task_scheduler.hpp"

using namespace tune;
using Catch::Matchers::Contains;
using Catch::Matchers::WithinRel;

namespace {

std::vector<scheduled_task> three_tasks(double w0 = 1, double w1 = 1, double w2 = 1) {
  return {{"a", w0, 0, ""}, {"b", w1, 0, ""}, {"c", w2, 0, ""}};
}

task_scheduler_options greedy(scheduler_kind kind = scheduler_kind::gradient) {
  task_scheduler_options o;
  o.kind = kind;
  o.epsilon = 0.0;
  o.seed = 7;
  return o;
}

/// Runs the scheduler for `rounds` rounds against tasks whose best time after
/// their r-th round is curve[task](r); returns how many rounds each got.
template <class Curve>
std::vector<int> drive_scheduler(task_scheduler& s, int rounds, Curve curve) {
  std::vector<int> got(s.size(), 0);
  for (int r = 0; r < rounds; ++r) {
    auto t = s.next();
    if (!t) break;
    ++got[*t];
    s.record_round(*t, curve(*t, got[*t]));
  }
  return got;
}

}  // namespace

TEST_CASE("task_scheduler: every task gets a round before any slope counts", "[engine][task_scheduler]") {
  task_scheduler s(three_tasks(1, 100, 1), greedy());
  std::vector<std::size_t> order;
  for (int i = 0; i < 3; ++i) {
    auto t = s.next();
    REQUIRE(t);
    order.push_back(*t);
    s.record_round(*t, 10.0);
  }
  CHECK(order == std::vector<std::size_t>{0, 1, 2});
}

TEST_CASE("task_scheduler: round robin takes live tasks in turn and skips done ones", "[engine][task_scheduler]") {
  task_scheduler s(three_tasks(), greedy(scheduler_kind::round_robin));
  std::vector<std::size_t> order;
  for (int i = 0; i < 4; ++i) {
    auto t = *s.next();
    order.push_back(t);
    s.record_round(t, 1.0);
  }
  CHECK(order == std::vector<std::size_t>{0, 1, 2, 0});
  s.mark_done(1);
  CHECK(*s.next() == 2);
  CHECK(*s.next() == 0);
  CHECK(*s.next() == 2);
}

TEST_CASE("task_scheduler: the gradient rule spends rounds where the weighted latency falls most",
          "[engine][task_scheduler]") {
  SECTION("equal tasks, one weighted ten times: it gets most rounds") {
    task_scheduler s(three_tasks(1, 10, 1), greedy());
    // Every task improves the same way: best = 10 / rounds.
    auto got = drive_scheduler(s, 60, [](std::size_t, int r) { return 10.0 / r; });
    CHECK(got[1] > got[0] + got[2]);
  }
  SECTION("on the backward slope alone, a task that stopped improving yields to those that keep improving") {
    task_scheduler_options o = greedy();
    o.alpha = 1.0;
    task_scheduler s(three_tasks(), o);
    auto got =
        drive_scheduler(s, 60, [](std::size_t task, int r) { return task == 0 ? 5.0 : 20.0 * std::pow(0.8, r); });
    // Round robin while no slope spans a window (4 rounds each), then the improving two.
    CHECK(got[0] <= 5);
    CHECK(got[1] + got[2] >= 55);
  }
  SECTION("round robin ignores weights") {
    task_scheduler s(three_tasks(1, 10, 1), greedy(scheduler_kind::round_robin));
    auto got = drive_scheduler(s, 60, [](std::size_t, int r) { return 10.0 / r; });
    CHECK(got == std::vector<int>{20, 20, 20});
  }
}

TEST_CASE("task_scheduler: a dominant task that stopped improving yields once its guess has halved enough",
          "[engine][task_scheduler]") {
  // Task 0 takes 100 ms and found its optimum in its first round; task 1 takes
  // 1 ms x 10 and keeps falling by 2% a round.
  auto rounds_of_dominant = [](double half_life) {
    task_scheduler_options o = greedy();
    o.stall_half_life = half_life;
    task_scheduler s({{"big", 1.0, 0, ""}, {"small", 10.0, 0, ""}}, o);
    return drive_scheduler(s, 60, [](std::size_t task, int r) { return task == 0 ? 100.0 : std::pow(0.98, r); })[0];
  };
  CHECK(rounds_of_dominant(0) > 45);  // Ansor's rule: 100 / r stays the larger guess
  CHECK(rounds_of_dominant(3) < 20);  // 100 / r halved every 3 flat rounds: about 16
}

TEST_CASE("task_scheduler: a fall below min_gain does not count as an improvement", "[engine][task_scheduler]") {
  task_scheduler_options o = greedy();
  o.patience = 2;
  o.min_gain = 0.01;
  task_scheduler s({{"a", 1.0, 0, ""}}, o);
  s.record_round(0, 10.0);
  s.record_round(0, 9.95);  // 0.5%: the best falls, the stall goes on
  CHECK(s.best_ms(0) == 9.95);
  CHECK_FALSE(s.done(0));
  s.record_round(0, 9.94);
  CHECK(s.done(0));
}

TEST_CASE("task_scheduler: the backward slope is the fall over the window", "[engine][task_scheduler]") {
  task_scheduler_options o = greedy();
  o.alpha = 1.0;  // backward slope only
  o.window = 2;
  task_scheduler s({{"a", 3.0, 0, ""}}, o);
  s.record_round(0, 10.0);
  s.record_round(0, 8.0);
  CHECK(s.gradient(0) == 0.0);  // two rounds: no slope over a window of 2 yet
  s.record_round(0, 4.0);
  // (4 - 10) / 2 rounds, times the weight 3
  CHECK_THAT(s.gradient(0), WithinRel(-9.0, 1e-12));
}

TEST_CASE("task_scheduler: a task far below its family's throughput looks promising", "[engine][task_scheduler]") {
  task_scheduler_options o = greedy();
  o.alpha = 0.0;  // forward slope only
  o.beta = 2.0;
  o.stall_half_life = 0;  // Ansor's guess as it is
  // Same flops; b already runs at 1 ms, a at 10 ms after as many rounds.
  task_scheduler s({{"a", 1.0, 1e6, "conv"}, {"b", 1.0, 1e6, "conv"}, {"c", 1.0, 1e6, "matmul"}}, o);
  for (int r = 0; r < 4; ++r) {
    s.record_round(0, 10.0);
    s.record_round(1, 1.0);
    s.record_round(2, 10.0);
  }
  // a: min(10 - 10/4, 2 * 1e6 / 1e6) - 10 = -8; c (alone in its family): 10 - 10/4 - 10 = -2.5
  CHECK_THAT(s.gradient(0), WithinRel(-8.0, 1e-12));
  CHECK_THAT(s.gradient(2), WithinRel(-2.5, 1e-12));
  CHECK(*s.next() == 0);
}

TEST_CASE("task_scheduler: the slope is never positive (property)", "[engine][task_scheduler]") {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    task_scheduler_options o = greedy();
    o.alpha = std::uniform_real_distribution<double>(0, 1)(rng);
    o.window = 1 + rng() % 4;
    o.beta = std::uniform_real_distribution<double>(0.1, 4)(rng);
    std::vector<scheduled_task> tasks;
    for (int i = 0; i < 4; ++i)
      tasks.push_back({std::to_string(i), std::uniform_real_distribution<double>(0.1, 10)(rng),
                       rng() % 2 ? std::uniform_real_distribution<double>(1, 1e9)(rng) : 0.0, rng() % 2 ? "x" : "y"});
    task_scheduler s(tasks, o);
    for (int r = 0; r < 30; ++r) {
      auto t = s.next();
      REQUIRE(t);
      const double best = rng() % 5 == 0 ? std::nan("") : std::uniform_real_distribution<double>(0.01, 100)(rng);
      s.record_round(*t, best);
      for (std::size_t i = 0; i < s.size(); ++i) REQUIRE(s.gradient(i) <= 0.0);
      // The recorded best only ever falls.
      if (s.rounds(*t) > 1 && std::isfinite(best)) REQUIRE(s.best_ms(*t) <= best);
    }
  }
}

TEST_CASE("task_scheduler: patience ends a task that stopped improving, done tasks are not picked",
          "[engine][task_scheduler]") {
  task_scheduler_options o = greedy();
  o.patience = 3;
  task_scheduler s(three_tasks(), o);
  auto got =
      drive_scheduler(s, 1000, [](std::size_t task, int r) { return task == 1 ? 100.0 * std::pow(0.9, r) : 5.0; });
  // Tasks 0 and 2 never improve after their first round: done after 1 + 3 rounds.
  CHECK(got[0] == 4);
  CHECK(got[2] == 4);
  CHECK(s.done(0));
  CHECK_FALSE(s.done(1));
  s.mark_done(1);
  CHECK(s.all_done());
  CHECK_FALSE(s.next());
}

TEST_CASE("task_scheduler: a task that never succeeds cannot take every round", "[engine][task_scheduler]") {
  task_scheduler s(three_tasks(), greedy());
  auto got = drive_scheduler(s, 60, [](std::size_t task, int r) { return task == 0 ? std::nan("") : 10.0 / r; });
  CHECK(got[0] <= 6);
  CHECK(got[1] + got[2] >= 54);
}

TEST_CASE("task_scheduler: weighted latency", "[engine][task_scheduler]") {
  task_scheduler s(three_tasks(1, 2, 3), greedy());
  s.record_round(0, 1.0);
  s.record_round(1, 2.0);
  CHECK(std::isnan(s.weighted_latency()));
  s.record_round(2, 3.0);
  CHECK_THAT(s.weighted_latency(), WithinRel(1.0 + 4.0 + 9.0, 1e-12));
  s.record_round(2, 4.0);  // a worse round does not raise the best
  CHECK_THAT(s.weighted_latency(), WithinRel(14.0, 1e-12));
}

TEST_CASE("task_scheduler: epsilon draws live tasks at random, reproducibly from the seed",
          "[engine][task_scheduler]") {
  task_scheduler_options o;
  o.epsilon = 1.0;
  o.seed = 11;
  auto run = [&] {
    task_scheduler s(three_tasks(100, 1, 1), o);
    std::vector<std::size_t> order;
    for (int r = 0; r < 60; ++r) {
      auto t = *s.next();
      order.push_back(t);
      s.record_round(t, 1.0 / (r + 1));
    }
    return order;
  };
  auto first = run();
  CHECK(first == run());
  std::map<std::size_t, int> counts;
  for (auto t : first) ++counts[t];
  CHECK(counts.size() == 3);
  CHECK(counts[1] >= 10);  // not the weight's choice: drawn uniformly
}

TEST_CASE("task_scheduler: bad input is refused with the field and the range", "[engine][task_scheduler]") {
  auto refused = [](std::vector<scheduled_task> tasks, task_scheduler_options o, const char* text) {
    CHECK_THROWS_WITH(task_scheduler(std::move(tasks), o), Contains(text));
  };
  refused({}, {}, "at least one task");
  refused({{"conv1", 0.0, 0, ""}}, {}, "task 'conv1' has weight");
  refused({{"conv1", -1.0, 0, ""}}, {}, "count must be a number > 0");
  task_scheduler_options o;
  o.alpha = 1.5;
  refused(three_tasks(), o, "alpha");
  o = {};
  o.epsilon = -0.1;
  refused(three_tasks(), o, "epsilon");
  o = {};
  o.window = 0;
  refused(three_tasks(), o, "window");
  o = {};
  o.beta = 0;
  refused(three_tasks(), o, "beta");
  o = {};
  o.stall_half_life = -1;
  refused(three_tasks(), o, "stall_half_life");
  for (double gain : {-0.01, 1.0, std::nan("")}) {
    o = {};
    o.min_gain = gain;
    refused(three_tasks(), o, "min_gain");
  }
  CHECK(scheduler_kind_from_string("round-robin") == scheduler_kind::round_robin);
  CHECK(scheduler_kind_from_string("gradient") == scheduler_kind::gradient);
  CHECK_FALSE(scheduler_kind_from_string("fifo"));
  CHECK(to_string(scheduler_kind::round_robin) == "round_robin");
}

namespace {

/// Every split of `rounds` rounds (each task >= 1) by brute force.
double brute_split(const std::vector<double>& weights, const std::vector<std::vector<double>>& curves,
                   std::size_t rounds, std::size_t task = 0) {
  if (task == curves.size()) return rounds == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  double best = std::numeric_limits<double>::infinity();
  for (std::size_t k = 1; k <= rounds && k <= curves[task].size(); ++k) {
    const double g = curves[task][k - 1];
    if (!std::isfinite(g)) continue;
    best = std::min(best, weights[task] * g + brute_split(weights, curves, rounds - k, task + 1));
  }
  return best;
}

}  // namespace

TEST_CASE("best_split_latency: the lowest latency of every split of the rounds (property)",
          "[engine][task_scheduler]") {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int trial = 0; trial < 200; ++trial) {
    const std::size_t tasks = 1 + rng() % 4, rounds = 1 + rng() % 9;
    std::vector<double> weights;
    std::vector<std::vector<double>> curves(tasks);
    for (auto& c : curves) {
      weights.push_back(1.0 + 9.0 * u(rng));
      double g = std::nan("");
      const std::size_t length = 1 + rng() % 8;  // may be shorter than the rounds
      for (std::size_t k = 0; k < length; ++k) {
        if (u(rng) < 0.8) g = std::isfinite(g) ? std::min(g, 10.0 * u(rng)) : 10.0 * u(rng);
        c.push_back(g);  // a best only falls; NaN until the first result
      }
    }
    const auto best = best_split_latency(weights, curves, rounds);
    REQUIRE(best.size() == rounds);
    double expected = std::numeric_limits<double>::infinity();
    for (std::size_t r = 1; r <= rounds; ++r) {
      expected = std::min(expected, brute_split(weights, curves, r));
      INFO("trial " << trial << ", " << r << " rounds");
      if (std::isinf(expected))
        CHECK(std::isinf(best[r - 1]));
      else
        CHECK_THAT(best[r - 1], WithinRel(expected, 1e-12));
      if (r > 1) CHECK(best[r - 1] <= best[r - 2]);
    }
  }
}

TEST_CASE("best_split_latency: a round goes where the weighted fall is largest", "[engine][task_scheduler]") {
  // a falls 10 -> 4 on its second round (weight 1: 6 less), b 10 -> 9 (weight
  // 3: 3 less) and then to 1 on its third: a greedy split would take a's.
  const std::vector<std::vector<double>> curves = {{10, 4, 4}, {10, 9, 1}};
  const auto best = best_split_latency({1, 3}, curves, 4);
  CHECK(std::isinf(best[0]));  // one round cannot give both a best
  CHECK(best[1] == 40.0);      // 10 + 3 * 10
  CHECK(best[2] == 34.0);      // a's second round
  CHECK(best[3] == 13.0);      // b's third round: 10 + 3 * 1, not both second rounds (4 + 3 * 9 = 31)
}

TEST_CASE("best_split_latency: bad input is refused", "[engine][task_scheduler]") {
  CHECK_THROWS_WITH(best_split_latency({1}, {{1.0}, {2.0}}, 2), Contains("1 weights for 2 curves"));
  CHECK_THROWS_WITH(best_split_latency({0, 1}, {{1.0}, {2.0}}, 2), Contains("not > 0"));
}

TEST_CASE("task_scheduler passes over busy tasks while another is live and chooses among all when every one is") {
  // Warm-up: task 0 busy, so task 1 is the first without a round.
  task_scheduler s(three_tasks(), greedy());
  CHECK(s.next({true}) == 1u);
  s.record_round(1, 5.0);
  CHECK(s.next({true, false, true}) == 1u);  // the only one not busy, though it has had its round
  CHECK(s.next({true, true, true}) == 0u);   // all busy: the warm-up goes on among them
  s.record_round(0, 4.0);
  s.record_round(2, 3.0);
  // The rule: the steepest task unless it is busy.
  const std::size_t steepest = *s.next();
  std::vector<bool> busy(3, false);
  busy[steepest] = true;
  const auto other = s.next(busy);
  REQUIRE(other);
  CHECK(*other != steepest);
  // Round robin skips a busy task and keeps its turn order.
  task_scheduler r(three_tasks(), greedy(scheduler_kind::round_robin));
  CHECK(r.next({true, false, false}) == 1u);
  CHECK(r.next({false, false, true}) == 0u);
  CHECK(r.next({true, true, true}) == 1u);
  r.mark_done(2);
  CHECK(r.next({true, true, false}) == 0u);  // the done task does not count as a free one
}

TEST_CASE("task_scheduler never chooses an excluded task even when every task is busy") {
  task_scheduler s(three_tasks(), greedy());
  for (std::size_t t = 0; t < 3; ++t) s.record_round(t, 10.0 - static_cast<double>(t));
  const std::vector<bool> all_busy(3, true);
  const std::size_t steepest = *s.next(all_busy);
  std::vector<bool> excluded(3, false);
  excluded[steepest] = true;
  const auto other = s.next(all_busy, excluded);
  REQUIRE(other);
  CHECK(*other != steepest);
  CHECK_FALSE(s.next(all_busy, {true, true, true}));  // nothing to choose: the caller waits
  CHECK_FALSE(s.all_done());                          // excluded is not done
  task_scheduler r(three_tasks(), greedy(scheduler_kind::round_robin));
  CHECK(r.next(all_busy, {true, false, false}) == 1u);
  CHECK(r.next({}, {false, true, true}) == 0u);
}
