#pragma once
// Bring your own kernel: a source file, a search-space file (NNI or T1 format)
// and a launch description, in the spirit of Kernel Tuner's tune_kernel:
//
//   {
//     "source": "matvec.cpp",              // relative to the description
//     "entry": "matvec",                   // the function to call
//     "space": "space.json",               // NNI or T1 search space
//     "arguments": [                       // in the entry's parameter order
//       {"name": "y", "type": "float*", "size": 4096, "output": true},
//       {"name": "A", "type": "float*", "size": 16777216},
//       {"name": "n", "type": "int", "value": 4096}
//     ],
//     "reference": {"source": "matvec_reference.cpp", "entry": "matvec_reference"},
//     "tolerance": 1e-4,                   // optional
//     "flops": 33554432,                   // optional, for GFLOP/s
//     "flags": ["-fopenmp"]                // optional extra compiler flags
//   }
//
// Each parameter becomes a compile-time constant before the source:
// `constexpr long NAME = 32;` (numbers; double when not integral),
// `constexpr const char* NAME = "…";` (strings), and for tuples
// `constexpr long NAME[] = {…};` plus `NAME_0`, `NAME_1`, …. Inputs are filled
// with fixed pseudo-random values; outputs arrive filled with NaN, so a kernel
// writes every output element. The reference has the same signature and sees
// no configuration constants.
//
// Kernel Tuner's conventions (docs/kernels.md, "Bring your own kernel"):
// "constants": "define" (#define lines instead of constexpr), an input
// array's "data": "file" (its raw elements), "expected": "file" instead of
// "reference" (the outputs' raw elements), "absolute_tolerance": true,
// "returns_time": true (the entry returns its run's milliseconds) and
// "untyped_pointers": true (arrays convert to the entry's pointer types).
//
// CUDA kernels ("language": "cuda", built with NVRTC) name an
// `extern "C" __global__` entry and give the launch the way Kernel Tuner does:
// "problem_size": [x, y, z] and "block_size": [bx, by, bz], each block extent
// a number or a parameter name; the grid is ceil(problem_size / block_size).
// Tuples then appear only as NAME_0, NAME_1, … (device code cannot read host
// arrays). The reference stays a C++ function run on the CPU. HIP kernels
// ("language": "hip", built with hipcc for an AMD GPU) are written and
// launched as CUDA ones; the HIP runtime header goes in front of the source.

#include <string>

#include "tune/kernels/backend.hpp"
#include "tune/kernels/kernel_program.hpp"
#include "tune/kernels/task.hpp"

namespace tune {

/// Reads a launch description. Throws std::invalid_argument naming the file,
/// the field and the fix.
kernel_program_ptr read_user_kernel(const std::string& launch_path);

/// The backend of a user kernel: "cpu" for C++ kernels, "cuda" for CUDA ones,
/// "hip" for HIP ones (in a build with hipcc).
backend_ptr make_user_kernel_backend(const std::string& launch_path, const std::string& backend_name,
                                     const task_backend_options& options = {});

}  // namespace tune
