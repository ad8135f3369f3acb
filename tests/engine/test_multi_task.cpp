// Many tasks in one search: tagged configurations, the multi-task space, and
// multi_task_strategy's rounds (hand-outs of one task, recorded once their
// results are in, tasks with a round in flight passed over, exhausted tasks
// done, recorded results on resume), with bad input refused.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

#include "tune/engine/multi_task.hpp"
#include "tune/engine/nearest_configuration.hpp"

using namespace tune;
using Catch::Matchers::Contains;

namespace {

search_space_ptr line_space(std::size_t values) {
  std::vector<double> v;
  for (std::size_t i = 0; i < values; ++i) v.push_back(static_cast<double>(i));
  return std::make_shared<search_space>(std::vector<parameter_ptr>{make_discrete_parameter("x", v)});
}

task_scheduler_options options(scheduler_kind kind = scheduler_kind::gradient) {
  task_scheduler_options o;
  o.kind = kind;
  o.epsilon = 0.0;
  o.seed = 3;
  return o;
}

/// Tasks of `values` configurations each, searched at random.
multi_task_strategy make_search(std::size_t tasks, std::size_t values, std::uint32_t round,
                                scheduler_kind kind = scheduler_kind::gradient, std::uint64_t seed = 1) {
  std::vector<std::unique_ptr<strategy>> searches;
  std::vector<scheduled_task> scheduled;
  for (std::size_t t = 0; t < tasks; ++t) {
    strategy_options so;
    so.seed = seed + t;
    searches.push_back(make_strategy("random", line_space(values), so));
    scheduled.push_back({"t" + std::to_string(t), 1.0, 0.0, ""});
  }
  return multi_task_strategy(std::move(searches), task_scheduler(scheduled, options(kind)), round);
}

trial_result result_of(const configuration& config, double time_ms) {
  trial_result r;
  r.config = config;
  r.state = status::ok;
  r.time_ms = time_ms;
  return r;
}

}  // namespace

TEST_CASE("a tagged configuration carries its task first and gives the task's own back") {
  const configuration own{4, 0, 2};
  const auto tag = tagged(7, own);
  CHECK(tag == configuration{7, 4, 0, 2});
  CHECK(task_of(tag) == 7);
  CHECK(untagged(tag) == own);
  CHECK(untagged(tagged(0, {})).empty());
  CHECK_THROWS_AS(task_of({}), std::invalid_argument);
  CHECK_THROWS_AS(untagged({}), std::invalid_argument);
}

TEST_CASE("the multi-task space validates writes and reads a tagged configuration by its task's space") {
  auto space = multi_task_space({line_space(3), line_space(5)});
  CHECK(space->is_valid({0, 2}));
  CHECK(space->is_valid({1, 4}));
  CHECK_FALSE(space->is_valid({0, 4}));  // task 0 has 3 values
  CHECK_FALSE(space->is_valid({2, 0}));  // no task 2
  CHECK_FALSE(space->is_valid({}));
  const auto text = space->to_json({1, 4});
  CHECK_THAT(text, Contains("\"task\":1"));
  CHECK(space->from_json(text) == configuration{1, 4});
  CHECK_THROWS_WITH(space->from_json("{\"task\": 5, \"configuration\": {\"x\": 0}}"),
                    Contains("task 5 does not exist"));
  CHECK_THROWS_WITH(space->from_json("{\"x\": 0}"), Contains("expected {\"task\""));
  CHECK_THROWS_WITH(space->from_json("not json"), Contains("not JSON"));
  CHECK_THROWS_AS(space->to_json({0, 9}), std::invalid_argument);
  CHECK_THROWS_AS(multi_task_space({}), std::invalid_argument);
  CHECK_THROWS_AS(multi_task_space({line_space(2), nullptr}), std::invalid_argument);
}

TEST_CASE("multi_task_strategy hands out rounds of one task and records a round once its results are in") {
  auto search = make_search(3, 50, 4);
  // Nothing observed yet: the warm-up gives each task a round, and a task
  // with a round in flight is passed over while another has none.
  auto first = search.propose(12);
  REQUIRE(first.size() == 12);
  std::map<std::uint32_t, int> per_task;
  for (std::size_t i = 0; i < first.size(); ++i) {
    ++per_task[task_of(first[i])];
    CHECK(task_of(first[i]) == task_of(first[i / 4 * 4]));  // whole rounds of one task
  }
  CHECK(per_task == std::map<std::uint32_t, int>{{0, 4}, {1, 4}, {2, 4}});
  CHECK(search.rounds(0) == 0);
  // Three of task 0's four results: its round is not over.
  for (int i = 0; i < 3; ++i) search.observe(result_of(first[i], 10.0 - i));
  CHECK(search.rounds(0) == 0);
  search.observe(result_of(first[3], 9.5));
  CHECK(search.rounds(0) == 1);
  CHECK(search.best_ms(0) == 8.0);
  CHECK(std::isnan(search.best_ms(1)));
  // Every configuration is handed out once, and each is valid in its task.
  std::set<configuration> seen(first.begin(), first.end());
  CHECK(seen.size() == first.size());
  auto space = multi_task_space({line_space(50), line_space(50), line_space(50)});
  for (const auto& c : first) CHECK(space->is_valid(c));
}

TEST_CASE("multi_task_strategy in round robin gives the tasks rounds in turn when results come back at once") {
  auto search = make_search(2, 40, 3, scheduler_kind::round_robin);
  std::vector<std::uint32_t> order;
  for (int round = 0; round < 6; ++round) {
    auto got = search.propose(3);
    REQUIRE(got.size() == 3);
    order.push_back(task_of(got.front()));
    for (const auto& c : got) {
      CHECK(task_of(c) == order.back());
      search.observe(result_of(c, 1.0 + static_cast<double>(c[1])));
    }
  }
  CHECK(order == std::vector<std::uint32_t>{0, 1, 0, 1, 0, 1});
  CHECK(search.rounds(0) == 3);
  CHECK(search.rounds(1) == 3);
}

TEST_CASE("multi_task_strategy ends a task whose space is exhausted and ends when every task is") {
  auto search = make_search(2, 3, 2);
  std::set<configuration> all;
  for (int step = 0; step < 20; ++step) {
    auto got = search.propose(2);
    if (got.empty()) break;
    for (const auto& c : got) {
      CHECK(all.insert(c).second);
      search.observe(result_of(c, 2.0));
    }
  }
  CHECK(all.size() == 6);  // both tasks' three configurations, once each
  CHECK(search.scheduler().all_done());
  CHECK(search.propose(4).empty());
}

TEST_CASE(
    "multi_task_strategy fills a demand from the other tasks while one has nothing to offer until its results are in") {
  // Task 0 has two configurations, task 1 a hundred; rounds of two.
  std::vector<std::unique_ptr<strategy>> searches;
  std::vector<scheduled_task> scheduled;
  for (std::size_t t = 0; t < 2; ++t) {
    strategy_options so;
    so.seed = 1 + t;
    searches.push_back(make_strategy("random", line_space(t == 0 ? 2 : 100), so));
    scheduled.push_back({"t" + std::to_string(t), 1.0, 0.0, ""});
  }
  multi_task_strategy search(std::move(searches), task_scheduler(scheduled, options(scheduler_kind::round_robin)), 2);
  auto first = search.propose(4);
  REQUIRE(first.size() == 4);
  // Task 0's space is all in flight: it offers nothing, but it is not done,
  // and round robin keeps coming back to it. Task 1 fills the whole demand.
  auto more = search.propose(6);
  CHECK(more.size() == 6);
  for (const auto& c : more) CHECK(task_of(c) == 1);
  CHECK_FALSE(search.scheduler().done(0));
  for (const auto& c : first) search.observe(result_of(c, 1.0));
  for (const auto& c : more) search.observe(result_of(c, 1.0));
  auto last = search.propose(2);
  REQUIRE(last.size() == 2);
  CHECK(task_of(last[0]) == 1);
  CHECK(search.scheduler().done(0));  // asked again with nothing in flight: exhausted
}

TEST_CASE("multi_task_strategy counts recorded results towards a task's best and first round, not its rounds") {
  auto search = make_search(2, 20, 2);
  search.observe(result_of(tagged(1, {5}), 3.0));  // recorded earlier (a resume)
  CHECK(search.best_ms(1) == 3.0);
  CHECK(search.rounds(1) == 0);
  auto got = search.propose(2);
  // Task 1 counts its recorded results as its first round: task 0 warms up first.
  CHECK(search.rounds(1) == 1);
  REQUIRE(got.size() == 2);
  CHECK(task_of(got[0]) == 0);
  CHECK(got[0] != tagged(1, {5}));
}

TEST_CASE("multi_task_strategy refuses what does not fit") {
  auto search = make_search(2, 5, 2);
  CHECK_THROWS_WITH(search.observe(result_of(tagged(4, {0}), 1.0)), Contains("task 4 of 2"));
  CHECK_THROWS_AS(search.observe(result_of({}, 1.0)), std::invalid_argument);
  std::vector<std::unique_ptr<strategy>> one;
  one.push_back(make_strategy("random", line_space(3), {}));
  std::vector<scheduled_task> two{{"a", 1, 0, ""}, {"b", 1, 0, ""}};
  CHECK_THROWS_WITH(multi_task_strategy(std::move(one), task_scheduler(two, options()), 2),
                    Contains("1 strategies for 2 tasks"));
  std::vector<std::unique_ptr<strategy>> none(1);
  std::vector<scheduled_task> single{{"a", 1, 0, ""}};
  CHECK_THROWS_WITH(multi_task_strategy(std::move(none), task_scheduler(single, options()), 2),
                    Contains("has no strategy"));
  std::vector<std::unique_ptr<strategy>> ok;
  ok.push_back(make_strategy("random", line_space(3), {}));
  CHECK_THROWS_WITH(multi_task_strategy(std::move(ok), task_scheduler(single, options()), 0),
                    Contains("at least one trial"));
}

TEST_CASE("multi_task_strategy proposes the same from the same seeds and results") {
  auto a = make_search(3, 30, 4, scheduler_kind::gradient, 9);
  auto b = make_search(3, 30, 4, scheduler_kind::gradient, 9);
  for (int step = 0; step < 10; ++step) {
    auto x = a.propose(5), y = b.propose(5);
    REQUIRE(x == y);
    for (const auto& c : x) {
      const double t = 1.0 + static_cast<double>(c[1] % 7) + static_cast<double>(c[0]);
      a.observe(result_of(c, t));
      b.observe(result_of(c, t));
    }
  }
}

TEST_CASE("a task whose first round opens starts from its family's results so far, carried onto its space") {
  // Tasks 0 and 1 are two shapes of one operator, task 2 another operator,
  // task 3 a third shape of the first resumed with a result of its own.
  auto split = [](std::int64_t extent) {
    return std::make_shared<search_space>(
        std::vector<parameter_ptr>{make_factorization_parameter("n", extent, 2), make_discrete_parameter("u", {1, 2})});
  };
  const std::vector<search_space_ptr> spaces{split(64), split(128), line_space(4), split(256)};
  const std::vector<std::string> families{"matmul", "matmul", "conv2d", "matmul"};
  std::vector<std::unique_ptr<strategy>> searches;
  std::vector<scheduled_task> scheduled;
  for (std::size_t t = 0; t < spaces.size(); ++t) {
    strategy_options so;
    so.seed = t + 1;
    searches.push_back(make_strategy("random", spaces[t], so));
    scheduled.push_back({"t" + std::to_string(t), 1.0, 0.0, families[t]});
  }
  multi_task_strategy search(std::move(searches), task_scheduler(scheduled, options(scheduler_kind::round_robin)), 2);
  struct remade {
    std::size_t task;
    std::vector<trial_result> prior;
    std::vector<std::size_t> from;
  };
  std::vector<remade> calls;
  multi_task_transfer transfer;
  transfer.spaces = spaces;
  transfer.remake = [&](std::size_t task, std::vector<trial_result> prior, const std::vector<std::size_t>& from) {
    calls.push_back({task, prior, from});
    strategy_options so;
    so.seed = 9;
    so.prior = std::move(prior);
    return make_strategy("bo", spaces[task], so);  // proposes the prior's fastest first
  };
  search.set_transfer(transfer);

  auto first = search.propose(2);  // task 0: nothing of its family measured yet
  REQUIRE(first.size() == 2);
  CHECK(task_of(first[0]) == 0);
  CHECK(calls.empty());
  // Task 3's result recorded by the run this one resumes: its family's too.
  search.observe(
      result_of(tagged(3, spaces[3]->from_values({{"n", std::vector<std::int64_t>{16, 16}}, {"u", 1.0}})), 7.0));
  search.observe(result_of(first[0], 5.0));
  trial_result failed;
  failed.config = first[1];
  failed.state = status::runtime_error;
  search.observe(failed);

  auto second = search.propose(2);  // task 1: the results of tasks 0 and 3, carried onto its space
  REQUIRE(second.size() == 2);
  CHECK(task_of(second[0]) == 1);
  REQUIRE(calls.size() == 1);
  CHECK(calls[0].task == 1);
  CHECK(calls[0].from == std::vector<std::size_t>{0, 3});
  std::map<std::string, parameter_value> values;
  for (auto& [name, value] : spaces[0]->values(untagged(first[0]))) values.emplace(name, value);
  const auto carried = nearest_configuration(*spaces[1], values);
  REQUIRE(carried);
  bool found = false;
  for (const auto& r : calls[0].prior) {
    CHECK(spaces[1]->is_valid(r.config));
    if (r.config == *carried) {
      found = true;
      CHECK(r.ok());
      CHECK(r.time_ms == Approx(5.0));
    }
  }
  CHECK(found);
  CHECK(calls[0].prior.size() <= 3);
  // The remade strategy is the one asked: bo's first proposal is the prior's fastest.
  CHECK(untagged(second[0]) == *carried);

  auto third = search.propose(2);  // task 2: no other task of its family
  REQUIRE(!third.empty());
  CHECK(task_of(third[0]) == 2);
  auto fourth = search.propose(2);  // task 3: has a result of its own (resumed)
  REQUIRE(!fourth.empty());
  CHECK(task_of(fourth[0]) == 3);
  CHECK(calls.size() == 1);

  multi_task_transfer bad;
  bad.spaces = {spaces[0]};
  bad.remake = transfer.remake;
  CHECK_THROWS_WITH(search.set_transfer(bad), Contains("1 spaces for the transfer of 4 tasks"));
  bad.spaces = spaces;
  bad.remake = nullptr;
  CHECK_THROWS_WITH(search.set_transfer(bad), Contains("a way to remake"));
}
