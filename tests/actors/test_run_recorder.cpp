// The run recorder: trials queued, committed in groups, events after the
// commit, a failed commit recording none of its group.
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <thread>

#include "actors/pipeline_fixtures.hpp"
#include "actors/scratch_dir.hpp"
#include "tune/actors/run_recorder.hpp"
#include "tune/storage/event_stream.hpp"

using namespace tune;
using namespace tune::actors;

namespace {

recorder_options options_for(const std::filesystem::path& db, search_space_ptr space, double interval_s) {
  recorder_options o;
  o.db_path = db.string();
  o.spec.task_key = "grid";
  o.spec.strategy = "random";
  o.spec.seed = 1;
  o.space = std::move(space);
  storage::device_spec device;
  device.id = 0;
  device.name = "sim0";
  o.devices = {device};
  o.commit_interval_s = interval_s;
  return o;
}

measured_trial trial_of(const search_space& space, std::uint64_t flat, double time_ms) {
  measured_trial t;
  t.id = flat;
  t.config = space.unflatten(flat);
  t.state = status::ok;
  t.time_ms = time_ms;
  t.device = 0;
  return t;
}

std::size_t recorded(const std::filesystem::path& db, std::int64_t run) {
  storage::results_db reader(db, storage::results_db::open_mode::read_only);
  return reader.trials(run).size();
}

}  // namespace

TEST_CASE("run recorder: trials within the commit interval wait and are committed together, in order",
          "[actors][recorder]") {
  tune::test::scratch_dir dir("recorder-group");
  auto space = tune::testing::grid_space();
  run_recorder r(options_for(dir / "r.db", space, 3600.0));
  // Nothing was committed yet: the first trial is due at once.
  r.add(trial_of(*space, 3, 1.5), true);
  CHECK(r.commit_due());
  CHECK(r.commit() == 1);
  CHECK(recorded(dir / "r.db", r.run_id()) == 1);
  // Within the interval: queued, not due, not in the database.
  r.add(trial_of(*space, 5, 2.5), false);
  r.add(trial_of(*space, 7, 0.5), true);
  CHECK_FALSE(r.commit_due());
  CHECK(r.queued() == 2);
  CHECK(recorded(dir / "r.db", r.run_id()) == 1);
  CHECK(r.commit() == 2);
  CHECK(r.queued() == 0);
  CHECK(r.commit() == 0);  // nothing waits
  storage::results_db reader(dir / "r.db", storage::results_db::open_mode::read_only);
  auto rows = reader.trials(r.run_id());
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].config_json == space->to_json(space->unflatten(3)));
  CHECK(rows[1].config_json == space->to_json(space->unflatten(5)));
  CHECK(rows[2].config_json == space->to_json(space->unflatten(7)));
  for (std::size_t i = 0; i < rows.size(); ++i) CHECK(rows[i].seq == static_cast<std::int64_t>(i));
  // Each keeps the time it was added, not the time of its group's commit.
  CHECK(rows[1].finished_at <= rows[2].finished_at);
}

TEST_CASE("run recorder: with commits further apart than the interval each trial is due at once",
          "[actors][recorder]") {
  tune::test::scratch_dir dir("recorder-slow");
  auto space = tune::testing::grid_space();
  run_recorder r(options_for(dir / "r.db", space, 0.02));
  for (std::uint64_t flat : {1, 2, 3}) {
    r.add(trial_of(*space, flat, 1.0 + static_cast<double>(flat)), false);
    CHECK(r.commit_due());
    CHECK(r.commit() == 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
  }
  CHECK(recorded(dir / "r.db", r.run_id()) == 3);
}

TEST_CASE("run recorder: events are published once their group is committed", "[actors][recorder]") {
  tune::test::scratch_dir dir("recorder-events");
  auto space = tune::testing::grid_space();
  auto o = options_for(dir / "r.db", space, 3600.0);
  o.publish_endpoint = "tcp://127.0.0.1:*";
  run_recorder r(o);
  storage::event_subscriber sub(r.endpoint());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the subscription travels
  r.commit();
  r.add(trial_of(*space, 2, 4.0), true);
  r.commit();
  r.add(trial_of(*space, 4, 3.0), true);  // waits: no event yet
  auto first = sub.receive(std::chrono::milliseconds(2000));
  REQUIRE(first);
  CHECK((*first)["type"] == "trial_finished");
  CHECK((*first)["seq"] == 0);
  auto best = sub.receive(std::chrono::milliseconds(2000));
  REQUIRE(best);
  CHECK((*best)["type"] == "new_best");
  CHECK_FALSE(sub.receive(std::chrono::milliseconds(300)));
  CHECK(r.commit() == 1);
  auto second = sub.receive(std::chrono::milliseconds(2000));
  REQUIRE(second);
  CHECK((*second)["type"] == "trial_finished");
  CHECK((*second)["seq"] == 1);
}

TEST_CASE("run recorder: a group that cannot be committed records none of its trials and empties the queue",
          "[actors][recorder]") {
  tune::test::scratch_dir dir("recorder-fail");
  auto space = tune::testing::grid_space();
  run_recorder r(options_for(dir / "r.db", space, 3600.0));
  r.add(trial_of(*space, 1, 1.0), false);
  r.commit();
  r.add(trial_of(*space, 2, 2.0), false);
  auto bad = trial_of(*space, 3, 1.0);
  bad.objectives = {1.0, std::nan("")};  // refused by the database: objectives must be finite
  r.add(bad, false);
  CHECK_THROWS_AS(r.commit(), std::invalid_argument);
  CHECK(r.queued() == 0);
  CHECK(recorded(dir / "r.db", r.run_id()) == 1);
  // The recorder goes on: a later group is recorded after the first.
  r.add(trial_of(*space, 4, 4.0), false);
  CHECK(r.commit() == 1);
  CHECK(recorded(dir / "r.db", r.run_id()) == 2);
}
