#pragma once
// One build of a CPU shared object: the compiler run by argv (never a shell),
// killed with everything it started when the time is up.
//
// A build is one compiler run that compiles and links, and links as little as
// it can. First against nothing at all (-nostdlib): the engine then reads the
// shared object's undefined symbols (elf_symbols.hpp) and takes the build
// when the C library defines every one; the workers that load it run with
// the C library. Reading libstdc++ and the start files was a third of a
// MatMul build, and reading the C library for -z defs made a link 10 ms
// longer (docs/kernels.md, "Builds", "Linked against nothing"). A source that needs more is built again: with
// the C library and libgcc's static helpers, every symbol resolved there
// (-z defs), and when that link fails too (libstdc++ for a user kernel's
// std::vector, libm for a GEVO-ML workload's expf, libgomp for threads),
// with the compiler's own link. Later builds with the same compiler and flags
// start at the way that worked.

#include <string>
#include <vector>

#include "tune/kernels/backend.hpp"

namespace tune {

/// What the compiler is given, besides `flags`, to link with the C library
/// alone: before the output, the source and the libraries after it.
std::vector<std::string> self_contained_link_flags();
std::vector<std::string> self_contained_link_libraries();

/// True when a failed compiler run's output says the link failed (an
/// undefined symbol, the linker's exit status), not the compilation.
bool link_failed(const std::string& compiler_output);

/// Builds `source` into the shared object `output` with `compiler` and
/// `flags` (they hold -shared) within `timeout_s` seconds in all: ok, or a
/// compile_error with the compiler's message, or a build_timeout. compile_s
/// is the time of every compiler run. The artifact field is left empty.
/// The compiler runs with `environment`'s NAME=VALUE entries set
/// (run_process). Thread-safe.
build_result build_shared_object(const std::string& compiler, const std::vector<std::string>& flags,
                                 const std::string& source, const std::string& output, double timeout_s,
                                 const std::vector<std::string>& environment = {});

}  // namespace tune
