#include <caf/actor_cast.hpp>
#include <caf/exit_reason.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <catch2/catch.hpp>
#include <chrono>

#include "actors/pipeline_fixtures.hpp"

using namespace tune;
using namespace tune::actors;
using tune::testing::reply_timeout;

namespace {

struct pool_fixture {
  tune::testing::actor_test_system t;
  search_space_ptr space = tune::testing::grid_space();
  std::shared_ptr<tune::testing::grid_backend> backend;
  compile_pool_actor pool;
  compile_pool_options options;

  explicit pool_fixture(std::uint32_t workers, int devices, std::uint32_t prefetch = 1, double timeout_s = 10.0) {
    backend = std::make_shared<tune::testing::grid_backend>(space, devices);
    options.workers = workers;
    options.timing.timeouts.compile_s = timeout_s;
    options.timing.request_grace_s = 0.05;
    for (int d = 0; d < devices; ++d) {
      measurer_options m;
      m.device = d;
      m.drift.every_trials = 0;  // these tests count the device's runs: no drift probe among them
      m.duel.rounds = 0;         // nor a duel
      options.measurers.push_back(spawn_measurer(t.system, backend, m));
      options.prefetch.push_back(prefetch);
    }
  }
  void start() { pool = spawn_compile_pool(t.system, backend, options); }

  std::map<std::uint64_t, measured_trial> evaluate_all(const std::vector<std::uint64_t>& flats) {
    for (auto flat : flats) t.self->send(pool, evaluate_atom::value, candidate{flat, space->unflatten(flat)});
    std::map<std::uint64_t, measured_trial> got;
    for (std::size_t i = 0; i < flats.size(); ++i)
      t.self->receive(
          [&](measured_trial& trial) {
            CHECK(got.count(trial.candidate_id) == 0);  // every trial arrives once
            got[trial.candidate_id] = std::move(trial);
          },
          caf::after(reply_timeout) >> [&] { FAIL("no trial from the pool"); });
    return got;
  }

  ~pool_fixture() {
    t.self->send_exit(pool, caf::exit_reason::user_shutdown);
    for (auto& m : options.measurers) t.self->send_exit(m, caf::exit_reason::user_shutdown);
  }
};

/// Candidate ids 0 … n-1 (each the flat index of its configuration).
std::vector<std::uint64_t> first_flats(std::uint64_t n) {
  std::vector<std::uint64_t> flats;
  for (std::uint64_t i = 0; i < n; ++i) flats.push_back(i);
  return flats;
}

/// Stops the pool and the test's measurers however a test ends: the actor
/// system waits for its actors.
struct stop_all {
  tune::testing::actor_test_system& t;
  std::vector<caf::actor> actors;
  ~stop_all() {
    for (auto& a : actors) t.self->send_exit(a, caf::exit_reason::user_shutdown);
  }
};

/// What a test's own measurer answers to the pool's stats and its tick.
constexpr auto idle_stats = [](stats_atom, double from, double to) { return stage_stats{1, 0.0, to - from, 0.0}; };
constexpr auto no_tick = [](tick_atom) {};

/// A measurer that takes every candidate and never answers (a node that
/// hangs without its connection dropping).
struct silent_state {
  std::vector<caf::typed_response_promise<measured_trial>> held;
};

measurer_actor::behavior_type silent_measurer(measurer_actor::stateful_pointer<silent_state> self) {
  return {
      [self](measure_atom, compiled_candidate&) {
        auto promise = self->make_response_promise<measured_trial>();
        self->state.held.push_back(promise);
        return promise;
      },
      idle_stats,
      no_tick,
  };
}

}  // namespace

TEST_CASE("compile pool builds with at most N workers and serialises each device", "[actors]") {
  pool_fixture f(3, 2);
  f.backend->build_time = std::chrono::milliseconds(3);
  f.start();
  auto got = f.evaluate_all(first_flats(24));
  REQUIRE(got.size() == 24);
  for (auto& [id, trial] : got) {
    CHECK(trial.state == status::ok);
    CHECK(trial.config == f.space->unflatten(id));
    CHECK((trial.device_id == 0 || trial.device_id == 1));
  }
  CHECK(f.backend->max_building() <= 3);
  CHECK_FALSE(f.backend->overlapping_runs());
  // Both devices took work.
  CHECK_FALSE(f.backend->run_order(0).empty());
  CHECK_FALSE(f.backend->run_order(1).empty());
}

TEST_CASE("a backend that builds instantly is built by the pool itself, with no build worker", "[actors]") {
  pool_fixture f(0, 2);  // no worker: only the pool can build
  f.backend->instant = true;
  f.backend->build_time = std::chrono::milliseconds(0);
  f.backend->fail_build = {f.space->unflatten(4)};
  f.start();
  auto got = f.evaluate_all(first_flats(12));
  REQUIRE(got.size() == 12);
  for (auto& [id, trial] : got) {
    CHECK(trial.config == f.space->unflatten(id));
    if (id == 4) {
      CHECK(trial.state == status::compile_error);
      CHECK(trial.device_id == -1);
    } else {
      CHECK(trial.state == status::ok);
    }
  }
  CHECK(f.backend->run_order(0).size() + f.backend->run_order(1).size() == 11);
  CHECK_FALSE(f.backend->overlapping_runs());
}

TEST_CASE("compile failures skip the device and come back as statuses", "[actors]") {
  pool_fixture f(2, 1);
  f.backend->fail_build = {f.space->unflatten(2), f.space->unflatten(5)};
  f.start();
  auto got = f.evaluate_all({1, 2, 3, 4, 5, 6});
  REQUIRE(got.size() == 6);
  CHECK(got[2].state == status::compile_error);
  CHECK(got[5].state == status::compile_error);
  CHECK(got[2].device_id == -1);
  CHECK(got[1].state == status::ok);
  CHECK(f.backend->run_order(0).size() == 4);
}

TEST_CASE("a build that hangs past its timeout becomes build_timeout and the worker is replaced", "[actors]") {
  // Timeouts far above a 1 ms build, so a loaded machine (ctest -j next to
  // compiler jobs) does not time out the builds that should succeed.
  pool_fixture f(1, 1, 1, 0.5);
  f.options.timing.request_grace_s = 0.25;
  f.backend->hang_build = {f.space->unflatten(3)};
  f.backend->hang_time = std::chrono::milliseconds(2000);
  f.start();
  auto got = f.evaluate_all({3, 4, 6});
  REQUIRE(got.size() == 3);
  CHECK(got[3].state == status::build_timeout);
  CHECK(got[4].state == status::ok);
  CHECK(got[6].state == status::ok);
}

TEST_CASE("a measurer that never answers makes its candidates run_timeout after their deadline", "[actors]") {
  tune::testing::actor_test_system t;
  auto space = tune::testing::grid_space();
  auto backend = std::make_shared<tune::testing::grid_backend>(space, 1);
  compile_pool_options options;
  options.workers = 1;
  options.timing.timeouts.run_s = 0.2;
  options.timing.request_grace_s = 0.05;
  options.measurers.push_back(t.system.spawn(silent_measurer));
  options.prefetch.push_back(1);
  auto pool = spawn_compile_pool(t.system, backend, options);
  stop_all stop{t, {caf::actor_cast<caf::actor>(pool), caf::actor_cast<caf::actor>(options.measurers[0])}};
  auto started = std::chrono::steady_clock::now();
  for (std::uint64_t flat : {1u, 2u}) t.self->send(pool, evaluate_atom::value, candidate{flat, space->unflatten(flat)});
  std::map<std::uint64_t, measured_trial> got;
  for (int i = 0; i < 2; ++i)
    t.self->receive([&](measured_trial& trial) { got[trial.candidate_id] = std::move(trial); },
                    caf::after(reply_timeout) >> [&] { FAIL("no trial from the pool"); });
  // Each held candidate's deadline: (run timeout + grace) x (2 + prefetch).
  CHECK(std::chrono::steady_clock::now() - started >= std::chrono::milliseconds(700));
  REQUIRE(got.size() == 2);
  for (auto& [id, trial] : got) {
    CHECK(trial.state == status::run_timeout);
    CHECK(trial.message.find("measurer gave no answer") != std::string::npos);
    CHECK(trial.device_id == 0);
  }
}

TEST_CASE("compile pool reports busy time of its workers", "[actors]") {
  pool_fixture f(2, 1);
  f.backend->build_time = std::chrono::milliseconds(20);
  f.start();
  double from = 0.0;
  f.evaluate_all({0, 1, 2, 3});
  double to = 1e12;
  f.t.self->request(f.pool, reply_timeout, stats_atom::value, from, to)
      .receive(
          [&](stage_stats& s) {
            CHECK(s.workers == 2);
            // Four builds of at least 20 ms each.
            CHECK(s.busy_s >= 0.08);
          },
          [&](caf::error& err) { FAIL(f.t.system.render(err)); });
}

namespace {

/// A pool of one worker and one device whose measuring core is the first
/// this thread may run on, with one background worker there; the other
/// worker builds on the other cores. Returns the measuring core.
int with_background_worker(pool_fixture& f) {
  const auto cores = thread_cpu_set();
  REQUIRE(!cores.empty());
  f.options.background_cores = {{cores.front()}};
  f.options.worker_cores.assign(cores.begin() + 1, cores.end());
  return cores.front();
}

std::size_t idle_builds(const tune::testing::grid_backend& backend) {
  std::size_t n = 0;
  for (const auto& b : backend.builds()) n += b.idle ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("a background worker builds on the measuring core at idle priority while the device waits", "[actors]") {
  pool_fixture f(1, 1);
  const int measuring = with_background_worker(f);
  f.backend->build_time = std::chrono::milliseconds(30);  // builds are the bottleneck
  f.backend->run_time = std::chrono::milliseconds(1);
  f.start();
  auto trials = f.evaluate_all(first_flats(12));
  for (const auto& [id, trial] : trials) CHECK(trial.state == status::ok);
  const auto builds = f.backend->builds();
  REQUIRE(builds.size() == 12);
  CHECK(idle_builds(*f.backend) >= 1);
  for (const auto& b : builds) {
    if (b.idle) {
      CHECK(b.cores == std::vector<int>{measuring});
    } else if (!f.options.worker_cores.empty()) {
      // The other worker stays off the measuring core.
      CHECK(b.cores == f.options.worker_cores);
    }
  }
  f.t.self->request(f.pool, reply_timeout, stats_atom::value, 0.0, 1e12)
      .receive(
          [&](stage_stats& s) {
            CHECK(s.workers == 1);
            CHECK(s.background_workers == 1);
            CHECK(s.background_busy_s >= 0.03 * static_cast<double>(idle_builds(*f.backend)) * 0.9);
            CHECK(s.background_build_s == Approx(0.001 * static_cast<double>(idle_builds(*f.backend))));
          },
          [&](caf::error& err) { FAIL(f.t.system.render(err)); });
}

TEST_CASE("a background worker stays idle while the device has enough to measure", "[actors]") {
  pool_fixture f(1, 1);
  with_background_worker(f);
  f.backend->build_time = std::chrono::milliseconds(1);
  f.backend->run_time = std::chrono::milliseconds(20);  // the device is the bottleneck
  f.start();
  auto trials = f.evaluate_all(first_flats(16));
  for (const auto& [id, trial] : trials) CHECK(trial.state == status::ok);
  REQUIRE(f.backend->builds().size() == 16);
  // At the start the device is empty and may take a background build; once it
  // holds its running and prefetched candidates, the other worker keeps up.
  CHECK(idle_builds(*f.backend) <= 2);
}

TEST_CASE("a build the background worker runs out of time on is built again by another worker, not a timeout",
          "[actors]") {
  pool_fixture f(1, 1);
  with_background_worker(f);
  f.backend->build_time = std::chrono::milliseconds(20);
  f.backend->run_time = std::chrono::milliseconds(1);
  f.backend->idle_builds_time_out = true;
  f.start();
  auto trials = f.evaluate_all(first_flats(10));
  for (const auto& [id, trial] : trials) CHECK(trial.state == status::ok);
  const auto builds = f.backend->builds();
  REQUIRE(idle_builds(*f.backend) >= 1);
  for (const auto& b : builds) {
    if (!b.idle) continue;
    auto again = std::count_if(builds.begin(), builds.end(),
                               [&](const auto& other) { return !other.idle && other.config == b.config; });
    CHECK(again == 1);
  }
}

namespace {

/// The flat indices of the grid's configurations {1, b} for b < first, then
/// {2, b} for b < second (in a multi-task run the first parameter stands for
/// the task).
std::vector<std::uint64_t> two_tasks(const search_space& space, std::uint32_t first, std::uint32_t second) {
  std::vector<std::uint64_t> flats;
  for (std::uint32_t b = 0; b < first; ++b) flats.push_back(space.flatten(configuration{1, b}));
  for (std::uint32_t b = 0; b < second; ++b) flats.push_back(space.flatten(configuration{2, b}));
  return flats;
}

}  // namespace

TEST_CASE("a build far slower than the run's other builds is stopped at a multiple of their median, and says why",
          "[actors]") {
  pool_fixture f(1, 1);  // one worker: the builds finish in the order sent
  f.options.early_stop.build_factor = 10;
  f.options.early_stop.min_build_s = 0.05;
  const auto flats = two_tasks(*f.space, 4, 3);
  // The first is slow but comes before any build is known; the sixth is as
  // slow, after five builds of a median of 1 ms.
  f.backend->slow_build = {f.space->unflatten(flats[0]), f.space->unflatten(flats[5])};
  f.backend->slow_build_time = std::chrono::milliseconds(300);
  f.start();
  auto got = f.evaluate_all(flats);
  REQUIRE(got.size() == flats.size());
  CHECK(got[flats[0]].state == status::ok);
  CHECK(got[flats[0]].compile_s == Approx(0.3));
  CHECK(got[flats[5]].state == status::build_timeout);
  CHECK(got[flats[5]].compile_s == Approx(0.05));
  CHECK_THAT(got[flats[5]].message,
             Catch::Contains("the larger of 10 times the median build of its task so far (0.001 s) and 0.05 s") &&
                 Catch::Contains("--early-stop build_factor=0"));
  CHECK(got[flats[6]].state == status::ok);
  // The limit each build was given: the compile timeout until five builds
  // were known, then 0.05 s (10 x 1 ms is less than the least limit).
  const auto builds = f.backend->builds();
  REQUIRE(builds.size() == flats.size());
  for (std::size_t i = 0; i < builds.size(); ++i) {
    INFO("build " << i);
    CHECK(builds[i].timeout_s == Approx(i < 5 ? 10.0 : 0.05));
  }
}

TEST_CASE("a slow build runs to the compile timeout with the rule off, for replayed builds, and in another task",
          "[actors]") {
  pool_fixture f(1, 1);
  f.options.early_stop.build_factor = 10;
  f.options.early_stop.min_build_s = 0.05;
  const auto flats = two_tasks(*f.space, 4, 2);
  f.backend->slow_build = {f.space->unflatten(flats[5])};
  f.backend->slow_build_time = std::chrono::milliseconds(200);
  SECTION("the rule off (--no-early-stop)") { f.options.early_stop = early_stop_policy::off(); }
  SECTION("a replay's builds") { f.backend->real = false; }
  SECTION("a multi-task run: the slow build is the first of its task") {
    f.options.multi_task = true;  // the grid's first parameter stands for the task: 1, then 2
  }
  f.start();
  auto got = f.evaluate_all(flats);
  REQUIRE(got.size() == flats.size());
  for (const auto& [id, trial] : got) CHECK(trial.state == status::ok);
  CHECK(got[flats.back()].compile_s == Approx(0.2));
}

namespace {

/// A node's measurer as the pool sees it: it builds what arrives unbuilt
/// with build_candidate (as a node does, honouring the candidate's limit)
/// and answers with the build's status, or ok and the grid's time. `idle`:
/// its trials say they were built at idle priority (built_idle), as a node's
/// whose builder shares the measuring core (the node also ignores a limit;
/// here any limit is kept, so that one the pool set would show).
measurer_actor::behavior_type self_building_measurer(measurer_actor::pointer,
                                                     std::shared_ptr<tune::testing::grid_backend> backend,
                                                     double compile_timeout_s, bool idle) {
  return {
      [backend, compile_timeout_s, idle](measure_atom, compiled_candidate& compiled) {
        auto built = build_candidate(*backend, compiled.cand, compile_timeout_s);
        measured_trial trial;
        trial.built_idle = idle;
        trial.candidate_id = compiled.cand.id;
        trial.config = compiled.cand.config;
        trial.state = built.build.state;
        trial.compile_s = built.build.compile_s;
        trial.message = built.build.message;
        if (trial.state == status::ok) trial.time_ms = tune::testing::grid_time_ms(trial.config);
        return trial;
      },
      idle_stats,
      no_tick,
  };
}

}  // namespace

TEST_CASE("a node's build of a candidate it measures is held to its limit, learnt from the node's builds", "[actors]") {
  // At idle priority a node's builds wait for its measuring: they are
  // neither limited nor counted, and every build runs in full.
  const bool idle = GENERATE(false, true);
  INFO("node builds at idle priority: " << idle);
  pool_fixture f(0, 0);  // no worker and no local device: the node builds and measures everything
  f.options.remote_builds = true;
  f.options.early_stop.build_factor = 10;
  f.options.early_stop.min_build_s = 0.05;
  f.options.measurers.push_back(f.t.system.spawn(self_building_measurer, f.backend, 10.0, idle));
  f.options.prefetch.push_back(0);  // one at a time: each is sent once the one before has answered
  f.options.remote.push_back(true);
  const auto flats = two_tasks(*f.space, 4, 3);
  f.backend->slow_build = {f.space->unflatten(flats[0]), f.space->unflatten(flats[5])};
  f.backend->slow_build_time = std::chrono::milliseconds(200);
  f.start();
  auto got = f.evaluate_all(flats);
  REQUIRE(got.size() == flats.size());
  CHECK(got[flats[0]].state == status::ok);  // before five builds were known: in full
  CHECK(got[flats[0]].compile_s == Approx(0.2));
  if (idle) {
    CHECK(got[flats[5]].state == status::ok);
    CHECK(got[flats[5]].compile_s == Approx(0.2));
  } else {
    CHECK(got[flats[5]].state == status::build_timeout);
    CHECK(got[flats[5]].compile_s == Approx(0.05));
    CHECK_THAT(got[flats[5]].message,
               Catch::Contains("the larger of 10 times the median build of its task so far (0.001 s) and 0.05 s"));
  }
  CHECK(got[flats[6]].state == status::ok);
  const auto builds = f.backend->builds();
  REQUIRE(builds.size() == flats.size());
  for (std::size_t i = 0; i < builds.size(); ++i) {
    INFO("build " << i);
    CHECK(builds[i].timeout_s == Approx(i < 5 || idle ? 10.0 : 0.05));
  }
}

TEST_CASE("plan_builds: workers off the measuring cores, one background worker on each", "[actors]") {
  auto plan = plan_builds({0}, {0, 1, 2, 3}, true);
  CHECK(plan.worker_cores == std::vector<int>{1, 2, 3});
  CHECK(plan.background_cores == std::vector<std::vector<int>>{{0}});
  // Two devices of two cores each, a core named twice: each core once.
  plan = plan_builds({2, 3, 4, 5, 3}, {0, 1, 2, 3, 4, 5}, true);
  CHECK(plan.worker_cores == std::vector<int>{0, 1});
  CHECK(plan.background_cores == std::vector<std::vector<int>>{{2}, {3}, {4}, {5}});
  // Without background builds, no background worker.
  plan = plan_builds({0}, {0, 1}, false);
  CHECK(plan.worker_cores == std::vector<int>{1});
  CHECK(plan.background_cores.empty());
  // Every available core measures: the workers go anywhere.
  plan = plan_builds({0, 1}, {0, 1}, true);
  CHECK(plan.worker_cores.empty());
  CHECK(plan.background_cores.size() == 2);
  // No measuring core (a GPU, a replay): nothing is placed.
  plan = plan_builds({}, {0, 1}, true);
  CHECK(plan.worker_cores.empty());
  CHECK(plan.background_cores.empty());
  CHECK_FALSE(thread_cpu_set().empty());
}
