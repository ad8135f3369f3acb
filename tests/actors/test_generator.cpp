#include <caf/exit_reason.hpp>
#include <catch2/catch.hpp>

#include "actors/pipeline_fixtures.hpp"

using namespace tune;
using namespace tune::actors;
using tune::testing::reply_timeout;

namespace {

std::vector<candidate> demand(tune::testing::actor_test_system& t, const generator_actor& gen, std::uint32_t n) {
  std::vector<candidate> got;
  t.self->request(gen, reply_timeout, demand_atom::value, n)
      .receive([&](std::vector<candidate>& cs) { got = std::move(cs); },
               [&](caf::error& err) { FAIL("generator did not answer: " << t.system.render(err)); });
  return got;
}

}  // namespace

TEST_CASE("generator hands out each configuration once and numbers candidates in order", "[actors]") {
  tune::testing::actor_test_system t;
  auto space = tune::testing::grid_space(4, 3);  // 12 configurations
  auto log = std::make_shared<tune::testing::sweep_log>();
  // The strategy repeats itself: the generator must drop the repeats.
  auto gen = spawn_generator(t.system, space, std::make_unique<tune::testing::sweep_strategy>(space, log, true), {});

  configuration_set seen;
  std::uint64_t expected_id = 0;
  std::size_t total = 0;
  for (int round = 0; round < 10; ++round) {
    auto got = demand(t, gen, 5);
    CHECK(got.size() <= 5);
    for (auto& c : got) {
      CHECK(c.id == expected_id++);
      CHECK(seen.insert(c.config).second);
      CHECK(space->is_valid(c.config));
    }
    total += got.size();
    if (got.empty()) break;
  }
  CHECK(total == 12);
  CHECK(demand(t, gen, 5).empty());
  t.self->send_exit(gen, caf::exit_reason::user_shutdown);
}

TEST_CASE("generator replays recorded trials to the strategy and never hands them out again", "[actors]") {
  tune::testing::actor_test_system t;
  auto space = tune::testing::grid_space(4, 2);  // 8 configurations
  auto log = std::make_shared<tune::testing::sweep_log>();
  auto prior = tune::testing::recorded_trials(*space, {0, 1, 5}, 1.0);
  auto gen = spawn_generator(t.system, space, std::make_unique<tune::testing::sweep_strategy>(space, log), prior);
  auto got = demand(t, gen, 8);
  REQUIRE(got.size() == 5);
  for (auto& c : got) {
    for (auto& p : prior) CHECK(c.config != p.config);
    CHECK(c.id > 5);  // numbering continues after the recorded trials
  }
  {
    std::lock_guard<std::mutex> lock(log->mutex);
    REQUIRE(log->observed.size() == 3);
    for (std::size_t i = 0; i < 3; ++i) CHECK(log->observed[i] == prior[i].config);
  }
  // An observation reaches the strategy.
  measured_trial trial;
  trial.config = got.front().config;
  trial.state = status::runtime_error;
  t.self->send(gen, observe_atom::value, trial);
  demand(t, gen, 1);  // messages from one sender arrive in order: observe came first
  std::lock_guard<std::mutex> lock(log->mutex);
  CHECK(log->observed.size() == 4);
  t.self->send_exit(gen, caf::exit_reason::user_shutdown);
}

TEST_CASE("generator drops proposals that violate the space's constraints", "[actors]") {
  tune::testing::actor_test_system t;
  auto base = tune::testing::grid_space(4, 4);
  auto space = std::make_shared<search_space>(base->parameters(), "grid");
  space->add_constraints({"a <= b"});  // 10 of 16
  auto log = std::make_shared<tune::testing::sweep_log>();
  auto gen = spawn_generator(t.system, space, std::make_unique<tune::testing::sweep_strategy>(space, log), {});
  std::size_t total = 0;
  for (int round = 0; round < 20; ++round) {
    auto got = demand(t, gen, 3);
    for (auto& c : got) CHECK(c.config[0] <= c.config[1]);
    total += got.size();
  }
  CHECK(total == 10);
  t.self->send_exit(gen, caf::exit_reason::user_shutdown);
}

TEST_CASE("after a resume, a strategy that repeats the dead run's proposals still gets through", "[actors]") {
  tune::testing::actor_test_system t;
  auto space = tune::testing::grid_space(8, 8);
  auto log = std::make_shared<tune::testing::sweep_log>();
  // The first 40 configurations in flat order were recorded; the sweep
  // proposes them again first.
  std::vector<std::uint64_t> flats;
  for (std::uint64_t flat = 0; flat < 40; ++flat) flats.push_back(flat);
  auto prior = tune::testing::recorded_trials(*space, flats, 1.0);
  auto gen = spawn_generator(t.system, space, std::make_unique<tune::testing::sweep_strategy>(space, log), prior);
  auto got = demand(t, gen, 2);
  REQUIRE(got.size() == 2);
  CHECK(got[0].config == space->unflatten(40));
  CHECK(got[1].config == space->unflatten(41));
  t.self->send_exit(gen, caf::exit_reason::user_shutdown);
}
