// The CUDA templates compile with NVRTC for sm_80 and sm_90 (no GPU needed),
// resource limits are instantiation errors, and running without a driver says
// so plainly; on a machine with a GPU (scripts/pack_gpu.sh carries these tests
// to one) the kernels run and are checked. Without NVRTC in this build the
// NVRTC tests are reported as skipped; so are the GPU tests without a GPU and
// the no-driver tests on a machine that has a driver.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernel_fixtures.hpp"
#include "resident_channel.hpp"
#include "skip.hpp"
#include "tune/kernels/cpu_backend.hpp"
#include "tune/kernels/cuda_driver.hpp"
#include "tune/kernels/task.hpp"
#include "tune/kernels/tuned_kernel.hpp"

#ifdef TUNE_WITH_NVRTC
#include "tune/kernels/cuda_backend.hpp"
#endif

using tune::status;

#ifdef TUNE_WITH_NVRTC

namespace {

/// Why no kernel can run on a CUDA device here; empty when device 0 exists.
std::string no_cuda_device() {
  std::string why;
  const auto* api = tune::cuda::load_driver(&why);
  if (!api) return why;
  int devices = 0;
  if (api->device_get_count(&devices) != 0) return "the CUDA driver counts no devices";
  if (devices == 0) return "the CUDA driver found no device";
  return "";
}

/// The measuring worker, which also runs NVRTC (--nvrtc).
std::string worker() { return tune::kernel_worker_path(tune::task_backend_options{}); }

/// The small tasks the GPU test measures: odd sizes, batched layouts, a
/// strided padded convolution.
const char* const small_tasks[] = {"matmul:128x256x192", "bmm:8x64x32x48:nn", "bmm:8x64x32x48:tn", "bmm:8x64x32x48:nt",
                                   "conv2d:2x3x31x31:16x5x5:s2:p1"};

/// Three configurations of `task` drawn at random run on device 0 and match
/// the reference (the device may refuse a launch its limits do not allow,
/// which proves nothing, so up to 12 are drawn).
void check_random_cuda_configurations(const char* task, const tune::task_backend_options& options, unsigned seed) {
  auto backend = tune::make_task_backend(task, "cuda", options);
  tune::rng_type rng(seed);
  int correct = 0;
  for (int tries = 0; tries < 12 && correct < 3; ++tries) {
    auto [config, built] = tune::test::build_some(*backend, rng, 2000);
    INFO(task << " " << backend->space()->to_json(config) << ": " << built.message);
    REQUIRE(built.state == status::ok);
    auto measured = backend->run(config, built, 0, 60.0);
    INFO(measured.message);
    CHECK((measured.state == status::ok || measured.state == status::instantiation_error));
    if (measured.state == status::ok) {
      CHECK(measured.time_ms > 0.0);
      ++correct;
    }
  }
  INFO(task);
  CHECK(correct == 3);
}

/// The options of the GPU checks: the compile cache (and the expected
/// outputs, which for C1 take the CPU a minute) shared with the tuning runs
/// of run-gpu-tests.sh when TUNE_CACHE_DIR names one.
tune::task_backend_options gpu_options(const tune::test::kernel_scratch& scratch) {
  auto options = scratch.options();
  if (const char* dir = std::getenv("TUNE_CACHE_DIR"); dir && *dir) options.cache_dir = dir;
  return options;
}

/// matmul:128x256x192 with a fault planted in its source, chosen by `plant`
/// (read on every build): "" none, "wrong" every output off by one, "fault" a
/// store to an address no allocation holds, "hang" a first thread that spins
/// for days while the others wait for it at the barrier.
tune::kernel_program_ptr planted_matmul(std::shared_ptr<std::string> plant) {
  auto base = tune::make_gpu_task_program(tune::parse_task("matmul:128x256x192"), "cuda");
  auto program = std::make_shared<tune::kernel_program>(*base);
  program->source = [base, plant](const tune::configuration& config) {
    auto source = base->source(config);
    auto put = [&](const std::string& what, const std::string& with) {
      auto at = source.find(what);
      REQUIRE(at != std::string::npos);
      source.replace(at, what.size(), with);
    };
    const std::string start = "const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * Y2 + tx;";
    if (*plant == "wrong") put("= acc[v][i][w][j];", "= acc[v][i][w][j] + 1.0f;");
    if (*plant == "fault") put(start, start + " if (tid == 0) *reinterpret_cast<volatile float*>(C - (1L << 40)) = 1;");
    // clock64() is read anew on each pass, so no compiler removes the loop (a
    // spin on a volatile local was removed: the kernel ran and was right).
    if (*plant == "hang")
      put(start, start + " if (tid == 0) { long long t0 = clock64(); while (clock64() - t0 < (1LL << 50)) {} }");
    return source;
  };
  return program;
}

/// A configuration of planted_matmul() and its build with each plant ("" the
/// correct kernel); every planted source compiles, so a run tests the run.
struct planted_builds {
  tune::configuration config;
  std::map<std::string, tune::build_result> builds;
};

planted_builds build_planted(tune::backend& backend, std::string& plant) {
  tune::rng_type rng(3);
  planted_builds out;
  for (int tries = 0; tries < 50 && out.builds.empty(); ++tries) {
    out.config = *backend.space()->draw_valid(rng);
    for (const char* what : {"", "wrong", "fault", "hang"}) {
      plant = what;
      auto built = backend.build(out.config, 120.0);
      if (built.state == status::instantiation_error) break;
      INFO(what << ": " << built.message);
      REQUIRE(built.state == status::ok);
      out.builds[what] = built;
    }
    if (out.builds.size() < 4) out.builds.clear();
  }
  return out;
}

}  // namespace

TEST_CASE("every CUDA template compiles for sm_80 and sm_90", "[kernels][cuda]") {
  tune::test::kernel_scratch scratch("cuda");
  for (int arch : {80, 90}) {
    auto options = scratch.options();
    options.cuda_arch = arch;
    for (const char* task :
         {"matmul:512x1024x1024", "bmm:960x128x128x64:nn", "bmm:960x128x128x64:tn", "bmm:960x128x64x128:nt",
          "conv2d:512x3x227x227:64x11x11:s4:p0", "conv2d:512x64x27x27:192x5x5:s1:p2"}) {
      auto backend = tune::make_task_backend(task, "cuda", options);
      CHECK(backend->device_kind().find("sm_" + std::to_string(arch)) != std::string::npos);
      tune::rng_type rng(arch);
      auto [config, built] = tune::test::build_some(*backend, rng, 2000);
      INFO(task << " sm_" << arch << " " << backend->space()->to_json(config) << ": " << built.message);
      CHECK(built.state == status::ok);
    }
  }
}

TEST_CASE("the CUDA spaces are those of the OpEvo search-space files", "[kernels][cuda]") {
  auto mm = tune::make_task_backend("matmul:512x1024x1024", "cuda");
  auto space = mm->space();
  REQUIRE(space->dimension() == 3);
  CHECK(space->parameters()[0]->name() == "K");
  CHECK(space->parameters()[1]->name() == "X");
  CHECK(space->parameters()[2]->name() == "Y");
  auto bmm = tune::make_task_backend("bmm:960x128x128x64:nn", "cuda");
  CHECK(bmm->space()->parameters()[0]->name() == "B");
}

TEST_CASE("a CUDA configuration over the block limits is an instantiation error", "[kernels][cuda]") {
  tune::test::kernel_scratch scratch("cuda-limits");
  auto backend = tune::make_task_backend("matmul:64x64x64", "cuda", scratch.options());
  auto config = backend->space()->from_values({{"K", std::vector<std::int64_t>{1, 64, 1}},
                                               {"X", std::vector<std::int64_t>{1, 1, 64, 1}},
                                               {"Y", std::vector<std::int64_t>{1, 1, 64, 1}}});
  // Outside the space (the strategies never propose it) and refused if built.
  CHECK_FALSE(backend->space()->is_valid(config));
  auto built = backend->build(config, 60.0);
  CHECK(built.state == status::instantiation_error);
  CHECK(built.message.find("not in the search space") != std::string::npos);
  auto program = tune::make_gpu_task_program(tune::parse_task("matmul:64x64x64"), "cuda");
  CHECK(program->check(config) == "4096 threads per block; at most 1024");
}

TEST_CASE("NVRTC reports device compile errors with its log", "[kernels][cuda]") {
  tune::test::kernel_scratch scratch("nvrtc-error");
  const auto cubin = scratch.path() / "k.cubin";
  auto out = tune::nvrtc_compile("extern \"C\" __global__ void k() { not_declared(); }", 80, 60.0, worker(), cubin);
  CHECK(out.state == status::compile_error_device);
  CHECK(out.log.find("not_declared") != std::string::npos);
  // Neither the cubin nor the worker's source file is left.
  CHECK(std::filesystem::is_empty(scratch.path()));
}

/// Threads of this process now.
std::size_t own_threads() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

TEST_CASE("a CUDA compile past its limit is stopped, not left running in the engine", "[kernels][cuda]") {
  // A kernel whose full unrolling takes NVRTC tens of seconds (about 3 s at
  // a tenth of the trip count on the 2-core machine).
  const std::string slow = R"(
extern "C" __global__ void k(float* out) {
  float s = 0;
#pragma unroll
  for (int i = 0; i < 40000; ++i)
#pragma unroll
    for (int j = 0; j < 100; ++j) s = s * 1.0001f + out[(i * 7 + j) & 1023];
  out[0] = s;
})";
  tune::test::kernel_scratch scratch("nvrtc-slow");
  const auto threads = own_threads();
  const auto start = std::chrono::steady_clock::now();
  auto out = tune::nvrtc_compile(slow, 80, 0.5, worker(), scratch.path() / "k.cubin");
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(out.state == status::build_timeout);
  CHECK(out.log == "NVRTC killed after 0.5 s");
  CHECK(std::filesystem::is_empty(scratch.path()));
  CHECK(took < 10.0);
  // No compile goes on in this process once the call has returned: it ran
  // in a process of its own, now killed.
  CHECK(own_threads() == threads);
}

TEST_CASE("a CUDA compile that cannot start or load NVRTC is a compile error that says why", "[kernels][cuda]") {
  const std::string source = "extern \"C\" __global__ void k(float* x) { x[0] = 1.0f; }";
  tune::test::kernel_scratch scratch("nvrtc-start");
  const auto cubin = scratch.path() / "k.cubin";
  auto missing = tune::nvrtc_compile(source, 80, 30.0, "/nonexistent/tune-kernel-worker", cubin);
  CHECK(missing.state == status::compile_error);
  CHECK(missing.log.find("cannot start /nonexistent/tune-kernel-worker for the CUDA compile") == 0);
  CHECK(std::filesystem::is_empty(scratch.path()));
  auto unwritable = tune::nvrtc_compile(source, 80, 30.0, worker(), scratch.path() / "no-such-folder" / "k.cubin");
  CHECK(unwritable.state == status::compile_error);
  CHECK(unwritable.log.find("cannot write ") == 0);
  auto compiled = tune::nvrtc_compile(source, 80, 30.0, worker(), cubin);
  INFO(compiled.log);
  CHECK(compiled.state == status::ok);
  // The cubin where it was asked for, and nothing else.
  CHECK(std::filesystem::file_size(cubin) > 100);
  CHECK(std::distance(std::filesystem::directory_iterator(scratch.path()), std::filesystem::directory_iterator()) == 1);
  CHECK(tune::nvrtc_library_path().find("libnvrtc") != std::string::npos);
}

TEST_CASE("running a CUDA kernel without a driver is a runtime error that says so", "[kernels][cuda]") {
  if (tune::cuda::load_driver())
    SKIP_TEST("a CUDA driver is present: the no-driver path is checked where there is none");
  tune::test::kernel_scratch scratch("cuda-run");
  auto backend = tune::make_task_backend("matmul:64x64x64", "cuda", scratch.options());
  tune::rng_type rng(4);
  auto [config, built] = tune::test::build_some(*backend, rng, 2000);
  REQUIRE(built.state == status::ok);
  auto measured = backend->run(config, built, 0, 30.0);
  CHECK(measured.state == status::runtime_error);
  CHECK(measured.message == tune::cuda::no_driver_message);
}

TEST_CASE("the output comparison module compiles with NVRTC once, with its three entries", "[kernels][cuda]") {
  tune::test::kernel_scratch scratch("cuda-check");
  for (int arch : {80, 90}) {
    std::string why;
    auto module = tune::cuda_check_module(arch, scratch.path().string(), worker(), &why);
    INFO("sm_" << arch << ": " << why);
    REQUIRE(!module.empty());
    std::ifstream file(module, std::ios::binary);
    std::string cubin{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
    for (const char* entry : tune::cuda_check_entries) CHECK(cubin.find(entry) != std::string::npos);
    // Kept in the compile cache: the second call finds the same file.
    auto written = std::filesystem::last_write_time(module);
    CHECK(tune::cuda_check_module(arch, scratch.path().string(), worker()) == module);
    CHECK(std::filesystem::last_write_time(module) == written);
  }
}

TEST_CASE("on a GPU the outputs are compared on the device as the host compares them", "[kernels][cuda][gpu]") {
  auto no_device = no_cuda_device();
  if (!no_device.empty()) SKIP_TEST("no CUDA GPU here (" << no_device << "); scripts/pack_gpu.sh runs this on one");
  tune::test::kernel_scratch scratch("cuda-compare");
  const auto* api = tune::cuda::load_driver();
  tune::cuda::device_handle device = 0;
  int major = 0, minor = 0;
  api->device_get(&device, 0);
  api->device_get_attribute(&major, tune::cuda::compute_capability_major, device);
  api->device_get_attribute(&minor, tune::cuda::compute_capability_minor, device);
  const int arch = major * 10 + minor;

  // One output of each element type, from an input the test chose.
  const int n = 300000;
  auto kernel = tune::nvrtc_compile(R"(
extern "C" __global__ void outputs(const float* a, float* x, double* y, int* z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { x[i] = 2.0f * a[i]; y[i] = 3.0 * (double)a[i]; z[i] = (int)(a[i] * 100.0f); }
})",
                                    arch, 120.0, worker(), scratch.path() / "outputs.cubin");
  INFO(kernel.log);
  REQUIRE(kernel.state == status::ok);
  const auto library = (scratch.path() / "outputs.cubin").string();
  std::vector<float> a(n), x(n);
  std::vector<double> y(n);
  std::vector<std::int32_t> z(n);
  for (int i = 0; i < n; ++i) {
    a[i] = static_cast<float>((i % 1999) - 999) / 37.0f;
    x[i] = 2.0f * a[i];
    y[i] = 3.0 * static_cast<double>(a[i]);
    z[i] = static_cast<std::int32_t>(a[i] * 100.0f);
  }
  auto bytes = [](const auto& v) {
    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof v[0]);
  };
  auto input = scratch.write("a.bin", bytes(a));
  auto expected_file = [&](const std::string& name) { return scratch.write(name, bytes(x) + bytes(y) + bytes(z)); };
  auto exact = expected_file("exact.bin");
  x[5000] *= 1.0f + 1e-5f;  // within the tolerance: the largest error
  auto close = expected_file("close.bin");
  y[700] += 1.0;  // the first wrong element, in the second output
  z[9] += 5;
  auto wrong = expected_file("wrong.bin");

  auto check_module = tune::cuda_check_module(arch, scratch.path().string(), worker());
  REQUIRE(!check_module.empty());
  auto resident = tune::start_with_channel({tune::kernel_worker_path(scratch.options()), "--resident"});
  REQUIRE(resident.pid > 0);
  auto ask = [&](const std::string& reference, bool on_device) {
    nlohmann::json request = {{"mode", "measure"},
                              {"device", "cuda"},
                              {"device_index", 0},
                              {"library", library},
                              {"entry", "outputs"},
                              {"arguments",
                               {{{"type", "float*"}, {"size", n}, {"data", input}},
                                {{"type", "float*"}, {"size", n}, {"output", true}},
                                {{"type", "double*"}, {"size", n}, {"output", true}},
                                {{"type", "int*"}, {"size", n}, {"output", true}},
                                {{"type", "int"}, {"value", n}}}},
                              {"reference", reference},
                              {"grid", {(n + 255) / 256, 1, 1}},
                              {"block", {256, 1, 1}},
                              {"min_time_s", 0.0},
                              {"min_repeats", 1}};
    if (on_device) request["check_module"] = check_module;
    auto answer = tune::test::ask_resident(resident, request);
    INFO(answer.dump());
    REQUIRE(answer.is_object());
    return answer;
  };
  for (const auto& reference : {exact, close, wrong}) {
    auto device_answer = ask(reference, true), host_answer = ask(reference, false);
    INFO(reference << "\non the device: " << device_answer.dump() << "\non the host: " << host_answer.dump());
    CHECK(device_answer.value("status", "") == host_answer.value("status", ""));
    CHECK(device_answer.value("message", "") == host_answer.value("message", ""));
    CHECK(device_answer.value("max_error", -2.0) == host_answer.value("max_error", -3.0));
    if (device_answer.value("status", "") == "ok") {
      CHECK(device_answer.value("checked_on", "") == "device");
      CHECK(host_answer.value("checked_on", "") == "host");
    }
  }
  CHECK(ask(exact, true).value("max_error", -1.0) == 0.0);
  CHECK(ask(close, true).value("max_error", 0.0) > 0.0);
  auto answer = ask(wrong, true);
  CHECK(answer.value("status", "") == "wrong_answer");
  CHECK(answer.value("message", "").find("output element 700 is") == 0);
  ::close(resident.channel);
  CHECK(tune::test::exits_soon(resident.pid));
}

TEST_CASE("the small CUDA tasks of the GPU test compile with NVRTC", "[kernels][cuda]") {
  tune::test::kernel_scratch scratch("cuda-small");
  for (const char* task : small_tasks) {
    auto backend = tune::make_task_backend(task, "cuda", scratch.options());
    tune::rng_type rng(7);
    for (int i = 0; i < 3; ++i) {
      auto [config, built] = tune::test::build_some(*backend, rng, 2000);
      INFO(task << " " << backend->space()->to_json(config) << ": " << built.message);
      CHECK(built.state == status::ok);
      // The build's artifact is the cubin in the compile cache itself.
      CHECK(std::filesystem::path(built.artifact).extension() == ".cubin");
      CHECK(std::filesystem::file_size(built.artifact) > 100);
    }
  }
  // Every file the builds left in the cache is a cubin under its final name:
  // no temporary, no source given to the worker.
  for (const auto& entry : std::filesystem::recursive_directory_iterator(scratch.path()))
    if (entry.is_regular_file()) {
      INFO(entry.path());
      CHECK(entry.path().extension() == ".cubin");
    }
}

TEST_CASE("CUDA kernels are correct on a GPU when there is one", "[kernels][cuda][gpu]") {
  auto no_device = no_cuda_device();
  if (!no_device.empty()) SKIP_TEST("no CUDA GPU here (" << no_device << "); scripts/pack_gpu.sh runs this on one");
  tune::test::kernel_scratch scratch("cuda-gpu");
  for (const char* task : small_tasks) check_random_cuda_configurations(task, scratch.options(), 7);
}

TEST_CASE("MM1, BMM1 and C1 configurations drawn at random run on a GPU and match the reference",
          "[kernels][cuda][gpu]") {
  auto no_device = no_cuda_device();
  if (!no_device.empty()) SKIP_TEST("no CUDA GPU here (" << no_device << "); scripts/pack_gpu.sh runs this on one");
  tune::test::kernel_scratch scratch("cuda-gpu-tasks");
  for (const char* task : {"matmul:512x1024x1024", "bmm:960x128x128x64:nn", "conv2d:512x3x227x227:64x11x11:s4:p0"})
    check_random_cuda_configurations(task, gpu_options(scratch), 11);
}

TEST_CASE("the planted kernels of the GPU test compile with NVRTC", "[kernels][cuda]") {
  tune::test::kernel_scratch scratch("cuda-planted");
  auto plant = std::make_shared<std::string>();
  auto backend = tune::make_cuda_backend(planted_matmul(plant), scratch.options());
  auto planted = build_planted(*backend, *plant);
  CHECK(planted.builds.size() == 4);
}

TEST_CASE("on a GPU a planted wrong answer, a fault and a hang are statuses and the next trial runs",
          "[kernels][cuda][gpu]") {
  auto no_device = no_cuda_device();
  if (!no_device.empty()) SKIP_TEST("no CUDA GPU here (" << no_device << "); scripts/pack_gpu.sh runs this on one");
  tune::test::kernel_scratch scratch("cuda-gpu-planted");
  auto plant = std::make_shared<std::string>();
  auto backend = tune::make_cuda_backend(planted_matmul(plant), scratch.options());
  auto [config, builds] = build_planted(*backend, *plant);
  REQUIRE(builds.size() == 4);

  auto ok_after = [&](const char* after) {
    auto measured = backend->run(config, builds[""], 0, 30.0);
    INFO("the correct kernel after the " << after << " one: " << measured.message);
    CHECK(measured.state == status::ok);
    CHECK(measured.time_ms > 0.0);
  };
  ok_after("first");
  auto wrong = backend->run(config, builds["wrong"], 0, 30.0);
  INFO(wrong.message);
  CHECK(wrong.state == status::wrong_answer);
  ok_after("wrong");
  auto fault = backend->run(config, builds["fault"], 0, 30.0);
  INFO(fault.message);
  CHECK(fault.state == status::runtime_error);
  ok_after("faulting");
  auto hang = backend->run(config, builds["hang"], 0, 3.0);
  INFO(hang.message);
  CHECK(hang.state == status::run_timeout);
  CHECK(hang.run_s < 20.0);
  ok_after("hanging");
}

#else

TEST_CASE("without NVRTC the cuda backend is refused plainly", "[kernels][cuda]") {
  CHECK_THROWS_AS(tune::make_task_backend("matmul:64x64x64", "cuda"), std::invalid_argument);
}

TEST_CASE("the CUDA compile and GPU tests", "[kernels][cuda][gpu]") {
  SKIP_TEST("built without NVRTC (no CUDA toolkit at build time): the CUDA templates are neither compiled nor run");
}

#endif

TEST_CASE("loading the CUDA driver without one gives the plain message", "[kernels][cuda]") {
  std::string why;
  if (tune::cuda::load_driver(&why))
    SKIP_TEST("a CUDA driver is present: the no-driver message is checked where there is none");
  CHECK((why == tune::cuda::no_driver_message || why.find("cuInit") != std::string::npos));
}

TEST_CASE("a resident GPU worker without a CUDA driver says so and ends", "[kernels][cuda]") {
  if (tune::cuda::load_driver())
    SKIP_TEST("a CUDA driver is present: the no-driver path is checked where there is none");
  // The backend answers before asking a worker; the resident worker, asked
  // directly, answers the same and ends (a GPU error may break its context).
  tune::test::kernel_scratch scratch("cuda-resident");
  auto reference = scratch.write("expected.bin", std::string(16, '\0'));
  auto library = scratch.write("kernel.cubin", "not a cubin");
  auto resident = tune::start_with_channel({tune::kernel_worker_path(scratch.options()), "--resident"});
  REQUIRE(resident.pid > 0);
  nlohmann::json request = {
      {"mode", "measure"},      {"device", "cuda"},
      {"device_index", 0},      {"library", library},
      {"entry", "tune_kernel"}, {"arguments", {{{"type", "float*"}, {"size", 4}, {"output", true}}}},
      {"reference", reference}, {"grid", {1, 1, 1}},
      {"block", {1, 1, 1}},     {"reference_ms", 1.0},
      {"slow_factor", 10.0}};
  auto answer = tune::test::ask_resident(resident, request);
  INFO(answer.dump());
  CHECK(answer.value("status", "") == "runtime_error");
  CHECK(answer.value("message", "") == tune::cuda::no_driver_message);
  CHECK(answer.value("exit", false));
  CHECK(tune::test::exits_soon(resident.pid));
  ::close(resident.channel);
}

TEST_CASE("the GPU spaces and their resource check agree: what the check refuses is outside the space", "[kernels]") {
  // Source generation only: no GPU, NVRTC or hipcc needed. MM2 is the shape
  // whose 300-trial run on an H200 spent 266 trials on refused configurations.
  for (const char* backend : {"cuda", "hip"})
    for (const char* task : {"matmul:512x1024x4096", "bmm:960x128x128x64:tn", "conv2d:512x3x227x227:64x11x11:s4:p0",
                             "conv2d:512x64x27x27:192x5x5:s1:p2"}) {
      auto program = tune::make_gpu_task_program(tune::parse_task(task), backend);
      auto agreement = tune::test::compare_space_and_check(*program, 20000, 11);
      INFO(backend << " " << task << ": " << agreement.inside << " inside, " << agreement.outside << " outside");
      CHECK(agreement.disagreement == "");
      CHECK(agreement.inside > 500);
      CHECK(agreement.outside > 500);
    }
}
