#pragma once
// Shared by the kernel tests: a compile cache of their own per test process
// (so results never come from another run's cache unless a test wants that),
// fast measurement settings, and a way to find a configuration a backend can
// instantiate.

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>

#include "tune/kernels/backend.hpp"
#include "tune/kernels/kernel_program.hpp"
#include "tune/kernels/task.hpp"

namespace tune::test {

/// A file's whole content.
inline std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class kernel_scratch {
 public:
  explicit kernel_scratch(const std::string& name)
      : path_(std::filesystem::temp_directory_path() / ("tune-kernels-" + name + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~kernel_scratch() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  kernel_scratch(const kernel_scratch&) = delete;
  kernel_scratch& operator=(const kernel_scratch&) = delete;

  const std::filesystem::path& path() const { return path_; }

  /// Options measuring quickly, with the cache inside the scratch folder.
  task_backend_options options() const {
    task_backend_options o;
    o.cache_dir = (path_ / "cache").string();
    o.measurement.min_time_s = 0.0;
    o.measurement.min_repeats = 1;
    o.measurement.max_repeats = 3;
    return o;
  }

  std::string write(const std::string& name, const std::string& text) const {
    auto file = path_ / name;
    std::ofstream(file) << text;
    return file.string();
  }

 private:
  std::filesystem::path path_;
};

/// The task string of packed_matmul's space.
inline const char* small_matmul_task = "matmul:24x40x48";

/// A configuration of small_matmul_task's space with both panels packed and
/// tiles that divide none of its sizes evenly.
inline configuration packed_matmul(const search_space& space) {
  return space.from_values({{"tile_n", std::vector<std::int64_t>{1, 2, 3, 4}},
                            {"tile_m", std::vector<std::int64_t>{1, 1, 3, 16}},
                            {"tile_k", std::vector<std::int64_t>{2, 4, 5}},
                            {"loop_order", std::vector<std::int64_t>{2, 0, 1}},
                            {"a_panel", std::string("packed")},
                            {"b_panel", std::string("packed")},
                            {"prefetch", 1.0}});
}

/// Draws configurations until one builds past instantiation (at most `tries`).
inline std::pair<configuration, build_result> build_some(backend& b, rng_type& rng, int tries = 200) {
  build_result last;
  for (int i = 0; i < tries; ++i) {
    auto config = b.space()->draw_valid(rng);
    if (!config) break;
    last = b.build(*config, 120.0);
    if (last.state != status::instantiation_error) return {*config, last};
  }
  return {{}, last};
}

/// Of `draws` configurations drawn uniformly from the Cartesian product of a
/// program's space: how many its check accepts (inside) and refuses
/// (outside), and the first on which the space and the check disagree, in
/// words (empty when they agree on all).
struct space_check_agreement {
  int inside = 0, outside = 0;
  std::string disagreement;
};
inline space_check_agreement compare_space_and_check(const kernel_program& program, int draws, unsigned seed) {
  space_check_agreement out;
  const auto size = *program.space->cartesian_size();
  rng_type rng(seed);
  for (int i = 0; i < draws; ++i) {
    auto config = program.space->unflatten(std::uniform_int_distribution<std::uint64_t>(0, size - 1)(rng));
    const auto problem = program.check(config);
    if (program.space->is_valid(config) != problem.empty() && out.disagreement.empty())
      out.disagreement = program.space->to_json(config) + ": the space " +
                         (problem.empty() ? "refuses it, the check does not" : "holds it, the check says " + problem);
    ++(problem.empty() ? out.inside : out.outside);
  }
  return out;
}

}  // namespace tune::test
