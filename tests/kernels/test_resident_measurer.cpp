// The resident measuring process of the CPU backend: kept between trials,
// survived when it dies or hangs, and measuring against the best time (a run
// past the slow limit is too_slow, timing stops early for a clearly slower
// kernel). Its process is found through /proc as the test's child named
// tune-kernel-wor(ker).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "../../kernels/src/cpu/measure_rules.hpp"
#include "kernel_fixtures.hpp"
#include "kernels/process_checks.hpp"
#include "resident_channel.hpp"
#include "tune/kernels/cpu_backend.hpp"

using tune::status;
using tune::test::child_soon;
using tune::test::children_of;
using tune::test::ends_soon;

namespace {

const std::string worker_name = "tune-kernel-wor";  // comm: the first 15 characters

// A program whose kernels double their input of 4 floats (the reference's
// answer), under `key`; its space and source for the caller to give.
std::shared_ptr<tune::kernel_program> doubling_program(const std::string& key) {
  auto program = std::make_shared<tune::kernel_program>();
  program->key = key;
  program->reference_source = R"(
extern "C" void tune_reference(void* const* a) {
  for (int i = 0; i < 4; ++i) static_cast<float*>(a[0])[i] = 2 * static_cast<const float*>(a[1])[i];
}
)";
  program->arguments = {tune::float_array_argument("out", 4, true), tune::float_array_argument("in", 4)};
  return program;
}

// A kernel that sleeps `sleep_ms` per run and doubles its input.
tune::kernel_program_ptr sleeping_program() {
  auto program = doubling_program("sleeping:cpu");
  auto sleep_ms = tune::make_discrete_parameter("sleep_ms", {0, 5, 20, 200, 3000});
  program->space = std::make_shared<tune::search_space>(std::vector<tune::parameter_ptr>{sleep_ms}, "test");
  program->source = [sleep_ms](const tune::configuration& config) {
    auto ms = std::get<double>(sleep_ms->value(config[0]));
    return "#include <unistd.h>\nconstexpr long sleep_us = " + std::to_string(static_cast<long>(ms * 1000)) + R"(;
extern "C" void tune_entry(void* const* a) {
  if (sleep_us > 0) usleep(sleep_us);
  for (int i = 0; i < 4; ++i) static_cast<float*>(a[0])[i] = 2 * static_cast<const float*>(a[1])[i];
}
)";
  };
  return program;
}

// The configuration of `backend` whose one parameter `name` is `value`, built
// and run once (20 s timeout).
tune::run_result build_and_run(tune::backend& backend, const std::string& name, double value) {
  auto config = backend.space()->from_values({{name, value}});
  auto build = backend.build(config, 120.0);
  REQUIRE(build.state == status::ok);
  return backend.run(config, build, 0, 20.0);
}

// Gives `program` a space of one parameter, `name`, of values 0 and 1; the
// parameter, for its source to read.
tune::parameter_ptr two_way_space(tune::kernel_program& program, const std::string& name) {
  auto parameter = tune::make_discrete_parameter(name, {0, 1});
  program.space = std::make_shared<tune::search_space>(std::vector<tune::parameter_ptr>{parameter}, "test");
  return parameter;
}

// Runs `name` = 1, 0 and 1 again in turn in one backend: the two 1s must be
// ok; the 0's result, for the caller to check.
tune::run_result between_two_good_runs(tune::backend& backend, const std::string& name) {
  CHECK(build_and_run(backend, name, 1).state == status::ok);
  auto middle = build_and_run(backend, name, 0);
  CHECK(build_and_run(backend, name, 1).state == status::ok);
  return middle;
}

struct sleeping_kernel {
  tune::test::kernel_scratch scratch{"resident"};
  tune::kernel_program_ptr program = sleeping_program();
  tune::backend_ptr backend;
  explicit sleeping_kernel(int min_repeats = 1, double min_time_s = 0.0) {
    auto options = scratch.options();
    options.measurement.min_repeats = min_repeats;
    options.measurement.max_repeats = 100;
    options.measurement.min_time_s = min_time_s;
    backend = tune::make_cpu_backend(program, options);
  }
  std::pair<tune::configuration, tune::build_result> built(double sleep_ms) {
    auto config = backend->space()->from_values({{"sleep_ms", sleep_ms}});
    auto build = backend->build(config, 120.0);
    REQUIRE(build.state == status::ok);
    return {config, build};
  }
  tune::run_result run(double sleep_ms, const tune::run_limits& limits = 20.0) {
    auto [config, build] = built(sleep_ms);
    return backend->run(config, build, 0, limits);
  }
};

tune::run_limits against(double reference_ms, double timeout_s = 10.0) {
  tune::run_limits limits(timeout_s);
  limits.reference_ms = reference_ms;
  return limits;
}

// The test process's resident workers (its other children are transient).
std::vector<long> residents() { return children_of(::getpid(), worker_name); }

}  // namespace

TEST_CASE("the resident measurer is kept between trials and fills repeats and kernel time", "[kernels]") {
  sleeping_kernel kernel(3);
  auto first = kernel.run(5);
  INFO(first.message);
  REQUIRE(first.state == status::ok);
  CHECK(first.repeats == 3);
  CHECK_FALSE(first.stopped_early);
  // The checked run and three timed runs of at least 5 ms each.
  CHECK(first.kernel_s >= 0.020);
  CHECK(first.kernel_s <= first.run_s);
  CHECK(first.time_ms >= 5.0);
  auto started = residents();
  REQUIRE(started.size() == 1);
  for (int i = 0; i < 3; ++i) CHECK(kernel.run(0).state == status::ok);
  CHECK(residents() == started);
  // It goes with its backend.
  kernel.backend.reset();
  CHECK(ends_soon(started.front()));
}

TEST_CASE("a kernel that writes no output is a wrong answer after one that wrote it, in the same resident process",
          "[kernels]") {
  // Each trial's kernel runs in a child of the resident process, which keeps
  // the buffers between trials: what one kernel wrote must not be there when
  // the next one runs, or a kernel that writes nothing would pass its check.
  auto program = std::make_shared<tune::kernel_program>(*sleeping_program());
  program->key = "lazy:cpu";
  auto writes = two_way_space(*program, "writes");
  program->source = [writes](const tune::configuration& config) {
    bool write = std::get<double>(writes->value(config[0])) > 0;
    return std::string("extern \"C\" void tune_entry(void* const* a) {\n") +
           (write ? "  for (int i = 0; i < 4; ++i) static_cast<float*>(a[0])[i] = 2 * static_cast<const "
                    "float*>(a[1])[i];\n"
                  : "  (void)a;\n") +
           "}\n";
  };
  tune::test::kernel_scratch scratch{"resident-lazy"};
  auto backend = tune::make_cpu_backend(program, scratch.options());
  auto lazy = between_two_good_runs(*backend, "writes");
  INFO(lazy.message);
  CHECK(lazy.state == status::wrong_answer);
  CHECK(residents().size() == 1);  // all three in one resident process
}

TEST_CASE("a resident measurer killed during a run fails that trial and the next trial starts another", "[kernels]") {
  sleeping_kernel kernel;
  REQUIRE(kernel.run(0).state == status::ok);
  auto resident = residents();
  REQUIRE(resident.size() == 1);
  // While a kernel sleeps 3 s in its child, the resident process is killed.
  long kernel_child = 0;
  std::thread killer([&] {
    kernel_child = child_soon(resident.front());
    ::kill(static_cast<pid_t>(resident.front()), SIGKILL);
  });
  auto start = std::chrono::steady_clock::now();
  auto lost = kernel.run(3000);
  killer.join();
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(lost.message);
  CHECK(lost.state == status::runtime_error);
  CHECK(lost.message.find("ended during the run") != std::string::npos);
  CHECK(lost.message.find("signal 9") != std::string::npos);
  CHECK(took < 2.5);
  REQUIRE(kernel_child > 0);
  CHECK(ends_soon(kernel_child));
  // The next trial measures, in a fresh process.
  auto next = kernel.run(0);
  INFO(next.message);
  CHECK(next.state == status::ok);
  auto fresh = residents();
  REQUIRE(fresh.size() == 1);
  CHECK(fresh != resident);
  // One that died between trials is started again for the next one.
  ::kill(static_cast<pid_t>(fresh.front()), SIGKILL);
  CHECK(ends_soon(fresh.front()));
  CHECK(kernel.run(0).state == status::ok);
}

TEST_CASE("a resident measurer that stops answering is killed at the engine's deadline and replaced", "[kernels]") {
  sleeping_kernel kernel;
  REQUIRE(kernel.run(0).state == status::ok);
  auto resident = residents();
  REQUIRE(resident.size() == 1);
  // Stopped while its child sleeps: it can neither stop the kernel at the
  // 1 s timeout nor answer; the engine kills it after 1 s and its grace.
  std::thread stopper([&] {
    child_soon(resident.front());
    ::kill(static_cast<pid_t>(resident.front()), SIGSTOP);
  });
  auto hung = kernel.run(3000, 1.0);
  stopper.join();
  INFO(hung.message);
  CHECK(hung.state == status::run_timeout);
  CHECK(hung.message.find("did not answer") != std::string::npos);
  CHECK(hung.run_s < 5.0);
  CHECK(ends_soon(resident.front()));
  CHECK(kernel.run(0).state == status::ok);
}

TEST_CASE("a CPU kernel run past the slow limit is stopped as too slow long before the timeout", "[kernels]") {
  sleeping_kernel kernel;
  // 200 ms a run against a best of 5 ms: stopped at 4 x 5 ms (the default).
  auto slow = kernel.run(200, against(5.0));
  INFO(slow.message);
  CHECK(slow.state == status::too_slow);
  CHECK(std::isnan(slow.time_ms));
  CHECK(slow.run_s < 1.0);
  CHECK(slow.message.find("more than 4x the best time so far, 5 ms") != std::string::npos);
  CHECK(slow.message.rfind("stopped after ", 0) == 0);
  // The resident process lives on: the next trial measures.
  auto resident = residents();
  CHECK(kernel.run(0, against(5.0)).state == status::ok);
  CHECK(residents() == resident);
  // No best time yet, or the rule off: measured in full.
  CHECK(kernel.run(200, 10.0).state == status::ok);
  auto off = against(5.0);
  off.early_stop.slow_factor = 0;
  off.early_stop.margin = 0;
  CHECK(kernel.run(200, off).state == status::ok);
  // The least limit (min_slow_ms) applies to very fast best times.
  auto floor = against(0.001);
  floor.early_stop.min_slow_ms = 100;
  auto floored = kernel.run(200, floor);
  INFO(floored.message);
  CHECK(floored.state == status::too_slow);
  CHECK(floored.message.find("min_slow_ms 100 ms") != std::string::npos);
}

TEST_CASE("before any best is known, a CPU kernel run past the limit of the first runs is stopped as too slow",
          "[kernels]") {
  sleeping_kernel kernel;
  tune::run_limits first(10.0);
  first.early_stop.first_limit_ms = 50.0;
  auto slow = kernel.run(200, first);
  INFO(slow.message);
  CHECK(slow.state == status::too_slow);
  CHECK(slow.run_s < 1.0);
  CHECK(slow.message.find("no best time known yet") != std::string::npos);
  CHECK(slow.message.find("first_limit_ms 50 ms") != std::string::npos);
  // Within the limit: measured.
  CHECK(kernel.run(20, first).state == status::ok);
  // Once a best is known the ratio rule alone applies: 200 ms is within 4 x 100 ms.
  auto known = against(100.0);
  known.early_stop.first_limit_ms = 50.0;
  CHECK(kernel.run(200, known).state == status::ok);
  // A plain timeout has no first limit.
  CHECK(tune::run_limits(10.0).early_stop.first_limit_ms == 0.0);
}

TEST_CASE("timing stops early for a kernel clearly slower than the best and not for one as fast", "[kernels]") {
  sleeping_kernel kernel(5, 1.0);
  auto slower = kernel.run(20, against(8.0));  // 2.5x: within the slow limit, beyond the margin
  INFO(slower.message);
  REQUIRE(slower.state == status::ok);
  CHECK(slower.stopped_early);
  CHECK(slower.repeats >= 1);
  CHECK(slower.repeats < 5);
  CHECK(slower.time_ms >= 20.0);
  CHECK(slower.kernel_s < 0.2);

  auto as_fast = kernel.run(20, against(20.0));
  INFO(as_fast.message);
  REQUIRE(as_fast.state == status::ok);
  CHECK_FALSE(as_fast.stopped_early);
  CHECK(as_fast.repeats >= 5);
  CHECK(as_fast.kernel_s >= 1.0);

  // The margin off: in full.
  auto no_margin = against(8.0);
  no_margin.early_stop.margin = 0;
  auto full = kernel.run(20, no_margin);
  CHECK_FALSE(full.stopped_early);
  CHECK(full.repeats >= 5);
}

TEST_CASE("a kernel whose checked run alone is clearly slower is timed from that run and no timed run follows",
          "[kernels]") {
  sleeping_kernel kernel(5, 1.0);
  // 20 ms against a best of 8 ms: even granting the first run 1.5x, more
  // than 1.25 x 8 ms (and within the slow limit, 4 x 8 ms).
  auto clear = kernel.run(20, against(8.0));
  INFO(clear.message);
  REQUIRE(clear.state == status::ok);
  CHECK(clear.stopped_early);
  CHECK(clear.repeats == 1);
  CHECK(clear.times_ms.size() == 1);
  CHECK(clear.time_ms >= 20.0);
  CHECK(clear.message.find("timed from its checked run alone") != std::string::npos);
  CHECK(clear.message.find("the best time so far, 8 ms") != std::string::npos);

  // 200 ms against 140: the checked run is within 1.5 x 1.25 x 140 = 262.5 ms,
  // so a timed run follows, and that one stops the timing (200 > 175 ms).
  auto near = kernel.run(200, against(140.0));
  INFO(near.message);
  REQUIRE(near.state == status::ok);
  CHECK(near.stopped_early);
  CHECK(near.repeats == 1);
  CHECK(near.message.empty());

  // The margin off: neither rule, in full.
  auto no_margin = against(8.0);
  no_margin.early_stop.margin = 0;
  auto full = kernel.run(20, no_margin);
  CHECK_FALSE(full.stopped_early);
  CHECK(full.repeats >= 5);
  CHECK(full.message.empty());
}

TEST_CASE("the checked run's allowance is learned from the device's own first runs", "[kernels]") {
  // A kernel whose first run in a process takes 200 times its others (200
  // and 1 ms): as if first touches cost that much on this machine. The gap is
  // wide so that a loaded machine, which stretches every sleep by up to tens
  // of milliseconds, still shows the device a first run far slower than its
  // others.
  auto program = doubling_program("slow_first_run:cpu");
  two_way_space(*program, "variant");
  program->source = [](const tune::configuration&) {
    return std::string(R"(#include <unistd.h>
extern "C" void tune_entry(void* const* a) {
  static bool first = true;
  usleep(first ? 200000 : 1000);
  first = false;
  for (int i = 0; i < 4; ++i) static_cast<float*>(a[0])[i] = 2 * static_cast<const float*>(a[1])[i];
}
)");
  };
  tune::test::kernel_scratch scratch{"first-runs"};
  auto options = scratch.options();
  options.measurement.min_repeats = 3;
  options.measurement.min_time_s = 0.0;
  auto backend = tune::make_cpu_backend(program, options);
  auto config = backend->space()->from_values({{"variant", 1.0}});
  auto build = backend->build(config, 120.0);
  REQUIRE(build.state == status::ok);

  // Against a best of 4 ms (margin 0.5, no slow limit): the default
  // allowance (1.5) takes the checked run of 200 ms or more for a kernel
  // over 6 ms, and hides it from the search.
  auto limits = against(4.0);
  limits.early_stop.margin = 0.5;
  limits.early_stop.slow_factor = 0;
  auto hidden = backend->run(config, build, 0, limits);
  INFO(hidden.message);
  REQUIRE(hidden.state == status::ok);
  CHECK(hidden.message.find("timed from its checked run alone") != std::string::npos);
  CHECK(hidden.message.find("(1.5 for a first run's slowness") != std::string::npos);

  // Once the device has timed enough kernels from timed runs (no best known,
  // so no early stop), it allows first runs their slowness.
  double slowest_ms = 0;
  for (std::size_t i = 0; i < tune::measure_rules::first_run_allowance::least; ++i) {
    auto timed = backend->run(config, build, 0, 20.0);
    REQUIRE(timed.state == status::ok);
    CHECK_FALSE(timed.stopped_early);
    slowest_ms = std::max(slowest_ms, timed.time_ms);
  }
  // A best a few times the slowest of those, so that load on the machine
  // does not stop the timed runs; still far below what the default
  // allowance lets a 200 ms checked run pass for.
  INFO("the slowest of the timed kernels: " << slowest_ms << " ms");
  limits.reference_ms = 4 * slowest_ms;
  auto seen = backend->run(config, build, 0, limits);
  INFO(seen.message);
  REQUIRE(seen.state == status::ok);
  CHECK(seen.message.empty());
  CHECK_FALSE(seen.stopped_early);
  CHECK(seen.repeats >= 3);
  CHECK(seen.time_ms < 100.0);
}

TEST_CASE("output pages a kernel leaves unwritten still read as poison where the reference holds zeros", "[kernels]") {
  // Before its checked run a trial's child replaces the output's pages
  // (shared with the resident process) by pages of its own: they must be
  // poisoned again, or a kernel that skips elements whose expected value is 0
  // would pass its check. 8192 floats: whole pages in the middle.
  auto program = std::make_shared<tune::kernel_program>();
  program->key = "half:cpu";
  auto writes = two_way_space(*program, "writes_all");
  program->source = [writes](const tune::configuration& config) {
    bool all = std::get<double>(writes->value(config[0])) > 0;
    return std::string("constexpr int n = ") + (all ? "8192" : "4096") + R"(;
extern "C" void tune_entry(void* const* a) {
  auto* out = static_cast<float*>(a[0]);
  const auto* in = static_cast<const float*>(a[1]);
  for (int i = 0; i < n; ++i) out[i] = i < 4096 ? 2 * in[i] : 0.0f;
}
)";
  };
  program->reference_source = R"(
extern "C" void tune_reference(void* const* a) {
  auto* out = static_cast<float*>(a[0]);
  const auto* in = static_cast<const float*>(a[1]);
  for (int i = 0; i < 8192; ++i) out[i] = i < 4096 ? 2 * in[i] : 0.0f;
}
)";
  program->arguments = {tune::float_array_argument("out", 8192, true), tune::float_array_argument("in", 8192)};
  tune::test::kernel_scratch scratch{"resident-half"};
  auto backend = tune::make_cpu_backend(program, scratch.options());
  auto half = between_two_good_runs(*backend, "writes_all");
  INFO(half.message);
  CHECK(half.state == status::wrong_answer);
  CHECK(half.message.find("output element 4096 is nan") != std::string::npos);
}

TEST_CASE("what a kernel leaves running, even out of its process group, is killed after its trial", "[kernels]") {
  tune::test::kernel_scratch scratch("escapee");
  auto pid_file = scratch.path() / "escapee.pid";
  auto program = std::make_shared<tune::kernel_program>(*sleeping_program());
  // Its first run starts a process in a session of its own that sleeps.
  program->source = [pid_file](const tune::configuration&) {
    return R"(#include <stdio.h>
#include <unistd.h>
extern "C" void tune_entry(void* const* a) {
  static bool forked = false;
  if (!forked) {
    forked = true;
    pid_t escapee = fork();
    if (escapee == 0) {
      setsid();
      sleep(300);
      _exit(0);
    }
    FILE* file = fopen(")" +
           pid_file.string() + R"(", "w");
    fprintf(file, "%d\n", (int)escapee);
    fclose(file);
  }
  for (int i = 0; i < 4; ++i) static_cast<float*>(a[0])[i] = 2 * static_cast<const float*>(a[1])[i];
}
)";
  };
  auto backend = tune::make_cpu_backend(program, scratch.options());
  auto config = backend->space()->from_values({{"sleep_ms", 0.0}});
  auto built = backend->build(config, 120.0);
  REQUIRE(built.state == status::ok);
  auto measured = backend->run(config, built, 0, 20.0);
  INFO(measured.message);
  CHECK(measured.state == status::ok);
  long escapee = 0;
  std::ifstream(pid_file) >> escapee;
  REQUIRE(escapee > 1);
  CHECK(ends_soon(escapee));
}

TEST_CASE("a process per trial still measures when the resident measurer is off", "[kernels]") {
  tune::test::kernel_scratch scratch("per-trial");
  auto options = scratch.options();
  options.resident_measurer = false;
  options.measurement.min_repeats = 3;
  auto backend = tune::make_cpu_backend(sleeping_program(), options);
  auto config = backend->space()->from_values({{"sleep_ms", 5.0}});
  auto built = backend->build(config, 120.0);
  REQUIRE(built.state == status::ok);
  // Measured in full, whatever the best time.
  auto measured = backend->run(config, built, 0, against(1.0));
  INFO(measured.message);
  CHECK(measured.state == status::ok);
  CHECK(measured.repeats == 3);
  CHECK_FALSE(measured.stopped_early);
  CHECK(measured.kernel_s >= 0.020);
  CHECK(residents().empty());
}

TEST_CASE("the resident measurer and its kernel die with the engine", "[kernels]") {
  // A process standing for the engine runs a 3 s kernel and is killed with
  // SIGKILL while it runs: its resident process sees its channel close.
  pid_t engine = ::fork();
  REQUIRE(engine >= 0);
  if (engine == 0) {
    sleeping_kernel kernel;
    kernel.run(3000);
    ::_exit(0);
  }
  long resident = child_soon(engine, worker_name);
  long kernel_child = resident > 0 ? child_soon(resident) : 0;
  ::kill(engine, SIGKILL);
  ::waitpid(engine, nullptr, 0);
  REQUIRE(resident > 0);
  REQUIRE(kernel_child > 0);
  CHECK(ends_soon(resident));
  CHECK(ends_soon(kernel_child));
  std::filesystem::remove_all(std::filesystem::temp_directory_path() /
                              ("tune-kernels-resident-" + std::to_string(engine)));
}

TEST_CASE("a burst of runs timed against others comes to the protocol's statistic, median or min", "[kernels]") {
  // Every other run sleeps 30 ms, the others not at all: each burst of at
  // least 2 ms is one quick run and one slow one, whose median is about 15 ms
  // and whose least is well under 1 ms.
  auto program = std::make_shared<tune::kernel_program>(*sleeping_program());
  program->key = "alternating:cpu";
  program->source = [](const tune::configuration&) {
    return std::string(R"(#include <unistd.h>
static int calls;
extern "C" void tune_entry(void* const* a) {
  if (calls++ % 2 == 0) usleep(30000);  // the checked run, then the second of each burst
  for (int i = 0; i < 4; ++i) static_cast<float*>(a[0])[i] = 2 * static_cast<const float*>(a[1])[i];
}
)");
  };
  for (auto statistic : {tune::time_statistic::median, tune::time_statistic::min}) {
    tune::test::kernel_scratch scratch{"alternating"};
    auto options = scratch.options();
    options.measurement.statistic = statistic;
    auto backend = tune::make_cpu_backend(program, options);
    auto config = backend->space()->from_values({{"sleep_ms", 0.0}});
    auto build = backend->build(config, 120.0);
    REQUIRE(build.state == status::ok);
    auto times = backend->run_interleaved({{config, build}}, 0, 3, 10.0);
    INFO(times.message);
    REQUIRE(times.ok());
    REQUIRE(times.time_ms.size() == 1);
    for (double ms : times.time_ms[0]) {
      if (statistic == tune::time_statistic::min)
        CHECK(ms < 1.0);
      else
        CHECK(ms > 10.0);
    }
  }
}

TEST_CASE("configurations timed against each other run in one child of the resident process, in turn, round by round",
          "[kernels]") {
  sleeping_kernel kernel;
  auto fast = kernel.built(0), slow = kernel.built(5), slower = kernel.built(20);
  REQUIRE(kernel.run(0).state == status::ok);  // the resident process is up
  auto started = residents();
  REQUIRE(started.size() == 1);
  auto times = kernel.backend->run_interleaved({fast, slow, slower}, 0, 3, 10.0);
  INFO(times.message);
  REQUIRE(times.ok());
  REQUIRE(times.time_ms.size() == 3);
  for (const auto& rounds : times.time_ms) CHECK(rounds.size() == 3);
  for (int r = 0; r < 3; ++r) {
    CHECK(times.time_ms[0][r] < 5.0);
    CHECK(times.time_ms[1][r] >= 5.0);
    CHECK(times.time_ms[2][r] >= 20.0);
  }
  CHECK(residents() == started);  // measured by the same process
  // A configuration that cannot be loaded fails the whole, naming it.
  auto broken = slow;
  broken.second.artifact = (kernel.scratch.path() / "missing.so").string();
  auto failed = kernel.backend->run_interleaved({fast, broken}, 0, 2, 10.0);
  CHECK_FALSE(failed.ok());
  CHECK_THAT(failed.message, Catch::Matchers::Contains("kernel 1: dlopen"));
  // And the process measures on.
  CHECK(kernel.run(0).state == status::ok);
}

TEST_CASE("flush_cache: the caches are flushed before each timed run when the arguments fit in the last-level cache",
          "[kernels]") {
  // A kernel that writes 1 into its four outputs, built by the CPU backend
  // and measured by a resident worker asked directly (the reply says whether
  // it flushed).
  tune::test::kernel_scratch scratch("flush");
  auto program = std::make_shared<tune::kernel_program>();
  program->key = "ones:cpu";
  auto unused = tune::make_discrete_parameter("unused", {0});
  program->space = std::make_shared<tune::search_space>(std::vector<tune::parameter_ptr>{unused}, "test");
  const std::string ones = R"(extern "C" void tune_entry(void* const* a) {
  for (int i = 0; i < 4; ++i) static_cast<float*>(a[0])[i] = 1.0f;
}
)";
  program->source = [ones](const tune::configuration&) { return ones; };
  program->reference_source = "extern \"C\" void tune_reference(void* const*) {}";
  program->arguments = {tune::float_array_argument("out", 4, true)};
  auto backend = tune::make_cpu_backend(program, scratch.options());
  auto build = backend->build(backend->space()->unflatten(0), 120.0);
  REQUIRE(build.state == status::ok);
  float expected[4] = {1, 1, 1, 1};
  auto reference = scratch.write("expected.bin", std::string(reinterpret_cast<const char*>(expected), sizeof expected));
  auto resident = tune::start_with_channel({tune::kernel_worker_path(scratch.options()), "--resident"});
  REQUIRE(resident.pid > 0);
  nlohmann::json request = {{"mode", "measure"},
                            {"library", build.artifact},
                            {"arguments", {{{"type", "float*"}, {"size", 4}, {"output", true}}}},
                            {"reference", reference},
                            {"min_time_s", 0.0},
                            {"min_repeats", 3},
                            {"timeout_s", 20.0}};
  auto plain = tune::test::ask_resident(resident, request);
  INFO(plain.dump());
  REQUIRE(plain.value("status", "") == "ok");
  CHECK_FALSE(plain.value("flushed", true));
  request["flush_cache"] = true;
  request["cache_bytes"] = 1 << 20;  // the 16 bytes fit
  auto flushed = tune::test::ask_resident(resident, request);
  INFO(flushed.dump());
  REQUIRE(flushed.value("status", "") == "ok");
  CHECK(flushed.value("flushed", false));
  CHECK(flushed.value("repeats", 0) == 3);
  request["cache_bytes"] = 8;  // they do not: their own runs evict them
  CHECK_FALSE(tune::test::ask_resident(resident, request).value("flushed", true));
  request["cache_bytes"] = 0;  // the machine does not say
  CHECK_FALSE(tune::test::ask_resident(resident, request).value("flushed", true));
  // Configurations against each other are flushed alike.
  auto interleave = request;
  interleave.erase("library");
  interleave["mode"] = "interleave";
  interleave["libraries"] = {build.artifact, build.artifact};
  interleave["rounds"] = 2;
  interleave["cache_bytes"] = 1 << 20;
  auto both = tune::test::ask_resident(resident, interleave);
  INFO(both.dump());
  REQUIRE(both.value("status", "") == "ok");
  CHECK(both.value("flushed", false));
  CHECK(both["rounds_ms"].size() == 2);
}
