// bench_retime --top K: which of a run's configurations it times beside the
// reported best. A results database is written by hand (a small MatMul's
// configurations with made-up search figures), then the program builds and
// times the ones it picks, on the CPU, one round each.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "actors/scratch_dir.hpp"
#include "skip.hpp"
#include "tune/kernels/subprocess.hpp"
#include "tune/kernels/task.hpp"
#include "tune/storage/results_db.hpp"

namespace {

const std::string task = "matmul:16x32x16";

/// A finished run of `task` with six trials, seq i timed at i + 1 ms (seq 2
/// stopped early, seq 5 failed), the one with the confirmation rounds
/// `confirmed` (seq 0 their winner) when given.
void write_run(const std::string& path, const std::vector<std::int64_t>& confirmed) {
  auto backend = tune::make_task_backend(task, "cpu");
  const auto& space = *backend->space();
  tune::storage::results_db db(path);
  tune::storage::run_spec spec;
  spec.task_key = backend->task_key();
  spec.strategy = "random";
  spec.device_kind = "cpu";
  auto run = db.create_run(spec);
  std::uint64_t index = 0;
  for (int seq = 0; seq < 6; ++seq) {
    while (!space.is_valid(space.unflatten(index))) ++index;
    tune::storage::trial_record t;
    t.config_json = space.to_json(space.unflatten(index++));
    t.state = seq == 5 ? tune::status::runtime_error : tune::status::ok;
    t.time_ms = seq == 5 ? std::nan("") : seq + 1.0;
    t.stopped_early = seq == 2;
    db.record_trial(run, t);
  }
  if (!confirmed.empty()) {
    std::vector<tune::storage::confirmation_row> rows;
    for (auto seq : confirmed) rows.push_back({seq, 0, seq + 1.0});
    db.record_confirmation(run, rows, 0);
  }
  db.finish_run(run, tune::end_reason::budget);
}

/// The "seq" of each line bench_retime prints after the best's.
std::set<std::int64_t> others_timed(const std::string& db_path, int top) {
  const auto program = std::filesystem::path(TUNE_BENCH_DIR) / "bench_retime";
  auto out = tune::run_process(
      {program.string(), "--db", db_path, "--task", task, "--top", std::to_string(top), "--rounds", "1"}, 120.0);
  INFO(out.output);
  REQUIRE(out.exit_code == 0);
  std::set<std::int64_t> seqs;
  std::istringstream lines(out.output);
  int count = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line.front() != '{') continue;
    if (count++ > 0) seqs.insert(nlohmann::json::parse(line).at("seq").get<std::int64_t>());
  }
  CHECK(count == top);
  return seqs;
}

}  // namespace

TEST_CASE("bench_retime --top times the configurations the run confirmed, else its next fastest timed in full",
          "[bench]") {
  if (!std::filesystem::is_regular_file(std::filesystem::path(TUNE_BENCH_DIR) / "bench_retime"))
    SKIP_TEST("bench_retime is not built in " TUNE_BENCH_DIR);
  tune::test::scratch_dir dir("bench-retime-top");
  // The confirmation timed seqs 3 and 4 beside the winner, not the next
  // fastest (seq 1): those are the ones re-timed.
  const auto confirmed = (dir / "confirmed.db").string();
  write_run(confirmed, {0, 3, 4});
  CHECK(others_timed(confirmed, 3) == std::set<std::int64_t>{3, 4});
  // Without confirmation rounds: the next fastest timed in full (seq 2 was
  // stopped early and seq 5 failed), fastest first.
  const auto plain = (dir / "plain.db").string();
  write_run(plain, {});
  CHECK(others_timed(plain, 3) == std::set<std::int64_t>{1, 3});
}
