#include <fcntl.h>
#include <unistd.h>

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "actors/pipeline_fixtures.hpp"
#include "actors/scratch_dir.hpp"
#include "tune/actors/pipeline.hpp"
#include "tune/engine/multi_task.hpp"
#include "tune/kernels/multi_task_backend.hpp"

using namespace tune;
using namespace tune::actors;

namespace {

/// Keeps what the population reports, in order.
struct recording_listener : trial_listener {
  std::vector<measured_trial> trials;
  std::vector<bool> bests;
  std::vector<progress_report> progress;
  void on_trial(const measured_trial& trial, bool new_best) override {
    trials.push_back(trial);
    bests.push_back(new_best);
  }
  void on_progress(const progress_report& report) override { progress.push_back(report); }
};

struct session {
  search_space_ptr space;
  std::shared_ptr<tune::testing::grid_backend> backend;
  std::shared_ptr<tune::testing::sweep_log> log = std::make_shared<tune::testing::sweep_log>();
  std::shared_ptr<recording_listener> listener = std::make_shared<recording_listener>();
  pipeline_options options;

  explicit session(int a_count = 8, int b_count = 4, int devices = 2) {
    space = tune::testing::grid_space(a_count, b_count);
    backend = std::make_shared<tune::testing::grid_backend>(space, devices);
    options.compile_workers = 3;
    options.devices.clear();
    for (int d = 0; d < devices; ++d) options.devices.push_back({d, 1});
    options.listener = listener;
    options.drift.every_trials = 0;  // these tests count the devices' runs: no drift probe among them
    options.duel.rounds = 0;         // nor a duel
  }
  run_summary run() {
    return run_pipeline(backend, std::make_unique<tune::testing::sweep_strategy>(space, log), options);
  }
};

}  // namespace

TEST_CASE("population spends the trial budget, each trial reported once, never over capacity", "[actors]") {
  session s;
  s.options.budget.trials = 20;
  auto summary = s.run();
  CHECK(summary.reason == end_reason::budget);
  CHECK(summary.trials == 20);
  REQUIRE(s.listener->trials.size() == 20);
  configuration_set configs;
  std::set<std::uint64_t> ids;
  for (auto& trial : s.listener->trials) {
    CHECK(configs.insert(trial.config).second);
    CHECK(ids.insert(trial.candidate_id).second);
  }
  // Backpressure: never more candidates alive than the pipeline holds.
  CHECK(s.backend->max_in_pipeline() <= static_cast<int>(pipeline_capacity(s.options)));
  CHECK(pipeline_capacity(s.options) == 3 + 2 * (1 + 1));
  CHECK_FALSE(s.backend->overlapping_runs());
  // The strategy observed every trial.
  CHECK(s.log->observed.size() == 20);
  // The best is the minimum of what was reported, and new_best marks each improvement.
  double best = 1e300;
  for (std::size_t i = 0; i < s.listener->trials.size(); ++i) {
    auto& trial = s.listener->trials[i];
    bool improves = trial.ok() && trial.time_ms < best;
    CHECK(s.listener->bests[i] == improves);
    if (improves) best = trial.time_ms;
  }
  CHECK(summary.best.time_ms == best);
  CHECK(summary.trace.back().time_ms == best);
}

TEST_CASE("a hand-out limit hands out that many new candidates and ends the run stopped", "[actors]") {
  session s;
  s.options.budget.trials = 20;
  SECTION("below the budget: stopped, resumable") {
    s.options.hand_out_limit = 3;  // fewer than the capacity (7)
    auto summary = s.run();
    CHECK(summary.trials == 3);
    CHECK(summary.reason == end_reason::stopped);
    CHECK(s.listener->trials.size() == 3);
  }
  SECTION("recorded trials do not count against it") {
    s.options.prior = tune::testing::recorded_trials(*s.space, {0, 1, 2, 3}, 0.5);
    s.options.hand_out_limit = 5;
    auto summary = s.run();
    CHECK(summary.trials == 5);
    CHECK(summary.reason == end_reason::stopped);
  }
  SECTION("the budget spent first: ended by budget") {
    s.options.hand_out_limit = 50;
    auto summary = s.run();
    CHECK(summary.trials == 20);
    CHECK(summary.reason == end_reason::budget);
  }
}

TEST_CASE("devices measuring on CPU cores get a background worker each, one more candidate in flight", "[actors]") {
  const auto cores = thread_cpu_set();
  session s(8, 4, 1);
  s.options.compile_workers = 1;
  s.backend->device_cores = {cores.front()};
  s.backend->build_time = std::chrono::milliseconds(20);
  s.options.budget.trials = 12;
  SECTION("on by default") {
    auto summary = s.run();
    CHECK(summary.trials == 12);
    CHECK(summary.compile.workers == 1);
    CHECK(summary.compile.background_workers == 1);
    CHECK(s.backend->max_in_pipeline() <= static_cast<int>(pipeline_capacity(s.options)) + 1);
    std::size_t idle = 0;
    for (const auto& b : s.backend->builds()) {
      if (b.idle) {
        ++idle;
        CHECK(b.cores == std::vector<int>{cores.front()});
      } else if (cores.size() > 1) {
        CHECK(b.cores == std::vector<int>(cores.begin() + 1, cores.end()));
      }
    }
    CHECK(idle >= 1);
  }
  SECTION("off: the workers still stay off the measuring core") {
    s.options.background_builds = false;
    auto summary = s.run();
    CHECK(summary.compile.background_workers == 0);
    CHECK(s.backend->max_in_pipeline() <= static_cast<int>(pipeline_capacity(s.options)));
    for (const auto& b : s.backend->builds()) {
      CHECK_FALSE(b.idle);
      if (cores.size() > 1) CHECK(b.cores == std::vector<int>(cores.begin() + 1, cores.end()));
    }
  }
  SECTION("a device that is not CPU cores: no background worker, the workers anywhere") {
    s.backend->device_cores.clear();
    auto summary = s.run();
    CHECK(summary.compile.background_workers == 0);
    for (const auto& b : s.backend->builds()) CHECK(b.cores == cores);
  }
}

namespace {
/// A sweep whose first proposal takes `delay`, as a strategy learning from a
/// long run's recorded trials on a starved machine does.
class slow_first_proposal : public tune::testing::sweep_strategy {
 public:
  slow_first_proposal(search_space_ptr space, std::shared_ptr<tune::testing::sweep_log> log,
                      std::chrono::milliseconds delay)
      : sweep_strategy(std::move(space), std::move(log)), delay_(delay) {}
  std::vector<configuration> propose(std::size_t n) override {
    if (first_) std::this_thread::sleep_for(delay_);
    first_ = false;
    return sweep_strategy::propose(n);
  }

 private:
  std::chrono::milliseconds delay_;
  bool first_ = true;
};
}  // namespace

TEST_CASE("a generator slower than the notice interval delays the run but does not fail it", "[actors]") {
  session s;
  s.options.budget.trials = 12;
  s.options.demand_notice_s = 0.1;
  auto summary = run_pipeline(
      s.backend, std::make_unique<slow_first_proposal>(s.space, s.log, std::chrono::milliseconds(800)), s.options);
  CHECK(summary.reason == end_reason::budget);
  CHECK(summary.trials == 12);
  CHECK(s.listener->trials.size() == 12);
}

TEST_CASE("population stops when the strategy has nothing left", "[actors]") {
  session s(3, 3);
  s.options.budget.trials = 100;
  auto summary = s.run();
  CHECK(summary.reason == end_reason::exhausted);
  CHECK(summary.trials == 9);
  CHECK(summary.best.time_ms == 2.0);  // a = 3 is not in this space: (2, 1) is the best
}

TEST_CASE("failed builds and runs are trials with statuses, and the best ignores them", "[actors]") {
  session s(4, 4);
  s.backend->fail_build = {s.space->from_values({{"a", 3.0}, {"b", 1.0}})};
  s.backend->throw_run = {s.space->from_values({{"a", 2.0}, {"b", 1.0}})};
  s.options.budget.trials = 16;
  auto summary = s.run();
  REQUIRE(s.listener->trials.size() == 16);
  std::map<status, int> counts;
  for (auto& trial : s.listener->trials) ++counts[trial.state];
  CHECK(counts[status::compile_error] == 1);
  CHECK(counts[status::unknown] == 1);
  CHECK(counts[status::ok] == 14);
  CHECK(summary.best.ok());
  CHECK(summary.best.time_ms == 2.0);
}

TEST_CASE("generational mode measures a whole batch before proposing the next", "[actors]") {
  session s;
  s.options.mode = pipeline_mode::generational;
  s.options.batch = 4;
  s.options.budget.trials = 12;
  auto summary = s.run();
  CHECK(summary.trials == 12);
  CHECK(s.backend->max_in_pipeline() <= 4);
  // The ids of each batch of four finish before the next batch's first.
  for (std::size_t i = 0; i < s.listener->trials.size(); ++i) CHECK(s.listener->trials[i].candidate_id / 4 == i / 4);
}

TEST_CASE("resume: recorded trials count toward the budget and are not measured again", "[actors]") {
  session s;
  // Better than any grid time: stays the best.
  s.options.prior = tune::testing::recorded_trials(*s.space, {0, 1, 2, 3, 4}, 0.5);
  s.options.budget.trials = 12;
  auto summary = s.run();
  CHECK(summary.prior_trials == 5);
  CHECK(summary.trials == 7);
  for (auto& trial : s.listener->trials)
    for (auto& prior : s.options.prior) CHECK(trial.config != prior.config);
  CHECK(summary.best.time_ms == 0.5);
  CHECK(s.log->observed.size() == 12);
}

TEST_CASE("a stop request drains the work in flight and reports every trial", "[actors]") {
  session s;
  s.options.budget.trials = 32;
  // Runs after the fourth wait until the stop has been requested: the stop
  // surely comes before the budget is spent, however fast or loaded the
  // machine. Handed out by then: at most 4 finished + the capacity (7).
  std::atomic<int> runs{0};
  std::atomic<bool> stop{false};
  // The wait is bounded so that a pipeline that never stops fails the test
  // below instead of hanging it.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  s.backend->before_run = [&] {
    if (++runs > 4)
      while (!stop && std::chrono::steady_clock::now() < give_up)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  s.options.stop_requested = [&] { return stop = stop || runs >= 4; };
  auto summary = s.run();
  REQUIRE(summary.reason == end_reason::stopped);
  CHECK(summary.trials >= 4);
  CHECK(summary.trials <= 4 + pipeline_capacity(s.options));
  // Everything handed out finished and was reported; nothing was lost.
  CHECK(s.listener->trials.size() == summary.trials);
  CHECK(s.log->observed.size() == summary.trials);
}

TEST_CASE("cached measurements are trials without building or running", "[actors]") {
  session s(4, 2);
  auto cached_config = s.space->unflatten(3);
  s.options.cache = [&](const configuration& config) -> std::optional<measured_trial> {
    if (config != cached_config) return std::nullopt;
    measured_trial trial;
    trial.state = status::ok;
    trial.time_ms = 0.25;
    trial.reused_from_run = 7;
    return trial;
  };
  s.options.budget.trials = 8;
  auto summary = s.run();
  REQUIRE(s.listener->trials.size() == 8);
  CHECK(s.backend->run_order(0).size() + s.backend->run_order(1).size() == 7);
  CHECK(summary.best.time_ms == 0.25);
  CHECK(summary.best.reused_from_run == 7);
  CHECK(summary.best.config == cached_config);
}

TEST_CASE("a time budget ends the hand-out, and the work in flight is still reported", "[actors]") {
  session s(16, 16);
  s.backend->run_time = std::chrono::milliseconds(20);
  // 2.5 s of runs on two devices, far more than the time budget even when the
  // population's first time check (a 250 ms tick) comes late on a busy machine.
  s.options.budget.trials = 256;
  s.options.budget.seconds = 0.05;
  auto summary = s.run();
  CHECK(summary.reason == end_reason::time);
  CHECK(summary.trials < 256);
  CHECK(s.listener->trials.size() == summary.trials);
  CHECK(s.log->observed.size() == summary.trials);
  CHECK_FALSE(s.backend->overlapping_runs());
}

TEST_CASE("progress reports count the candidates in flight", "[actors]") {
  session s(16, 16);
  s.backend->run_time = std::chrono::milliseconds(15);
  // About 0.5 s of runs on two devices: several progress ticks (every 250 ms).
  s.options.budget.trials = 64;
  auto summary = s.run();
  CHECK(summary.trials == 64);
  REQUIRE_FALSE(s.listener->progress.empty());
  std::uint64_t most = 0;
  for (const auto& report : s.listener->progress) {
    // Handed out and unanswered: within the pipeline's capacity and the
    // budget left after the trials already reported.
    CHECK(report.in_flight <= pipeline_capacity(s.options));
    CHECK(report.trials + report.in_flight <= s.options.budget.trials);
    most = std::max(most, report.in_flight);
  }
  // The devices were busy throughout: the ticks saw work in flight.
  CHECK(most > 0);
}

namespace {
/// Sends this process's stderr to a file while it lives.
class stderr_to_file {
 public:
  explicit stderr_to_file(const std::filesystem::path& path) {
    std::fflush(stderr);
    saved_ = ::dup(STDERR_FILENO);
    const int file = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (saved_ < 0 || file < 0) {
      if (saved_ >= 0) ::close(saved_);
      if (file >= 0) ::close(file);
      throw std::runtime_error("cannot send stderr to " + path.string());
    }
    ::dup2(file, STDERR_FILENO);
    ::close(file);
  }
  ~stderr_to_file() {
    std::fflush(stderr);
    ::dup2(saved_, STDERR_FILENO);
    ::close(saved_);
  }
  stderr_to_file(const stderr_to_file&) = delete;
  stderr_to_file& operator=(const stderr_to_file&) = delete;

 private:
  int saved_ = -1;
};
}  // namespace

TEST_CASE("progress into a file is whole lines, not a status rewritten in place", "[actors]") {
  session s(16, 16);
  s.backend->run_time = std::chrono::milliseconds(15);
  // About 0.5 s of runs: several ticks, each of which rewrites the status
  // line on a terminal; stderr goes to a file for the run.
  s.options.budget.trials = 64;
  s.options.progress_line = true;
  tune::test::scratch_dir dir("progress-file");
  const auto log_path = dir / "stderr.txt";
  run_summary summary;
  {
    stderr_to_file redirected(log_path);
    summary = s.run();
  }
  CHECK(summary.trials == 64);
  REQUIRE_FALSE(s.listener->progress.empty());  // a tick, which prints
  std::ifstream in(log_path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  INFO(text);
  CHECK(text.find('\r') == std::string::npos);
  // The first tick's line, one at most every 10 s after it, and the last.
  std::vector<std::string> lines;
  std::istringstream split(text);
  for (std::string line; std::getline(split, line);) lines.push_back(line);
  REQUIRE(lines.size() >= 2);
  CHECK(lines.size() <= 2 + static_cast<std::size_t>(summary.wall_s / 10.0));
  for (const auto& line : lines) CHECK(line.rfind("trials ", 0) == 0);
  CHECK(lines.back().rfind("trials 64/64  best ", 0) == 0);
}

namespace {
/// Runs a population with `pool` as its compile pool over a sweep of a 4 x 4
/// grid and returns its summary (REQUIREs that it ended within a minute).
run_summary run_on_pool(tune::testing::actor_test_system& sys, compile_pool_actor pool, population_options options) {
  auto space = tune::testing::grid_space(4, 4);
  auto log = std::make_shared<tune::testing::sweep_log>();
  auto generator = spawn_generator(sys.system, space, std::make_unique<tune::testing::sweep_strategy>(space, log), {});
  auto population = spawn_population(sys.system, generator, pool, options, caf::actor_cast<caf::actor>(sys.self));
  sys.self->send(population, start_atom::value);
  run_summary summary;
  bool done = false;
  sys.self->receive([&](done_atom, run_summary& s) { summary = s, done = true; },
                    caf::after(std::chrono::seconds(60)) >> [] {});
  sys.self->send_exit(pool, caf::exit_reason::user_shutdown);
  sys.self->send_exit(generator, caf::exit_reason::user_shutdown);
  REQUIRE(done);
  return summary;
}
}  // namespace

namespace {
/// A compile pool that answers candidates with an even id at once, keeps the
/// promises of odd ones and answers each of them `late_by` later.
struct late_pool_state {
  struct held_trial {
    std::chrono::steady_clock::time_point due;
    caf::typed_response_promise<measured_trial> promise;
    measured_trial trial;
  };
  std::vector<held_trial> held;
  static inline const char* name = "late_pool";
};
compile_pool_actor::behavior_type late_pool(compile_pool_actor::stateful_pointer<late_pool_state> self,
                                            std::chrono::milliseconds late_by) {
  return {
      [self, late_by](evaluate_atom, candidate& cand) -> caf::result<measured_trial> {
        measured_trial trial;
        trial.candidate_id = cand.id;
        trial.config = cand.config;
        trial.state = status::ok;
        trial.time_ms = 1.0 + static_cast<double>(cand.id);
        if (cand.id % 2 == 0) return trial;
        auto promise = self->make_response_promise<measured_trial>();
        self->state.held.push_back({std::chrono::steady_clock::now() + late_by, promise, trial});
        self->delayed_send(self, late_by, tick_atom::value);
        return promise;
      },
      [](stats_atom, double, double) { return stage_stats{}; },
      [](join_atom, std::vector<caf::actor>&, std::vector<std::int32_t>&, std::uint32_t, std::vector<caf::actor>&) {},
      [self](tick_atom) {
        auto& held = self->state.held;
        auto now = std::chrono::steady_clock::now();
        for (auto& h : held)
          if (h.due <= now) h.promise.deliver(h.trial);
        held.erase(std::remove_if(held.begin(), held.end(), [now](const auto& h) { return h.due <= now; }), held.end());
      },
  };
}
}  // namespace

TEST_CASE("a candidate not answered within the evaluation timeout is one unknown trial and its late answer is dropped",
          "[actors]") {
  tune::testing::actor_test_system sys;
  auto space = tune::testing::grid_space(4, 4);
  auto listener = std::make_shared<recording_listener>();
  // Odd candidates are answered 1.5 s late, three times the timeout: the
  // population reports them on its tick and the late answers arrive while
  // the run still hands out (every candidate of the first batch is odd or
  // even in turn, so the run outlives the first late answers).
  population_options options;
  options.budget.trials = 12;
  options.capacity = 2;
  options.evaluate_timeout_s = 0.5;
  options.listener = listener;
  auto summary = run_on_pool(sys, sys.system.spawn(late_pool, std::chrono::milliseconds(1500)), options);
  CHECK(summary.reason == end_reason::budget);
  CHECK(summary.trials == 12);
  REQUIRE(listener->trials.size() == 12);
  std::set<std::uint64_t> ids;
  std::size_t unknown = 0;
  for (const auto& trial : listener->trials) {
    CHECK(ids.insert(trial.candidate_id).second);
    if (trial.candidate_id % 2 == 0) {
      CHECK(trial.ok());
      CHECK(trial.time_ms == 1.0 + static_cast<double>(trial.candidate_id));
    } else {
      ++unknown;
      CHECK(trial.state == status::unknown);
      CHECK(trial.message == "no trial within the evaluation timeout (0.5 s)");
      CHECK(trial.config == space->unflatten(trial.candidate_id));
    }
  }
  CHECK(unknown == 6);
  CHECK(summary.best.candidate_id == 0);
}

namespace {
/// A compile pool that answers at once and remembers the reference time each
/// candidate came with: candidate 0 takes 5 ms, candidate 1 claims 1 ms from
/// timing stopped early, every later one 4 ms measured in full.
compile_pool_actor::behavior_type reference_pool(compile_pool_actor::pointer,
                                                 std::shared_ptr<std::vector<double>> references) {
  return {
      [references](evaluate_atom, candidate& cand) -> measured_trial {
        references->push_back(cand.reference_ms);
        measured_trial trial;
        trial.candidate_id = cand.id;
        trial.config = cand.config;
        trial.state = status::ok;
        trial.device_id = 0;
        trial.run_s = 0.5;
        trial.kernel_s = 0.25;
        trial.time_ms = cand.id == 0 ? 5.0 : cand.id == 1 ? 1.0 : 4.0;
        trial.stopped_early = cand.id == 1;
        return trial;
      },
      [](stats_atom, double, double) { return stage_stats{}; },
      [](join_atom, std::vector<caf::actor>&, std::vector<std::int32_t>&, std::uint32_t, std::vector<caf::actor>&) {},
      [](tick_atom) {},
  };
}
}  // namespace

TEST_CASE("candidates carry the best time as their reference, and a time from timing stopped early is never the best",
          "[actors]") {
  tune::testing::actor_test_system sys;
  auto listener = std::make_shared<recording_listener>();
  auto references = std::make_shared<std::vector<double>>();
  population_options options;
  options.budget.trials = 4;
  options.capacity = 1;  // one at a time: each candidate is handed out after the previous answer
  options.listener = listener;
  auto summary = run_on_pool(sys, sys.system.spawn(reference_pool, references), options);
  REQUIRE(listener->trials.size() == 4);
  // Candidate 1's 1 ms came from timing stopped early: the best is 4 ms.
  CHECK(summary.best.time_ms == 4.0);
  CHECK_FALSE(summary.best.stopped_early);
  CHECK(listener->bests == std::vector<bool>{true, false, true, false});
  // The references: none for the first, then the best so far.
  REQUIRE(references->size() == 4);
  CHECK(std::isnan((*references)[0]));
  CHECK((*references)[1] == 5.0);
  CHECK((*references)[2] == 5.0);
  CHECK((*references)[3] == 4.0);
  // Where the device's time went: kernel runs in full (3 trials), stopped early (1), the rest overhead.
  REQUIRE(summary.device_times.size() == 1);
  const auto& time = summary.device_times.front().second;
  CHECK(time.trials == 4);
  CHECK(time.measured_s == Approx(0.75));
  CHECK(time.stopped_early_s == Approx(0.25));
  CHECK(time.overhead_s == Approx(1.0));
}

namespace {
/// The grid's times × `scale`: another task, far slower than the grid.
class scaled_grid_backend final : public tune::testing::grid_backend {
 public:
  scaled_grid_backend(search_space_ptr space, int devices, double scale)
      : grid_backend(std::move(space), devices), scale_(scale) {}
  run_result run(const configuration& config, const build_result& build, int device,
                 const run_limits& limits) override {
    auto out = grid_backend::run(config, build, device, limits);
    out.time_ms *= scale_;
    return out;
  }

 private:
  double scale_;
};
}  // namespace

TEST_CASE("a multi-task run measures each task against its own best and reports each task's best", "[actors]") {
  auto space = tune::testing::grid_space(6, 4);
  auto fast = std::make_shared<tune::testing::grid_backend>(space, 2);
  auto slow = std::make_shared<scaled_grid_backend>(space, 2, 100.0);
  auto backend = std::make_shared<multi_task_backend>(std::vector<backend_ptr>{fast, slow});
  std::vector<std::unique_ptr<strategy>> searches;
  auto log = std::make_shared<tune::testing::sweep_log>();
  searches.push_back(std::make_unique<tune::testing::sweep_strategy>(space, log));
  searches.push_back(std::make_unique<tune::testing::sweep_strategy>(space, log));
  task_scheduler_options so;
  so.kind = scheduler_kind::round_robin;
  task_scheduler scheduler({{"fast", 1.0, 0.0, ""}, {"slow", 1.0, 0.0, ""}}, so);
  auto search = std::make_unique<multi_task_strategy>(std::move(searches), std::move(scheduler), 4);
  auto listener = std::make_shared<recording_listener>();
  pipeline_options options;
  options.compile_workers = 2;
  options.devices = {{0, 1}, {1, 1}};
  options.listener = listener;
  options.drift.every_trials = 0;
  options.duel.rounds = 0;
  options.budget.trials = 48;  // every configuration of both tasks
  options.multi_task = true;
  auto summary = run_pipeline(backend, std::move(search), options);
  REQUIRE(listener->trials.size() == 48);
  // Each task's best is its own fastest, and each task had new bests of its own.
  REQUIRE(summary.task_bests.size() == 2);
  CHECK(summary.task_bests[0].time_ms == 1.0);
  CHECK(summary.task_bests[1].time_ms == 100.0);
  CHECK(task_of(summary.task_bests[1].config) == 1);
  int slow_bests = 0;
  for (std::size_t i = 0; i < listener->trials.size(); ++i)
    if (listener->bests[i] && task_of(listener->trials[i].config) == 1) ++slow_bests;
  CHECK(slow_bests >= 1);
  // The slow task's runs were measured against its own best, never the fast one's.
  for (int device : {0, 1})
    for (double reference : slow->references(device)) CHECK((std::isnan(reference) || reference >= 100.0));
  CHECK(fast->run_order(0).size() + fast->run_order(1).size() == 24);
  CHECK(slow->run_order(0).size() + slow->run_order(1).size() == 24);
}

TEST_CASE("a multi-task run refuses nodes sent a task of one kernel", "[actors]") {
  auto space = tune::testing::grid_space(2, 2);
  auto backend = std::make_shared<tune::testing::grid_backend>(space, 1);
  pipeline_options options;
  options.multi_task = true;
  remote_node node;
  node.host = "127.0.0.1";
  node.port = 1;
  options.nodes.push_back(node);
  CHECK_THROWS_WITH(
      run_pipeline(backend,
                   std::make_unique<tune::testing::sweep_strategy>(space, std::make_shared<tune::testing::sweep_log>()),
                   options),
      Catch::Matchers::Contains("a task of kind multi"));
}
