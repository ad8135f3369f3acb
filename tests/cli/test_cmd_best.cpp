#include <sqlite3.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>

#include "actors/scratch_dir.hpp"
#include "cli/cli_process.hpp"
#include "tune/storage/results_db.hpp"

using namespace tune::storage;
using Catch::Matchers::Contains;
using tune::test::cli_process;

namespace {

trial_record trial_of(int tile, tune::status state, double time_ms = std::nan(""), const std::string& device = "sim0") {
  trial_record t;
  t.config_json = "{\"tile\":" + std::to_string(tile) + "}";
  t.state = state;
  t.time_ms = time_ms;
  t.compile_s = 0.2;
  t.run_s = 0.1;
  t.device = device;
  return t;
}

/// Two tasks: gemm (two runs, best 1.5 ms on sim2 in the second run) and conv
/// (no successful trial).
void fill(const std::filesystem::path& file) {
  results_db db(file);
  auto a = db.create_run({"gemm/512", "random", 1, "{}", "replay:t4"});
  db.record_trial(a, trial_of(1, tune::status::ok, 4.0));
  db.record_trial(a, trial_of(2, tune::status::compile_error));
  auto b = db.create_run({"gemm/512", "opevo", 9, "{}", "replay:t4"});
  db.record_trial(b, trial_of(3, tune::status::ok, 2.5));
  db.record_trial(b, trial_of(4, tune::status::ok, 1.5, "sim2"));
  auto c = db.create_run({"conv/3x3", "random", 1, "{}", "cpu"});
  db.record_trial(c, trial_of(1, tune::status::runtime_error));
}

}  // namespace

TEST_CASE("best prints the best configuration of a task as JSON and text", "[cli]") {
  tune::test::scratch_dir dir("tune-test-cli-best");
  const auto file = (dir / "results.db").string();
  fill(file);

  cli_process json({"best", "--db", file, "--task", "gemm/512", "--json"});
  REQUIRE(json.wait() == 0);
  auto out = nlohmann::json::parse(json.out());
  CHECK(out["task"] == "gemm/512");
  CHECK(out["runs"] == 2);
  CHECK(out["trials"] == 4);
  CHECK(out["ok_trials"] == 3);
  CHECK(out["best"]["time_ms"].get<double>() == Approx(1.5));
  CHECK(out["best"]["config"] == nlohmann::json{{"tile", 4}});
  CHECK(out["best"]["run_id"] == 2);
  CHECK(out["best"]["seq"] == 1);
  CHECK(out["best"]["device"] == "sim2");
  CHECK(out["best"]["strategy"] == "opevo");
  CHECK(out["best"]["seed"] == 9);

  cli_process text({"best", "--db", file, "--task", "gemm/512"});
  REQUIRE(text.wait() == 0);
  CHECK_THAT(text.out(), Contains("1.5 ms") && Contains("{\"tile\":4}") && Contains("run 2 (strategy opevo, seed 9)") &&
                             Contains("4 in 2 runs (3 ok)"));
}

TEST_CASE("best picks the only task and lists the tasks when ambiguous", "[cli]") {
  tune::test::scratch_dir dir("tune-test-cli-best-tasks");
  const auto file = (dir / "results.db").string();
  fill(file);

  cli_process ambiguous({"best", "--db", file});
  CHECK(ambiguous.wait() == 2);
  CHECK_THAT(ambiguous.err(),
             Contains("2 tasks") && Contains("--task") && Contains("gemm/512") && Contains("conv/3x3"));

  cli_process unknown({"best", "--db", file, "--task", "fft/8"});
  CHECK(unknown.wait() == 2);
  CHECK_THAT(unknown.err(), Contains("no runs of task 'fft/8'") && Contains("gemm/512"));

  cli_process no_ok({"best", "--db", file, "--task", "conv/3x3", "--json"});
  CHECK(no_ok.wait() == 1);
  CHECK(nlohmann::json::parse(no_ok.out())["best"].is_null());
  CHECK_THAT(no_ok.err(), Contains("no successful trial"));

  const auto single = (dir / "single.db").string();
  {
    results_db db(single);
    auto run = db.create_run({"gemm/64", "random", 3, "{}", "cpu"});
    db.record_trial(run, trial_of(8, tune::status::ok, 0.25));
  }
  cli_process only({"best", "--db", single, "--json"});
  REQUIRE(only.wait() == 0);
  CHECK(nlohmann::json::parse(only.out())["task"] == "gemm/64");
}

TEST_CASE("best reports bad databases clearly", "[cli]") {
  tune::test::scratch_dir dir("tune-test-cli-best-bad");
  cli_process missing({"best", "--db", (dir / "none.db").string()});
  CHECK(missing.wait() == 2);
  CHECK_THAT(missing.err(), Contains("none.db") && Contains("does not exist"));
  CHECK_FALSE(std::filesystem::exists(dir / "none.db"));

  cli_process no_db({"best"});
  CHECK(no_db.wait() == 2);
  CHECK_THAT(no_db.err(), Contains("--db"));

  const auto file = (dir / "results.db").string();
  fill(file);
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open(file.c_str(), &raw) == SQLITE_OK);
  REQUIRE(sqlite3_exec(raw, "UPDATE trials SET config = 'garbage' WHERE time_ms = 1.5", nullptr, nullptr, nullptr) ==
          SQLITE_OK);
  sqlite3_close(raw);
  cli_process corrupt({"best", "--db", file, "--task", "gemm/512"});
  CHECK(corrupt.wait() == 1);
  CHECK_THAT(corrupt.err(), Contains(file) && Contains("table trials") && Contains("row id 4") && Contains("config"));
}
