// Bring-your-own kernels: the example tunes, and kernels that crash, hang or
// compute the wrong answer come back as statuses while the engine goes on.
#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernel_fixtures.hpp"
#include "skip.hpp"
#include "tune/kernels/subprocess.hpp"
#include "tune/kernels/user_kernel.hpp"

using tune::status;

namespace {

// One kernel whose `behaviour` parameter picks how it misbehaves: 1 crashes,
// 2 hangs, 3 and 4 compute wrong values, 5 allocates without end, 6 forks a
// process that sleeps holding the output pipe, 7 writes megabytes to stdout
// (no final newline), 8 closes stdout and stderr, 9 is a fork bomb bounded at
// 300 processes that aborts when a fork fails, 10 closes every descriptor it
// has, 11 writes a first line, megabytes and a last line and aborts, 12 kills
// the process that started it (the resident measurer).
const char* misbehaving_source = R"(
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
void scale(float* out, const float* in, int n) {
  if (behaviour == 1) *(volatile int*)nullptr = 1;
  if (behaviour == 2)
    for (volatile long i = 0;; ++i) {
    }
  if (behaviour == 5)
    for (;;) {
      char* block = new char[64 << 20];
      memset(block, 1, 64 << 20);
    }
  if (behaviour == 6 && fork() == 0) {
    sleep(3600);
    _exit(0);
  }
  if (behaviour == 7) {
    static char line[1 << 16];
    memset(line, 'x', sizeof line);
    for (int i = 0; i < 32; ++i) fwrite(line, 1, sizeof line, stdout);
  }
  if (behaviour == 8) {
    close(1);
    close(2);
  }
  if (behaviour == 9)
    for (int i = 0; i < 300; ++i) {
      pid_t child = fork();
      if (child == 0) {
        pause();
        _exit(0);
      }
      if (child < 0) abort();
    }
  if (behaviour == 10)
    for (int fd = 0; fd < 1024; ++fd) close(fd);
  if (behaviour == 11) {
    static char line[1 << 16];
    memset(line, 'x', sizeof line);
    printf("first line\n");
    for (int i = 0; i < 32; ++i) fwrite(line, 1, sizeof line, stdout);
    printf("\nlast line\n");
    fflush(stdout);
    abort();
  }
  if (behaviour == 12) kill(getppid(), SIGKILL);
  for (int i = 0; i < n; ++i) out[i] = in[i] * (behaviour == 3 ? 3.0f : 2.0f);
  if (behaviour == 4) out[n / 2] = 0.0f / 0.0f;
}
)";

const char* reference_source = R"(
void scale_reference(float* out, const float* in, int n) {
  for (int i = 0; i < n; ++i) out[i] = in[i] * 2.0f;
}
)";

const char* launch = R"({
  "source": "scale.cpp", "entry": "scale", "space": "space.json",
  "arguments": [{"name": "out", "type": "float*", "size": 1000, "output": true},
                {"name": "in", "type": "float*", "size": 1000},
                {"name": "n", "type": "int", "value": 1000}],
  "reference": {"source": "reference.cpp", "entry": "scale_reference"}
})";

struct misbehaving_kernel {
  tune::test::kernel_scratch scratch{"user"};
  std::string launch_path;
  misbehaving_kernel() {
    scratch.write("scale.cpp", misbehaving_source);
    scratch.write("reference.cpp", reference_source);
    scratch.write("space.json",
                  R"({"behaviour": {"_type": "choice", "_value": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]}})");
    launch_path = scratch.write("launch.json", launch);
  }
};

// Reading the launch description at `path` fails with a message holding
// each of `parts`; `what` says what was wrong.
void expect_read_error(const std::string& path, const std::string& what, const std::vector<std::string>& parts) {
  try {
    tune::read_user_kernel(path);
    FAIL("no error for " << what);
  } catch (const std::invalid_argument& e) {
    std::string message = e.what();
    INFO(message);
    for (const auto& part : parts) CHECK(message.find(part) != std::string::npos);
  }
}

// Reading `text` as a launch description fails naming the file and `field`.
void expect_launch_error(const tune::test::kernel_scratch& scratch, const std::string& text, const std::string& field) {
  expect_read_error(scratch.write("bad.json", text), text, {"bad.json", field});
}

tune::run_result try_behaviour(tune::backend& backend, double behaviour, double timeout_s = 20.0) {
  auto config = backend.space()->from_values({{"behaviour", behaviour}});
  auto built = backend.build(config, 120.0);
  REQUIRE(built.state == status::ok);
  return backend.run(config, built, 0, timeout_s);
}

}  // namespace

TEST_CASE("the example user kernel builds, runs and is checked", "[kernels]") {
  tune::test::kernel_scratch scratch("example");
  auto backend = tune::make_user_kernel_backend(std::string(TUNE_SOURCE_DIR) + "/examples/user-kernel/launch.json",
                                                "cpu", scratch.options());
  auto space = backend->space();
  CHECK(space->find("rows"));
  CHECK(space->find("columns"));
  tune::rng_type rng(3);
  for (int i = 0; i < 2; ++i) {
    auto config = *space->draw_valid(rng);
    auto built = backend->build(config, 120.0);
    INFO(space->to_json(config) << ": " << built.message);
    REQUIRE(built.state == status::ok);
    auto measured = backend->run(config, built, 0, 60.0);
    INFO(measured.message);
    CHECK(measured.state == status::ok);
  }
}

TEST_CASE("crashing, hanging and wrong user kernels become statuses", "[kernels]") {
  misbehaving_kernel kernel;
  auto backend = tune::make_user_kernel_backend(kernel.launch_path, "cpu", kernel.scratch.options());

  CHECK(try_behaviour(*backend, 0).state == status::ok);

  auto crash = try_behaviour(*backend, 1);
  CHECK(crash.state == status::runtime_error);
  CHECK(crash.message.find("signal") != std::string::npos);

  auto hang = try_behaviour(*backend, 2, 1.0);
  CHECK(hang.state == status::run_timeout);

  auto wrong = try_behaviour(*backend, 3);
  CHECK(wrong.state == status::wrong_answer);
  CHECK(wrong.message.find("expected") != std::string::npos);

  auto nan = try_behaviour(*backend, 4);
  CHECK(nan.state == status::wrong_answer);

  // The backend still works after all of that.
  CHECK(try_behaviour(*backend, 0).state == status::ok);
}

TEST_CASE("kernels that exhaust memory or fork or flood or close their output become statuses", "[kernels]") {
  misbehaving_kernel kernel;
  auto options = kernel.scratch.options();
  options.memory_limit_mb = 512;  // the worker's address space: allocating past it fails there
  auto backend = tune::make_user_kernel_backend(kernel.launch_path, "cpu", options);

  // Without a limit this would take the machine's memory.
  auto hungry = try_behaviour(*backend, 5);
  CHECK(hungry.state == status::runtime_error);
  CHECK(hungry.message.find("out of memory") != std::string::npos);

  // The process it forked holds the output open; once the kernel's process
  // has answered and exited, its group is killed instead of waited for until
  // the run timeout.
  auto forks = try_behaviour(*backend, 6, 15.0);
  INFO(forks.message);
  CHECK(forks.state == status::ok);
  CHECK(forks.run_s < 10.0);

  // 2 MiB of output per call: the output kept is capped, and the reply,
  // which travels apart from the output, is whole.
  auto flood = try_behaviour(*backend, 7);
  INFO(flood.message.substr(0, 300));
  CHECK(flood.state == status::ok);
  // A flood before a crash: the message keeps the output's head and tail.
  auto flood_crash = try_behaviour(*backend, 11);
  INFO(flood_crash.message.substr(0, 300));
  CHECK(flood_crash.state == status::runtime_error);
  CHECK(flood_crash.message.find("signal 6") != std::string::npos);
  CHECK(flood_crash.message.find("first line") != std::string::npos);
  CHECK(flood_crash.message.find("last line") != std::string::npos);
  CHECK(flood_crash.message.find("bytes of output left out") != std::string::npos);
  CHECK(flood_crash.message.size() < 10000);

  // Closing stdout and stderr leaves the reply's own descriptor: measured.
  auto closed = try_behaviour(*backend, 8);
  INFO(closed.message);
  CHECK(closed.state == status::ok);
  // Closing that too leaves no reply.
  auto closed_all = try_behaviour(*backend, 10);
  CHECK(closed_all.state == status::runtime_error);
  CHECK(closed_all.message.find("no reply") != std::string::npos);

  CHECK(try_behaviour(*backend, 0).state == status::ok);
}

TEST_CASE("a kernel that kills its measuring process fails its trial and the next trial measures", "[kernels]") {
  misbehaving_kernel kernel;
  auto backend = tune::make_user_kernel_backend(kernel.launch_path, "cpu", kernel.scratch.options());
  CHECK(try_behaviour(*backend, 0).state == status::ok);
  auto killer = try_behaviour(*backend, 12);
  INFO(killer.message);
  CHECK(killer.state == status::runtime_error);
  CHECK(killer.message.find("ended during the run") != std::string::npos);
  CHECK(try_behaviour(*backend, 0).state == status::ok);
}

TEST_CASE("a fork bomb kernel stops at the worker's process limit and becomes a status", "[kernels]") {
  if (!tune::process_limits_enforced())
    SKIP_TEST("no pids cgroup can be made here (needs a writable cgroup file system)");
  misbehaving_kernel kernel;
  auto options = kernel.scratch.options();
  options.max_processes = 32;
  auto backend = tune::make_user_kernel_backend(kernel.launch_path, "cpu", options);
  // Without the limit its 300 forks succeed and the run is ok.
  auto bomb = try_behaviour(*backend, 9);
  INFO(bomb.message);
  CHECK(bomb.state == status::runtime_error);
  CHECK(bomb.message.find("max_processes") != std::string::npos);
  CHECK(try_behaviour(*backend, 0).state == status::ok);
}

TEST_CASE("a user kernel that does not compile is a compile error with the compiler's message", "[kernels]") {
  misbehaving_kernel kernel;
  kernel.scratch.write("scale.cpp", "void scale(float* out, const float* in, int n) { this is not C++; }\n");
  auto backend = tune::make_user_kernel_backend(kernel.launch_path, "cpu", kernel.scratch.options());
  auto config = backend->space()->from_values({{"behaviour", 0.0}});
  auto built = backend->build(config, 120.0);
  CHECK(built.state == status::compile_error);
  CHECK(built.message.find("error") != std::string::npos);
}

TEST_CASE("bad launch descriptions name the file, the field and the fix", "[kernels]") {
  misbehaving_kernel kernel;
  auto expect_error = [&](const std::string& text, const std::string& field) {
    expect_launch_error(kernel.scratch, text, field);
  };
  expect_error(R"({"entry": "scale"})", "source");
  expect_error(R"({"source": "missing.cpp", "entry": "scale"})", "source");
  expect_error(R"({"source": "scale.cpp", "entry": "not a name", "space": "space.json"})", "entry");
  expect_error(R"({"source": "scale.cpp", "entry": "scale", "space": "space.json"})", "arguments");
  expect_error(R"({"source": "scale.cpp", "entry": "scale", "space": "space.json",
                   "arguments": [{"type": "float**", "size": 3, "output": true}]})",
               "arguments[0].type");
  expect_error(R"({"source": "scale.cpp", "entry": "scale", "space": "space.json",
                   "arguments": [{"type": "float*", "output": true}]})",
               "arguments[0].size");
  expect_error(R"({"source": "scale.cpp", "entry": "scale", "space": "space.json",
                   "arguments": [{"type": "float*", "size": 4}]})",
               "output");
  expect_error(R"({"source": "scale.cpp", "entry": "scale", "space": "space.json",
                   "arguments": [{"type": "float*", "size": 4, "output": true}]})",
               "reference");
  CHECK_THROWS_AS(tune::make_user_kernel_backend(kernel.launch_path, "cuda"), std::invalid_argument);
}

namespace {

// Kernel Tuner's way: the configuration as #defines, arrays handed over as
// raw pointers (here to a vector type of the configuration's width), inputs
// and expected outputs from files, an absolute tolerance, and a kernel that
// returns its own time in milliseconds.
const char* self_timed_source = R"(
typedef float lanes __attribute__((vector_size(width * 4)));
extern "C" float twice(lanes* out, const lanes* in, int n) {
  for (int i = 0; i < n / width; ++i) out[i] = in[i] + in[i];
  return 0.25f * factor;
}
)";

struct self_timed_kernel {
  tune::test::kernel_scratch scratch{"self-timed"};
  std::string launch_path;
  explicit self_timed_kernel(float expected_scale = 2.0f) {
    scratch.write("twice.c", self_timed_source);
    scratch.write("space.json", R"({"width": {"_type": "choice", "_value": [1, 8]},
                                    "factor": {"_type": "choice", "_value": [1, 2]}})");
    std::string input, expected;
    for (int i = 0; i < 64; ++i) {
      float x = static_cast<float>(i) - 20.5f, y = expected_scale * x;
      input.append(reinterpret_cast<const char*>(&x), sizeof x);
      expected.append(reinterpret_cast<const char*>(&y), sizeof y);
    }
    scratch.write("in.bin", input);
    scratch.write("expected.bin", expected);
    launch_path = scratch.write("launch.json", R"({
      "source": "twice.c", "entry": "twice", "space": "space.json", "constants": "define",
      "untyped_pointers": true, "returns_time": true,
      "arguments": [{"name": "out", "type": "float*", "size": 64, "output": true},
                    {"name": "in", "type": "float*", "size": 64, "data": "in.bin"},
                    {"name": "n", "type": "int", "value": 64}],
      "expected": "expected.bin", "tolerance": 1e-6, "absolute_tolerance": true})");
  }
  tune::run_result run(double width, double factor) {
    auto backend = tune::make_user_kernel_backend(launch_path, "cpu", scratch.options());
    auto config = backend->space()->from_values({{"width", width}, {"factor", factor}});
    auto built = backend->build(config, 120.0);
    INFO(built.message);
    REQUIRE(built.state == status::ok);
    return backend->run(config, built, 0, 30.0);
  }
};

}  // namespace

TEST_CASE("a Kernel Tuner style kernel: #defines, data files, expected outputs, its own time", "[kernels]") {
  self_timed_kernel kernel;
  auto program = tune::read_user_kernel(kernel.launch_path);
  auto source = program->source(program->space->from_values({{"width", 8.0}, {"factor", 2.0}}));
  CHECK(source.find("#define width 8\n") != std::string::npos);
  CHECK(source.find("#define factor 2\n") != std::string::npos);
  for (auto [width, factor] : {std::pair{1.0, 1.0}, std::pair{8.0, 2.0}}) {
    auto measured = kernel.run(width, factor);
    INFO(measured.message);
    REQUIRE(measured.state == status::ok);
    CHECK(measured.time_ms == Approx(0.25 * factor));  // what the kernel returned, not the clock
  }
}

TEST_CASE("expected outputs given as a file are checked with an absolute tolerance", "[kernels]") {
  self_timed_kernel kernel(2.001f);  // off by 0.002 * |x|, up to 0.04
  auto measured = kernel.run(8.0, 1.0);
  CHECK(measured.state == status::wrong_answer);
  CHECK(measured.message.find("absolute tolerance") != std::string::npos);
}

TEST_CASE("Kernel Tuner style launch fields that are wrong name the field", "[kernels]") {
  self_timed_kernel kernel;
  auto expect_error = [&](const std::string& text, const std::string& field) {
    expect_launch_error(kernel.scratch, text, field);
  };
  const std::string head = R"({"source": "twice.c", "entry": "twice", "space": "space.json",
      "arguments": [{"type": "float*", "size": 64, "output": true}, {"type": "float*", "size": 64, "data": "in.bin"}],)";
  expect_error(head + R"("expected": "expected.bin", "constants": "macro"})", "constants");
  expect_error(head + R"("expected": "expected.bin", "reference": {"source": "twice.c", "entry": "twice"}})",
               "expected");
  expect_error(head + R"("expected": "expected.bin", "returns_time": 1})", "returns_time");
  expect_error(head + R"("expected": "expected.bin", "absolute_tolerance": "yes"})", "absolute_tolerance");
  expect_error(R"({"source": "twice.c", "entry": "twice", "space": "space.json",
      "arguments": [{"type": "float*", "size": 64, "output": true, "data": "in.bin"}], "expected": "expected.bin"})",
               "arguments[0].data");
}

TEST_CASE("derived values add #defines per configuration and divide a CUDA grid", "[kernels]") {
  self_timed_kernel kernel;
  const std::string arguments = R"("untyped_pointers": true, "expected": "expected.bin",
      "arguments": [{"name": "out", "type": "float*", "size": 64, "output": true},
                    {"name": "in", "type": "float*", "size": 64, "data": "in.bin"},
                    {"name": "n", "type": "int", "value": 64}]})";
  kernel.scratch.write("derived.json", R"({"configurations": [
      {"config": {"width": 8, "factor": 2}, "defines": {"lanes_total": "16", "label": "w8 f2"}},
      {"config": {"factor": 1, "width": 1}, "defines": {"lanes_total": "1"}}]})");
  auto path = kernel.scratch.write("derived_launch.json", R"({"source": "twice.c", "entry": "twice",
      "space": "space.json", "constants": "define", "derived": "derived.json", )" +
                                                              arguments);
  auto program = tune::read_user_kernel(path);
  auto config = program->space->from_values({{"width", 8.0}, {"factor", 2.0}});
  auto source = program->source(config);
  auto defined = source.find("#define lanes_total 16\n");
  REQUIRE(defined != std::string::npos);
  CHECK(source.find("#define label w8 f2\n") != std::string::npos);
  CHECK(source.find("#define factor 2\n") < defined);
  CHECK(defined < source.find("typedef float lanes"));
  CHECK(
      program->source(program->space->from_values({{"width", 1.0}, {"factor", 1.0}})).find("#define lanes_total 1\n") !=
      std::string::npos);
  CHECK(program->check(config).empty());
  auto missing = program->check(program->space->from_values({{"width", 1.0}, {"factor", 2.0}}));
  CHECK(missing.find("no derived values for this configuration") != std::string::npos);
  CHECK(missing.find("derived.json") != std::string::npos);
  // The derived values are part of the task: other values, another key.
  kernel.scratch.write("derived.json", R"({"configurations": [{"config": {"width": 8, "factor": 2},
      "defines": {"lanes_total": "17"}}]})");
  CHECK(tune::read_user_kernel(path)->key != program->key);

  kernel.scratch.write("gpu.cu", "extern \"C\" __global__ void twice(float* out) {}\n");
  kernel.scratch.write("gpu_space.json", R"({"block_size_x": {"_type": "choice", "_value": [32, 128]},
                                             "per_thread": {"_type": "choice", "_value": [1, 4]}})");
  kernel.scratch.write("gpu_derived.json", R"({"configurations": [
      {"config": {"block_size_x": 128, "per_thread": 4}, "grid_divisor": [512]},
      {"config": {"block_size_x": 32, "per_thread": 1}, "defines": {"grid_size_x": "32"}}]})");
  auto gpu_path = kernel.scratch.write("gpu_launch.json", R"({"language": "cuda", "source": "gpu.cu",
      "entry": "twice", "space": "gpu_space.json", "derived": "gpu_derived.json", "problem_size": [1000],
      "block_size": ["block_size_x"], )" + arguments);
  auto gpu = tune::read_user_kernel(gpu_path);
  auto divided = gpu->geometry(gpu->space->from_values({{"block_size_x", 128.0}, {"per_thread", 4.0}}));
  CHECK(divided.block[0] == 128);
  CHECK(divided.grid[0] == 2);  // ceil(1000 / 512)
  auto plain = gpu->space->from_values({{"block_size_x", 32.0}, {"per_thread", 1.0}});
  CHECK(gpu->geometry(plain).grid[0] == 32);  // no divisor given: ceil(1000 / 32)
  CHECK(gpu->source(plain).find("#define grid_size_x 32\n") != std::string::npos);
  CHECK(gpu->check(gpu->space->from_values({{"block_size_x", 128.0}, {"per_thread", 1.0}})).find("no derived values") !=
        std::string::npos);
}

TEST_CASE("a derived file that is wrong names the file and the entry", "[kernels]") {
  self_timed_kernel kernel;
  auto path = kernel.scratch.write("derived_launch.json", R"({"source": "twice.c", "entry": "twice",
      "space": "space.json", "derived": "derived.json", "expected": "expected.bin",
      "arguments": [{"type": "float*", "size": 64, "output": true}, {"type": "float*", "size": 64, "data": "in.bin"}]})");
  for (auto [text, field] : std::vector<std::pair<std::string, std::string>>{
           {R"([])", "configurations"},
           {R"({"configurations": [{"config": {"width": 3, "factor": 1}}]})", "configurations[0].config"},
           {R"({"configurations": [{"config": {"width": 1, "factor": 1}, "grid_divisor": [0]}]})",
            "configurations[0].grid_divisor"},
           {R"({"configurations": [{"config": {"width": 1, "factor": 1}}, {"config": {"width": 8, "factor": 1},
               "defines": {"x": "1\n2"}}]})",
            "configurations[1].defines.x"},
           {R"({"configurations": [{"config": {"width": 1, "factor": 1}, "defines": {"x": "1\r#define y 2"}}]})",
            "configurations[0].defines.x"},
           {R"({"configurations": [{"config": {"width": 1, "factor": 1}, "defines": {"x": "1 \\"}}]})",
            "configurations[0].defines.x"},
           {R"({"configurations": [{"config": {"width": 1, "factor": 1}}, {"config": {"width": 1, "factor": 1}}]})",
            "configurations[1].config"}}) {
    kernel.scratch.write("derived.json", text);
    expect_read_error(path, text, {"derived.json: " + field + ":"});
  }
}

/// A GPU kernel (CUDA, and HIP as it is written alike) of the scale task: its
/// block extent tuned, and a factorization's second factor read back.
[[maybe_unused]] constexpr const char* gpu_scale_source = R"(
extern "C" __global__ void scale(float* out, const float* in, int n) {
  int i = blockIdx.x * block_size_x + threadIdx.x;
  if (i < n) out[i] = in[i] * 2.0f * tile_1 / tile_1;
}
)";

#ifdef TUNE_WITH_NVRTC

TEST_CASE("a CUDA user kernel compiles with NVRTC and takes its block from the configuration", "[kernels][cuda]") {
  misbehaving_kernel kernel;
  kernel.scratch.write("scale.cu", gpu_scale_source);
  kernel.scratch.write("cuda_space.json",
                       R"({"block_size_x": {"_type": "choice", "_value": [32, 128, 2048]},
                           "tile": {"_type": "factor", "_value": [4, 2]}})");
  auto path = kernel.scratch.write("cuda.json", R"({
    "language": "cuda", "source": "scale.cu", "entry": "scale", "space": "cuda_space.json",
    "problem_size": [1000], "block_size": ["block_size_x"],
    "arguments": [{"name": "out", "type": "float*", "size": 1000, "output": true},
                  {"name": "in", "type": "float*", "size": 1000},
                  {"name": "n", "type": "int", "value": 1000}],
    "reference": {"source": "reference.cpp", "entry": "scale_reference"}
  })");
  auto options = kernel.scratch.options();
  options.cuda_arch = 80;
  auto backend = tune::make_user_kernel_backend(path, "cuda", options);
  auto program = tune::read_user_kernel(path);
  auto space = backend->space();
  auto config = space->from_values({{"block_size_x", 128.0}, {"tile", std::vector<std::int64_t>{2, 2}}});
  auto geometry = program->geometry(config);
  CHECK(geometry.block[0] == 128);
  CHECK(geometry.grid[0] == 8);  // ceil(1000 / 128)
  auto built = backend->build(config, 60.0);
  INFO(built.message);
  CHECK(built.state == status::ok);
  auto too_big = space->from_values({{"block_size_x", 2048.0}, {"tile", std::vector<std::int64_t>{2, 2}}});
  CHECK(backend->build(too_big, 60.0).state == status::instantiation_error);
  CHECK_THROWS_AS(tune::make_user_kernel_backend(path, "cpu", options), std::invalid_argument);

  auto bad = kernel.scratch.write("bad_cuda.json", R"({
    "language": "cuda", "source": "scale.cu", "entry": "scale", "space": "cuda_space.json",
    "problem_size": [1000], "block_size": ["block_size_y"],
    "arguments": [{"name": "out", "type": "float*", "size": 1000, "output": true}],
    "reference": {"source": "reference.cpp", "entry": "scale_reference"}
  })");
  try {
    tune::read_user_kernel(bad);
    FAIL("no error for an unknown block_size parameter");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("block_size[0]") != std::string::npos);
  }
}

#else

TEST_CASE("a CUDA user kernel compiles with NVRTC", "[kernels][cuda]") {
  SKIP_TEST("built without NVRTC (no CUDA toolkit at build time)");
}

#endif

#ifdef TUNE_WITH_HIP

TEST_CASE("a HIP user kernel compiles with hipcc and says plainly when there is no AMD GPU", "[kernels][hip]") {
  misbehaving_kernel kernel;
  kernel.scratch.write("scale.hip", gpu_scale_source);
  kernel.scratch.write("hip_space.json", R"({"block_size_x": {"_type": "choice", "_value": [64, 256, 2048]},
                                             "tile": {"_type": "factor", "_value": [4, 2]}})");
  auto launch = [&](const char* language) {
    return std::string(R"({"language": ")") + language + R"(", "source": "scale.hip", "entry": "scale",
      "space": "hip_space.json", "problem_size": [1000], "block_size": ["block_size_x"],
      "arguments": [{"name": "out", "type": "float*", "size": 1000, "output": true},
                    {"name": "in", "type": "float*", "size": 1000},
                    {"name": "n", "type": "int", "value": 1000}],
      "reference": {"source": "reference.cpp", "entry": "scale_reference"}})";
  };
  auto path = kernel.scratch.write("hip.json", launch("hip"));
  auto options = kernel.scratch.options();
  options.hip_arch = "gfx90a";
  auto backend = tune::make_user_kernel_backend(path, "hip", options);
  CHECK(backend->name() == "hip");
  CHECK(backend->task_key().find(":hip") != std::string::npos);
  auto space = backend->space();
  auto config = space->from_values({{"block_size_x", 256.0}, {"tile", std::vector<std::int64_t>{2, 2}}});
  auto built = backend->build(config, 120.0);
  INFO(built.message);
  REQUIRE(built.state == status::ok);
  CHECK(backend->build(space->from_values({{"block_size_x", 2048.0}, {"tile", std::vector<std::int64_t>{2, 2}}}), 60.0)
            .state == status::instantiation_error);
  auto measured = backend->run(config, built, 0, 30.0);
  INFO(measured.message);
  if (measured.state == status::runtime_error) {
    CHECK(measured.message.find("no AMD GPU found") == 0);
  } else {
    CHECK(measured.state == status::ok);  // a machine with an AMD GPU runs it
  }
  // A HIP kernel is not a CUDA one, nor the other way round.
  CHECK_THROWS_WITH(tune::make_user_kernel_backend(path, "cuda", options),
                    Catch::Contains("\"language\": \"hip\" kernel cannot run on the 'cuda' backend"));
  auto cuda_path = kernel.scratch.write("cuda.json", launch("cuda"));
  CHECK_THROWS_AS(tune::make_user_kernel_backend(cuda_path, "hip", options), std::invalid_argument);
  auto bad_path = kernel.scratch.write("opencl.json", launch("opencl"));
  CHECK_THROWS_WITH(tune::read_user_kernel(bad_path), Catch::Contains("\"hip\""));
}

#else

TEST_CASE("a HIP user kernel compiles with hipcc", "[kernels][hip]") {
  SKIP_TEST("built without hipcc: the HIP backend is not built");
}

#endif
