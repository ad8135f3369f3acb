#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "actors/scratch_dir.hpp"
#include "tune/kernels/replay.hpp"
#include "tune/storage/export.hpp"
#include "tune/storage/results_db.hpp"

using namespace tune::storage;
using Catch::Matchers::Contains;
using tune::status;

namespace {

/// tile: factorizations of 8 into 2 parts; block: 4 numbers; layout: 2 strings.
tune::search_space test_space() {
  return tune::search_space({tune::make_factorization_parameter("tile", 8, 2),
                             tune::make_discrete_parameter("block", {16, 32, 64, 128}),
                             tune::make_categorical_parameter("layout", {std::string("row"), std::string("col")})});
}

std::string export_config(const tune::search_space& space, std::vector<std::int64_t> tile, double block,
                          const std::string& layout) {
  return space.to_json(space.from_values({{"tile", tile}, {"block", block}, {"layout", layout}}));
}

trial_record export_trial_of(std::string config_json, status state, double time_ms = std::nan("")) {
  trial_record t;
  t.config_json = std::move(config_json);
  t.state = state;
  t.time_ms = time_ms;
  t.compile_s = 0.25;
  t.run_s = 0.5;
  t.device = "sim0";
  return t;
}

struct recorded_run {
  std::int64_t id = 0;
  std::size_t trials = 0;
  std::size_t ok = 0;
  double best_ms = 0.0;
};

/// Seven trials of every kind of outcome; the best is tile [2, 4], block 64, col at 1.25 ms.
/// Block 128 is in the space but no trial used it.
recorded_run record(results_db& db, bool with_space) {
  auto space = test_space();
  std::string options = R"({"budget": 7})";
  if (with_space) options = with_space_description(options, space);
  recorded_run run;
  run.id = db.create_run({"conv:test", "random", 3, options, "replay:sim"});
  std::vector<trial_record> trials = {
      export_trial_of(export_config(space, {1, 8}, 16, "row"), status::ok, 4.0),
      export_trial_of(export_config(space, {2, 4}, 64, "col"), status::ok, 1.25),
      export_trial_of(export_config(space, {8, 1}, 32, "row"), status::compile_error),
      export_trial_of(export_config(space, {4, 2}, 16, "col"), status::runtime_error),
      export_trial_of(export_config(space, {2, 4}, 16, "row"), status::instantiation_error),
      export_trial_of(export_config(space, {1, 8}, 64, "col"), status::run_timeout),
      export_trial_of(export_config(space, {4, 2}, 32, "row"), status::ok, 2.0),
  };
  for (const auto& t : trials) db.record_trial(run.id, t);
  run.trials = trials.size();
  run.ok = 3;
  run.best_ms = 1.25;
  return run;
}

std::size_t ok_count(const tune::replay_dataset& dataset) {
  std::size_t ok = 0;
  for (const auto& r : dataset.records) ok += r.state == status::ok;
  return ok;
}

/// The value of `name` in the dataset's fastest configuration.
tune::parameter_value best_value(const tune::replay_dataset& dataset, const std::string& name) {
  std::size_t best = 0;
  for (std::size_t i = 0; i < dataset.records.size(); ++i)
    if (dataset.records[i].state == status::ok &&
        (dataset.records[best].state != status::ok || dataset.records[i].time_ms < dataset.records[best].time_ms))
      best = i;
  for (const auto& [param, value] : dataset.space->values(dataset.configs[best]))
    if (param == name) return value;
  FAIL("no parameter " << name);
  return 0.0;
}

std::uint64_t cardinality(const tune::replay_dataset& dataset, const std::string& name) {
  return dataset.space->parameters()[*dataset.space->find(name)]->cardinality();
}

status status_of(const tune::replay_dataset& dataset, const std::map<std::string, tune::parameter_value>& values) {
  const auto* record = dataset.find(dataset.space->from_values(values));
  REQUIRE(record != nullptr);
  return record->state;
}

}  // namespace

TEST_CASE("export: a run written as a Kernel Tuner cache and as T4 reads back with the same best and counts",
          "[storage]") {
  tune::test::scratch_dir dir("tune-test-export");
  results_db db(dir / "results.db");
  auto run = record(db, true);

  for (auto format : {export_format::kernel_tuner, export_format::t4}) {
    INFO("format " << to_string(format));
    auto file = dir / (std::string(to_string(format)) + ".json");
    write_export(export_run(db, run.id, format), file);
    auto dataset = tune::read_replay_dataset(file.string());

    CHECK(dataset.format == (format == export_format::t4 ? "t4" : "kernel_tuner"));
    CHECK(dataset.configs.size() == run.trials);
    CHECK(ok_count(dataset) == run.ok);
    CHECK(dataset.best_time_ms() == Approx(run.best_ms));
    CHECK(best_value(dataset, "tile_0") == tune::parameter_value(2.0));
    CHECK(best_value(dataset, "tile_1") == tune::parameter_value(4.0));
    CHECK(best_value(dataset, "block") == tune::parameter_value(64.0));
    CHECK(best_value(dataset, "layout") == tune::parameter_value(std::string("col")));
    // The space travels with the file: 128 was never measured, and a
    // factorization part takes every divisor of 8.
    CHECK(cardinality(dataset, "block") == 4);
    CHECK(cardinality(dataset, "tile_0") == 4);
    CHECK(dataset.space->parameters()[0]->name() == "tile_0");
    // Recorded times of the simulated clock.
    const auto* best = dataset.find(dataset.space->from_values(
        {{"tile_0", 2.0}, {"tile_1", 4.0}, {"block", 64.0}, {"layout", std::string("col")}}));
    REQUIRE(best != nullptr);
    CHECK(best->compile_s == Approx(0.25));
  }
}

TEST_CASE("export: failed trials keep the kind of failure each format can say", "[storage]") {
  tune::test::scratch_dir dir("tune-test-export-status");
  results_db db(dir / "results.db");
  auto run = record(db, true);
  auto kernel_tuner = export_run(db, run.id, export_format::kernel_tuner);
  CHECK(kernel_tuner["cache"]["8,1,32,row"]["time"] == "CompilationFailedConfig");
  CHECK(kernel_tuner["cache"]["4,2,16,col"]["time"] == "RuntimeFailedConfig");
  CHECK(kernel_tuner["cache"]["2,4,16,row"]["time"] == "InvalidConfig");
  CHECK(kernel_tuner["cache"]["2,4,64,col"]["time"] == 1.25);
  CHECK(kernel_tuner["cache"]["2,4,64,col"]["benchmark_time"] == 500.0);
  CHECK(kernel_tuner["tune_params"]["block"] == nlohmann::json({16, 32, 64, 128}));
  CHECK(kernel_tuner["tune_params_keys"] == nlohmann::json({"tile_0", "tile_1", "block", "layout"}));
  CHECK(kernel_tuner["tune_engine"]["run_id"] == run.id);

  write_export(export_run(db, run.id, export_format::t4), dir / "t4.json");
  auto t4 = tune::read_replay_dataset((dir / "t4.json").string());
  auto row = [](std::int64_t a, std::int64_t b, double block, const char* layout) {
    return std::map<std::string, tune::parameter_value>{
        {"tile_0", double(a)}, {"tile_1", double(b)}, {"block", block}, {"layout", std::string(layout)}};
  };
  CHECK(status_of(t4, row(8, 1, 32, "row")) == status::compile_error);
  CHECK(status_of(t4, row(4, 2, 16, "col")) == status::runtime_error);
  CHECK(status_of(t4, row(2, 4, 16, "row")) == status::instantiation_error);
  CHECK(status_of(t4, row(1, 8, 64, "col")) == status::run_timeout);
}

TEST_CASE("export: a run recorded without its space exports the values its trials used", "[storage]") {
  tune::test::scratch_dir dir("tune-test-export-nospace");
  results_db db(dir / "results.db");
  auto run = record(db, false);
  write_export(export_run(db, run.id, export_format::kernel_tuner), dir / "kt.json");
  auto dataset = tune::read_replay_dataset((dir / "kt.json").string());
  CHECK(dataset.configs.size() == run.trials);
  CHECK(dataset.best_time_ms() == Approx(run.best_ms));
  CHECK(cardinality(dataset, "block") == 3);  // 128 was never used
}

TEST_CASE("export: describe_space records every value of every parameter", "[storage]") {
  auto described = describe_space(test_space());
  REQUIRE(described["parameters"].size() == 3);
  CHECK(described["parameters"][0]["name"] == "tile");
  CHECK(described["parameters"][0]["kind"] == "factorization");
  CHECK(described["parameters"][0]["values"].size() == 4);
  CHECK(described["parameters"][1]["values"] == nlohmann::json({16, 32, 64, 128}));
  CHECK(described["parameters"][2]["values"] == nlohmann::json({"row", "col"}));
  CHECK(nlohmann::json::parse(with_space_description(R"({"budget": 3})", test_space()))["budget"] == 3);
  CHECK_THROWS_WITH(with_space_description("[]", test_space()), Contains("JSON object"));
}

TEST_CASE("export: unknown run, empty run, trials outside the space and unwritable files are refused", "[storage]") {
  tune::test::scratch_dir dir("tune-test-export-bad");
  results_db db(dir / "results.db");
  auto run = record(db, true);
  CHECK_THROWS_WITH(export_run(db, 99, export_format::t4), Contains("has no run 99"));

  auto empty = db.create_run({"conv:test", "random", 4, "{}", "replay:sim"});
  CHECK_THROWS_WITH(export_run(db, empty, export_format::t4), Contains("nothing to export"));

  // The recorded space says block is 16 … 128; a trial at 8 cannot be written.
  auto space = test_space();
  auto odd = db.create_run({"conv:test", "random", 5, with_space_description("{}", space), "replay:sim"});
  db.record_trial(odd, export_trial_of(R"({"tile": [1, 8], "block": 8, "layout": "row"})", status::ok, 1.0));
  CHECK_THROWS_WITH(export_run(db, odd, export_format::kernel_tuner), Contains("trial 0") &&
                                                                          Contains("value 8 of 'block'") &&
                                                                          Contains("not in the recorded search space"));

  auto document = export_run(db, run.id, export_format::t4);
  CHECK_THROWS_WITH(write_export(document, dir / "missing" / "out.json"),
                    Contains("missing/out.json") && Contains("directory"));
  CHECK(export_format_from_string("kernel-tuner") == export_format::kernel_tuner);
  CHECK_FALSE(export_format_from_string("csv"));
  CHECK(export_format_names() == std::vector<std::string>{"t4", "kernel-tuner"});
}
