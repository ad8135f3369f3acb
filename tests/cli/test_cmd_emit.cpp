// tune-engine emit: the best configuration of a task in a results database
// written as a header, a source and a flags file; a database without the task,
// a backend that cannot be compiled in and bad names exit 2 saying what to do.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "actors/scratch_dir.hpp"
#include "cli/cli_process.hpp"
#include "tune/kernels/task.hpp"
#include "tune/storage/results_db.hpp"

using Catch::Matchers::Contains;
using tune::test::cli_process;

namespace {

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// matmul:16x32x64 on the cpu: two ok trials (the second faster) and a
/// conv2d run whose only trial failed.
std::string fill(const std::filesystem::path& file) {
  auto program = tune::make_cpu_task_program(tune::parse_task("matmul:16x32x64"));
  tune::rng_type rng(5);
  auto slow = program->space->to_json(*program->space->draw_valid(rng));
  auto fast = program->space->to_json(*program->space->draw_valid(rng));
  tune::storage::results_db db(file);
  auto run = db.create_run({program->key, "random", 4, "{}", "cpu:test"});
  tune::storage::trial_record trial;
  trial.state = tune::status::ok;
  trial.config_json = slow;
  trial.time_ms = 0.5;
  db.record_trial(run, trial);
  trial.config_json = fast;
  trial.time_ms = 0.125;
  db.record_trial(run, trial);
  auto conv = db.create_run({"conv2d:1x4x8x8:4x3x3:s1:p0:cpu", "random", 4, "{}", "cpu:test"});
  trial.state = tune::status::compile_error;
  db.record_trial(conv, trial);
  return fast;
}

}  // namespace

TEST_CASE("emit writes the best configuration as header, source and flags", "[cli]") {
  tune::test::scratch_dir dir("tune-test-cli-emit");
  const auto db = (dir / "results.db").string();
  auto fast = fill(db);

  cli_process emit({"emit", "--db", db, "--task", "matmul:16x32x64", "--name", "mm", "--header",
                    (dir / "mm.hpp").string(), "--source", (dir / "mm.cpp").string(), "--flags",
                    (dir / "mm.flags").string()});
  REQUIRE(emit.wait() == 0);
  CHECK_THAT(emit.out(), Contains("matmul:16x32x64:cpu at 0.125 ms (run 1, trial 1)"));
  auto header = read_text(dir / "mm.hpp");
  CHECK_THAT(header, Contains("namespace mm {") && Contains("R\"tune(" + fast + ")tune\"") &&
                         Contains("constexpr double tuned_time_ms = 0.125;") &&
                         Contains("from results.db: run 1 (random, seed 4), trial 1 of 2, on cpu:test"));
  CHECK_THAT(read_text(dir / "mm.cpp"), Contains("#define TUNE_ENGINE_IMPLEMENT_mm\n#include \"mm.hpp\"\n"));
  CHECK_THAT(read_text(dir / "mm.flags"), Contains("-march=native\n"));
}

TEST_CASE("emit says how to get a task the database does not hold", "[cli]") {
  tune::test::scratch_dir dir("tune-test-cli-emit-bad");
  const auto db = (dir / "results.db").string();
  fill(db);
  auto header = (dir / "mm.hpp").string();

  cli_process missing({"emit", "--db", db, "--task", "matmul:32x32x32", "--name", "mm", "--header", header});
  CHECK(missing.wait() == 2);
  CHECK_THAT(missing.err(), Contains("results DB " + db + " has no runs of task 'matmul:32x32x32:cpu'") &&
                                Contains("(--task matmul:32x32x32 --backend cpu)") &&
                                Contains("tune it first with 'tune-engine tune --task matmul:32x32x32 --db " + db) &&
                                Contains("matmul:16x32x64:cpu"));
  CHECK_FALSE(std::filesystem::exists(header));

  cli_process failed({"emit", "--db", db, "--task", "conv2d:1x4x8x8:4x3x3", "--name", "conv", "--header", header});
  CHECK(failed.wait() == 1);
  CHECK_THAT(failed.err(), Contains("has 1 trials and none succeeded"));

  cli_process cuda(
      {"emit", "--db", db, "--task", "matmul:16x32x64", "--backend", "cuda", "--name", "mm", "--header", header});
  CHECK(cuda.wait() == 2);
  CHECK_THAT(cuda.err(), Contains("--backend cuda: emit writes CPU kernels only"));

  cli_process name({"emit", "--db", db, "--task", "matmul:16x32x64", "--name", "my-mm", "--header", header});
  CHECK(name.wait() == 2);
  CHECK_THAT(name.err(), Contains("kernel name 'my-mm' is not a C identifier"));

  cli_process task({"emit", "--db", db, "--task", "matmul:16x32", "--name", "mm", "--header", header});
  CHECK(task.wait() == 2);
  CHECK_THAT(task.err(), Contains("expected matmul:NxKxM"));

  cli_process no_db(
      {"emit", "--db", (dir / "none.db").string(), "--task", "matmul:16x32x64", "--name", "mm", "--header", header});
  CHECK(no_db.wait() == 2);
  CHECK_THAT(no_db.err(), Contains("none.db") && Contains("does not exist"));
}
