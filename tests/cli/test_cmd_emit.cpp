// tune-engine emit: the best configuration of a task in a results database
// written as a header, a source and a flags file; a database without the task,
// a backend that cannot be compiled in and bad names exit 2 saying what to do.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "actors/scratch_dir.hpp"
#include "cli/cli_process.hpp"
#include "tune/kernels/task.hpp"
#include "tune/kernels/tuned_kernel.hpp"
#include "tune/storage/results_db.hpp"

using Catch::Matchers::Contains;
using tune::test::cli_process;

namespace {

std::string read_emitted(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// matmul:16x32x64 on the cpu: two ok trials (the second faster) and a
/// conv2d run whose only trial failed.
std::string fill_emit_db(const std::filesystem::path& file) {
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
  auto fast = fill_emit_db(db);

  cli_process emit({"emit", "--db", db, "--task", "matmul:16x32x64", "--name", "mm", "--header",
                    (dir / "mm.hpp").string(), "--source", (dir / "mm.cpp").string(), "--flags",
                    (dir / "mm.flags").string()});
  REQUIRE(emit.wait() == 0);
  CHECK_THAT(emit.out(), Contains("matmul:16x32x64:cpu at 0.125 ms (run 1, trial 1)"));
  auto header = read_emitted(dir / "mm.hpp");
  CHECK_THAT(header, Contains("namespace mm {") && Contains("R\"tune(" + fast + ")tune\"") &&
                         Contains("constexpr double tuned_time_ms = 0.125;") &&
                         Contains("from results.db: run 1 (random, seed 4), trial 1 of 2, on cpu:test"));
  CHECK_THAT(read_emitted(dir / "mm.cpp"), Contains("#define TUNE_ENGINE_IMPLEMENT_mm\n#include \"mm.hpp\"\n"));
  CHECK_THAT(read_emitted(dir / "mm.flags"), Contains("-march=native\n"));
}

TEST_CASE("emit writes a GPU kernel as its source and a launch that fits the configuration", "[cli]") {
  tune::test::scratch_dir dir("tune-test-cli-emit-gpu");
  const auto db = (dir / "results.db").string();
  auto task = tune::parse_task("bmm:4x64x32x128:tn");
  auto program = tune::make_gpu_task_program(task, "cuda");
  tune::rng_type rng(11);
  auto config = program->space->draw_valid(rng);
  REQUIRE(program->check(*config).empty());  // the limits are constraints of the space
  auto config_json = program->space->to_json(*config);
  {
    tune::storage::results_db results(db);
    auto run = results.create_run({program->key, "random", 2, "{}", "cuda:sm_90:NVRTC 13.0"});
    tune::storage::trial_record trial;
    trial.state = tune::status::ok;
    trial.config_json = config_json;
    trial.time_ms = 0.25;
    results.record_trial(run, trial);
  }
  cli_process emit({"emit", "--db", db, "--task", "bmm:4x64x32x128:tn", "--backend", "cuda", "--name", "bmm",
                    "--source", (dir / "bmm.cu").string(), "--launch", (dir / "bmm.json").string()});
  REQUIRE(emit.wait() == 0);
  CHECK_THAT(emit.out(), Contains("bmm:4x64x32x128:tn:cuda at 0.25 ms (run 1, trial 0) written to"));
  auto source = read_emitted(dir / "bmm.cu");
  CHECK_THAT(source, Contains("extern \"C\" __global__") && Contains("tune_kernel(") &&
                         Contains("from results.db: run 1 (random, seed 2), trial 0 of 1, on cuda:sm_90:NVRTC 13.0"));
  CHECK(source.find(program->source(*config)) != std::string::npos);
  auto launch = nlohmann::json::parse(read_emitted(dir / "bmm.json"));
  auto geometry = program->geometry(*config);
  CHECK(launch["entry"] == "tune_kernel");
  CHECK(launch["operator"] == "bmm");
  CHECK(launch["shape"]["batch"] == 4);
  CHECK(launch["shape"]["n"] == 64);
  CHECK(launch["shape"]["k"] == 32);
  CHECK(launch["shape"]["m"] == 128);
  CHECK(launch["shape"]["transpose_a"] == true);
  CHECK(launch["shape"]["transpose_b"] == false);
  for (int i = 0; i < 3; ++i) {
    CHECK(launch["grid"][i] == geometry.grid[i]);
    CHECK(launch["block"][i] == geometry.block[i]);
  }
  REQUIRE(launch["arguments"].size() == 3);
  CHECK(launch["arguments"][0]["name"] == "C");
  CHECK(launch["arguments"][0]["output"] == true);
  CHECK(launch["arguments"][0]["elements"] == 4 * 64 * 128);
  CHECK(launch["arguments"][2]["elements"] == 4 * 32 * 128);
  CHECK(launch["flops"] == 2.0 * 4 * 64 * 32 * 128);
  CHECK(launch["time_ms"] == 0.25);
  CHECK(launch["configuration"] == nlohmann::json::parse(config_json));

  cli_process header({"emit", "--db", db, "--task", "bmm:4x64x32x128:tn", "--backend", "cuda", "--name", "bmm",
                      "--header", (dir / "bmm.hpp").string(), "--source", (dir / "bmm.cu").string(), "--launch",
                      (dir / "bmm.json").string()});
  CHECK(header.wait() == 2);
  CHECK_THAT(header.err(), Contains("(not --header or --flags)"));
}

TEST_CASE("emit says how to get a task the database does not hold", "[cli]") {
  tune::test::scratch_dir dir("tune-test-cli-emit-bad");
  const auto db = (dir / "results.db").string();
  fill_emit_db(db);
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
  CHECK_THAT(cuda.err(), Contains("--backend cuda: a GPU kernel is emitted as its source and its launch; give "
                                  "--source FILE.cu and --launch FILE.json"));

  cli_process other({"emit", "--db", db, "--task", "matmul:16x32x64", "--backend", "tpu", "--name", "mm"});
  CHECK(other.wait() == 2);
  CHECK_THAT(other.err(), Contains("--backend tpu: emit writes kernels of the cpu, cuda and hip backends"));

  cli_process no_header({"emit", "--db", db, "--task", "matmul:16x32x64", "--name", "mm"});
  CHECK(no_header.wait() == 2);
  CHECK_THAT(no_header.err(), Contains("--backend cpu: a CPU kernel is emitted as a C++ header; give --header"));

  cli_process cpu_db_for_cuda({"emit", "--db", db, "--task", "matmul:16x32x64", "--backend", "cuda", "--name", "mm",
                               "--source", (dir / "mm.cu").string(), "--launch", (dir / "mm.json").string()});
  CHECK(cpu_db_for_cuda.wait() == 2);
  CHECK_THAT(cpu_db_for_cuda.err(), Contains("has no runs of task 'matmul:16x32x64:cuda'"));

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
