#pragma once
// Datasets and scratch files shared by the replay tests.

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tune/kernels/replay.hpp"

namespace tune::test {

inline std::string replay_data(const std::string& name) { return std::string(TUNE_DATA_DIR) + "/" + name; }

/// The 164-configuration slice of the convolution A100 cache (135 ok, 23
/// runtime failures, 6 compile failures).
inline const replay_dataset& conv_slice() {
  static const replay_dataset dataset = read_replay_dataset(replay_data("replay/conv_a100_slice.json.gz"));
  return dataset;
}

/// Writes `text` to a fresh file in the temporary folder and returns its path.
inline std::string write_scratch(const std::string& name, const std::string& text) {
  auto dir = std::filesystem::temp_directory_path() / ("tune_replay_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto path = (dir / name).string();
  std::ofstream(path) << text;
  return path;
}

}  // namespace tune::test
