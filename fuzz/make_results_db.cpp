// Writes the seed of fuzz_results_db: a results database with a finished run
// and an unfinished one (what --resume continues), trials of several
// statuses, a reused trial and extra objectives.
//   make_results_db FILE
#include <filesystem>
#include <iostream>

#include "tune/storage/results_db.hpp"

int main(int argc, char** argv) {
  using namespace tune::storage;
  if (argc != 2) {
    std::cerr << "usage: make_results_db FILE\n";
    return 2;
  }
  std::filesystem::remove(argv[1]);
  {
    results_db db(argv[1]);
    auto done = db.create_run({"matmul:64x64x64", "random", 7, R"({"budget":4})", "cpu"});
    trial_input ok;
    ok.config_json = R"({"tile":8,"unroll":2})";
    ok.state = tune::status::ok;
    ok.time_ms = 0.5;
    ok.compile_s = 0.2;
    ok.run_s = 0.01;
    ok.device = "cpu0";
    ok.objectives = {1.5, 2.0};
    db.record_trial(done, ok);
    trial_input failed = ok;
    failed.config_json = R"({"tile":16,"unroll":4})";
    failed.state = tune::status::compile_error;
    failed.objectives = {};
    db.record_trial(done, failed);
    db.finish_run(done);
    auto running = db.create_run({"matmul:64x64x64", "ga", 8, "{}", "cpu"});
    trial_input reused = ok;
    reused.reused_from_run = done;
    db.record_trial(running, reused);
    trial_input timeout = failed;
    timeout.config_json = R"({"tile":32,"unroll":1})";
    timeout.state = tune::status::run_timeout;
    db.record_trial(running, timeout);
  }
  // The WAL is folded into the file when the last connection closes.
  std::error_code ignored;
  for (const char* extra : {"-wal", "-shm"}) std::filesystem::remove(std::string(argv[1]) + extra, ignored);
  return 0;
}
