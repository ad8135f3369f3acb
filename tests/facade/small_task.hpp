#pragma once
// A session of a few trials of a small built-in task (matmul:64x64x64, random
// search, no end-of-run confirmation), its compiled kernels cached under
// `dir`/cache: for the facade tests that need a real kernel measured.

#include <cstdint>
#include <cstdlib>
#include <filesystem>

#include "tune/tune.hpp"

namespace tune::test {

inline session_options small_task_options(const std::filesystem::path& dir, std::uint64_t trials, std::uint64_t seed) {
  ::setenv("TUNE_CACHE_DIR", (dir / "cache").c_str(), 1);
  session_options o;
  o.task = "matmul:64x64x64";
  o.strategy = "random";
  o.budget.trials = trials;
  o.seed = seed;
  o.confirm.top = 0;
  return o;
}

}  // namespace tune::test
