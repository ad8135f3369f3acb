// The CPU templates compile and compute the right answer for random
// configurations (small shapes), the cache avoids rebuilding, and resource
// limits are found before compiling.
#include <dlfcn.h>
#include <sched.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "kernel_fixtures.hpp"
#include "skip.hpp"
#include "tune/kernels/cpu_backend.hpp"
#include "tune/kernels/subprocess.hpp"
#include "tune/kernels/task.hpp"

using Catch::Matchers::Contains;
using tune::status;

namespace {

// Builds and runs `count` random configurations; every one must be right.
void check_random_configurations(const std::string& task, int count, std::uint64_t seed, int threads = 1) {
  tune::test::kernel_scratch scratch("cpu");
  auto options = scratch.options();
  options.threads = threads;
  auto backend = tune::make_task_backend(task, "cpu", options);
  tune::rng_type rng(seed);
  for (int i = 0; i < count; ++i) {
    auto [config, built] = tune::test::build_some(*backend, rng);
    INFO(task << " " << backend->space()->to_json(config) << ": " << built.message);
    REQUIRE(built.state == status::ok);
    auto measured = backend->run(config, built, 0, 120.0);
    INFO(measured.message);
    CHECK(measured.state == status::ok);
    CHECK(std::isfinite(measured.time_ms));
    CHECK(measured.time_ms > 0.0);
  }
}

// A MatMul configuration from its four tuples and its panel and prefetch
// knobs (b_panel only where the space has it: B not transposed).
tune::configuration matmul_config(const tune::backend& backend, std::vector<std::int64_t> tile_n,
                                  std::vector<std::int64_t> tile_m, std::vector<std::int64_t> tile_k,
                                  std::vector<std::int64_t> order = {0, 1, 2}, const std::string& a_panel = "packed",
                                  const std::string& b_panel = "packed", double prefetch = 0.0,
                                  std::vector<std::int64_t> tile_b = {}) {
  std::map<std::string, tune::parameter_value> values{{"tile_n", tile_n},   {"tile_m", tile_m},
                                                      {"tile_k", tile_k},   {"loop_order", order},
                                                      {"a_panel", a_panel}, {"prefetch", prefetch}};
  if (backend.space()->find("b_panel")) values.emplace("b_panel", b_panel);
  if (!tile_b.empty()) values.emplace("tile_b", tile_b);
  return backend.space()->from_values(values);
}

// Builds and runs one configuration; the worker checks it against the
// reference (a wrong answer is not ok).
void check_correct(tune::backend& backend, const tune::configuration& config) {
  auto built = backend.build(config, 120.0);
  INFO(backend.space()->to_json(config) << ": " << built.message);
  REQUIRE(built.state == status::ok);
  auto measured = backend.run(config, built, 0, 120.0);
  INFO(measured.message);
  CHECK(measured.state == status::ok);
}

// Floats in a vector register and vector registers of this machine, as the
// CPU templates count them.
std::pair<std::int64_t, std::int64_t> machine_vectors() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return {16, 32};
  if (__builtin_cpu_supports("avx")) return {8, 16};
  return {4, 16};
}
}  // namespace

TEST_CASE("CPU MatMul is correct for random configurations", "[kernels]") {
  check_random_configurations("matmul:24x40x48", 3, 11);
}

TEST_CASE("CPU BatchMatMul is correct in its three layouts", "[kernels]") {
  check_random_configurations("bmm:4x16x12x32:nn", 2, 21);
  check_random_configurations("bmm:4x16x12x32:tn", 2, 22);
  check_random_configurations("bmm:4x16x12x32:nt", 2, 23);
}

TEST_CASE("CPU BatchMatMul is correct with packed and direct panels and prefetch in every layout", "[kernels]") {
  tune::test::kernel_scratch scratch("panels");
  int built_count = 0;
  for (const char* layout : {"nn", "tn", "nt"}) {
    // Two k blocks (the second adds to C), two register tiles per block.
    auto backend = tune::make_task_backend(std::string("bmm:2x16x12x32:") + layout, "cpu", scratch.options());
    const bool b_choice = backend->space()->find("b_panel").has_value();
    CHECK(b_choice == (std::string(layout) != "nt"));
    for (const char* a_panel : {"packed", "direct"})
      for (const char* b_panel : {"packed", "direct"}) {
        if (!b_choice && std::string(b_panel) == "direct") continue;
        const double prefetch = std::string(a_panel) == std::string(b_panel) ? 1.0 : 0.0;
        auto config = matmul_config(*backend, {1, 2, 2, 4}, {1, 1, 2, 16}, {2, 3, 2}, {2, 0, 1}, a_panel, b_panel,
                                    prefetch, {1, 2});
        INFO(layout);
        check_correct(*backend, config);
        ++built_count;
      }
  }
  CHECK(built_count == 10);
}

TEST_CASE("CPU BatchMatMul with B transposed packs whole vector blocks through registers correctly", "[kernels]") {
  // Blocks of depth a multiple of the lanes take the in-register transpose;
  // one of 3 lanes' depth the element-wise packing (both checked against the
  // reference). Two panels per block and two blocks of depth.
  tune::test::kernel_scratch scratch("transpose");
  const auto lanes = machine_vectors().first;
  auto backend = tune::make_task_backend(
      "bmm:2x8x" + std::to_string(4 * lanes) + "x" + std::to_string(2 * lanes) + ":nt", "cpu", scratch.options());
  for (std::vector<std::int64_t> tile_k : {std::vector<std::int64_t>{2, 2, lanes}, {2, 1, 2 * lanes}, {4, lanes, 1}})
    for (const char* a_panel : {"packed", "direct"}) {
      auto config =
          matmul_config(*backend, {1, 1, 2, 4}, {1, 1, 2, lanes}, tile_k, {2, 1, 0}, a_panel, "packed", 0.0, {2, 1});
      INFO(tile_k[0] << "x" << tile_k[1] << "x" << tile_k[2] << " " << a_panel);
      check_correct(*backend, config);
    }
  auto odd = tune::make_task_backend("bmm:2x8x12x" + std::to_string(2 * lanes) + ":nt", "cpu", scratch.options());
  check_correct(
      *odd, matmul_config(*odd, {1, 1, 2, 4}, {1, 1, 2, lanes}, {2, 2, 3}, {0, 1, 2}, "packed", "packed", 1.0, {1, 2}));
}

TEST_CASE("CPU MatMul panel knobs take only their values", "[kernels]") {
  tune::test::kernel_scratch scratch("panel-values");
  auto backend = tune::make_task_backend("matmul:8x8x16", "cpu", scratch.options());
  CHECK_THROWS_AS(matmul_config(*backend, {1, 1, 2, 4}, {1, 1, 1, 16}, {2, 2, 2}, {0, 1, 2}, "sideways"),
                  std::invalid_argument);
  CHECK_THROWS_AS(matmul_config(*backend, {1, 1, 2, 4}, {1, 1, 1, 16}, {2, 2, 2}, {0, 1, 2}, "packed", "packed", 2.0),
                  std::invalid_argument);
}

TEST_CASE("CPU Conv2D is correct in every layout and order and unrolling", "[kernels]") {
  tune::test::kernel_scratch scratch("conv");
  // 13 output columns: tiles of 4 leave a remainder of 1; 16 output channels
  // make blocks of one or more vectors.
  auto backend = tune::make_task_backend("conv2d:2x3x13x13:16x3x3:s2:p1", "cpu", scratch.options());
  auto space = backend->space();
  int built_count = 0;
  for (const char* layout : {"nchw", "nhwc"})
    for (const char* reduction : {"c_outer", "c_inner"})
      for (const char* order : {"f_outer", "y_outer"}) {
        double unroll = std::string(order) == "f_outer" ? 1.0 : 0.0;
        auto config = space->from_values({{"block_f", std::get<double>(space->parameters()[0]->value(0))},
                                          {"tile_x", 4.0},
                                          {"input_layout", std::string(layout)},
                                          {"reduction", std::string(reduction)},
                                          {"loop_order", std::string(order)},
                                          {"unroll_inner", unroll}});
        check_correct(*backend, config);
        ++built_count;
      }
  CHECK(built_count == 8);
}

TEST_CASE("CPU Conv2D stores register tiles wider than a vector into NCHW and its own layout", "[kernels]") {
  // Tiles of more pixels than lanes are transposed into NCHW in two or more
  // blocks, the last one partial; a remainder tile follows on each row.
  tune::test::kernel_scratch scratch("conv-wide");
  const auto [lanes, registers] = machine_vectors();
  for (const char* task : {"conv2d:1x2x3x40:32x1x1", "conv2d:1x2x3x40:32x1x1:own"}) {
    auto backend = tune::make_task_backend(task, "cpu", scratch.options());
    auto space = backend->space();
    for (std::int64_t width : {lanes + 3, std::min<std::int64_t>({2 * lanes + 1, registers - 2, 28})}) {
      auto config = space->from_values({{"block_f", static_cast<double>(lanes)},
                                        {"tile_x", static_cast<double>(width)},
                                        {"input_layout", std::string("nchw")},
                                        {"reduction", std::string("c_outer")},
                                        {"loop_order", std::string("f_outer")},
                                        {"unroll_inner", 0.0}});
      INFO(task << " tile_x " << width);
      REQUIRE(space->is_valid(config));
      check_correct(*backend, config);
    }
  }
}

TEST_CASE("CPU Conv2D repacks the weights right at every vector width and block", "[kernels]") {
  // The weights are repacked VL channels x VL reduction steps at a time
  // (and the NCHW output transposed the same way): 5 output channels make
  // one-lane vectors, 6 two-lane ones, 12 four-lane ones, 48 blocks of one
  // to three vectors of the widest lanes; 3 x 3 x C steps leave a remainder
  // after the whole blocks of steps.
  tune::test::kernel_scratch scratch("conv-repack");
  for (const char* task : {"conv2d:1x3x6x6:5x3x3:s1:p1", "conv2d:1x3x6x6:6x3x3:s1:p1", "conv2d:1x5x6x6:12x3x3:s1:p1",
                           "conv2d:1x7x6x6:48x3x3:s1:p1"}) {
    auto backend = tune::make_task_backend(task, "cpu", scratch.options());
    auto space = backend->space();
    const auto& blocks = *space->parameters()[0];
    for (std::size_t block : {std::size_t{0}, blocks.cardinality() - 1})
      for (const char* reduction : {"c_outer", "c_inner"}) {
        auto config = space->from_values({{"block_f", blocks.value(block)},
                                          {"tile_x", 2.0},
                                          {"input_layout", std::string("nchw")},
                                          {"reduction", std::string(reduction)},
                                          {"loop_order", std::string("f_outer")},
                                          {"unroll_inner", 0.0}});
        INFO(task << " " << space->to_json(config));
        check_correct(*backend, config);
      }
  }
}

TEST_CASE("CPU Conv2D is correct for random configurations and two threads", "[kernels]") {
  check_random_configurations("conv2d:1x5x9x7:8x3x2:s1:p2", 2, 41);
  check_random_configurations("conv2d:2x4x10x10:16x3x3:s1:p1", 1, 42, 2);
}

TEST_CASE("a Conv2D register tile beyond the register file is outside the space", "[kernels]") {
  tune::test::kernel_scratch scratch("conv-limits");
  auto backend = tune::make_task_backend("conv2d:1x2x8x40:64x1x1", "cpu", scratch.options());
  auto space = backend->space();
  auto widest = space->parameters()[0]->value(space->parameters()[0]->cardinality() - 1);
  auto config = space->from_values({{"block_f", widest},
                                    {"tile_x", 28.0},
                                    {"input_layout", std::string("nchw")},
                                    {"reduction", std::string("c_outer")},
                                    {"loop_order", std::string("f_outer")},
                                    {"unroll_inner", 0.0}});
  // Outside the space (the strategies never propose it) and refused if built.
  CHECK_FALSE(space->is_valid(config));
  auto built = backend->build(config, 120.0);
  CHECK(built.state == status::instantiation_error);
  CHECK(built.message.find("not in the search space") != std::string::npos);
  // One pixel of the widest block fits.
  auto one = config;
  one[1] = 0;
  CHECK(space->is_valid(one));
}

TEST_CASE("CPU Conv2D in its own layouts is correct in every layout with padding and remainders", "[kernels]") {
  tune::test::kernel_scratch scratch("conv-own");
  // The same shape as the plain test: tiles of 4 leave a remainder of 1 and
  // two or more output channel blocks write the blocked output.
  auto backend = tune::make_task_backend("conv2d:2x3x13x13:16x3x3:s2:p1:own", "cpu", scratch.options());
  auto space = backend->space();
  for (const char* layout : {"nchw", "nhwc"})
    for (const char* reduction : {"c_outer", "c_inner"}) {
      auto config = space->from_values({{"block_f", std::get<double>(space->parameters()[0]->value(0))},
                                        {"tile_x", 4.0},
                                        {"input_layout", std::string(layout)},
                                        {"reduction", std::string(reduction)},
                                        {"loop_order", std::string(reduction) == "c_outer" ? "f_outer" : "y_outer"},
                                        {"unroll_inner", 0.0}});
      check_correct(*backend, config);
    }
  check_random_configurations("conv2d:2x4x10x10:32x3x3:s1:p0:own", 2, 43);
  check_random_configurations("conv2d:2x4x10x10:16x3x3:s1:p1:own", 1, 44, 2);
}

TEST_CASE("CPU Conv2D multiplies only the kernel rows inside the image and is right at every border", "[kernels]") {
  // Output rows whose kernel rows reach into the padding at the top, the
  // bottom or both (a 3-row image under a 5-row kernel), rows that lie in the
  // padding altogether (padding 3 under a 3-row kernel: zeros), strides 1
  // to 3; plain and own layouts, both reductions, unrolled and not; tiles
  // of 2 pixels, and tiles of a whole row, whose kernel columns reach into
  // the padding on both sides (runs of columns with the same pixels inside).
  tune::test::kernel_scratch scratch("conv-rows");
  for (const char* task : {"conv2d:1x2x3x6:16x5x5:s1:p2", "conv2d:1x3x4x5:16x3x3:s1:p3", "conv2d:2x2x9x7:16x3x3:s3:p2",
                           "conv2d:1x2x8x8:16x3x3:s2:p1:own", "conv2d:1x3x4x5:16x3x3:s2:p3:own"}) {
    auto backend = tune::make_task_backend(task, "cpu", scratch.options());
    auto space = backend->space();
    const auto row = static_cast<double>(tune::parse_task(task).out_width());
    for (const char* reduction : {"c_outer", "c_inner"})
      for (double unroll : {0.0, 1.0})
        for (double tile_x : {2.0, row}) {
          auto config = space->from_values({{"block_f", std::get<double>(space->parameters()[0]->value(0))},
                                            {"tile_x", tile_x},
                                            {"input_layout", std::string("nchw")},
                                            {"reduction", std::string(reduction)},
                                            {"loop_order", std::string("f_outer")},
                                            {"unroll_inner", unroll}});
          INFO(task << " " << reduction << " unroll " << unroll << " tile_x " << tile_x);
          check_correct(*backend, config);
        }
  }
}

TEST_CASE("own layouts are a CPU task option and keep the plain task's space", "[kernels]") {
  auto own = tune::make_task_backend("conv2d:1x3x8x8:16x3x3:own", "cpu");
  auto plain = tune::make_task_backend("conv2d:1x3x8x8:16x3x3", "cpu");
  CHECK(own->task_key() != plain->task_key());
  CHECK(own->space()->cartesian_size() == plain->space()->cartesian_size());
  CHECK(own->space()->count_valid() == plain->space()->count_valid());
  CHECK(own->space()->to_json(own->space()->unflatten(5)) == plain->space()->to_json(plain->space()->unflatten(5)));
  try {
    tune::make_task_backend("conv2d:1x3x8x8:16x3x3:own", "cuda");
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("own layouts (:own) exist on the cpu backend only") != std::string::npos);
  }
}

TEST_CASE("a CPU kernel's prepare and finish run once around the checked run and in no timed run", "[kernels]") {
  tune::test::kernel_scratch scratch("prepare-finish");
  // prepare keeps 2 x in, the entry writes 2 x that into its own buffer and
  // finish copies it into out: out is right only if all three ran, in order.
  // The entry aborts when prepare has run more than once (in a timed run),
  // finish when it runs a second time.
  auto program = std::make_shared<tune::kernel_program>();
  program->key = "prepare-finish:cpu";
  program->space = std::make_shared<tune::search_space>(
      std::vector<tune::parameter_ptr>{tune::make_discrete_parameter("unused", {1})}, "test");
  program->source = [](const tune::configuration&) {
    return std::string(R"(
#include <cstdlib>
static float kept[4], own[4];
static int prepares = 0, finishes = 0;
extern "C" void tune_prepare(void* const* a) {
  ++prepares;
  for (int i = 0; i < 4; ++i) kept[i] = 2 * static_cast<const float*>(a[1])[i];
}
extern "C" void tune_entry(void* const*) {
  if (prepares != 1) std::abort();
  for (int i = 0; i < 4; ++i) own[i] = 2 * kept[i];
}
extern "C" void tune_finish(void* const* a) {
  if (++finishes > 1) std::abort();
  for (int i = 0; i < 4; ++i) static_cast<float*>(a[0])[i] = own[i];
}
)");
  };
  program->reference_source = R"(
extern "C" void tune_reference(void* const* a) {
  for (int i = 0; i < 4; ++i) static_cast<float*>(a[0])[i] = 4 * static_cast<const float*>(a[1])[i];
}
)";
  program->arguments = {tune::float_array_argument("out", 4, true), tune::float_array_argument("in", 4)};
  program->prepare = "tune_prepare";
  program->finish = "tune_finish";
  auto options = scratch.options();
  options.measurement.min_repeats = 5;
  auto config = program->space->unflatten(0);

  auto backend = tune::make_cpu_backend(program, options);
  auto built = backend->build(config, 120.0);
  REQUIRE(built.state == status::ok);
  auto measured = backend->run(config, built, 0, 120.0);
  INFO(measured.message);
  CHECK(measured.state == status::ok);

  // Without finish the output stays NaN: a wrong answer.
  auto no_finish = std::make_shared<tune::kernel_program>(*program);
  no_finish->finish.clear();
  auto unfinished = tune::make_cpu_backend(no_finish, options)->run(config, built, 0, 120.0);
  CHECK(unfinished.state == status::wrong_answer);

  // A named step the library lacks is a runtime error that names it.
  auto missing = std::make_shared<tune::kernel_program>(*program);
  missing->prepare = "tune_setup";
  auto lost = tune::make_cpu_backend(missing, options)->run(config, built, 0, 120.0);
  CHECK(lost.state == status::runtime_error);
  CHECK(lost.message.find("prepare 'tune_setup' not found") != std::string::npos);
}

TEST_CASE("CPU kernels with two threads are correct", "[kernels]") {
  check_random_configurations("matmul:32x16x64", 1, 31, 2);
}

TEST_CASE("a built configuration comes from the compile cache the second time", "[kernels]") {
  tune::test::kernel_scratch scratch("cache");
  auto backend = tune::make_task_backend("matmul:8x8x16", "cpu", scratch.options());
  auto config = matmul_config(*backend, {1, 1, 2, 4}, {1, 1, 1, 16}, {2, 2, 2});
  auto first = backend->build(config, 120.0);
  REQUIRE(first.state == status::ok);
  CHECK(std::filesystem::exists(first.artifact));
  CHECK(first.message != "cached");
  auto second = backend->build(config, 120.0);
  CHECK(second.state == status::ok);
  CHECK(second.message == "cached");
  CHECK(second.artifact == first.artifact);
  // Another loop order is another binary.
  auto other = config;
  other[3] = (other[3] + 1) % 6;
  auto third = backend->build(other, 120.0);
  CHECK(third.artifact != first.artifact);
}

TEST_CASE("a register tile too large for the register file is an instantiation error", "[kernels]") {
  tune::test::kernel_scratch scratch("limits");
  auto backend = tune::make_task_backend("matmul:64x8x256", "cpu", scratch.options());
  auto config = matmul_config(*backend, {1, 1, 1, 64}, {1, 1, 1, 256}, {1, 1, 8});
  // Outside the space (the strategies never propose it) and refused if built.
  CHECK_FALSE(backend->space()->is_valid(config));
  auto built = backend->build(config, 120.0);
  CHECK(built.state == status::instantiation_error);
  CHECK(built.message.find("not in the search space") != std::string::npos);
  CHECK(backend->build({99, 0, 0, 0, 0, 0, 0}, 120.0).state == status::instantiation_error);
}

TEST_CASE("a MatMul register tile of narrow vectors is counted in registers in the space", "[kernels]") {
  tune::test::kernel_scratch scratch("registers");
  auto [lanes, registers] = machine_vectors();
  // Half-width vectors: registers - 1 rows would fit in floats of full width
  // but need registers + 1 vectors (one accumulator per row, one B vector, a
  // broadcast): outside the space, and refused when given from outside it;
  // one row fewer fits exactly.
  for (std::int64_t rows : {registers - 1, registers - 2}) {
    const std::string task = "matmul:" + std::to_string(rows) + "x8x" + std::to_string(lanes / 2);
    auto backend = tune::make_task_backend(task, "cpu", scratch.options());
    auto config = matmul_config(*backend, {1, 1, 1, rows}, {1, 1, 1, lanes / 2}, {1, 4, 2});
    INFO(task);
    if (rows == registers - 1) {
      CHECK_FALSE(backend->space()->is_valid(config));
      auto program = tune::make_cpu_task_program(tune::parse_task(task));
      CHECK_THAT(program->check(config), Contains("needs " + std::to_string(registers + 1) + " vector registers"));
    } else {
      REQUIRE(backend->space()->is_valid(config));
      check_correct(*backend, config);
    }
  }
}

TEST_CASE("the MatMul space and its check agree on register tiles of every vector width", "[kernels]") {
  // tile_m_3 takes every divisor of 48 (vectors of 16, 8, 4, 2 and 1 lanes),
  // tile_k_2 up to 1024 (bodies far over the bound), rows up to 32: what
  // the check refuses is outside the space, and nothing else is.
  for (const char* task : {"matmul:32x1024x48", "bmm:4x32x1024x48:nt"}) {
    auto program = tune::make_cpu_task_program(tune::parse_task(task));
    auto agreement = tune::test::compare_space_and_check(*program, 20000, 7);
    INFO(task << ": " << agreement.inside << " inside, " << agreement.outside << " outside");
    CHECK(agreement.disagreement == "");
    // Both sides are well represented.
    CHECK(agreement.inside > 1000);
    CHECK(agreement.outside > 1000);
  }
}

TEST_CASE("register tiles use vectors no wider than this machine's registers", "[kernels]") {
  auto [lanes, registers] = machine_vectors();
  tune::test::kernel_scratch scratch("lanes");
  // Rows of one native vector: registers - 2 rows fill the register file with
  // their accumulators, the B vector and the broadcast; one row more does not
  // fit (with vectors twice as wide it would have).
  const std::int64_t fits = registers - 2;
  auto backend = tune::make_task_backend("matmul:" + std::to_string(fits + 1) + "x8x" + std::to_string(lanes), "cpu",
                                         scratch.options());
  auto over = matmul_config(*backend, {1, 1, 1, fits + 1}, {1, 1, 1, lanes}, {1, 1, 8});
  CHECK_FALSE(backend->space()->is_valid(over));
  CHECK(backend->build(over, 120.0).state == status::instantiation_error);
  auto exact = tune::make_task_backend("matmul:" + std::to_string(fits) + "x8x" + std::to_string(lanes), "cpu",
                                       scratch.options());
  auto config = matmul_config(*exact, {1, 1, 1, fits}, {1, 1, 1, lanes}, {1, 1, 8});
  REQUIRE(exact->space()->is_valid(config));
  check_correct(*exact, config);
}

TEST_CASE("an unrolled MatMul body over 1024 vector multiply-adds is outside the space and refused", "[kernels]") {
  tune::test::kernel_scratch scratch("unrolled");
  auto backend = tune::make_task_backend("matmul:8x1024x4", "cpu", scratch.options());
  auto with_k = [&](std::vector<std::int64_t> tile_k) {
    // An 8 x 4 register tile: 8 accumulators of 4 lanes on every machine.
    return matmul_config(*backend, {1, 1, 1, 8}, {1, 1, 1, 4}, tile_k);
  };
  // 8 x 256 = 2048: outside the space, and refused when given from outside it.
  auto over = with_k({4, 1, 256});
  CHECK_FALSE(backend->space()->is_valid(over));
  CHECK(backend->build(over, 120.0).state == status::instantiation_error);
  auto program = tune::make_cpu_task_program(tune::parse_task("matmul:8x1024x4"));
  CHECK_THAT(program->check(over), Contains("2048 vector multiply-adds; at most 1024"));
  auto at = with_k({8, 1, 128});  // 8 x 128 = 1024
  CHECK(backend->space()->is_valid(at));
  auto built = backend->build(at, 120.0);
  INFO(built.message);
  CHECK(built.state == status::ok);
}

TEST_CASE("a Conv2D's innermost reduction loop is unrolled at most 16 times and every register tile may be",
          "[kernels]") {
  auto config_of = [](const tune::search_space& space, double tile_x, const char* reduction, double unroll) {
    return space.from_values({{"block_f", space.parameters()[0]->value(0)},
                              {"tile_x", tile_x},
                              {"input_layout", std::string("nchw")},
                              {"reduction", std::string(reduction)},
                              {"loop_order", std::string("y_outer")},
                              {"unroll_inner", unroll}});
  };
  // The interior tiles' loop (the row-end tiles keep theirs rolled).
  const std::string channels = "      for (long c = 0; c < C; ++c) step(c, ry, rx);\n";
  const std::string columns = "      for (long rx = 0; rx < KW; ++rx) step(c, ry, rx);\n";
  // 256 input channels: 16 copies of the step, not 256; 3 channels and 3
  // columns: all of them; not unrolled: no pragma.
  auto wide = tune::make_cpu_task_program(tune::parse_task("conv2d:1x256x9x9:16x1x1"));
  CHECK_THAT(wide->source(config_of(*wide->space, 4.0, "c_inner", 1.0)),
             Contains("#pragma GCC unroll 16\n" + channels));
  auto narrow = tune::make_cpu_task_program(tune::parse_task("conv2d:1x3x9x9:16x3x3:s1:p1"));
  CHECK_THAT(narrow->source(config_of(*narrow->space, 4.0, "c_inner", 1.0)),
             Contains("#pragma GCC unroll 3\n" + channels));
  CHECK_THAT(narrow->source(config_of(*narrow->space, 4.0, "c_outer", 1.0)),
             Contains("#pragma GCC unroll 3\n" + columns));
  const std::string rolled = narrow->source(config_of(*narrow->space, 4.0, "c_inner", 0.0));
  CHECK_THAT(rolled, Contains("for (long rx = 0; rx < KW; ++rx)\n" + channels));
  // So the unrolled body of every register tile is within the bound: the
  // widest tiles of a 1x1 kernel over 256 channels and of a 3x3 kernel over
  // 512 are in the space and pass the check (until 2026-12-02, unrolled in
  // full, at most 4 pixels of a vector were); one over 40 channels builds
  // and is correct.
  for (const char* task : {"conv2d:1x256x9x9:16x1x1", "conv2d:1x512x9x9:16x3x3:s1:p1"}) {
    auto program = tune::make_cpu_task_program(tune::parse_task(task));
    INFO(task);
    const auto& widths = *program->space->parameters()[1];
    double widest = 0;
    for (std::size_t i = 0; i < widths.cardinality(); ++i) {
      const double tile_x = std::get<double>(widths.value(i));
      if (program->space->is_valid(config_of(*program->space, tile_x, "c_inner", 0.0))) {
        CHECK(program->space->is_valid(config_of(*program->space, tile_x, "c_inner", 1.0)));
        CHECK(program->check(config_of(*program->space, tile_x, "c_inner", 1.0)).empty());
        widest = tile_x;
      }
    }
    CHECK(widest >= 5);
  }
  // The check passes every configuration of a small task's space.
  auto small = tune::make_cpu_task_program(tune::parse_task("conv2d:1x96x9x9:32x1x1"));
  for (std::uint64_t flat = 0; flat < *small->space->cartesian_size(); ++flat) {
    auto c = small->space->unflatten(flat);
    INFO(small->space->to_json(c));
    if (small->space->is_valid(c)) CHECK(small->check(c).empty());
  }
  // 40 channels: two unrolled rounds of 16 and a remainder of 8, in the
  // interior tile of a row of 12 (4 pixels from the left padding's end).
  tune::test::kernel_scratch scratch("conv-unroll");
  auto backend = tune::make_task_backend("conv2d:1x40x12x12:16x3x3:s1:p1", "cpu", scratch.options());
  check_correct(*backend, config_of(*backend->space(), 4.0, "c_inner", 1.0));
}

TEST_CASE("unroll_inner leaves a Conv2D's source alone where no tile of a row runs the unrolled loop", "[kernels]") {
  // Rows of 27 pixels under a 5-column kernel with a padding of 2 (C2's):
  // pixels 0-1 and 25-26 read the padding. Tiles of up to 12 pixels leave
  // one tile (or the remainder) inside the image, which runs the unrolled
  // loop; from 13 on every tile of a row is at one of its ends, whose loops
  // stay rolled, and unroll_inner 1 is the source of 0: built once.
  const char* task = "conv2d:1x16x6x27:16x5x5:s1:p2";
  auto program = tune::make_cpu_task_program(tune::parse_task(task));
  auto config_of = [&](double tile_x, double unroll) {
    return program->space->from_values({{"block_f", program->space->parameters()[0]->value(0)},
                                        {"tile_x", tile_x},
                                        {"input_layout", std::string("nhwc")},
                                        {"reduction", std::string("c_inner")},
                                        {"loop_order", std::string("f_outer")},
                                        {"unroll_inner", unroll}});
  };
  for (double tile_x = 1; tile_x <= 27; ++tile_x) {
    INFO("tile_x " << tile_x);
    const bool same = program->source(config_of(tile_x, 0.0)) == program->source(config_of(tile_x, 1.0));
    CHECK(same == (tile_x >= 13));
  }
  // The second is the first's build, from the compile cache; both right.
  tune::test::kernel_scratch scratch("conv-unroll-inert");
  auto backend = tune::make_task_backend(task, "cpu", scratch.options());
  for (double tile_x : {12.0, 13.0}) {
    INFO("tile_x " << tile_x);
    auto rolled = backend->build(config_of(tile_x, 0.0), 120.0);
    REQUIRE(rolled.state == status::ok);
    auto unrolled = backend->build(config_of(tile_x, 1.0), 120.0);
    REQUIRE(unrolled.state == status::ok);
    CHECK((unrolled.message == "cached") == (tile_x == 13.0));
    check_correct(*backend, config_of(tile_x, 1.0));
  }
}

TEST_CASE("a compiler that cannot be run is a compile error, not an exception", "[kernels]") {
  tune::test::kernel_scratch scratch("compiler");
  auto options = scratch.options();
  options.compiler = "/nonexistent/c++";
  auto backend = tune::make_task_backend("matmul:8x8x16", "cpu", options);
  tune::rng_type rng(1);
  auto [config, built] = tune::test::build_some(*backend, rng);
  CHECK(built.state == status::compile_error);
  CHECK(built.message.find("/nonexistent/c++") != std::string::npos);
  auto measured = backend->run(config, built, 0, 10.0);
  CHECK(measured.state == status::compile_error);
}

TEST_CASE("a compiler that does not finish is killed and the build is a build timeout", "[kernels]") {
  tune::test::kernel_scratch scratch("build-timeout");
  auto options = scratch.options();
  // A "compiler" that answers --version and then never finishes a build;
  // its sleeping child must die with it (one process group).
  auto compiler =
      scratch.write("stuck-compiler", "#!/bin/sh\ncase \"$1\" in --version) echo stuck 1.0;; *) sleep 60;; esac\n");
  std::filesystem::permissions(compiler, std::filesystem::perms::owner_all);
  options.compiler = compiler;
  auto backend = tune::make_task_backend("matmul:8x8x16", "cpu", options);
  auto config = matmul_config(*backend, {1, 1, 2, 4}, {1, 1, 1, 16}, {2, 2, 2});
  auto built = backend->build(config, 0.5);
  CHECK(built.state == status::build_timeout);
  CHECK_FALSE(std::filesystem::exists(built.artifact));
}

TEST_CASE("a missing worker program is a runtime error", "[kernels]") {
  tune::test::kernel_scratch scratch("worker");
  auto options = scratch.options();
  options.worker_path = "/nonexistent/tune-kernel-worker";
  auto backend = tune::make_task_backend("matmul:8x8x16", "cpu", options);
  tune::rng_type rng(2);
  auto [config, built] = tune::test::build_some(*backend, rng);
  REQUIRE(built.state == status::ok);
  auto measured = backend->run(config, built, 0, 10.0);
  CHECK(measured.state == status::runtime_error);
}

TEST_CASE("the worker is found relative to the library, installed or built", "[kernels]") {
  auto candidates = tune::kernel_worker_candidates("/opt/tune/lib");
  REQUIRE(candidates.size() == 3);
  CHECK(candidates[0] == "/opt/tune/libexec/tune-engine/tune-kernel-worker");
  CHECK(candidates[1] == "/opt/tune/bin/tune-kernel-worker");
  CHECK(candidates[2] == "/opt/tune/lib/tune-kernel-worker");

  // Without TUNE_KERNEL_WORKER the built library finds the built worker by itself.
  std::string saved = std::getenv("TUNE_KERNEL_WORKER") ? std::getenv("TUNE_KERNEL_WORKER") : "";
  ::unsetenv("TUNE_KERNEL_WORKER");
  auto found = tune::kernel_worker_path({});
  if (!saved.empty()) ::setenv("TUNE_KERNEL_WORKER", saved.c_str(), 1);
  INFO(found);
  CHECK(std::filesystem::path(found).filename() == "tune-kernel-worker");
  CHECK(std::filesystem::is_regular_file(found));
}

TEST_CASE("the naive reference gives the same outputs on every thread as on one", "[kernels]") {
  if (!tune::process_limits_enforced())
    SKIP_TEST(
        "no pids cgroup can be made here (needs a writable cgroup file system) to keep the reference on one thread");
  auto read_all = [](const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(file), {});
  };
  for (const char* task : {"conv2d:3x5x13x11:7x3x3:s2:p1", "bmm:3x17x9x13:tn", "matmul:33x20x12"}) {
    INFO(task);
    auto program = tune::make_cpu_task_program(tune::parse_task(task), 1);
    tune::test::kernel_scratch all_threads(std::string("reference-threads-") + std::to_string(task[0]));
    auto parallel = tune::prepare_reference(*program, all_threads.options());
    REQUIRE(parallel.message.empty());
    // One process and no thread more: every thread the reference asks for
    // fails to start, and the calling thread computes its part.
    tune::test::kernel_scratch one_thread(std::string("reference-one-") + std::to_string(task[0]));
    auto options = one_thread.options();
    options.max_processes = 2;
    auto serial = tune::prepare_reference(*program, options);
    INFO(serial.message);
    REQUIRE(serial.message.empty());
    CHECK(read_all(parallel.path) == read_all(serial.path));
    CHECK(read_all(parallel.path).size() > 100);
  }
}

TEST_CASE("the naive reference runs as many threads as the cores it may run on", "[kernels]") {
  cpu_set_t all;
  REQUIRE(::sched_getaffinity(0, sizeof all, &all) == 0);
  if (CPU_COUNT(&all) < 2) SKIP_TEST("this process may run on one core only: a mask of one would change nothing");
  // Enough rows (MatMul's outputs) for every thread of a 64-core mask.
  auto program = tune::make_cpu_task_program(tune::parse_task("matmul:80x4x4"), 1);
  tune::test::kernel_scratch scratch("reference-affinity");
  auto options = scratch.options();
  auto built = tune::compile_shared_object(options, options.compiler, program->reference_source, ".cpp",
                                           {"-std=c++20", "-O2", "-fPIC", "-shared", "-pthread"}, 120.0);
  INFO(built.message);
  REQUIRE(built.state == status::ok);
  void* library = ::dlopen(built.artifact.c_str(), RTLD_NOW | RTLD_LOCAL);
  REQUIRE(library != nullptr);
  auto threads = reinterpret_cast<long (*)()>(::dlsym(library, "tune_reference_threads"));
  REQUIRE(threads != nullptr);
  CHECK(threads() == std::min(CPU_COUNT(&all), 64));
  // This thread pinned to one of its cores, as taskset or a cpuset would pin
  // the engine (the reference's process inherits the mask of its caller).
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &all)) {
      CPU_SET(cpu, &one);
      break;
    }
  REQUIRE(::sched_setaffinity(0, sizeof one, &one) == 0);
  const long pinned = threads();
  ::sched_setaffinity(0, sizeof all, &all);
  CHECK(pinned == 1);
  ::dlclose(library);
}
