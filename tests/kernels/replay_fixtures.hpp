#pragma once
// Datasets and scratch files shared by the replay tests.

#include <unistd.h>

#include <deque>
#include <filesystem>
#include <fstream>
#include <string>

#include "tune/engine/strategy.hpp"
#include "tune/kernels/replay.hpp"

namespace tune::test {

inline std::string replay_data(const std::string& name) { return std::string(TUNE_DATA_DIR) + "/" + name; }

/// The 164-configuration slice of the convolution A100 cache (135 ok, 23
/// runtime failures, 6 compile failures).
inline const replay_dataset& conv_slice() {
  static const replay_dataset dataset = read_replay_dataset(replay_data("replay/conv_a100_slice.json.gz"));
  return dataset;
}

/// Proposes a fixed script of configurations, as many as asked for, and
/// records what it was asked for and told.
class scripted_strategy final : public strategy {
 public:
  explicit scripted_strategy(std::deque<configuration> script) : script_(std::move(script)) {}
  std::string name() const override { return "scripted"; }
  std::vector<configuration> propose(std::size_t n) override {
    std::vector<configuration> out;
    while (out.size() < n && !script_.empty()) {
      out.push_back(script_.front());
      script_.pop_front();
    }
    asked.push_back(n);
    return out;
  }
  void observe(const trial_result& result) override { told.push_back(result); }
  std::vector<std::size_t> asked;
  std::vector<trial_result> told;

 private:
  std::deque<configuration> script_;
};

/// Writes `text` to a fresh file in the temporary folder and returns its path.
inline std::string write_scratch(const std::string& name, const std::string& text) {
  auto dir = std::filesystem::temp_directory_path() / ("tune_replay_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto path = (dir / name).string();
  std::ofstream(path) << text;
  return path;
}

}  // namespace tune::test
