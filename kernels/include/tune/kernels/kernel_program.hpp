#pragma once
// A kernel program: what a compiling backend needs to build and check the
// configurations of one kernel, whether generated from a built-in template or
// brought by a user. Every kernel is called through one C entry point,
//
//   extern "C" void <entry>(void* const* args);
//
// whose args[i] points at argument i (an array, or a scalar's value). The
// configuration is baked into the source as compile-time constants.

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tune/engine/space.hpp"

namespace tune {

enum class argument_type { f32_array, f64_array, i32_array, i32, i64, f32, f64 };

inline constexpr const char* argument_type_names[] = {"float*", "double*", "int*", "int", "long", "float", "double"};

/// "float*", "double*", "int*", "int", "long", "float", "double".
inline const char* to_string(argument_type type) { return argument_type_names[static_cast<int>(type)]; }

/// Throws std::invalid_argument listing the accepted names.
inline argument_type argument_type_from_string(const std::string& text) {
  for (int i = 0; i < 7; ++i)
    if (text == argument_type_names[i]) return static_cast<argument_type>(i);
  throw std::invalid_argument("unknown argument type '" + text +
                              "'; expected one of float*, double*, int*, int, long, float, double");
}

inline bool is_array(argument_type type) { return static_cast<int>(type) <= 2; }

/// Bytes of one element (arrays) or of the value (scalars).
inline std::size_t element_bytes(argument_type type) {
  switch (type) {
    case argument_type::f64_array:
    case argument_type::i64:
    case argument_type::f64:
      return 8;
    default:
      return 4;
  }
}

struct kernel_argument {
  std::string name;
  argument_type type = argument_type::f32_array;
  std::int64_t size = 0;  ///< elements (arrays)
  bool output = false;    ///< compared with the reference; filled with NaN before a checked run
  double value = 0.0;     ///< scalars
  /// Arrays: a file of `size` raw elements to start from instead of the
  /// fixed hash (inputs; an output's start is poisoned all the same).
  std::string data;
};

/// An array of `size` floats named `name`, an output when `output`.
inline kernel_argument float_array_argument(std::string name, std::int64_t size, bool output = false) {
  kernel_argument a;
  a.name = std::move(name);
  a.type = argument_type::f32_array;
  a.size = size;
  a.output = output;
  return a;
}

/// A device launch for GPU kernels: grid and block extents.
struct launch_geometry {
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned shared_bytes = 0;  ///< static shared memory the kernel declares
};

struct kernel_program {
  /// Identifies the task (task_key() of the backend).
  std::string key;
  search_space_ptr space;
  /// The full source for a configuration.
  std::function<std::string(const configuration&)> source;
  /// Why a configuration cannot be instantiated (a resource limit), or empty.
  std::function<std::string(const configuration&)> check;
  /// GPU kernels: the launch of a configuration.
  std::function<launch_geometry(const configuration&)> geometry;
  /// GPU kernels: "cuda" or "hip", the language of `source`; empty for CPU.
  std::string gpu_language;
  /// Entry symbol of the kernel's source.
  std::string entry = "tune_entry";
  /// CPU kernels: symbols (same convention as the entry) run outside the
  /// timed runs, or empty for none. The checked run is prepare, entry,
  /// finish; a timed run is the entry alone. prepare converts the inputs into
  /// the kernel's own layouts once, finish converts its own output into the
  /// outputs, so the time leaves the conversions out.
  std::string prepare, finish;
  std::vector<kernel_argument> arguments;
  /// A plain C++ implementation with the same entry convention; run once per
  /// task to produce the expected outputs.
  std::string reference_source;
  std::string reference_entry = "tune_reference";
  /// Extra compiler flags the kernel needs (e.g. -fopenmp).
  std::function<std::vector<std::string>(const configuration&)> flags;
  /// CPU kernels: flags added when the host compiler is GCC that shorten a
  /// build without changing the code it makes (checked on the built-in
  /// templates); not among the flags an emitted kernel is compiled with.
  std::vector<std::string> gcc_build_flags;
  double flops = 0.0;
  /// Overrides the backend's tolerance when positive.
  double tolerance = 0.0;
  /// The tolerance bounds |out - expected| itself (Kernel Tuner's atol)
  /// instead of |out - expected| / max(1, |expected|).
  bool absolute_tolerance = false;
  /// A file of the expected outputs (raw elements, one block per output array
  /// in argument order) used instead of running reference_source; with no
  /// output array it may be empty and nothing is checked.
  std::string expected_file;
  /// CPU kernels that time themselves: a `double` symbol the entry sets to
  /// the milliseconds of its run, which then is the run's time; empty: the
  /// worker's clock times the run.
  std::string reported_time;
};

using kernel_program_ptr = std::shared_ptr<const kernel_program>;

}  // namespace tune
