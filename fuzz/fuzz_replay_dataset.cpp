// Fuzzes the replay dataset reader: Kernel Tuner caches, T4 results and KTT
// TuningOutput, plain or gzip-compressed (an input that starts with gzip's
// magic bytes is read as a .json.gz). A dataset that is read is then looked
// up, evaluated and searched briefly. Bad input must end in std::exception
// (one clear message), never a crash, hang, leak or runaway allocation.
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "scratch_file.hpp"
#include "tune/kernels/replay.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static tune::fuzz::scratch_file plain(".json"), gzipped(".json.gz");
  bool gz = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
  const auto& path = (gz ? gzipped : plain).write(data, size);
  try {
    auto dataset = tune::read_replay_dataset(path);
    (void)dataset.best_time_ms();
    (void)dataset.space->cartesian_size_text();
    tune::rng_type rng(1);
    for (std::size_t i = 0; i < dataset.configs.size() && i < 64; ++i) {
      (void)dataset.space->to_json(dataset.configs[i]);
      (void)tune::evaluate(dataset, dataset.configs[i], &rng);
    }
    tune::replay_run_options options;
    options.budget = 8;
    (void)tune::replay_search(dataset, options);
  } catch (const std::exception&) {
  }
  return 0;
}
