#pragma once
// A tuned kernel compiled into another program. The fastest configuration of a
// CPU kernel program becomes one self-contained C++ header (what
// `tune-engine emit` and the CMake function tune_engine_add_tuned_kernel()
// write):
//
//   results DB ──best()──> configuration ──emit_tuned_kernel()──> NAME.hpp + NAME.cpp
//
// NAME.hpp declares, in namespace NAME, the task, the configuration as
// constexpr values (as the kernel sees them), the time measured while tuning
// and `void run(...)` taking the kernel's arguments (matmul: C, A, B). Its
// implementation section, compiled where TUNE_ENGINE_IMPLEMENT_NAME is
// defined, holds the generated kernel source, so a checked-in header alone
// rebuilds the kernel. NAME.cpp defines that macro and includes the header; it
// must be compiled with the flags (the kernel was measured with them).

#include <string>
#include <vector>

#include "tune/kernels/kernel_program.hpp"
#include "tune/kernels/task.hpp"

namespace tune {

/// What the header says besides the kernel: its name and where it comes from.
struct tuned_kernel_info {
  std::string name;         ///< a C identifier: the header's namespace
  std::string task;         ///< the task as the user wrote it, e.g. matmul:64x64x64
  std::string config_json;  ///< search_space::to_json() of the configuration
  double time_ms = 0.0;     ///< its measured time
  std::string provenance;   ///< one line: results DB, run, trial, device kind
};

struct tuned_kernel_files {
  std::string header;
  std::string source;              ///< includes the header by `header_include`
  std::vector<std::string> flags;  ///< compiler flags the source needs
};

/// Prefix of the header line that lists the flags (`// tune-engine flags: -O3 …`),
/// for build systems that read a checked-in header.
inline constexpr const char* tuned_kernel_flags_prefix = "// tune-engine flags: ";

/// The header and source of `program`'s configuration `info.config_json`.
/// Throws std::invalid_argument when the name is not a C identifier, the
/// configuration does not fit the program's space, or it cannot be
/// instantiated (each message says which and what to do).
tuned_kernel_files emit_tuned_kernel(const kernel_program& program, const tuned_kernel_info& info,
                                     const std::string& header_include);

/// A tuned GPU kernel (CUDA or HIP) for a program of its own: the kernel
/// source with the configuration baked in, and how to launch it.
struct tuned_gpu_kernel {
  std::string source;
  /// JSON: entry, grid, block, shared_bytes, arguments (name, type, elements
  /// or value, output; in the entry's order), operator and shape of the task,
  /// flops of one launch, configuration, time_ms, provenance.
  std::string launch_json;
};

/// The source and launch of `program`'s configuration `info.config_json`.
/// Throws std::invalid_argument as emit_tuned_kernel() does, and for a program
/// that is not a GPU kernel.
tuned_gpu_kernel emit_tuned_gpu_kernel(const kernel_program& program, const tuned_kernel_info& info);

/// The program a GPU backend ("cuda" or "hip") builds for a built-in task; only
/// source is generated, so no GPU toolkit is needed. Throws
/// std::invalid_argument for another backend name.
kernel_program_ptr make_gpu_task_program(const task_spec& task, const std::string& backend);

}  // namespace tune
