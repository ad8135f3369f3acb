// The run recorder: trials queued, committed in groups, events after the
// commit, a failed commit recording none of its group; a run created,
// resumed (a stopped one reopened) and finished with its end reason; the
// cache of earlier runs' measurements.
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <thread>

#include "actors/scratch_dir.hpp"
#include "tune/engine/parameter.hpp"
#include "tune/storage/event_stream.hpp"
#include "tune/storage/run_recorder.hpp"

using namespace tune;
using namespace tune::storage;

namespace {

search_space_ptr grid_space() {
  std::vector<double> as, bs;
  for (int i = 0; i < 8; ++i) as.push_back(i);
  for (int i = 0; i < 4; ++i) bs.push_back(i);
  return std::make_shared<search_space>(
      std::vector<parameter_ptr>{make_discrete_parameter("a", as), make_discrete_parameter("b", bs)}, "grid");
}

recorder_options options_for(const std::filesystem::path& db, search_space_ptr space, double interval_s) {
  recorder_options o;
  o.db_path = db.string();
  o.spec.task_key = "grid";
  o.spec.strategy = "random";
  o.spec.seed = 1;
  o.spec.device_kind = "sim";
  o.space = std::move(space);
  o.commit_interval_s = interval_s;
  return o;
}

trial_record recorder_trial_of(const search_space& space, std::uint64_t flat, double time_ms) {
  trial_record t;
  t.config_json = space.to_json(space.unflatten(flat));
  t.state = status::ok;
  t.time_ms = time_ms;
  t.device = "sim0";
  return t;
}

std::size_t recorded_trials(const std::filesystem::path& db, std::int64_t run) {
  results_db reader(db, results_db::open_mode::read_only);
  return reader.trials(run).size();
}

}  // namespace

TEST_CASE("run recorder: trials within the commit interval wait and are committed together, in order",
          "[storage][recorder]") {
  tune::test::scratch_dir dir("recorder-group");
  auto space = grid_space();
  run_recorder r(options_for(dir / "r.db", space, 3600.0));
  // Nothing was committed yet: the first trial is due at once.
  r.add(recorder_trial_of(*space, 3, 1.5), 0.1, true);
  CHECK(r.commit_due());
  CHECK(r.commit() == 1);
  CHECK(recorded_trials(dir / "r.db", r.run_id()) == 1);
  // Within the interval: queued, not due, not in the database.
  r.add(recorder_trial_of(*space, 5, 2.5), 0.2, false);
  r.add(recorder_trial_of(*space, 7, 0.5), 0.3, true);
  CHECK_FALSE(r.commit_due());
  CHECK(r.queued() == 2);
  CHECK(recorded_trials(dir / "r.db", r.run_id()) == 1);
  CHECK(r.commit() == 2);
  CHECK(r.queued() == 0);
  CHECK(r.commit() == 0);  // nothing waits
  results_db reader(dir / "r.db", results_db::open_mode::read_only);
  auto rows = reader.trials(r.run_id());
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].config_json == space->to_json(space->unflatten(3)));
  CHECK(rows[1].config_json == space->to_json(space->unflatten(5)));
  CHECK(rows[2].config_json == space->to_json(space->unflatten(7)));
  for (std::size_t i = 0; i < rows.size(); ++i) CHECK(rows[i].seq == static_cast<std::int64_t>(i));
  // Each keeps the time it was added, not the time of its group's commit.
  CHECK(rows[1].finished_at <= rows[2].finished_at);
}

TEST_CASE("run recorder: once the interval has passed since the last commit a trial is due at once",
          "[storage][recorder]") {
  tune::test::scratch_dir dir("recorder-slow");
  auto space = grid_space();
  run_recorder r(options_for(dir / "r.db", space, 0.02));
  for (std::uint64_t flat : {1, 2, 3}) {
    r.add(recorder_trial_of(*space, flat, 1.0 + static_cast<double>(flat)), 0.0, false);
    // Due when the interval since the last commit has passed: wait for that
    // (never more than a few seconds), never for a fixed time.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!r.commit_due() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    REQUIRE(r.commit_due());
    CHECK(r.commit() == 1);
  }
  CHECK(recorded_trials(dir / "r.db", r.run_id()) == 3);
}

TEST_CASE("run recorder: events are published once their group is committed", "[storage][recorder]") {
  tune::test::scratch_dir dir("recorder-events");
  auto space = grid_space();
  auto o = options_for(dir / "r.db", space, 3600.0);
  o.publish_endpoint = "tcp://127.0.0.1:*";
  o.wait_for_subscribers = 1;  // started() holds run_started until the subscription arrived
  run_recorder r(o);
  event_subscriber sub(r.endpoint());
  r.started();
  auto started = sub.receive(std::chrono::milliseconds(10000));
  REQUIRE(started);
  CHECK((*started)["type"] == "run_started");
  r.add(recorder_trial_of(*space, 2, 4.0), 0.5, true);
  r.commit();
  auto reused = recorder_trial_of(*space, 4, 3.0);
  reused.reused_from_run = 9;
  r.add(reused, 0.75, true);  // waits: no event yet
  auto first = sub.receive(std::chrono::milliseconds(2000));
  REQUIRE(first);
  CHECK((*first)["type"] == "trial_finished");
  CHECK((*first)["seq"] == 0);
  CHECK((*first)["elapsed_s"] == 0.5);
  CHECK((*first)["reused_from_run"].is_null());
  auto best = sub.receive(std::chrono::milliseconds(2000));
  REQUIRE(best);
  CHECK((*best)["type"] == "new_best");
  CHECK_FALSE(sub.receive(std::chrono::milliseconds(300)));
  CHECK(r.commit() == 1);
  auto second = sub.receive(std::chrono::milliseconds(2000));
  REQUIRE(second);
  CHECK((*second)["type"] == "trial_finished");
  CHECK((*second)["seq"] == 1);
  CHECK((*second)["reused_from_run"] == 9);
  auto second_best = sub.receive(std::chrono::milliseconds(2000));
  REQUIRE(second_best);
  CHECK((*second_best)["type"] == "new_best");
  CHECK((*second_best)["seq"] == 1);
  r.finished(end_reason::stopped, 2, nullptr, 1.0);
  auto done = sub.receive(std::chrono::milliseconds(2000));
  REQUIRE(done);
  CHECK((*done)["type"] == "run_finished");
  CHECK((*done)["reason"] == "stopped");
  CHECK((*done)["best_config"].is_null());
}

TEST_CASE("run recorder: runs in turn publish on one given publisher, which outlives them", "[storage][recorder]") {
  tune::test::scratch_dir dir("recorder-shared");
  auto space = grid_space();
  auto publisher = std::make_shared<event_publisher>("tcp://127.0.0.1:*");
  event_subscriber sub(publisher->endpoint());
  REQUIRE(publisher->wait_for_subscribers(1, std::chrono::seconds(10)) == 1);
  for (std::uint64_t seed : {1, 2}) {
    auto o = options_for(dir / "r.db", space, 0.0);
    o.spec.seed = seed;
    o.publisher = publisher;
    o.publish_endpoint = "tcp://256.0.0.1:1";  // unused beside a publisher: not bound, not refused
    run_recorder r(o);
    CHECK(r.endpoint() == publisher->endpoint());
    r.started();
    r.add(recorder_trial_of(*space, seed, 1.0), 0.1, false);
    r.commit();
    r.finished(end_reason::budget, 1, nullptr, 0.2);
  }
  std::vector<std::string> types;
  std::vector<std::int64_t> runs;
  while (auto e = sub.receive(std::chrono::milliseconds(types.size() < 6 ? 5000 : 200))) {
    types.push_back((*e)["type"]);
    if ((*e)["type"] == "run_started") runs.push_back((*e)["run_id"]);
  }
  CHECK(types == std::vector<std::string>{"run_started", "trial_finished", "run_finished", "run_started",
                                          "trial_finished", "run_finished"});
  REQUIRE(runs.size() == 2);
  CHECK(runs[0] != runs[1]);
  publisher->publish(make_event(progress_event{}));  // still bound after both recorders are gone
  auto after = sub.receive(std::chrono::milliseconds(5000));
  REQUIRE(after);
  CHECK((*after)["type"] == "progress");
}

TEST_CASE("run recorder: a group that cannot be committed records none of its trials and empties the queue",
          "[storage][recorder]") {
  tune::test::scratch_dir dir("recorder-fail");
  auto space = grid_space();
  run_recorder r(options_for(dir / "r.db", space, 3600.0));
  r.add(recorder_trial_of(*space, 1, 1.0), 0.0, false);
  r.commit();
  r.add(recorder_trial_of(*space, 2, 2.0), 0.0, false);
  auto bad = recorder_trial_of(*space, 3, 1.0);
  bad.objectives = {1.0, std::nan("")};  // refused by the database: objectives must be finite
  r.add(bad, 0.0, false);
  CHECK_THROWS_AS(r.commit(), std::invalid_argument);
  CHECK(r.queued() == 0);
  CHECK(recorded_trials(dir / "r.db", r.run_id()) == 1);
  // The recorder goes on: a later group is recorded after the first.
  r.add(recorder_trial_of(*space, 4, 4.0), 0.0, false);
  CHECK(r.commit() == 1);
  CHECK(recorded_trials(dir / "r.db", r.run_id()) == 2);
}

TEST_CASE("run recorder: a stopped run is resumed and reopened, a finished one is not", "[storage][recorder]") {
  tune::test::scratch_dir dir("recorder-resume");
  auto space = grid_space();
  auto o = options_for(dir / "r.db", space, 0.0);
  std::int64_t first = 0;
  {
    run_recorder r(o);
    first = r.run_id();
    CHECK_FALSE(r.resumed());
    r.add(recorder_trial_of(*space, 1, 3.0), 0.0, true);
    r.add(recorder_trial_of(*space, 2, 2.0), 0.0, true);
    auto best = recorder_trial_of(*space, 2, 2.0);
    r.finished(end_reason::stopped, 2, &best, 0.5);  // commits what waits
  }
  {
    results_db reader(dir / "r.db", results_db::open_mode::read_only);
    CHECK(reader.find_run(first)->reason == end_reason::stopped);
  }
  o.resume = true;
  {
    run_recorder r(o);
    CHECK(r.resumed());
    CHECK(r.run_id() == first);
    REQUIRE(r.prior().size() == 2);
    CHECK(r.prior()[1].config_json == space->to_json(space->unflatten(2)));
    CHECK(r.prior()[1].time_ms == 2.0);
    {
      results_db reader(dir / "r.db", results_db::open_mode::read_only);
      CHECK(reader.find_run(first)->running());  // reopened
    }
    r.finished(end_reason::budget, 2, nullptr, 0.5);
  }
  // Nothing resumable left: a new run.
  run_recorder fresh(o);
  CHECK_FALSE(fresh.resumed());
  CHECK(fresh.run_id() != first);
  // The earlier run's measurements are offered, this run's own are not.
  const auto* hit = fresh.cached(space->to_json(space->unflatten(2)));
  REQUIRE(hit);
  CHECK(hit->run_id == first);
  CHECK(hit->time_ms == 2.0);
  CHECK_FALSE(fresh.cached(space->to_json(space->unflatten(5))));
}

TEST_CASE("run recorder: a run another recorder continues is refused, naming the options as the embedder does",
          "[storage][recorder]") {
  tune::test::scratch_dir dir("recorder-claim");
  auto space = grid_space();
  auto o = options_for(dir / "r.db", space, 0.0);
  run_recorder holder(o);
  o.resume = true;
  o.option_names = {{"resume", "--resume"}, {"seed", "--seed"}};
  try {
    run_recorder second(o);
    FAIL("the run was claimed twice");
  } catch (const std::invalid_argument& e) {
    CHECK_THAT(e.what(), Catch::Matchers::Contains("being continued by another") &&
                             Catch::Matchers::Contains("without --resume") &&
                             Catch::Matchers::Contains("another --seed"));
  }
  o.option_names.clear();
  CHECK_THROWS_WITH(run_recorder(o), Catch::Matchers::Contains("without resume"));
}
