// The HIP templates compile offline with hipcc into AMD code objects for two
// offload archs (no GPU needed), device compile errors and overrunning
// compiles are statuses, and running without an AMD GPU says so plainly; on a
// machine with an AMD GPU the kernels run and are checked. Without hipcc at
// build time the hip backend is refused and the compile and GPU tests are
// reported as skipped; so is the GPU test without an AMD GPU, and the no-GPU
// test on a machine that has one.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "kernel_fixtures.hpp"
#include "resident_channel.hpp"
#include "skip.hpp"
#include "tune/kernels/cpu_backend.hpp"
#include "tune/kernels/devices.hpp"
#include "tune/kernels/task.hpp"

#ifdef TUNE_WITH_HIP
#include "tune/kernels/hip_backend.hpp"
#endif

using tune::status;

#ifdef TUNE_WITH_HIP

namespace {

std::string read_hip_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// The small tasks the GPU test measures: odd sizes, batched layouts, a
/// strided padded convolution.
const char* const small_hip_tasks[] = {"matmul:128x256x192", "bmm:8x64x32x48:nn", "bmm:8x64x32x48:tn",
                                       "bmm:8x64x32x48:nt", "conv2d:2x3x31x31:16x5x5:s2:p1"};

bool runtime_sees_a_gpu() {
  for (const auto& b : tune::list_devices())
    if (b.backend == "hip") return b.available;
  return false;
}

// A matmul:64x64x64 configuration within every limit (16 x 16 threads,
// 8 KiB of shared memory), built by a fresh backend.
struct small_matmul {
  tune::backend_ptr backend;
  tune::configuration config;
  tune::build_result built;

  explicit small_matmul(const tune::task_backend_options& options)
      : backend(tune::make_task_backend("matmul:64x64x64", "hip", options)),
        config(backend->space()->from_values({{"K", std::vector<std::int64_t>{1, 8, 8}},
                                              {"X", std::vector<std::int64_t>{4, 1, 16, 1}},
                                              {"Y", std::vector<std::int64_t>{4, 1, 16, 1}}})) {}

  /// Builds the configuration (kept in `built`) and says whether it built.
  bool build(double timeout_s = 120.0) {
    built = backend->build(config, timeout_s);
    return built.state == status::ok;
  }
};

// A one-parameter HIP program whose source the test chooses.
tune::kernel_program_ptr hand_written_program(const std::string& source) {
  auto program = std::make_shared<tune::kernel_program>();
  program->key = "hand-written:hip";
  program->space = std::make_shared<tune::search_space>(
      std::vector<tune::parameter_ptr>{tune::make_discrete_parameter("scale", {2, 3})}, "test");
  program->source = [source](const tune::configuration&) { return source; };
  program->check = [](const tune::configuration&) { return std::string(); };
  program->geometry = [](const tune::configuration&) { return tune::launch_geometry{}; };
  program->entry = "tune_kernel";
  program->arguments = {tune::float_array_argument("out", 64, true)};
  return program;
}

}  // namespace

TEST_CASE("every HIP template compiles into a code object for gfx908 and gfx90a", "[kernels][hip]") {
  tune::test::kernel_scratch scratch("hip");
  int seed = 0;
  for (const char* arch : {"gfx908", "gfx90a"}) {
    auto options = scratch.options();
    options.hip_arch = arch;
    for (const char* task : {"matmul:512x1024x1024", "bmm:960x128x128x64:nn", "bmm:960x128x128x64:tn",
                             "bmm:960x128x64x128:nt", "conv2d:512x64x27x27:192x5x5:s1:p2"}) {
      auto backend = tune::make_task_backend(task, "hip", options);
      CHECK(backend->name() == "hip");
      CHECK(backend->device_kind().find(arch) != std::string::npos);
      tune::rng_type rng(++seed);
      auto [config, built] = tune::test::build_some(*backend, rng, 2000);
      INFO(task << " " << arch << " " << backend->space()->to_json(config) << ": " << built.message);
      REQUIRE(built.state == status::ok);
      // An offload bundle holding code for exactly the requested arch.
      auto code_object = read_hip_file(built.artifact);
      CHECK(code_object.rfind("__CLANG_OFFLOAD_BUNDLE__", 0) == 0);
      CHECK(code_object.find(std::string("amdgcn-amd-amdhsa--") + arch) != std::string::npos);
    }
  }
}

TEST_CASE("the HIP spaces are the OpEvo GPU spaces", "[kernels][hip]") {
  const std::vector<std::pair<std::string, std::vector<std::string>>> expected{
      {"matmul:64x64x64", {"K", "X", "Y"}},
      {"bmm:8x64x32x48:tn", {"B", "K", "X", "Y"}},
      {"conv2d:2x3x31x31:16x5x5:s2:p1",
       {"tile_f", "tile_y", "tile_x", "tile_rc", "tile_ry", "tile_rx", "auto_unroll_max_step", "unroll_explicit"}}};
  for (const auto& [task, names] : expected) {
    auto backend = tune::make_task_backend(task, "hip");
    std::vector<std::string> parameters;
    for (const auto& p : backend->space()->parameters()) parameters.push_back(p->name());
    CHECK(parameters == names);
    CHECK(backend->task_key() == tune::parse_task(task).to_string() + ":hip");
  }
}

TEST_CASE("a HIP build is cached by source, compiler, flags and offload arch", "[kernels][hip]") {
  tune::test::kernel_scratch scratch("hip-cache");
  auto options = scratch.options();
  small_matmul mm(options);
  REQUIRE(mm.build());
  const auto& built = mm.built;
  CHECK(built.message != "cached");
  // The source kept beside it: the CUDA template with the HIP runtime header
  // first, before the configuration's macros.
  auto source = read_hip_file(built.artifact.substr(0, built.artifact.size() - 3) + ".hip");
  CHECK(source.rfind("// matmul:64x64x64 for HIP", 0) == 0);
  auto header = source.find("#include <hip/hip_runtime.h>");
  CHECK(header != std::string::npos);
  CHECK(header < source.find("#define N 64L"));
  CHECK(source.find("#define Y2 16L") != std::string::npos);
  CHECK(source.find("tune_kernel(") != std::string::npos);
  auto again = mm.backend->build(mm.config, 120.0);
  CHECK(again.state == status::ok);
  CHECK(again.message == "cached");
  CHECK(again.artifact == built.artifact);
  options.hip_arch = "gfx908";
  auto other_arch = tune::make_task_backend("matmul:64x64x64", "hip", options)->build(mm.config, 120.0);
  CHECK(other_arch.state == status::ok);
  CHECK(other_arch.message != "cached");
  CHECK(other_arch.artifact != built.artifact);
}

TEST_CASE("a HIP kernel that does not compile is a device compile error with hipcc's log", "[kernels][hip]") {
  tune::test::kernel_scratch scratch("hip-error");
  auto backend = tune::make_hip_backend(
      hand_written_program("extern \"C\" __global__ void tune_kernel(float* out) { out[0] = not_declared_here * ; }"),
      scratch.options());
  auto config = backend->space()->from_values({{"scale", 2.0}});
  auto built = backend->build(config, 120.0);
  CHECK(built.state == status::compile_error_device);
  CHECK_THAT(built.message, Catch::Matchers::Contains("not_declared_here"));
  CHECK_THAT(built.message, Catch::Matchers::Contains("error"));
  CHECK_FALSE(std::filesystem::exists(built.artifact));
}

TEST_CASE("a HIP compile that overruns its timeout is killed as a build timeout", "[kernels][hip]") {
  tune::test::kernel_scratch scratch("hip-timeout");
  small_matmul mm(scratch.options());
  // hipcc (a Perl driver, then clang) cannot compile anything in 10 ms.
  CHECK_FALSE(mm.build(0.01));
  CHECK(mm.built.state == status::build_timeout);
  CHECK_THAT(mm.built.message, Catch::Matchers::Contains("hipcc killed"));
  CHECK_FALSE(std::filesystem::exists(mm.built.artifact));
  // Nothing half-written stays behind: the next build compiles and succeeds.
  CHECK(mm.build());
  CHECK(mm.built.message != "cached");
}

TEST_CASE("the HIP offload arch comes from the options, then $TUNE_HIP_ARCH, then gfx90a", "[kernels][hip]") {
  tune::task_backend_options options;
  options.hip_arch = "sm_80";
  CHECK_THROWS_WITH(tune::make_task_backend("matmul:64x64x64", "hip", options),
                    Catch::Matchers::Contains("hip_arch 'sm_80'") && Catch::Matchers::Contains("gfx90a"));
  options.hip_arch = "gfx90a:xnack-";
  CHECK(tune::make_task_backend("matmul:64x64x64", "hip", options)->device_kind().rfind("hip:gfx90a:xnack-:", 0) == 0);

  options.hip_arch.clear();
  const char* saved = std::getenv("TUNE_HIP_ARCH");
  std::string saved_value = saved ? saved : "";
  ::unsetenv("TUNE_HIP_ARCH");
  CHECK(tune::hip_offload_arch(options) == "gfx90a");
  ::setenv("TUNE_HIP_ARCH", "gfx908", 1);
  CHECK(tune::make_task_backend("matmul:64x64x64", "hip", options)->device_kind().rfind("hip:gfx908:", 0) == 0);
  ::setenv("TUNE_HIP_ARCH", "mi250", 1);
  CHECK_THROWS_WITH(tune::hip_offload_arch(options), Catch::Matchers::Contains("$TUNE_HIP_ARCH 'mi250'"));
  if (saved) {
    ::setenv("TUNE_HIP_ARCH", saved_value.c_str(), 1);
  } else {
    ::unsetenv("TUNE_HIP_ARCH");
  }
}

TEST_CASE("running a HIP kernel without an AMD GPU is a runtime error that says so", "[kernels][hip]") {
  if (runtime_sees_a_gpu()) SKIP_TEST("an AMD GPU is present: the no-GPU path is checked where there is none");
  tune::test::kernel_scratch scratch("hip-run");
  auto options = scratch.options();
  small_matmul mm(options);
  REQUIRE(mm.build());
  auto measured = mm.backend->run(mm.config, mm.built, 0, 30.0);
  CHECK(measured.state == status::runtime_error);
  CHECK_THAT(measured.message, Catch::Matchers::StartsWith("no AMD GPU found ("));

  // The worker, asked directly, gives the same answer instead of crashing.
  nlohmann::json request = {{"mode", "measure"},
                            {"device", "hip"},
                            {"device_index", 0},
                            {"arch", "gfx90a"},
                            {"library", mm.built.artifact},
                            {"entry", "tune_kernel"},
                            {"arguments", {{{"type", "float*"}, {"size", 64 * 64}, {"output", true}}}},
                            {"grid", {1, 1, 1}},
                            {"block", {1, 1, 1}}};
  auto answer = tune::run_worker(tune::kernel_worker_path(options), request.dump(), 30.0);
  CHECK(answer.state == status::runtime_error);
  CHECK_THAT(answer.message, Catch::Matchers::StartsWith("no AMD GPU found ("));

  // So does a resident worker, which then ends (a GPU error may break its
  // context).
  auto resident = tune::start_with_channel({tune::kernel_worker_path(options), "--resident"});
  REQUIRE(resident.pid > 0);
  request["reference"] = scratch.write("expected.bin", std::string(64 * 64 * 4, '\0'));
  auto resident_answer = tune::test::ask_resident(resident, request);
  INFO(resident_answer.dump());
  CHECK(resident_answer.value("status", "") == "runtime_error");
  CHECK_THAT(resident_answer.value("message", ""), Catch::Matchers::StartsWith("no AMD GPU found ("));
  CHECK(resident_answer.value("exit", false));
  CHECK(tune::test::exits_soon(resident.pid));
  ::close(resident.channel);
}

TEST_CASE("tune-engine devices reports the HIP backend as built", "[kernels][hip]") {
  for (const auto& b : tune::list_devices()) {
    if (b.backend != "hip") continue;
    CHECK(b.built);
    if (!b.available) CHECK_THAT(b.message, Catch::Matchers::StartsWith("no AMD GPU found"));
    return;
  }
  FAIL("no hip entry in list_devices()");
}

TEST_CASE("the small HIP tasks of the GPU test compile with hipcc", "[kernels][hip]") {
  tune::test::kernel_scratch scratch("hip-small");
  tune::rng_type rng(7);
  for (const char* task : small_hip_tasks) {
    auto backend = tune::make_task_backend(task, "hip", scratch.options());
    auto [config, built] = tune::test::build_some(*backend, rng, 2000);
    INFO(task << " " << backend->space()->to_json(config) << ": " << built.message);
    CHECK(built.state == status::ok);
  }
}

TEST_CASE("HIP kernels are correct on an AMD GPU when there is one", "[kernels][hip][gpu]") {
  if (!runtime_sees_a_gpu()) SKIP_TEST("no AMD GPU here; this test measures on one when there is");
  tune::test::kernel_scratch scratch("hip-gpu");
  auto options = scratch.options();
  tune::rng_type rng(7);
  for (const char* task : small_hip_tasks) {
    auto backend = tune::make_task_backend(task, "hip", options);
    // Random configurations until two ran: only the device's limits may
    // refuse one; an error or a wrong answer fails the test.
    int ran = 0;
    for (int attempt = 0; attempt < 6 && ran < 2; ++attempt) {
      auto [config, built] = tune::test::build_some(*backend, rng, 2000);
      REQUIRE(built.state == status::ok);
      auto result = backend->run(config, built, 0, 60.0);
      INFO(task << " " << backend->space()->to_json(config) << ": " << result.message);
      REQUIRE((result.state == status::ok || result.state == status::instantiation_error));
      if (result.state == status::ok) ran += result.time_ms > 0.0 ? 1 : 0;
    }
    CHECK(ran > 0);
  }
}

#else

TEST_CASE("without hipcc the hip backend is refused plainly", "[kernels][hip]") {
  CHECK_THROWS_AS(tune::make_task_backend("matmul:64x64x64", "hip"), std::invalid_argument);
  for (const auto& b : tune::list_devices())
    if (b.backend == "hip") CHECK_FALSE(b.built);
}

TEST_CASE("the HIP compile and GPU tests", "[kernels][hip][gpu]") {
  SKIP_TEST("built without hipcc: the HIP templates are neither compiled nor run");
}

#endif
