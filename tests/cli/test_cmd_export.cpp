#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "actors/scratch_dir.hpp"
#include "cli/cli_process.hpp"
#include "tune/kernels/replay.hpp"
#include "tune/storage/results_db.hpp"

using Catch::Matchers::Contains;
using tune::test::cli_process;

namespace {

std::size_t ok_count(const tune::replay_dataset& dataset) {
  std::size_t ok = 0;
  for (const auto& r : dataset.records) ok += r.state == tune::status::ok;
  return ok;
}

/// The fastest configuration of the dataset as JSON {"name": value}.
nlohmann::json best_config(const tune::replay_dataset& dataset) {
  const auto times = dataset.sorted_ok_times();
  for (std::size_t i = 0; i < dataset.records.size(); ++i)
    if (dataset.records[i].state == tune::status::ok && dataset.records[i].time_ms == times.front())
      return nlohmann::json::parse(dataset.space->to_json(dataset.configs[i]));
  return nullptr;
}

}  // namespace

TEST_CASE("export: a replayed tune run exported as T4 and as a Kernel Tuner cache reads back with the same best",
          "[cli]") {
  tune::test::scratch_dir dir("tune-test-cli-export");
  const auto db_file = (dir / "results.db").string();
  cli_process tune({"tune", "--topology", std::string(TUNE_SOURCE_DIR) + "/examples/topology-replay.yaml", "--dataset",
                    std::string(TUNE_DATA_DIR) + "/replay/conv_a100_slice.json.gz", "--time-scale", "0.001",
                    "--strategy", "random", "--budget", "30", "--seed", "4", "--db", db_file, "--quiet"});
  REQUIRE(tune.wait() == 0);

  tune::storage::results_db db(db_file, tune::storage::results_db::open_mode::read_only);
  REQUIRE(db.runs().size() == 1);
  const auto run = db.runs().front();
  const auto trials = db.trials(run.id);
  REQUIRE(trials.size() == 30);
  std::size_t ok = 0;
  for (const auto& t : trials) ok += t.state == tune::status::ok;
  auto best = db.best(run.task_key);
  REQUIRE(best);
  REQUIRE(best->best);

  for (std::string format : {"t4", "kernel-tuner"}) {
    INFO("format " << format);
    const auto file = (dir / (format + ".json")).string();
    cli_process exporter({"export", "--db", db_file, "--format", format, "--out", file});
    REQUIRE(exporter.wait() == 0);
    CHECK_THAT(exporter.err(), Contains("exported run 1 (30 trials)"));
    auto dataset = tune::read_replay_dataset(file);
    CHECK(dataset.configs.size() == trials.size());
    CHECK(ok_count(dataset) == ok);
    CHECK(dataset.best_time_ms() == Approx(best->best->time_ms));
    CHECK(best_config(dataset) == nlohmann::json::parse(best->best->config_json));
    // The whole space of the replayed dataset travels with the run, not only
    // the 30 configurations measured.
    const auto& source = tune::read_replay_dataset(std::string(TUNE_DATA_DIR) + "/replay/conv_a100_slice.json.gz");
    for (std::size_t p = 0; p < source.space->dimension(); ++p)
      CHECK(dataset.space->parameters()[p]->cardinality() == source.space->parameters()[p]->cardinality());
  }

  cli_process to_stdout({"export", "--db", db_file, "--format", "t4"});
  REQUIRE(to_stdout.wait() == 0);
  CHECK(nlohmann::json::parse(to_stdout.out())["results"].size() == 30);
}

TEST_CASE("export: the latest run by default, and an unknown run or format exits with 2 and says what to give",
          "[cli]") {
  tune::test::scratch_dir dir("tune-test-cli-export-bad");
  const auto db_file = (dir / "results.db").string();
  {
    tune::storage::results_db db(db_file);
    for (std::uint64_t seed : {1, 2}) {
      auto run = db.create_run({"gemm/64", "random", seed, "{}", "replay:sim"});
      tune::storage::trial_record trial;
      trial.config_json = R"({"tile": 4})";
      trial.state = tune::status::ok;
      trial.time_ms = 1.5;
      db.record_trial(run, trial);
    }
  }

  cli_process latest({"export", "--db", db_file, "--format", "kernel-tuner"});
  REQUIRE(latest.wait() == 0);
  CHECK(nlohmann::json::parse(latest.out())["tune_engine"]["run_id"] == 2);

  cli_process unknown({"export", "--db", db_file, "--run", "9", "--format", "t4"});
  CHECK(unknown.wait() == 2);
  CHECK_THAT(unknown.err(), Contains("--run 9") && Contains("no such run") && Contains("latest, 2") &&
                                Contains("gemm/64 (random, seed 1"));

  cli_process format({"export", "--db", db_file, "--format", "csv"});
  CHECK(format.wait() == 2);
  CHECK_THAT(format.err(), Contains("--format") && Contains("kernel-tuner"));

  cli_process missing({"export", "--db", (dir / "absent.db").string(), "--format", "t4"});
  CHECK(missing.wait() == 2);
  CHECK_THAT(missing.err(), Contains("absent.db") && Contains("does not exist"));

  cli_process unwritable(
      {"export", "--db", db_file, "--format", "t4", "--out", (dir / "no-dir" / "out.json").string()});
  CHECK(unwritable.wait() == 2);
  CHECK_THAT(unwritable.err(), Contains("no-dir/out.json"));
}
