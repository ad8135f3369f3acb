// Fuzzes opening a results database from a damaged file and what --resume,
// `best` and the cache then read from it: the file must be refused, or its
// rows read or refused, with std::invalid_argument or db_error (one clear
// message), never a crash, hang or leak. A run is then started and a trial
// recorded, as a resumed run would.
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "scratch_file.hpp"
#include "tune/storage/results_db.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tune::storage;
  static tune::fuzz::scratch_file file(".db");
  const auto& path = file.write(data, size);
  try {
    results_db db(path);
    auto runs = db.runs();
    for (std::size_t i = 0; i < runs.size() && i < 16; ++i) {
      const auto& run = runs[i];
      (void)db.trials(run.id);
      (void)db.trial_count(run.id);
      (void)db.latest_unfinished_run(run.task_key, run.strategy, run.seed);
      (void)db.load_cache(run.task_key, run.device_kind);
    }
    for (const auto& task : db.tasks()) (void)db.best(task);
    auto id = db.create_run({"matmul:8x8x8", "random", 1, "{}", "cpu"});
    tune::storage::trial_input trial;
    trial.config_json = R"({"x":1})";
    trial.state = tune::status::ok;
    trial.time_ms = 1.0;
    trial.device = "cpu0";
    db.record_trial(id, trial);
    db.finish_run(id);
  } catch (const std::exception&) {
  }
  return 0;
}
