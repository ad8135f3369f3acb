// CPU builds link on their own (kernels/src/cpu/compile.cpp): the templates'
// kernels link against nothing, need only the C library and still verify
// against the reference; a source that needs libgcc's helpers links with the
// C library and libgcc, one that needs libm or libstdc++ the compiler's own
// way; a compile
// error is a compile error with the compiler's message; a build that runs
// out of time kills the compiler and everything it started. With GCC the
// templates compile without predictive commoning (their pragma, and only for
// their own code), and GCC's build flags are left out for clang. An emitted
// Conv2D is right in every call when the weights change between calls, and
// its tiles share one NCHW store function per pixel count.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "../../kernels/src/cpu/elf_symbols.hpp"
#include "kernel_fixtures.hpp"
#include "process_checks.hpp"
#include "skip.hpp"
#include "tune/kernels/cpu_backend.hpp"
#include "tune/kernels/subprocess.hpp"
#include "tune/kernels/task.hpp"
#include "tune/kernels/tuned_kernel.hpp"

using Catch::Matchers::Contains;
using tune::status;

namespace {

std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The libraries a shared object names (its NEEDED entries sit in .dynstr).
bool names_library(const std::string& shared_object, const std::string& library) {
  return file_text(shared_object).find(library) != std::string::npos;
}

// Builds `config` and runs it: the worker checks it against the reference.
void check_self_contained(tune::backend& backend, const tune::configuration& config) {
  auto built = backend.build(config, 120.0);
  INFO(backend.space()->to_json(config) << ": " << built.message);
  REQUIRE(built.state == status::ok);
  // Linked against nothing: the worker's C library resolves what it calls.
  CHECK_FALSE(names_library(built.artifact, "libc.so"));
  CHECK_FALSE(names_library(built.artifact, "libstdc++"));
  auto measured = backend.run(config, built, 0, 120.0);
  INFO(measured.message);
  CHECK(measured.state == status::ok);
}

const std::vector<std::string> shared_flags{"-std=c++20", "-fPIC", "-shared", "-O2"};

}  // namespace

TEST_CASE("a MatMul and a Conv2D kernel link against nothing and verify against the reference", "[kernels]") {
  tune::test::kernel_scratch scratch("builds-verify");
  auto backend = tune::make_task_backend(tune::test::small_matmul_task, "cpu", scratch.options());
  auto matmul = tune::test::packed_matmul(*backend->space());
  check_self_contained(*backend, matmul);

  // f_outer: the per-thread weight block (a thread_local) needs no more.
  auto conv = tune::make_task_backend("conv2d:2x3x9x9:32x3x3:s1:p1", "cpu", scratch.options());
  for (const char* order : {"y_outer", "f_outer"}) {
    auto config = conv->space()->from_values({{"block_f", 16.0},
                                              {"tile_x", 4.0},
                                              {"input_layout", std::string("nhwc")},
                                              {"reduction", std::string("c_inner")},
                                              {"loop_order", std::string(order)},
                                              {"unroll_inner", 1.0}});
    check_self_contained(*conv, config);
  }
}

TEST_CASE("a source that needs libstdc++ is built with the compiler's own link", "[kernels]") {
  tune::test::kernel_scratch scratch("builds-libstdcxx");
  const std::string source =
      "#include <string>\n#include <vector>\n"
      "extern \"C\" int tune_entry() { std::vector<std::string> v(3, \"abc\"); return int(v.size() * v[0].size()); }\n";
  auto built = tune::compile_shared_object(scratch.options(), "c++", source, ".cpp", shared_flags, 120.0);
  INFO(built.message);
  REQUIRE(built.state == status::ok);
  CHECK(names_library(built.artifact, "libstdc++"));
  // The same compiler and flags again: built the compiler's way directly.
  auto again =
      tune::compile_shared_object(scratch.options(), "c++", source + "// again\n", ".cpp", shared_flags, 120.0);
  CHECK(again.state == status::ok);
}

TEST_CASE("a source that needs libgcc's helpers links with the C library and libgcc", "[kernels]") {
  tune::test::kernel_scratch scratch("builds-libgcc");
  // 128-bit division is libgcc's __divti3, which no shared library defines;
  // getenv is the C library's.
  const std::string source =
      "extern \"C\" char* getenv(const char*);\n"
      "extern \"C\" long tune_entry(void* const* a) {\n"
      "  __int128 x = *static_cast<long*>(a[0]), y = *static_cast<long*>(a[1]);\n"
      "  return static_cast<long>(x * x / y) + (getenv(\"TUNE_TEST\") != nullptr);\n"
      "}\n";
  auto flags = shared_flags;
  flags.push_back("-DTUNE_TEST_LIBGCC");  // a compiler and flags no other test uses
  auto built = tune::compile_shared_object(scratch.options(), "c++", source, ".cpp", flags, 120.0);
  INFO(built.message);
  REQUIRE(built.state == status::ok);
  CHECK(names_library(built.artifact, "libc.so"));
  CHECK_FALSE(names_library(built.artifact, "libstdc++"));
  CHECK_FALSE(names_library(built.artifact, "libgcc_s"));
  // __divti3 linked in, not left to the loader.
  std::string error;
  auto undefined = tune::undefined_dynamic_symbols(file_text(built.artifact), error);
  REQUIRE(undefined);
  for (const auto& s : *undefined) CHECK(s.name != "__divti3");
}

TEST_CASE("a source that needs libm is built with the compiler's own link", "[kernels]") {
  tune::test::kernel_scratch scratch("builds-libm");
  const std::string source =
      "extern \"C\" float sinf(float);\n"
      "extern \"C\" float tune_entry(float x) { return sinf(x); }\n";
  auto flags = shared_flags;
  flags.push_back("-DTUNE_TEST_LIBM");
  auto built = tune::compile_shared_object(scratch.options(), "c++", source, ".cpp", flags, 120.0);
  INFO(built.message);
  REQUIRE(built.state == status::ok);
  CHECK(names_library(built.artifact, "libm.so"));
}

TEST_CASE("a compile error is a compile error with the compiler's message", "[kernels]") {
  tune::test::kernel_scratch scratch("builds-errors");
  auto broken = tune::compile_shared_object(scratch.options(), "c++", "extern \"C\" int tune_entry( { return 1; }\n",
                                            ".cpp", shared_flags, 120.0);
  CHECK(broken.state == status::compile_error);
  CHECK_THAT(broken.message, Contains("error") && Contains("tune_entry"));
  CHECK_FALSE(std::filesystem::exists(broken.artifact));
}

TEST_CASE("a build past its time kills the compiler and what it started", "[kernels]") {
  tune::test::kernel_scratch scratch("builds-timeout");
  // A "compiler" that answers --version, then starts a child that would
  // sleep for a minute, writes the child's pid and waits for it.
  auto pid_file = (scratch.path() / "child.pid").string();
  auto compiler = scratch.write("stuck-compiler",
                                "#!/bin/sh\ncase \"$1\" in --version) echo stuck 1.0; exit 0;; esac\n"
                                "sleep 60 &\necho $! >" +
                                    pid_file + "\nwait\n");
  std::filesystem::permissions(compiler, std::filesystem::perms::owner_all);
  auto start = std::chrono::steady_clock::now();
  auto built = tune::compile_shared_object(scratch.options(), compiler, "int x;\n", ".cpp", shared_flags, 1.0);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(built.state == status::build_timeout);
  CHECK_THAT(built.message, Contains("killed"));
  CHECK(seconds < 5.0);
  CHECK_FALSE(std::filesystem::exists(built.artifact));
  long child = 0;
  std::ifstream(pid_file) >> child;
  REQUIRE(child > 0);
  CHECK(tune::test::ends_soon(child));
}

TEST_CASE("an emitted tuned kernel compiles beside the headers that declare the same C functions", "[kernels]") {
  tune::test::kernel_scratch scratch("builds-emitted");
  for (const std::string task : {"matmul:16x32x64", "conv2d:1x3x8x8:16x3x3:s1:p1"}) {
    auto program = tune::make_cpu_task_program(tune::parse_task(task));
    tune::rng_type rng(5);
    std::optional<tune::configuration> config;
    while (!config || (program->check && !program->check(*config).empty())) config = program->space->draw_valid(rng);
    tune::tuned_kernel_info info;
    info.name = "kernel";
    info.task = task;
    info.config_json = program->space->to_json(*config);
    info.time_ms = 1.0;
    auto files = tune::emit_tuned_kernel(*program, info, "kernel.hpp");
    scratch.write("kernel.hpp", files.header);
    // The headers before and after the kernel's own declarations.
    auto before = scratch.write(
        "before.cpp",
        "#include <cstdlib>\n#include <cstring>\n#include <utility>\n#include <stdlib.h>\n" + files.source);
    auto after =
        scratch.write("after.cpp", files.source + "#include <cstdlib>\n#include <stdlib.h>\n#include <utility>\n");
    for (const auto& unit : {before, after}) {
      std::vector<std::string> argv{"c++", "-std=c++20", "-c", "-o", (scratch.path() / "unit.o").string(), unit};
      argv.insert(argv.end(), files.flags.begin(), files.flags.end());
      auto compiled = tune::run_process(argv, 120.0);
      INFO(task << " " << unit << ": " << compiled.output);
      CHECK(compiled.ok());
    }
  }
}

TEST_CASE("an emitted Conv2D is right in every call with new weights in each loop order and thread count",
          "[kernels]") {
  // The plain task's f_outer order repacks a weight block per thread and
  // call; a block packed in an earlier call must not be reused.
  tune::test::kernel_scratch scratch("builds-emitted-calls");
  const std::string task = "conv2d:2x5x6x7:32x3x3:s1:p1";
  // Each call checked against the task's own reference (its program's
  // reference_source, built beside the emitted kernel).
  const std::string main_source = R"(
#include <cmath>
#include <cstdio>
#include <vector>
#include "kernel.hpp"
extern "C" void tune_reference(void* const* args);
int main() {
  std::vector<float> image(kernel::image_elements), weights(kernel::weights_elements);
  std::vector<float> output(kernel::output_elements), expected(kernel::output_elements);
  for (std::size_t i = 0; i < image.size(); ++i) image[i] = float((i * 7) % 13) - 6.0f;
  for (int call = 0; call < 3; ++call) {
    for (std::size_t i = 0; i < weights.size(); ++i) weights[i] = float((i * 5 + call * 3) % 11) - 5.0f;
    kernel::run(output.data(), image.data(), weights.data());
    void* const args[] = {expected.data(), image.data(), weights.data()};
    tune_reference(args);
    for (std::size_t i = 0; i < output.size(); ++i)
      if (std::fabs(output[i] - expected[i]) > 1e-3 * (1 + std::fabs(expected[i]))) {
        std::printf("call %d: output element %zu is %g, expected %g\n", call, i, output[i], expected[i]);
        return 1;
      }
  }
  std::printf("right\n");
  return 0;
}
)";
  for (int threads : {1, 2})
    for (const char* order : {"f_outer", "y_outer"}) {
      auto program = tune::make_cpu_task_program(tune::parse_task(task), threads);
      auto config = program->space->from_values({{"block_f", 16.0},
                                                 {"tile_x", 3.0},
                                                 {"input_layout", std::string("nchw")},
                                                 {"reduction", std::string("c_inner")},
                                                 {"loop_order", std::string(order)},
                                                 {"unroll_inner", 0.0}});
      tune::tuned_kernel_info info;
      info.name = "kernel";
      info.task = task;
      info.config_json = program->space->to_json(config);
      info.time_ms = 1.0;
      auto files = tune::emit_tuned_kernel(*program, info, "kernel.hpp");
      scratch.write("kernel.hpp", files.header);
      auto source = scratch.write("main.cpp", files.source + main_source);
      auto reference = scratch.write("reference.cpp", program->reference_source);
      const auto binary = (scratch.path() / "calls").string();
      std::vector<std::string> argv{"c++", "-std=c++20", "-o", binary, source, reference};
      for (const auto& flag : files.flags)
        if (flag != "-shared") argv.push_back(flag);
      auto compiled = tune::run_process(argv, 120.0);
      INFO(order << ", " << threads << " thread(s): " << compiled.output);
      REQUIRE(compiled.ok());
      auto ran = tune::run_process({binary}, 60.0);
      INFO(ran.output);
      CHECK(ran.ok());
      CHECK_THAT(ran.output, Contains("right"));
    }
}

namespace {

// The compiler's assembly of `source` with `flags`, without the .file line.
std::string assembly_of(tune::test::kernel_scratch& scratch, const std::string& name, const std::string& source,
                        const std::vector<std::string>& flags) {
  auto path = scratch.write(name + ".cpp", source);
  const auto out = (scratch.path() / (name + ".s")).string();
  std::vector<std::string> argv{"c++"};
  for (const auto& f : flags)
    if (f != "-shared") argv.push_back(f);
  argv.insert(argv.end(), {"-S", "-o", out, path});
  auto compiled = tune::run_process(argv, 300.0);
  INFO(name << ": " << compiled.output);
  REQUIRE(compiled.ok());
  std::string text = file_text(out), kept;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.find(".file") == std::string::npos) kept += line + "\n";
  return kept;
}

// A Conv2D configuration whose unrolled reduction GCC's predictive commoning
// rewrites: the widest block of output channels this machine's vectors give
// (64 with AVX-512, 32 with AVX2), the widest tile of pixels the register
// file holds beside it, at most 5, and a channel loop of 16, unrolled fully
// (over 32 channels, unrolled 16 times, the pass leaves the code as it is).
std::pair<tune::kernel_program_ptr, tune::configuration> unrolled_convolution() {
  auto program = tune::make_cpu_task_program(tune::parse_task("conv2d:1x16x12x12:64x3x3:s1:p0"));
  const auto& block_f = *program->space->parameters()[*program->space->find("block_f")];
  const auto widest = block_f.value(block_f.cardinality() - 1);
  for (double tile_x = 5; tile_x >= 1; --tile_x) {
    auto config = program->space->from_values({{"block_f", widest},
                                               {"tile_x", tile_x},
                                               {"input_layout", std::string("nhwc")},
                                               {"reduction", std::string("c_inner")},
                                               {"loop_order", std::string("f_outer")},
                                               {"unroll_inner", 1.0}});
    if (program->space->is_valid(config)) return {program, config};
  }
  FAIL("no unrolled configuration of block_f " << std::get<double>(widest) << " is in the space");
  return {};
}

}  // namespace

TEST_CASE("with GCC the templates compile without predictive commoning and only their own code", "[kernels]") {
  if (!tune::compiler_is_gcc("c++")) SKIP_TEST("c++ is not GCC");
  tune::test::kernel_scratch scratch("builds-predcom");
  auto [program, config] = unrolled_convolution();
  const std::string source = program->source(config);
  const auto flags = tune::cpu_build_flags(*program, config, "c++");
  // The pragma taken out: the source as it would be without it.
  const std::string pragma = "#pragma GCC optimize(\"no-predictive-commoning\")\n";
  REQUIRE(source.find(pragma) != std::string::npos);
  std::string plain = source;
  plain.erase(plain.find(pragma), pragma.size());

  auto as_built = assembly_of(scratch, "as-built", source, flags);
  auto with_flag = flags;
  with_flag.push_back("-fno-predictive-commoning");
  CHECK(as_built == assembly_of(scratch, "flag", plain, with_flag));
  // The pass does change this kernel: without the pragma the code differs.
  CHECK(as_built != assembly_of(scratch, "plain", plain, flags));
  // The pragma ends with the kernel: a function after it is compiled with
  // the includer's options (predictive commoning on, as -O3 has it).
  const std::string after =
      "\nextern \"C\" float tune_after(float* __restrict a, long n) {\n  float s = 0;\n"
      "  for (long i = 2; i < n; ++i) { a[i] = a[i - 1] + a[i - 2]; s += a[i]; }\n  return s;\n}\n";
  auto tail = [](const std::string& text) {
    auto start = text.find("tune_after:");
    REQUIRE(start != std::string::npos);
    // Its code, local labels left unnumbered (the kernel before it numbers them).
    return std::regex_replace(text.substr(start, text.find(".cfi_endproc", start) - start), std::regex("\\.L[0-9]+"),
                              ".L");
  };
  CHECK(tail(assembly_of(scratch, "after", source + after, flags)) ==
        tail(assembly_of(scratch, "after-plain", plain + after, flags)));
}

TEST_CASE("GCC's build flags of the templates are left out for clang", "[kernels]") {
  int missing = 0;
  if (tune::find_program("clang++-14", missing).empty() || missing != 0) SKIP_TEST("clang++-14 is not installed");
  CHECK_FALSE(tune::compiler_is_gcc("clang++-14"));
  CHECK_FALSE(tune::compiler_is_gcc("/nonexistent/c++"));
  tune::test::kernel_scratch scratch("builds-clang");
  auto [program, config] = unrolled_convolution();
  for (const auto& flag : program->gcc_build_flags) {
    auto gcc = tune::cpu_build_flags(*program, config, "c++");
    if (tune::compiler_is_gcc("c++")) CHECK(std::find(gcc.begin(), gcc.end(), flag) != gcc.end());
    auto clang = tune::cpu_build_flags(*program, config, "clang++-14");
    CHECK(std::find(clang.begin(), clang.end(), flag) == clang.end());
  }
  CHECK_FALSE(program->gcc_build_flags.empty());
  // clang builds the kernel (the pragma is GCC's alone) and it verifies
  // against the reference.
  auto options = scratch.options();
  options.compiler = "clang++-14";
  auto backend = tune::make_cpu_backend(program, options);
  auto built = backend->build(config, 300.0);
  INFO(built.message);
  REQUIRE(built.state == status::ok);
  auto measured = backend->run(config, built, 0, 120.0);
  INFO(measured.message);
  CHECK(measured.state == status::ok);
}

TEST_CASE("a Conv2D's NCHW stores are one function per pixel count, shared by the tiles of a row", "[kernels]") {
  // A row of 27 pixels in tiles of 6 with a padding of 2: a left tile at the
  // padding, interior tiles and a remainder of 3 at the right. Each tile's
  // transposing NCHW store was inlined into it (a third of a C2 build);
  // the tiles of one pixel count now call one function of it.
  tune::test::kernel_scratch scratch("builds-nchw-stores");
  const char* task = "conv2d:1x4x6x27:16x5x5:s1:p2";
  auto program = tune::make_cpu_task_program(tune::parse_task(task));
  const auto& block_f = *program->space->parameters()[*program->space->find("block_f")];
  auto config = program->space->from_values({{"block_f", block_f.value(0)},
                                             {"tile_x", 6.0},
                                             {"input_layout", std::string("nchw")},
                                             {"reduction", std::string("c_outer")},
                                             {"loop_order", std::string("f_outer")},
                                             {"unroll_inner", 1.0}});
  REQUIRE(program->space->is_valid(config));
  const std::string source = program->source(config);
  std::smatch lanes_match;
  REQUIRE(std::regex_search(source, lanes_match, std::regex("constexpr long VL = ([0-9]+);")));
  const long lanes = std::stol(lanes_match[1]);
  // The pixel counts of the tiles' groups of at most `lanes` pixels.
  std::set<long> counts;
  for (long pixels : {6L, 3L})
    for (long first = 0; first < pixels; first += lanes) counts.insert(std::min(pixels - first, lanes));
  const auto assembly = assembly_of(scratch, "stores", source, tune::cpu_build_flags(*program, config, "c++"));
  std::set<long> defined;
  const std::regex definition("\n(_Z[A-Za-z0-9_]*store_groupILl([0-9]+)E[A-Za-z0-9_]*):\n");
  for (auto it = std::sregex_iterator(assembly.begin(), assembly.end(), definition); it != std::sregex_iterator(); ++it)
    defined.insert(std::stol((*it)[2]));
  INFO("lanes " << lanes);
  CHECK(defined == counts);
  // Its own layouts store the pixels' vectors as they are: no transposing.
  auto own = tune::make_cpu_task_program(tune::parse_task(std::string(task) + ":own"));
  CHECK(own->space->is_valid(config));
  const auto own_assembly =
      assembly_of(scratch, "own-stores", own->source(config), tune::cpu_build_flags(*own, config, "c++"));
  CHECK_FALSE(std::regex_search(own_assembly, definition));
  // And the kernel is right: built and verified against the reference.
  auto backend = tune::make_task_backend(task, "cpu", scratch.options());
  check_self_contained(*backend, config);
}
