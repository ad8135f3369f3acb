// The measurement protocol and the CPU's frequency settings are recorded
// with a run, the protocol is the one the kernels are timed by, and a change
// of the settings since the task's last run is noted.
#include <catch2/catch.hpp>
#include <cstdlib>

#include "actors/scratch_dir.hpp"
#include "facade/small_task.hpp"
#include "report_detail.hpp"
#include "tune/storage/results_db.hpp"
#include "tune/tune.hpp"

using namespace tune;

TEST_CASE("machine note: a governor changed since the task's last run is named, other tasks are not", "[facade]") {
  tune::test::scratch_dir dir("facade-machine");
  auto path = (dir / "runs.db").string();
  cpu_frequency_state now{"performance", "on", ""};
  CHECK(detail::machine_change_note(path, "matmul:8x8x8", "cpu", now).empty());  // no file yet
  std::int64_t run = 0;
  {
    storage::results_db db(path);
    storage::run_spec spec;
    spec.task_key = "matmul:8x8x8";
    spec.strategy = "random";
    spec.device_kind = "cpu";
    spec.options_json = R"({"measurement": {"machine": {"governor": "powersave", "boost": "on", "max_khz": null}}})";
    run = db.create_run(spec);
    db.finish_run(run, end_reason::budget);
    spec.task_key = "matmul:16x16x16";
    spec.options_json = "{}";  // a run of before the protocol was recorded
    db.finish_run(db.create_run(spec), end_reason::budget);
  }
  CHECK(detail::machine_change_note(path, "matmul:8x8x8", "cpu", now) ==
        "since run " + std::to_string(run) +
            " of this task the CPU's frequency governor went from powersave to performance: times of the two runs "
            "are not comparable");
  CHECK(detail::machine_change_note(path, "matmul:8x8x8", "cpu", {"powersave", "on", ""}).empty());
  CHECK(detail::machine_change_note(path, "matmul:8x8x8", "gpu", now).empty());
  CHECK(detail::machine_change_note(path, "matmul:16x16x16", "cpu", now).empty());
  CHECK(detail::machine_change_note("", "matmul:8x8x8", "cpu", now).empty());
  CHECK(detail::frequency_json(now) ==
        nlohmann::json{{"governor", "performance"}, {"boost", "on"}, {"max_khz", nullptr}});
}

TEST_CASE("machine note: a task's run records its protocol and is timed by it", "[facade]") {
  tune::test::scratch_dir dir("facade-protocol");
  auto o = tune::test::small_task_options(dir.path(), 4, 2);
  o.db_path = (dir / "runs.db").string();
  o.early_stop = early_stop_policy::off();
  o.measurement = measurement_protocol{0.0, 2, 2};
  auto report = session(o).run();
  storage::results_db db(o.db_path, storage::results_db::open_mode::read_only);
  auto runs = db.runs();
  REQUIRE(runs.size() == 1);
  auto options = nlohmann::json::parse(runs[0].options_json);
  REQUIRE(options["measurement"].is_object());
  const auto& m = options["measurement"];
  CHECK(m["statistic"] == "median");
  CHECK(m["min_time_s"] == 0.0);
  CHECK(m["min_repeats"] == 2);
  CHECK(m["max_repeats"] == 2);
  CHECK(m["confirm"]["top"] == 0);
  CHECK(m["drift"]["every_trials"] == o.drift.every_trials);
  CHECK(m["machine"].contains("governor"));
  int ok = 0;
  for (const auto& t : db.trials(runs[0].id))
    if (t.ok()) {
      ++ok;
      CHECK(t.repeats == 2);
    }
  CHECK(ok > 0);
  CHECK(report.machine_note.empty());  // the first run of its task
}
