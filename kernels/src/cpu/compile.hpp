#pragma once
// One build of a CPU shared object: the compiler run by argv (never a shell),
// killed with everything it started when the time is up.
//
// A build is one compiler run that compiles and links. It links the object
// on its own: no start files, no libstdc++, libm or libgcc_s, only the C
// library and libgcc's static helpers, every symbol resolved there (-z defs).
// Reading libstdc++ and the start files was a third of a MatMul build
// (docs/kernels.md, "Builds"). A source that needs more (libstdc++ for a
// user kernel's std::vector, libm for a GEVO-ML workload's expf) fails that
// link; it is built again with the compiler's own link, and so is every
// later build with the same compiler and flags.

#include <string>
#include <vector>

#include "tune/kernels/backend.hpp"

namespace tune {

/// What the compiler is given, besides `flags`, to link on its own: before
/// the output, the source and the libraries after it.
std::vector<std::string> self_contained_link_flags();
std::vector<std::string> self_contained_link_libraries();

/// True when a failed compiler run's output says the link failed (an
/// undefined symbol, the linker's exit status), not the compilation.
bool link_failed(const std::string& compiler_output);

/// Builds `source` into the shared object `output` with `compiler` and
/// `flags` (they hold -shared) within `timeout_s` seconds in all: ok, or a
/// compile_error with the compiler's message, or a build_timeout. compile_s
/// is the time of every compiler run. The artifact field is left empty.
/// Thread-safe.
build_result build_shared_object(const std::string& compiler, const std::vector<std::string>& flags,
                                 const std::string& source, const std::string& output, double timeout_s);

}  // namespace tune
