#pragma once
// Code generation helpers shared by the kernel templates: reading a
// configuration's values by name, writing them as compile-time constants, and
// the arguments and naive reference every backend of a task shares
// (codegen.cpp); the templates themselves are cpu_matmul.cpp, cpu_conv2d.cpp
// and cuda_templates.cpp.

#include <cstdint>
#include <string>
#include <vector>

#include "tune/engine/space.hpp"
#include "tune/kernels/kernel_program.hpp"
#include "tune/kernels/task.hpp"

namespace tune::codegen {

/// The integer tuple (factorization, permutation) of parameter `name`.
std::vector<std::int64_t> tuple_value(const search_space& space, const configuration& config, const std::string& name);

/// The numeric value (discrete, numeric categorical) of parameter `name`.
double number_value(const search_space& space, const configuration& config, const std::string& name);

/// True for a C identifier (a letter or `_`, then letters, digits, `_`).
bool is_identifier(const std::string& name);

/// A configuration as compile-time constants, one per parameter:
/// `constexpr long NAME = 32;` (numbers; double when not integral),
/// `constexpr const char* NAME = "…";` (strings), tuples as `NAME_0`, `NAME_1`,
/// … plus (`with_arrays`; device code cannot read host arrays)
/// `constexpr long NAME[] = {…};`.
std::string configuration_constants(const search_space& space, const configuration& config, bool with_arrays);

/// The configuration as Kernel Tuner writes it in front of a kernel:
/// `#define NAME value` per parameter (numbers as written, integral ones
/// without a fraction; strings as their text, unquoted), tuples as `NAME_0`,
/// `NAME_1`, ….
std::string configuration_defines(const search_space& space, const configuration& config);

/// `constexpr long NAME = value;\n`
std::string constant(const std::string& name, std::int64_t value);

/// The arguments of a task's kernels: output first, then the two inputs.
std::vector<kernel_argument> task_arguments(const task_spec& task);

/// A naive C++ implementation of the task (double accumulation), entry
/// `tune_reference`.
std::string reference_source(const task_spec& task);

/// A program of `task` on `backend` ("cpu", "cuda", "hip") over these parameters
/// and the space's constraints (what the program's check refuses, so that the
/// strategies never propose it), with the task's key, arguments, reference and
/// flops filled in.
std::shared_ptr<kernel_program> new_task_program(const task_spec& task, std::vector<parameter_ptr> parameters,
                                                 const std::string& backend,
                                                 const std::vector<std::string>& constraints = {});

/// The conv2d parameters of the OpEvo paper (the CUDA and HIP templates).
std::vector<parameter_ptr> conv2d_parameters(const task_spec& task);

/// The parameters of the CPU conv2d template (cpu_conv2d.cpp): output-channel
/// block, pixels per register tile, input layout, reduction and loop order,
/// unrolling.
std::vector<parameter_ptr> cpu_conv2d_parameters(const task_spec& task);

/// A configuration of conv2d_parameters() as numbers.
struct conv2d_tiles {
  std::vector<std::int64_t> f, y, x, rc, ry, rx;
  std::int64_t max_step = 0;
  bool explicit_unroll = false;
};
conv2d_tiles conv2d_tiles_of(const search_space& space, const configuration& config);

/// Source text that every CPU template starts with, in place of headers: the
/// C library functions they call (aligned_alloc, calloc) and, in an anonymous
/// namespace, `index_list<long, I...>` and `indices_below<N>` (0 .. N - 1).
/// With GCC it also turns predictive commoning off up to cpu_kernel_epilogue,
/// which every CPU template ends with.
extern const char* const cpu_kernel_prelude;
extern const char* const cpu_kernel_epilogue;

/// Source text of the CPU templates' vector type `vec` (VL floats, VL defined
/// before it), its helpers `load` (unaligned) and `splat` (every lane x), and
/// the micro-kernel step both CPU templates use, `rank1<R, NV, XS>(acc, x, w)`:
/// acc[r][v] += x[r * XS] * w[v * VL …] for a register tile of R x NV vectors.
extern const char* const cpu_vector_helpers;

/// Source text of `transpose(r)` (after cpu_vector_helpers): r[i][l] becomes
/// r[l][i] for a VL x VL block held in VL vectors. Stage w (1, 2, 4, ...)
/// swaps bit w of the row with bit w of the lane: rows i and i + w (bit w of
/// i clear) become two-source shuffles of each other, VL shuffles per stage.
/// One lane is its own transpose (an empty function).
std::string cpu_transpose_code(std::int64_t lanes);

/// Floats in one vector register of this machine (16 with AVX-512, 8 with
/// AVX, else 4); the CPU templates are compiled with -march=native.
std::int64_t native_vector_lanes();

/// Vector registers of this machine: 32 with AVX-512, else 16.
std::int64_t vector_registers();

/// Vector lanes of a CPU register tile `extent` floats wide: the largest of
/// 16, 8, 4, 2 that divides it and fits a register, else 1.
std::int64_t vector_lanes(std::int64_t extent);

/// Most vector multiply-adds of one unrolled body (see codegen.cpp); a
/// MatMul micro-kernel's k loop, max_matmul_body.
constexpr std::int64_t max_unrolled_body = 2048;
constexpr std::int64_t max_matmul_body = 1024;

/// Why a CPU register tile of `accumulators` vectors, unrolled `unrolled`
/// times, cannot be instantiated; empty when it can. `body_limit` bounds the
/// unrolled body's vector multiply-adds.
std::string cpu_register_tile_problem(const std::string& tile, std::int64_t accumulators, std::int64_t unrolled,
                                      std::int64_t body_limit = max_unrolled_body);

/// Compiler flags of the CPU templates.
std::vector<std::string> cpu_template_flags(int threads);
/// The CPU templates' kernel_program::gcc_build_flags: GCC only, the same
/// code in less time.
std::vector<std::string> cpu_template_gcc_build_flags();

/// The CPU, CUDA and HIP programs of a task (HIP: the CUDA templates in HIP's
/// dialect).
kernel_program_ptr make_cpu_matmul_program(const task_spec& task, int threads);
kernel_program_ptr make_cpu_conv2d_program(const task_spec& task, int threads);
kernel_program_ptr make_cuda_program(const task_spec& task);
kernel_program_ptr make_hip_program(const task_spec& task);

}  // namespace tune::codegen
