// A tuned configuration written as a header: its constants, the renamed entry,
// run() with the task's arguments, the flags; bad names and configurations
// that do not belong to the program are refused with what to do.
#include <algorithm>
#include <catch2/catch.hpp>

#include "tune/kernels/task.hpp"
#include "tune/kernels/tuned_kernel.hpp"

using Catch::Matchers::Contains;

namespace {

tune::tuned_kernel_info info_of(const tune::kernel_program& program, const std::string& name = "mm") {
  tune::rng_type rng(3);
  auto config = program.space->draw_valid(rng);
  REQUIRE(config);
  tune::tuned_kernel_info info;
  info.name = name;
  info.task = "matmul:16x32x64";
  info.config_json = program.space->to_json(*config);
  info.time_ms = 0.25;
  info.provenance = "from test.db: run 1";
  return info;
}

}  // namespace

TEST_CASE("a tuned matmul becomes a header with its configuration and run()", "[kernels]") {
  auto program = tune::make_cpu_task_program(tune::parse_task("matmul:16x32x64"));
  auto info = info_of(*program);
  auto config = program->space->from_json(info.config_json);
  auto files = tune::emit_tuned_kernel(*program, info, "mm.hpp");

  const auto& h = files.header;
  CHECK_THAT(h, Contains("namespace mm {") && Contains("constexpr const char task[] = \"matmul:16x32x64\";") &&
                    Contains("constexpr double tuned_time_ms = 0.25;") && Contains("constexpr double flops = 65536;") &&
                    Contains("from test.db: run 1"));
  // Every parameter, as the kernel sees it.
  int tuples = 0, strings = 0, numbers = 0;
  for (const auto& [name, value] : program->space->values(config)) {
    if (const auto* tuple = std::get_if<std::vector<std::int64_t>>(&value)) {
      CHECK_THAT(h, Contains("constexpr long " + name + "_0 = " + std::to_string((*tuple)[0]) + ";"));
      ++tuples;
    } else if (const auto* text = std::get_if<std::string>(&value)) {
      CHECK_THAT(h, Contains("constexpr const char* " + name + " = \"" + *text + "\";"));
      ++strings;
    } else {
      auto number = static_cast<long>(std::get<double>(value));
      CHECK_THAT(h, Contains("constexpr long " + name + " = " + std::to_string(number) + ";"));
      ++numbers;
    }
  }
  // tile_n, tile_m, tile_k, loop_order; a_panel, b_panel; prefetch.
  CHECK(tuples == 4);
  CHECK(strings == 2);
  CHECK(numbers == 1);
  CHECK_THAT(h, Contains("constexpr long C_elements = 1024;") && Contains("constexpr long A_elements = 512;") &&
                    Contains("constexpr long B_elements = 2048;"));
  CHECK_THAT(h, Contains("void run(float* C, const float* A, const float* B);"));
  CHECK_THAT(h, Contains("/// Not re-entrant: the kernel keeps working buffers"));
  // The generated source under the implementation macro, its entry renamed.
  auto implementation = h.find("#ifdef TUNE_ENGINE_IMPLEMENT_mm\n");
  REQUIRE(implementation != std::string::npos);
  CHECK(h.find(program->source(config).substr(0, 40), implementation) != std::string::npos);
  CHECK_THAT(h, Contains("extern \"C\" void tune_engine_mm(void* const* args)"));
  CHECK(h.find("tune_entry") == std::string::npos);
  CHECK_THAT(h, Contains("tune_engine_mm(args);"));

  std::string flags_line = tune::tuned_kernel_flags_prefix;
  for (const auto& flag : files.flags) flags_line += (&flag == &files.flags.front() ? "" : " ") + flag;
  CHECK_THAT(h, Contains(flags_line + "\n"));
  CHECK_THAT(files.source, Contains("#define TUNE_ENGINE_IMPLEMENT_mm\n#include \"mm.hpp\"\n"));
  CHECK(std::find(files.flags.begin(), files.flags.end(), "-march=native") != files.flags.end());
  CHECK(std::find(files.flags.begin(), files.flags.end(), "-ffp-contract=fast") != files.flags.end());
}

TEST_CASE("emitting refuses a bad name and a configuration of another task", "[kernels]") {
  auto program = tune::make_cpu_task_program(tune::parse_task("matmul:16x32x64"));
  CHECK_THROWS_WITH(tune::emit_tuned_kernel(*program, info_of(*program, "2mm"), "mm.hpp"),
                    Contains("'2mm' is not a C identifier"));

  auto other = tune::make_cpu_task_program(tune::parse_task("conv2d:1x4x8x8:4x3x3"));
  auto info = info_of(*program);
  info.config_json = info_of(*other).config_json;
  CHECK_THROWS_WITH(tune::emit_tuned_kernel(*program, info, "mm.hpp"),
                    Contains("does not belong to matmul:16x32x64:cpu") && Contains("emit the task it was tuned for"));

  // A kernel in its own layouts needs its prepare and finish steps.
  auto own = tune::make_cpu_task_program(tune::parse_task("conv2d:1x4x8x8:16x3x3:own"));
  auto own_info = info_of(*own, "conv");
  own_info.task = "conv2d:1x4x8x8:16x3x3:s1:p0:own";
  CHECK_THROWS_WITH(tune::emit_tuned_kernel(*own, own_info, "conv.hpp"),
                    Contains("cannot be emitted as one call") && Contains("emit the plain task (without ':own')"));

  info = info_of(*program);
  info.config_json = "{\"tile_n\": [1, 1, 1, 16]";
  CHECK_THROWS_WITH(tune::emit_tuned_kernel(*program, info, "mm.hpp"), Contains("is not JSON"));
}
