// Measures the results database and the event stream at the rates a run needs:
// committed trials per second (synchronous NORMAL and FULL), cache lookups,
// best(), and events per second through a loopback subscriber.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <vector>

#include "bench_text.hpp"
#include "tune/storage/event_stream.hpp"
#include "tune/storage/results_db.hpp"

using namespace tune::storage;
using clock_type = std::chrono::steady_clock;

namespace {

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

std::string config(int i) {
  return fmt::format("{{\"tile_x\":{},\"tile_y\":{},\"unroll\":{}}}", i % 97, i / 97, i % 4);
}

/// Returns the wall microseconds per committed trial.
double bench_db(const std::filesystem::path& file, bool full, int trials, bool commits_only = false) {
  if (!is_postgres_target(file.string())) std::filesystem::remove(file);
  results_db db(file, results_db::open_mode::read_write, full);
  auto run = db.create_run({"bench/task", "random", 1, "{}", "replay:bench"});
  auto start = clock_type::now();
  for (int i = 0; i < trials; ++i) {
    trial_record t;
    t.config_json = config(i);
    t.state = i % 5 ? tune::status::ok : tune::status::compile_error;
    t.time_ms = 1.0 + (i * 7919 % 1000) / 100.0;
    t.compile_s = 0.5;
    t.run_s = 0.1;
    t.device = "sim0";
    db.record_trial(run, t);
  }
  double write_s = seconds_since(start);
  fmt::print("record_trial, {}: {} trials in {:.3f} s = {:.0f} committed trials/s\n",
             is_postgres_target(file.string()) ? db.path().string()
             : full                            ? "synchronous=FULL"
                                               : "synchronous=NORMAL",
             trials, write_s, trials / write_s);
  if (full || commits_only) return write_s * 1e6 / trials;

  start = clock_type::now();
  int hits = 0;
  for (int i = 0; i < trials; ++i) hits += db.find_cached("bench/task", "replay:bench", config(i)).has_value();
  double lookup_s = seconds_since(start);
  fmt::print("find_cached: {} lookups ({} hits) in {:.3f} s = {:.0f} lookups/s\n", trials, hits, lookup_s,
             trials / lookup_s);

  start = clock_type::now();
  auto cache = db.load_cache("bench/task", "replay:bench");
  fmt::print("load_cache: {} configurations in {:.3f} s\n", cache.size(), seconds_since(start));

  start = clock_type::now();
  auto trials_back = db.trials(run);
  fmt::print("trials (resume read, validated): {} rows in {:.3f} s\n", trials_back.size(), seconds_since(start));

  start = clock_type::now();
  auto best = db.best("bench/task");
  fmt::print("best: {:.3f} ms found in {:.4f} s\n", best->best->time_ms, seconds_since(start));
  return write_s * 1e6 / trials;
}

// Trials in groups, as a run's recorder commits them (one transaction per
// `group`), with configurations of GEMM's fifteen parameters: the database's
// CPU per trial at the rates of a fast replay.
/// Returns the wall microseconds per trial.
double bench_groups(const std::filesystem::path& file, int trials, int group) {
  if (!is_postgres_target(file.string()))
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(file.string() + suffix);
  results_db db(file, results_db::open_mode::read_write, false);
  auto run = db.create_run({"bench/task", "random", 1, "{}", "replay:bench"});
  std::vector<trial_record> pending;
  auto start = clock_type::now();
  double cpu_start = static_cast<double>(std::clock()) / CLOCKS_PER_SEC;
  for (int i = 0; i < trials; ++i) {
    trial_record t;
    t.config_json = fmt::format(
        "{{\"GEMMK\":{},\"KREG\":{},\"KWG\":{},\"KWI\":{},\"MDIMA\":{},\"MDIMC\":{},\"MWG\":{},"
        "\"NDIMB\":{},\"NDIMC\":{},\"NWG\":{},\"SA\":{},\"SB\":{},\"STRM\":{},\"STRN\":{},\"VWM\":{}}}",
        i % 2, 1 << (i % 3), 16 << (i % 2), 2, 8 << (i % 3), 8 << (i / 3 % 3), 16 << (i / 9 % 4), 8 << (i / 36 % 3),
        8 << (i / 108 % 3), 16 << (i / 324 % 4), i / 1296 % 2, i / 2592 % 2, i / 5184 % 2, i / 10368 % 2,
        1 << (i / 20736 % 3));
    t.state = i % 5 ? tune::status::ok : tune::status::compile_error;
    t.time_ms = 1.0 + (i * 7919 % 1000) / 100.0;
    t.compile_s = 0.5;
    t.run_s = 0.1;
    t.device = "sim0";
    pending.push_back(std::move(t));
    if (static_cast<int>(pending.size()) == group || i + 1 == trials) {
      db.record_trials(run, pending);
      pending.clear();
    }
  }
  double wall = seconds_since(start);
  double cpu = static_cast<double>(std::clock()) / CLOCKS_PER_SEC - cpu_start;
  fmt::print("record_trials in groups of {}{}: {} trials, {:.1f} us CPU (this process) and {:.1f} us wall per trial\n",
             group, is_postgres_target(file.string()) ? ", " + db.path().string() : std::string(", SQLite"), trials,
             cpu * 1e6 / trials, wall * 1e6 / trials);
  return wall * 1e6 / trials;
}

void bench_events(int count) {
  event_publisher publisher("tcp://127.0.0.1:*");
  event_subscriber subscriber(publisher.endpoint());
  publisher.wait_for_subscribers(1, std::chrono::seconds(10));
  auto start = clock_type::now();
  int received = 0;
  for (int i = 0; i < count; ++i) {
    trial_finished_event e;
    e.trial.seq = i;
    e.trial.config_json = config(i);
    e.trial.state = tune::status::ok;
    e.trial.time_ms = 1.0;
    e.trial.device = "sim0";
    publisher.publish(make_event(e));
    // Read as we go, like a live viewer, so nothing reaches the high-water mark.
    while (subscriber.receive(std::chrono::milliseconds(0))) ++received;
  }
  while (received < count && subscriber.receive(std::chrono::milliseconds(1000))) ++received;
  double s = seconds_since(start);
  fmt::print(
      "events: {} published, {} received in {:.3f} s = {:.0f} events/s (build + JSON + send + parse + validate)\n",
      count, received, s, count / s);
}

}  // namespace

/// --postgres URI: the commits of one trial at a time and in groups, on an
/// SQLite file and on the PostgreSQL database alternated, two rounds, and the
/// ratios (--only-commits: nothing else).
int compare_postgres(const std::string& uri, const std::filesystem::path& file, bool only_commits) {
  // Single commits on SQLite with synchronous NORMAL (the default: survives a
  // killed process) and FULL (survives power loss too, as a PostgreSQL
  // commit does by default).
  std::vector<double> single[2], grouped[2], full;
  for (int round = 0; round < 2; ++round)
    for (int store = 0; store < 2; ++store) {
      std::filesystem::path target = store == 0 ? file : std::filesystem::path(uri);
      single[store].push_back(bench_db(target, false, 1000, true));
      if (store == 0) full.push_back(bench_db(target, true, 1000, true));
      grouped[store].push_back(bench_groups(target, 20000, 400));
    }
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(file.string() + suffix);
  for (int round = 0; round < 2; ++round)
    fmt::print(
        "round {}: PostgreSQL / SQLite wall per trial: one per commit {:.1f} / {:.1f} us = {:.2f}x (SQLite "
        "FULL {:.1f} us: {:.2f}x); in groups of 400 {:.1f} / {:.1f} us = {:.2f}x\n",
        round + 1, single[1][round], single[0][round], single[1][round] / single[0][round], full[round],
        single[1][round] / full[round], grouped[1][round], grouped[0][round], grouped[1][round] / grouped[0][round]);
  if (!only_commits) bench_events(20000);
  return 0;
}

int main(int argc, char** argv) {
  auto file = std::filesystem::temp_directory_path() / fmt::format("tune-bench-{}.db", getpid());
  std::string uri;
  bool only_commits = false;
  CLI::App app{
      "The results database and the event stream at the rates a run needs: committed trials per second, "
      "cache lookups, best(), events per second through a loopback subscriber"};
  tune::bench::last_value_wins(app);
  auto* postgres = app.add_option("--postgres", uri,
                                  "Also a PostgreSQL store (postgresql://user@host/dbname), against SQLite, in turns");
  app.add_flag("--only-commits", only_commits, "With --postgres: the commits alone, no events")->needs(postgres);
  if (auto rc = tune::bench::parse_options(app, argc, argv)) return *rc;
  if (!uri.empty()) return compare_postgres(uri, file, only_commits);
  bench_db(file, false, 5000);
  bench_db(file, true, 1000);
  bench_groups(file, 20000, 400);
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(file.string() + suffix);
  bench_events(20000);
}
