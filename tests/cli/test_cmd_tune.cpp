// `tune-engine tune` as a user runs it: the real binary tuning a small CPU
// matmul, killed at random moments and resumed, watched by a subscriber, fed
// malformed input, stopped by a full disk or a read-only database, two
// processes on one database; --compare-vendor (and its alias --compare-blas):
// the vendor figures in the summary JSON, what it says when no vendor can be
// timed, and the refusal without a built-in task; Ctrl-C (SIGINT) and SIGTERM
// stop a run.
#include <signal.h>
#include <sqlite3.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "actors/scratch_dir.hpp"
#include "cli/cli_process.hpp"
#include "kernels/process_checks.hpp"
#include "skip.hpp"
#include "tune/kernels/backend.hpp"
#include "tune/kernels/device_lease.hpp"
#include "tune/kernels/subprocess.hpp"
#include "tune/storage/event_stream.hpp"
#include "tune/storage/results_db.hpp"

using Catch::Matchers::Contains;
using tune::test::cli_process;
using tune::test::output_file;

namespace {

const std::string small_task = "matmul:64x64x64";

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

nlohmann::json summary_of(const std::filesystem::path& file) { return nlohmann::json::parse(read_text(file)); }

/// Runs the command to its end, its output appended to `log`; its exit code.
/// No limit of its own: ctest's timeout bounds a test, and the last run of a
/// long stress run (scripts/stress_kill.sh) may take many minutes.
int run_cli(const std::vector<std::string>& args, const std::filesystem::path& log) {
  cli_process p(args, output_file{log.string()});
  return p.wait(std::chrono::hours(24));
}

void write_topology(const std::filesystem::path& path, int workers, int devices, const char* backend = "cpu") {
  std::ofstream out(path);
  out << "compile_workers: " << workers << "\ncompile_timeout_s: 60\nrun_timeout_s: 10\ndevices:\n"
      << "  - backend: " << backend << "\n    id: 0\n    prefetch: 1\n    count: " << devices << "\n";
}

/// Compiled kernels are cached per test directory, shared by the resumed runs.
std::vector<std::string> tune_args(const tune::test::scratch_dir& dir, std::uint64_t budget) {
  ::setenv("TUNE_CACHE_DIR", (dir / "kernel-cache").c_str(), 1);
  return {"tune",
          "--topology",
          (dir / "topology.yaml").string(),
          "--task",
          small_task,
          "--strategy",
          "random",
          "--budget",
          std::to_string(budget),
          "--seed",
          "11",
          "--db",
          (dir / "results.db").string(),
          "--quiet"};
}

const std::string conv_slice = std::string(TUNE_DATA_DIR) + "/replay/conv_a100_slice.json.gz";

/// A replayed run, by default of the 164-configuration convolution slice.
std::vector<std::string> replay_args(const std::string& db, std::uint64_t budget, const std::string& seed,
                                     const std::string& time_scale, const std::string& dataset = conv_slice) {
  return {"tune",
          "--dataset",
          dataset,
          "--time-scale",
          time_scale,
          "--strategy",
          "random",
          "--budget",
          std::to_string(budget),
          "--seed",
          seed,
          "--db",
          db,
          "--quiet"};
}

/// A replayed run of the convolution slice that resumes its database: the
/// setup of the tests that stop a run mid-way and continue it.
struct resumable_replay {
  static constexpr std::uint64_t budget = 120;
  tune::test::scratch_dir dir;
  std::filesystem::path log;
  std::string db_file;
  std::vector<std::string> args;

  resumable_replay(const std::string& name, const std::string& seed, const std::string& time_scale)
      : dir(name), log(dir / "log.txt"), db_file((dir / "results.db").string()) {
    args = replay_args(db_file, budget, seed, time_scale);
    args.push_back("--resume");
  }
};

/// What SQLite's PRAGMA integrity_check says about the file ("ok" when sound).
std::string integrity(const std::string& file) {
  sqlite3* db = nullptr;
  std::string out;
  if (sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &stmt, nullptr) == SQLITE_OK)
      while (sqlite3_step(stmt) == SQLITE_ROW) out += reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    sqlite3_finalize(stmt);
  } else {
    out = sqlite3_errmsg(db);
  }
  sqlite3_close(db);
  return out;
}

/// The recorded trials of the run with this seed, by seq.
std::map<std::int64_t, std::string> recorded_trials(const std::string& db_file, std::uint64_t seed,
                                                    tune::storage::run_record* found = nullptr) {
  std::map<std::int64_t, std::string> out;
  try {
    tune::storage::results_db db(db_file, tune::storage::results_db::open_mode::read_only);
    for (const auto& run : db.runs()) {
      if (run.seed != seed) continue;
      if (found) *found = run;
      for (const auto& t : db.trials(run.id)) out[t.seq] = t.config_json;
    }
  } catch (const std::exception&) {
    // not created yet
  }
  return out;
}

/// Every seq from 0 to n - 1 once, each configuration once.
bool complete_and_distinct(const std::map<std::int64_t, std::string>& trials, std::size_t n) {
  std::set<std::string> configs;
  std::int64_t next = 0;
  for (const auto& [seq, config] : trials)
    if (seq != next++ || !configs.insert(config).second) return false;
  return trials.size() == n;
}

/// Waits a minute at most for the process to end (then it is killed); its
/// exit code.
int wait_a_minute(cli_process& p) { return p.wait(std::chrono::seconds(60)); }

/// After a run stopped by its database (exit code rc, output in log): one
/// clear error, the trials recorded before intact and the run resumable;
/// then the same command (args) continues it to its budget.
void check_stopped_then_resumed(int rc, const std::filesystem::path& log, const std::vector<std::string>& args,
                                const std::string& db_file, std::uint64_t seed, std::uint64_t budget,
                                std::size_t at_least) {
  auto text = read_text(log);
  INFO(text);
  CHECK(rc == 1);
  CHECK(text.find("could not record trial") != std::string::npos);
  CHECK(text.find(db_file) != std::string::npos);
  CHECK(text.find("--resume") != std::string::npos);

  tune::storage::run_record run;
  auto before = recorded_trials(db_file, seed, &run);
  CHECK(run.resumable());
  CHECK(before.size() >= at_least);
  CHECK(before.size() < budget);
  CHECK(complete_and_distinct(before, before.size()));
  CHECK(integrity(db_file) == "ok");

  REQUIRE(run_cli(args, log) == 0);
  auto after = recorded_trials(db_file, seed, &run);
  CHECK(run.reason == tune::end_reason::budget);
  CHECK(complete_and_distinct(after, budget));
  for (const auto& [seq, config] : before) CHECK(after[seq] == config);
  CHECK(integrity(db_file) == "ok");
}

}  // namespace

TEST_CASE("tune: killed at random moments and resumed, every finished trial is recorded exactly once", "[cli]") {
  tune::test::scratch_dir dir("tune-kill");
  write_topology(dir / "topology.yaml", 2, 1);
  // Each kill waits for 0-3 more recorded trials and then a random pause, so
  // kills land before the first trial, between trials and in the middle of
  // compiles and runs on a fast or a slow machine alike; 20 such kills record
  // at most 60 new trials, fewer than the budget. TUNE_KILLS=N (see
  // scripts/stress_kill.sh) makes it a stress run with N kills.
  int wanted_kills = 20;
  if (const char* env = std::getenv("TUNE_KILLS")) wanted_kills = std::max(20, std::atoi(env));
  const std::uint64_t budget = 40 + 3 * static_cast<std::uint64_t>(wanted_kills);
  auto args = tune_args(dir, budget);
  args.push_back("--resume");
  auto log = dir / "log.txt";

  std::mt19937_64 rng(20261122);
  std::uniform_int_distribution<std::size_t> more_trials(0, 3);
  std::uniform_int_distribution<int> pause_ms(0, 400);
  auto recorded_now = [&]() -> std::size_t {
    try {
      if (!std::filesystem::exists(dir / "results.db")) return 0;
      tune::storage::results_db db(dir / "results.db", tune::storage::results_db::open_mode::read_only);
      auto runs = db.runs();
      return runs.empty() ? 0 : db.trials(runs[0].id).size();
    } catch (const std::exception&) {
      return 0;  // the file is being created
    }
  };
  // (seq -> config) of everything recorded so far: a later kill must never
  // lose or change it (counted in `lost`).
  std::map<std::int64_t, std::string> recorded;
  std::size_t lost = 0;
  int kills = 0;
  bool finished = false;
  for (; kills < wanted_kills && !finished; ++kills) {
    {
      cli_process p(args, output_file{log.string()});
      std::size_t target = recorded.size() + more_trials(rng);
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (p.running() && recorded_now() < target && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(rng)));
      p.signal(SIGKILL);
      p.wait();
    }
    tune::storage::results_db db(dir / "results.db", tune::storage::results_db::open_mode::read_only);
    auto runs = db.runs();
    if (runs.empty()) continue;  // killed before the run was created
    REQUIRE(runs.size() == 1);
    INFO(read_text(log));
    finished = runs[0].reason == tune::end_reason::budget;  // between two kills
    if (!finished) REQUIRE(runs[0].running());
    auto trials = db.trials(runs[0].id);
    REQUIRE(trials.size() <= budget);
    std::map<std::int64_t, std::string> now;
    for (const auto& t : trials) now[t.seq] = t.config_json;
    for (const auto& [seq, config] : recorded) {
      auto it = now.find(seq);
      if (it == now.end() || it->second != config) ++lost;
    }
    now.insert(recorded.begin(), recorded.end());  // what was recorded first stays the reference
    recorded = std::move(now);
    if ((kills + 1) % 10 == 0) {
      std::printf("after %d kills: %zu trials recorded, lost %zu\n", kills + 1, recorded.size(), lost);
      std::fflush(stdout);
    }
  }
  INFO(read_text(log));
  CHECK(kills >= wanted_kills);
  if (!finished) REQUIRE(run_cli(args, log) == 0);

  tune::storage::results_db db(dir / "results.db", tune::storage::results_db::open_mode::read_only);
  auto runs = db.runs();
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].reason == tune::end_reason::budget);
  auto trials = db.trials(runs[0].id);
  REQUIRE(trials.size() == budget);
  std::set<std::string> configs;
  std::size_t duplicated = 0;
  for (std::size_t i = 0; i < trials.size(); ++i) {
    CHECK(trials[i].seq == static_cast<std::int64_t>(i));
    if (!configs.insert(trials[i].config_json).second) ++duplicated;
  }
  for (const auto& [seq, config] : recorded)
    if (trials[static_cast<std::size_t>(seq)].config_json != config) ++lost;
  // The figures of a stress run (scripts/stress_kill.sh) are read from here.
  std::printf("kills %d, trials recorded %zu of %llu, recorded before the last kill %zu, lost %zu, duplicated %zu\n",
              kills, trials.size(), static_cast<unsigned long long>(budget), recorded.size(), lost, duplicated);
  CHECK(lost == 0);
  CHECK(duplicated == 0);
  INFO(read_text(log));
  CHECK(recorded.size() > 0);
}

TEST_CASE("tune: a subscriber receives every event of a run, in order", "[cli]") {
  tune::test::scratch_dir dir("tune-events");
  write_topology(dir / "topology.yaml", 2, 1);
  std::string endpoint = "ipc://" + (dir / "events.ipc").string();
  const std::uint64_t budget = 16;
  auto args = tune_args(dir, budget);
  for (const char* extra : {"--publish", endpoint.c_str(), "--publish-wait", "1", "--summary-json"})
    args.push_back(extra);
  args.push_back((dir / "summary.json").string());

  tune::storage::event_subscriber sub(endpoint);
  cli_process p(args, output_file{(dir / "log.txt").string()});
  std::vector<nlohmann::json> events;
  for (;;) {
    auto e = sub.receive(std::chrono::seconds(60));
    REQUIRE(e);
    events.push_back(*e);
    if ((*e)["type"] == "run_finished") break;
  }
  REQUIRE(p.wait() == 0);
  CHECK(sub.skipped() == 0);
  REQUIRE(events.front()["type"] == "run_started");
  CHECK(events.front()["resumed"] == false);
  std::int64_t next_seq = 0;
  double best = 1e300;
  for (std::size_t i = 1; i + 1 < events.size(); ++i) {
    const auto& e = events[i];
    if (e["type"] == "trial_finished") {
      CHECK(e["seq"] == next_seq);
      ++next_seq;
    } else if (e["type"] == "new_best") {
      // Announced right after its trial, and better than every earlier best.
      CHECK(e["seq"] == next_seq - 1);
      CHECK(e["time_ms"].get<double>() < best);
      best = e["time_ms"].get<double>();
    } else if (e["type"] == "drift") {
      // A probe out of its band names trials already reported.
      for (const auto& seq : e["flagged"]) CHECK(seq.get<std::int64_t>() < next_seq);
    } else {
      CHECK(e["type"] == "progress");
      // Candidates handed out and not answered: never more than the budget
      // left after the trials reported.
      REQUIRE(e["in_flight"].is_number_unsigned());
      CHECK(e["trials"].get<std::uint64_t>() + e["in_flight"].get<std::uint64_t>() <= budget);
      CHECK(e["wall_elapsed_s"].is_number());
    }
  }
  CHECK(next_seq == static_cast<std::int64_t>(budget));
  // Each trial's wall clock is the database's: finished_at - started_at.
  tune::storage::results_db db(dir / "results.db", tune::storage::results_db::open_mode::read_only);
  auto run = db.runs().at(0);
  auto recorded = db.trials(run.id);
  for (const auto& e : events)
    if (e["type"] == "trial_finished")
      CHECK(e["wall_elapsed_s"].get<double>() == recorded.at(e["seq"].get<std::size_t>()).finished_at - run.started_at);
  CHECK(events.back()["trials"] == budget);

  // The run ends with its fastest trials measured again against each other:
  // run_finished and the summary give the winner's median over the rounds,
  // the winner was one of those trials, found no faster than the stream's
  // last new_best.
  auto summary = summary_of(dir / "summary.json");
  CHECK(summary["trials"] == budget);
  REQUIRE(summary["confirmation"].is_array());
  REQUIRE(!summary["confirmation"].empty());
  const auto& won = summary["confirmation"][0];
  CHECK(won["rounds_ms"].size() == 5);
  CHECK(summary["best"]["time_ms"].get<double>() == won["time_ms"].get<double>());
  CHECK(events.back()["best_time_ms"].get<double>() == won["time_ms"].get<double>());
  CHECK(summary["best"]["search_time_ms"].get<double>() >= best);
  CHECK(events.back()["best_config"] == summary["best"]["config"]);
  CHECK(run.confirmed_seq == won["seq"].get<std::int64_t>());
  CHECK(summary["best"]["config"].is_object());
  CHECK(summary["busy"]["devices"].size() == 1);
  CHECK(summary["new_trials"] == budget);
}

TEST_CASE("tune: malformed topology or command line exits with 2 and names the problem", "[cli]") {
  tune::test::scratch_dir dir("tune-bad-input");
  write_topology(dir / "topology.yaml", 2, 1);
  auto log = dir / "log.txt";
  auto base = tune_args(dir, 10);

  SECTION("topology with an unknown backend") {
    std::ofstream(dir / "topology.yaml") << "compile_workers: 2\ndevices:\n  - backend: quantum\n";
    CHECK(run_cli(base, log) == 2);
    CHECK(read_text(log).find("devices[0].backend") != std::string::npos);
  }
  SECTION("topology that is not YAML") {
    std::ofstream(dir / "topology.yaml") << "compile_workers: [1, \n";
    CHECK(run_cli(base, log) == 2);
    CHECK(read_text(log).find("topology.yaml") != std::string::npos);
  }
  SECTION("a task needs real devices") {
    write_topology(dir / "topology.yaml", 2, 1, "replay");
    CHECK(run_cli(base, log) == 2);
    CHECK(read_text(log).find("measures real kernels") != std::string::npos);
  }
  SECTION("malformed task") {
    auto args = base;
    args[4] = "matmul:64x";
    CHECK(run_cli(args, log) == 2);
  }
  SECTION("time scale without a dataset") {
    auto args = base;
    args.push_back("--time-scale");
    args.push_back("0.5");
    CHECK(run_cli(args, log) == 2);
    CHECK(read_text(log).find("--time-scale") != std::string::npos);
  }
  SECTION("unknown strategy") {
    auto args = base;
    args[6] = "no-such-strategy";
    CHECK(run_cli(args, log) == 2);
    CHECK(read_text(log).find("no-such-strategy") != std::string::npos);
  }
  SECTION("zero budget") {
    auto args = base;
    args[8] = "0";
    CHECK(run_cli(args, log) == 2);
    CHECK(read_text(log).find("--budget") != std::string::npos);
  }
  // CLI11 reads "-1" into a 64-bit unsigned as its largest value: a run of
  // 18446744073709551615 trials, or another seed than the one given.
  SECTION("negative budget") {
    auto args = base;
    args[8] = "-1";
    CHECK(run_cli(args, log) == 2);
    CHECK(read_text(log).find("--budget: must not be negative: -1") != std::string::npos);
  }
  SECTION("negative seed") {
    auto args = base;
    args.push_back("--seed");
    args.push_back("-3");
    CHECK(run_cli(args, log) == 2);
    CHECK(read_text(log).find("--seed: must not be negative: -3") != std::string::npos);
  }
  SECTION("malformed hyperparameter") {
    auto args = base;
    args.push_back("--hyper");
    args.push_back("rho:8");
    CHECK(run_cli(args, log) == 2);
    CHECK(read_text(log).find("name=value") != std::string::npos);
  }
  SECTION("an early-stop setting that does not exist") {
    auto args = base;
    args.push_back("--early-stop");
    args.push_back("build_limit=3");
    CHECK(run_cli(args, log) == 2);
    CHECK(read_text(log).find("--early-stop build_limit=3: 'build_limit' is not an early-stop setting") !=
          std::string::npos);
  }
  SECTION("unknown mode") {
    auto args = base;
    args.push_back("--mode");
    args.push_back("sideways");
    CHECK(run_cli(args, log) == 2);
  }
  SECTION("two sources of configurations") {
    auto args = base;
    args.push_back("--space");
    args.push_back((dir / "topology.yaml").string());
    CHECK(run_cli(args, log) == 2);
  }
  SECTION("missing topology file") {
    auto args = base;
    args[2] = (dir / "absent.yaml").string();
    CHECK(run_cli(args, log) == 2);
    CHECK(read_text(log).find("absent.yaml") != std::string::npos);
  }
  // Nothing was recorded by any of these.
  CHECK_FALSE(std::filesystem::exists(dir / "results.db"));
}

TEST_CASE("tune --dataset: a replayed run records every trial and writes its summary", "[cli]") {
  tune::test::scratch_dir dir("tune-dataset");
  auto log = dir / "log.txt";
  const auto dataset = std::string(TUNE_DATA_DIR) + "/datasets/convolution/A100.json.gz";
  const auto db_file = (dir / "results.db").string();
  const auto summary_file = dir / "summary.json";
  int rc = run_cli({"tune", "--topology", std::string(TUNE_SOURCE_DIR) + "/examples/topology-replay.yaml", "--dataset",
                    dataset, "--time-scale", "0.001", "--strategy", "opevo", "--budget", "30", "--seed", "3", "--db",
                    db_file, "--summary-json", summary_file.string(), "--quiet"},
                   log);
  INFO(read_text(log));
  REQUIRE(rc == 0);

  tune::storage::results_db db(db_file, tune::storage::results_db::open_mode::read_only);
  auto runs = db.runs();
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].reason == tune::end_reason::budget);
  CHECK(runs[0].task_key.find("convolution_kernel") != std::string::npos);
  auto trials = db.trials(runs[0].id);
  CHECK(trials.size() == 30);
  auto best = db.best(runs[0].task_key);
  REQUIRE(best);
  REQUIRE(best->best);

  auto summary = summary_of(summary_file);
  CHECK(summary["trials"] == 30);
  CHECK(summary["new_trials"] == 30);
  CHECK(summary["reason"] == "budget");
  CHECK(summary["run_id"] == runs[0].id);
  CHECK(summary["resumed"] == false);
  CHECK(summary["best"]["time_ms"].get<double>() == Approx(best->best->time_ms));
  CHECK(summary["best"]["config"] == nlohmann::json::parse(best->best->config_json));
  for (const auto& device : {"sim0", "sim1", "sim2", "sim3"}) CHECK(summary["busy"]["devices"].contains(device));
  // The run's options carry its search space, for `tune-engine export`.
  auto options = nlohmann::json::parse(runs[0].options_json);
  CHECK(options["space"]["parameters"].size() == 10);
}

TEST_CASE("tune --start: the configuration is measured once and recorded, one not in the space exits with 2", "[cli]") {
  tune::test::scratch_dir dir("tune-start");
  auto log = dir / "log.txt";
  const auto dataset = std::string(TUNE_DATA_DIR) + "/replay/conv_a100_slice.json.gz";
  auto tune = [&](const std::string& db_file, std::uint64_t seed, std::vector<std::string> extra) {
    std::vector<std::string> args = {
        "tune",     "--dataset", dataset,  "--time-scale",       "0.001", "--strategy", "opevo+knn",
        "--budget", "8",         "--seed", std::to_string(seed), "--db",  db_file,      "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args, log);
  };
  auto trials_of = [](const std::string& db_file) {
    tune::storage::results_db db(db_file, tune::storage::results_db::open_mode::read_only);
    auto runs = db.runs();
    REQUIRE(runs.size() == 1);
    auto trials = db.trials(runs[0].id);
    std::sort(trials.begin(), trials.end(), [](const auto& a, const auto& b) { return a.seq < b.seq; });
    return std::pair{trials, nlohmann::json::parse(runs[0].options_json)};
  };
  REQUIRE(tune((dir / "plain.db").string(), 1, {}) == 0);
  auto start = trials_of((dir / "plain.db").string()).first.back().config_json;  // one seed 1 measured last

  const auto db_file = (dir / "start.db").string();
  int rc = tune(db_file, 2, {"--start", start});
  INFO(read_text(log));
  REQUIRE(rc == 0);
  auto [trials, options] = trials_of(db_file);
  REQUIRE(trials.size() == 8);
  // Handed out first; with two compile workers another trial may finish before it.
  CHECK(std::count_if(trials.begin(), trials.end(), [&](const auto& t) { return t.config_json == start; }) == 1);
  CHECK(options["start"] == nlohmann::json::array({start}));

  auto bad = nlohmann::json::parse(start);
  bad[bad.begin().key()] = 987654;
  CHECK(tune((dir / "bad.db").string(), 2, {"--start", bad.dump()}) == 2);
  CHECK(read_text(log).find("--start") != std::string::npos);
}

TEST_CASE("tune --early-stop: the settings given are the run's and recorded with it, also after --no-early-stop",
          "[cli]") {
  tune::test::scratch_dir dir("tune-early-stop");
  auto log = dir / "log.txt";
  const auto dataset = std::string(TUNE_DATA_DIR) + "/replay/conv_a100_slice.json.gz";
  auto early_stop_of = [&](const std::string& name, std::vector<std::string> extra) {
    const auto db_file = (dir / (name + ".db")).string();
    std::vector<std::string> args = {"tune", "--dataset", dataset, "--time-scale", "0.001", "--budget",
                                     "4",    "--seed",    "1",     "--db",         db_file, "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    int rc = run_cli(args, log);
    INFO(read_text(log));
    REQUIRE(rc == 0);
    tune::storage::results_db db(db_file, tune::storage::results_db::open_mode::read_only);
    auto runs = db.runs();
    REQUIRE(runs.size() == 1);
    return nlohmann::json::parse(runs[0].options_json)["early_stop"];
  };
  const tune::early_stop_policy d;
  auto plain = early_stop_of("plain", {});
  CHECK(plain["slow_factor"] == d.slow_factor);
  CHECK(plain["build_factor"] == d.build_factor);
  CHECK(plain["min_build_s"] == d.min_build_s);
  auto set = early_stop_of("set", {"--early-stop", "build_factor=0", "--early-stop", "slow_factor=6"});
  CHECK(set["build_factor"] == 0);
  CHECK(set["slow_factor"] == 6);
  CHECK(set["margin"] == d.margin);
  auto off = early_stop_of("off", {"--no-early-stop", "--early-stop", "margin=0.5"});
  CHECK(off["margin"] == 0.5);
  CHECK(off["slow_factor"] == 0);
  CHECK(off["build_factor"] == 0);
}

TEST_CASE("tune: a user kernel through --kernel, without a topology file", "[cli]") {
  tune::test::scratch_dir dir("tune-user-kernel");
  ::setenv("TUNE_CACHE_DIR", (dir / "kernel-cache").c_str(), 1);
  auto log = dir / "log.txt";
  auto summary = dir / "summary.json";
  std::vector<std::string> args{"tune",
                                "--kernel",
                                std::string(TUNE_SOURCE_DIR) + "/examples/user-kernel",
                                "--budget",
                                "3",
                                "--seed",
                                "5",
                                "--strategy",
                                "random",
                                "--db",
                                (dir / "results.db").string(),
                                "--summary-json",
                                summary.string(),
                                "--quiet"};
  REQUIRE(run_cli(args, log) == 0);
  auto doc = summary_of(summary);
  CHECK(doc["trials"] == 3);
  CHECK(doc["reason"] == "budget");
  CHECK(doc["busy"]["devices"].contains("cpu0"));
  tune::storage::results_db db(dir / "results.db", tune::storage::results_db::open_mode::read_only);
  auto runs = db.runs();
  REQUIRE(runs.size() == 1);
  CHECK(db.trials(runs.front().id).size() == 3);
  CHECK(read_text(log).find("best ") != std::string::npos);
}

TEST_CASE("tune: --space alone and --kinds without a dataset are refused with the fix", "[cli]") {
  tune::test::scratch_dir dir("tune-space-alone");
  auto log = dir / "log.txt";
  auto space = std::string(TUNE_SOURCE_DIR) + "/examples/user-kernel/space.json";
  CHECK(run_cli({"tune", "--space", space, "--budget", "3", "--seed", "1"}, log) == 2);
  CHECK(read_text(log).find("through the library") != std::string::npos);
  CHECK(run_cli({"tune", "--task", small_task, "--kinds", space, "--budget", "3", "--seed", "1"}, log) == 2);
  CHECK(read_text(log).find("--kinds") != std::string::npos);
  CHECK(run_cli({"tune", "--task", small_task, "--resume", "--budget", "3", "--seed", "1"}, log) == 2);
  CHECK(read_text(log).find("--resume needs --db") != std::string::npos);
}

TEST_CASE("tune: a full disk stops the run with a clear error and --resume continues once there is space", "[cli]") {
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer's runtime itself dies of SIGBUS at the start of a process
  // under a file-size limit (a fault in its shadow memory while libLLVM's
  // static constructors run, before main), so the limit cannot stand for a
  // full disk in that build.
  SKIP_TEST("under ThreadSanitizer a process cannot start with RLIMIT_FSIZE set");
#endif
  resumable_replay r("tune-disk-full", "5", "0.001");
  auto& [dir, log, db_file, args] = r;

  // 160 KiB for any file: the database is created, and its write-ahead log
  // fills after a few trials (each commit appends whole pages).
  int rc = 0;
  {
    cli_process p(args, output_file{log.string(), 160 * 1024});
    rc = wait_a_minute(p);
  }
  // Space is back: the same command continues the run to its budget.
  check_stopped_then_resumed(rc, log, args, db_file, 5, resumable_replay::budget, 1);
}

TEST_CASE("tune: the database file made read-only mid-run stops the run with a clear error and --resume continues",
          "[cli]") {
  resumable_replay r("tune-read-only", "6", "0.01");
  auto& [dir, log, db_file, args] = r;
  // Whether this machine lets the test make a file immutable at all, tried
  // on a file of its own before the run starts.
  const auto probe = (dir / "immutable-probe").string();
  std::ofstream(probe) << "probe";
  if (!tune::run_process({"chattr", "+i", probe}, 30).ok())
    SKIP_TEST("chattr +i is refused here (needs CAP_LINUX_IMMUTABLE and ext4, xfs or btrfs)");
  REQUIRE(tune::run_process({"chattr", "-i", probe}, 30).ok());

  // The tests run as root, for whom chmod does not stop writes, and an open
  // descriptor keeps writing after it anyway: the immutable attribute
  // (chattr +i, CAP_LINUX_IMMUTABLE) refuses writes through open
  // descriptors too. The database and its write-ahead log are made immutable
  // (the shared-memory index is mapped, and a write to a mapping of an
  // immutable file is a SIGBUS, not an error SQLite could report).
  const std::vector<std::string> files{db_file, db_file + "-wal"};
  auto set_immutable = [&](bool on) {
    bool ok = true;
    for (const auto& f : files) ok = tune::run_process({"chattr", on ? "+i" : "-i", f}, 30).ok() && ok;
    return ok;
  };
  struct writable_again {
    std::function<bool(bool)> set;
    ~writable_again() { set(false); }
  } restore{set_immutable};

  int rc = 0;
  {
    // Stopped mid-run while the files are made read-only, so that the run
    // cannot end first on a fast machine.
    cli_process p(args, output_file{log.string()});
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (p.running() && recorded_trials(db_file, 6).size() < 5 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    p.signal(SIGSTOP);
    bool made_read_only = set_immutable(true);
    p.signal(SIGCONT);
    REQUIRE(made_read_only);
    rc = wait_a_minute(p);
  }
  // Writable again: the same command continues the run to its budget.
  REQUIRE(set_immutable(false));
  check_stopped_then_resumed(rc, log, args, db_file, 6, resumable_replay::budget, 5);
}

TEST_CASE("tune: a SIGKILLed run leaves no compiler running", "[cli]") {
  tune::test::scratch_dir dir("tune-orphans");
  write_topology(dir / "topology.yaml", 2, 1);
  // A compiler that never finishes and starts a helper of its own (as g++
  // starts cc1plus); each records its process id. Its version is the real
  // compiler's.
  std::filesystem::create_directories(dir / "bin");
  const auto pids = dir / "compilers.txt";
  {
    std::ofstream script(dir / "bin" / "c++");
    script << "#!/bin/sh\n"
           << "if [ \"$1\" = --version ]; then exec /usr/bin/c++ \"$@\"; fi\n"
           << "sleep 300 &\n"
           << "echo $$ $! >>'" << pids.string() << "'\n"
           << "wait\n";
  }
  std::filesystem::permissions(dir / "bin" / "c++", std::filesystem::perms::owner_all);
  std::string path = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin";
  ::setenv("PATH", ((dir / "bin").string() + ":" + path).c_str(), 1);
  auto args = tune_args(dir, 10);
  cli_process p(args, output_file{(dir / "log.txt").string()});
  ::setenv("PATH", path.c_str(), 1);

  // Killed once both compile workers have started their compiler (a line
  // each in the file).
  auto compilers_started = [&] {
    auto text = read_text(pids);
    return std::count(text.begin(), text.end(), '\n');
  };
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (p.running() && compilers_started() < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  p.signal(SIGKILL);
  p.wait();

  std::vector<long> started;
  std::ifstream in(pids);
  for (long pid = 0; in >> pid;) started.push_back(pid);
  INFO(read_text(dir / "log.txt"));
  REQUIRE(started.size() == 4);  // two compilers and their helpers
  for (long pid : started) {
    INFO("process " << pid);
    CHECK(tune::test::ends_soon(pid));
  }
}

TEST_CASE("tune: two processes on one database record two runs but never continue one run twice", "[cli]") {
  tune::test::scratch_dir dir("tune-two-processes");
  const auto db_file = (dir / "results.db").string();

  // Two runs at once: both recorded in full.
  int rc_a = -1, rc_b = -1;
  {
    cli_process a(replay_args(db_file, 60, "1", "0.01"), output_file{(dir / "a.txt").string()});
    cli_process b(replay_args(db_file, 60, "2", "0.01"), output_file{(dir / "b.txt").string()});
    rc_a = wait_a_minute(a);
    rc_b = wait_a_minute(b);
  }
  INFO(read_text(dir / "a.txt") + read_text(dir / "b.txt"));
  CHECK(rc_a == 0);
  CHECK(rc_b == 0);
  for (std::uint64_t seed : {1, 2}) {
    tune::storage::run_record run;
    CHECK(complete_and_distinct(recorded_trials(db_file, seed, &run), 60));
    CHECK(run.reason == tune::end_reason::budget);
  }

  // One run continued by a second process while the first holds it (stopped
  // mid-run so that the order of events does not depend on the machine):
  // the second is refused and the first finishes its budget alone.
  auto args = replay_args(db_file, 100, "3", "0.01");
  args.push_back("--resume");
  cli_process first(args, output_file{(dir / "first.txt").string()});
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (first.running() && recorded_trials(db_file, 3).empty() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  first.signal(SIGSTOP);
  REQUIRE_FALSE(recorded_trials(db_file, 3).empty());
  auto second_log = dir / "second.txt";
  int second = run_cli(args, second_log);
  first.signal(SIGCONT);
  INFO(read_text(second_log));
  CHECK(second == 2);
  CHECK(read_text(second_log).find("is being continued by another tune-engine process") != std::string::npos);
  CHECK(wait_a_minute(first) == 0);
  tune::storage::run_record run;
  CHECK(complete_and_distinct(recorded_trials(db_file, 3, &run), 100));
  CHECK(run.reason == tune::end_reason::budget);
}

TEST_CASE("tune: a stopped event reader does not hold up a fast run", "[cli]") {
  tune::test::scratch_dir dir("tune-stopped-reader");
  const auto db_file = (dir / "results.db").string();
  const std::string endpoint = "ipc://" + (dir / "events.ipc").string();
  auto watch_log = dir / "watch.txt";
  cli_process watch({"watch", endpoint, "--json"}, output_file{watch_log.string()});
  // 3,000 trials publish over 6,000 events, more than the publisher's queue
  // (1,000) and the socket's buffers hold for a reader that takes none.
  const std::uint64_t budget = 3000;
  auto args =
      replay_args(db_file, budget, "4", "0.00001", std::string(TUNE_DATA_DIR) + "/datasets/convolution/A100.json.gz");
  for (const char* extra : {"--publish", endpoint.c_str(), "--publish-wait", "1"}) args.push_back(extra);
  cli_process run(args, output_file{(dir / "run.txt").string()});
  // The reader is stopped once it has the first event: it is connected.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (read_text(watch_log).find("run_started") == std::string::npos && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  watch.signal(SIGSTOP);
  int rc = wait_a_minute(run);
  auto seen = read_text(watch_log);
  watch.signal(SIGCONT);
  watch.signal(SIGKILL);
  INFO(read_text(dir / "run.txt"));
  REQUIRE(seen.find("run_started") != std::string::npos);
  CHECK(rc == 0);
  tune::storage::run_record recorded;
  CHECK(complete_and_distinct(recorded_trials(db_file, 4, &recorded), budget));
  CHECK(recorded.reason == tune::end_reason::budget);
  // The reader saw only the start of the run before it was stopped.
  std::size_t finished_events = 0;
  for (std::size_t at = seen.find("trial_finished"); at != std::string::npos; at = seen.find("trial_finished", at + 1))
    ++finished_events;
  CHECK(finished_events < budget);
}

TEST_CASE("tune --compare-blas puts every vendor kernel and the best ratio in the summary", "[cli]") {
  tune::test::scratch_dir dir("tune-cli-vendor");
  setenv("TUNE_CACHE_DIR", (dir / "cache").c_str(), 1);
  cli_process p({"tune", "--task", "matmul:16x16x32", "--budget", "2", "--seed", "1", "--quiet", "--compare-blas",
                 "--summary-json", (dir / "summary.json").string()});
  const int code = p.wait(std::chrono::seconds(300));
  INFO(p.err());
  REQUIRE(code == 0);
  auto throughput = summary_of(dir / "summary.json")["throughput"];
  REQUIRE(throughput["vendors"].size() >= 2);
  CHECK(throughput["vendors"][0]["library"] == "onednn");
  CHECK(throughput["threads"] == 1);
  for (const auto& v : throughput["vendors"])
    if (v["available"] == true) CHECK(v["ratio"].get<double>() > 0);
  if (!throughput["best_vendor"].is_null())
    CHECK_THAT(p.out(), Contains("the best vendor kernel, " + throughput["best_vendor"]["library"].get<std::string>()));
  unsetenv("TUNE_CACHE_DIR");
}

TEST_CASE("tune --compare-vendor without a vendor worker says none is available", "[cli]") {
  tune::test::scratch_dir dir("tune-cli-novendor");
  setenv("TUNE_CACHE_DIR", (dir / "cache").c_str(), 1);
  setenv("TUNE_VENDOR_WORKER", (dir / "missing-worker").c_str(), 1);
  cli_process p({"tune", "--task", "conv2d:1x2x6x6:4x3x3", "--budget", "1", "--seed", "1", "--quiet",
                 "--compare-vendor", "--summary-json", (dir / "summary.json").string()});
  unsetenv("TUNE_VENDOR_WORKER");
  unsetenv("TUNE_CACHE_DIR");
  const int code = p.wait(std::chrono::seconds(300));
  INFO(p.err());
  REQUIRE(code == 0);
  auto throughput = summary_of(dir / "summary.json")["throughput"];
  CHECK(throughput["best_vendor"].is_null());
  REQUIRE(throughput["vendors"].size() == 3);
  CHECK_THAT(throughput["vendors"][0]["note"].get<std::string>(), Contains("missing-worker"));
  CHECK_THAT(throughput["vendors"][2]["note"].get<std::string>(), Contains("no BLAS equivalent"));
  CHECK_THAT(p.out(), Contains("best vendor: none available"));
}

TEST_CASE("tune --compare-vendor without a built-in task is refused with exit code 2", "[cli]") {
  cli_process p({"tune", "--kernel", std::string(TUNE_SOURCE_DIR) + "/examples/user-kernel", "--budget", "1", "--seed",
                 "1", "--compare-vendor"});
  CHECK(p.wait() == 2);
  CHECK_THAT(p.err(), Contains("--compare-vendor compares a built-in --task"));
}

TEST_CASE("tune stops at SIGINT or SIGTERM with a resumable summary and exit code 130", "[cli]") {
  // A replay at recorded speed of the full convolution A100 dataset would
  // take hours for this budget; the signal must end it within seconds.
  for (int sig : {SIGINT, SIGTERM}) {
    INFO("signal " << sig);
    tune::test::scratch_dir dir("cli-tune-signal");
    auto db = (dir / "run.db").string();
    cli_process p({"tune", "--dataset", std::string(TUNE_DATA_DIR) + "/datasets/convolution/A100.json.gz", "--budget",
                   "100000", "--seed", "1", "--db", db, "--summary-json", (dir / "s.json").string()});
    REQUIRE(p.wait_for_err("trials", std::chrono::seconds(60)));
    p.signal(sig);
    CHECK(p.wait(std::chrono::seconds(60)) == 130);
    auto summary = summary_of(dir / "s.json");
    CHECK(summary["reason"] == "stopped");
    CHECK(summary["trials"].get<int>() < 100000);
  }
}

TEST_CASE("tune: a device another process has leased: fail names the holder, free measures on the others, wait waits",
          "[cli]") {
  tune::test::scratch_dir dir("tune-lease");
  write_topology(dir / "two.yaml", 1, 2);
  auto base = tune_args(dir, 3);
  base.erase(base.begin() + 1, base.begin() + 3);              // no topology: one device, core 0
  base.erase(std::find(base.begin(), base.end(), "--quiet"));  // the progress line says who waits
  base.insert(base.end(), {"--confirm-top", "0"});
  auto with = [](std::vector<std::string> args, const std::vector<std::string>& more) {
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  // This process holds core 0, as another run would.
  auto held = tune::try_lease({"cpu-core-0"});
  REQUIRE(held);
  const std::string holder = "leased by pid " + std::to_string(::getpid());
  {
    cli_process p(with(base, {"--device-wait", "fail"}));
    CHECK(p.wait() == 1);
    CHECK_THAT(p.err(), Contains("cpu0 (cpu-core-0) is " + holder));
    CHECK_THAT(p.err(), Contains("--device-wait wait waits for it"));
    CHECK_THAT(p.err(), Contains("--no-lease"));
  }
  {
    // Both devices of the topology: core 1 is free.
    cli_process p(with(base, {"--topology", (dir / "two.yaml").string(), "--device-wait", "free", "--summary-json",
                              (dir / "free.json").string()}));
    CHECK(p.wait() == 0);
    INFO(p.err());
    CHECK_THAT(p.err(), Contains("measuring on 1 of 2 devices"));
    auto busy = summary_of(dir / "free.json")["busy"]["devices"];
    CHECK(busy.size() == 1);
    CHECK(busy.contains("cpu1"));
  }
  {
    cli_process p(with(base, {"--no-lease", "--quiet"}));
    CHECK(p.wait() == 0);
    CHECK(p.err().find("waiting") == std::string::npos);
  }
  {
    // Waits, saying who holds core 0, and runs once it is given back.
    cli_process p(base);
    REQUIRE(p.wait_for_err("waiting for cpu0 (cpu-core-0), " + holder));
    CHECK(p.running());
    held->release();
    CHECK(p.wait() == 0);
  }
}

TEST_CASE("tune: --model tunes a model's tasks in rounds under one budget", "[cli]") {
  tune::test::scratch_dir dir("tune-model-cli");
  auto log = dir / "log.txt";
  const auto model = std::string(TUNE_SOURCE_DIR) + "/examples/models/replayed_gpu.yaml";
  const auto json = (dir / "summary.json").string();
  CHECK(run_cli({"tune", "--model", model, "--time-scale", "0.001", "--budget", "60", "--round-trials", "6", "--seed",
                 "2", "--db", (dir / "r.db").string(), "--summary-json", json},
                log) == 0);
  const auto text = read_text(log);
  CHECK(text.find("model replayed-gpu-model: 5 tasks") != std::string::npos);
  CHECK(text.find("model latency (sum of count x best): ") != std::string::npos);
  auto j = nlohmann::json::parse(read_text(json));
  CHECK(j["model"] == "replayed-gpu-model");
  CHECK(j["seed"] == "2");
  CHECK(j["tasks"].size() == 5);
  CHECK(j["trials"].get<int>() >= 60);
  tune::storage::results_db db(dir / "r.db", tune::storage::results_db::open_mode::read_only);
  CHECK(db.runs().size() == 5);

  CHECK(run_cli({"tune", "--model", model, "--task", small_task}, log) == 2);
  CHECK(read_text(log).find("leave --task out") != std::string::npos);
  CHECK(run_cli({"tune", "--model", model, "--scheduler", "fifo"}, log) == 2);
  CHECK(run_cli({"tune", "--model", model, "--round-trials", "0"}, log) == 2);
}
