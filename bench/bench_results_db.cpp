// Measures the results database and the event stream at the rates a run needs:
// committed trials per second (synchronous NORMAL and FULL), cache lookups,
// best(), and events per second through a loopback subscriber.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <vector>

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

void bench_db(const std::filesystem::path& file, bool full, int trials) {
  std::filesystem::remove(file);
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
  fmt::print("record_trial, synchronous={}: {} trials in {:.3f} s = {:.0f} committed trials/s\n",
             full ? "FULL" : "NORMAL", trials, write_s, trials / write_s);
  if (full) return;

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
}

// Trials in groups, as a run's recorder commits them (one transaction per
// `group`), with configurations of GEMM's fifteen parameters: the database's
// CPU per trial at the rates of a fast replay.
void bench_groups(const std::filesystem::path& file, int trials, int group) {
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
  fmt::print("record_trials in groups of {}: {} trials, {:.1f} us CPU and {:.1f} us wall per trial\n", group, trials,
             cpu * 1e6 / trials, wall * 1e6 / trials);
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

int main() {
  auto file = std::filesystem::temp_directory_path() / fmt::format("tune-bench-{}.db", getpid());
  bench_db(file, false, 5000);
  bench_db(file, true, 1000);
  bench_groups(file, 20000, 400);
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(file.string() + suffix);
  bench_events(20000);
}
