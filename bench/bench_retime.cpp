// The reported best of a tuning run against an independent re-timing of the
// same configuration: reads what `tune-engine best` answers for the task from
// a results database (the confirmed winner's figure when the run confirmed
// its best, else the fastest trial), builds that configuration for this CPU
// again and measures it in full `--rounds` times (nothing stopped early, each
// a measurement of its own, the default protocol or `--statistic min`);
// prints one JSON line:
//   {"task", "config", "reported_ms", "retimed_ms" (the statistic of the
//    rounds, as a run reduces its confirmation's rounds), "rounds_ms",
//    "optimism" (retimed / reported − 1: > 0 when the run's figure was lower
//    than what the configuration runs at now)}
// With --interleaved, the same configuration is then also timed as the
// end-of-run confirmation and the duels time it (backend::run_interleaved:
// one process, a burst per round), and "interleaved_ms" (statistic of the
// rounds) and "interleaved_rounds_ms" are added: whether the two ways of
// timing agree on one configuration, apart from any search.
// With --flush-cache, each full measurement is taken twice in turn, without
// and with measurement.flush_cache (the caches evicted before each timed run
// when the arguments fit in the last-level cache), and "flushed_rounds_ms",
// "flushed_ms" and "flush_ratio" (flushed / not, the rounds' statistic) are
// added: what flushing does to one configuration's time.
// With --top K, K − 1 more of the run's configurations are built and timed
// too, every configuration in turn round after round, and with
// --interleaved all K together as the confirmation times its top-k: those
// the run's confirmation timed beside the best (its recorded rounds), or in
// a run without one its next fastest timed in full, fastest search figure
// first; a line each, the best first, the others' "reported_ms" their search
// figures and "seq" their trial.
// bench/winners_curse.sh runs it after each run, under the same load.
//
//   build/bench/bench_retime --db runs.db --task matmul:512x1024x1024 [--rounds 5] [--statistic min]
//                            [--interleaved] [--flush-cache] [--top K]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "bench_text.hpp"
#include "tune/engine/limits.hpp"
#include "tune/kernels/task.hpp"
#include "tune/storage/results_db.hpp"

int main(int argc, char** argv) {
  CLI::App app{"re-time a results database's best configuration of a task"};
  tune::bench::last_value_wins(app);
  std::string db_path, task;
  int rounds = 5, core = 0;
  app.add_option("--db", db_path, "results database")->required();
  app.add_option("--task", task, "task string, as tuned (e.g. matmul:512x1024x1024)")->required();
  app.add_option("--rounds", rounds, "full measurements (default 5)")->check(CLI::Range(1, 1000));
  app.add_option("--core", core, "core to measure on (default 0, the demo topology's device)");
  bool interleaved = false, flush = false;
  int top = 1;
  app.add_option("--top", top,
                 "also the run's next fastest configurations timed in full, K in all, a line each, timed in turn "
                 "(and interleaved together with --interleaved)")
      ->check(CLI::Range(1, 64));
  app.add_flag("--flush-cache", flush, "also measure with the caches flushed before each timed run, in turn");
  std::string statistic_name = "median";
  app.add_option("--statistic", statistic_name, "median (default) or min: of each measurement's runs and of the rounds")
      ->check(CLI::IsMember({"median", "min"}));
  app.add_flag("--interleaved", interleaved, "also time it as the confirmation does (rounds of a burst)");
  if (auto rc = tune::bench::parse_options(app, argc, argv)) return *rc;
  try {
    tune::storage::results_db db(db_path, tune::storage::results_db::open_mode::read_only);
    tune::task_backend_options options;
    options.first_core = core;
    const auto statistic = *tune::time_statistic_from_string(statistic_name);
    options.measurement.statistic = statistic;
    auto backend = tune::make_task_backend(task, "cpu", options);
    auto summary = db.best(backend->task_key());
    if (!summary || !summary->best) {
      std::fprintf(stderr, "%s: no ok trial of %s\n", db_path.c_str(), backend->task_key().c_str());
      return 1;
    }
    // The reported best, then with --top K the others the run's confirmation
    // timed (a run without one: its next fastest timed in full), by their
    // search figures.
    std::vector<tune::storage::trial_record> picked{*summary->best};
    if (top > 1 && summary->best_run) {
      auto trials = db.trials(summary->best_run->id);
      std::set<std::int64_t> confirmed;
      for (const auto& row : db.confirmations(summary->best_run->id)) confirmed.insert(row.seq);
      std::erase_if(trials, [&](const auto& t) {
        if (t.config_json == summary->best->config_json) return true;
        if (!confirmed.empty()) return !confirmed.contains(t.seq);
        return t.state != tune::status::ok || t.stopped_early;
      });
      std::stable_sort(trials.begin(), trials.end(),
                       [](const auto& a, const auto& b) { return a.time_ms < b.time_ms; });
      for (std::size_t i = 0; i < trials.size() && picked.size() < static_cast<std::size_t>(top); ++i)
        picked.push_back(trials[i]);
    }
    const double best_reported = summary->confirmed_ms.value_or(summary->best->time_ms);
    struct entry {
      tune::configuration config;
      tune::build_result build, flushed_build;
      std::vector<double> times, flushed;
    };
    std::vector<entry> entries;
    auto flushed_options = options;
    flushed_options.measurement.flush_cache = true;
    auto flushed_backend = flush ? tune::make_task_backend(task, "cpu", flushed_options) : nullptr;
    for (const auto& trial : picked) {
      entry e;
      e.config = backend->space()->from_json(trial.config_json);
      e.build = backend->build(e.config, 120.0);
      if (e.build.state != tune::status::ok) {
        std::fprintf(stderr, "build failed: %s\n", e.build.message.c_str());
        return 1;
      }
      if (flush) e.flushed_build = flushed_backend->build(e.config, 120.0);
      entries.push_back(std::move(e));
    }
    // Round after round, each configuration in turn, each a measurement of
    // its own.
    tune::run_limits limits(10.0);
    limits.early_stop = tune::early_stop_policy::off();
    for (int r = 0; r < rounds; ++r) {
      for (auto& e : entries) {
        for (auto* be : {backend.get(), flushed_backend.get()}) {
          if (!be) continue;
          auto run = be->run(e.config, be == backend.get() ? e.build : e.flushed_build, 0, limits);
          if (run.state != tune::status::ok) {
            std::fprintf(stderr, "round %d: %s: %s\n", r, std::string(tune::to_string(run.state)).c_str(),
                         run.message.c_str());
            return 1;
          }
          (be == backend.get() ? e.times : e.flushed).push_back(run.time_ms);
        }
      }
    }
    tune::interleaved_times burst;
    if (interleaved) {
      std::vector<std::pair<tune::configuration, tune::build_result>> together;
      for (const auto& e : entries) together.emplace_back(e.config, e.build);
      burst = backend->run_interleaved(together, 0, rounds, 10.0);
      if (!burst.ok()) {
        std::fprintf(stderr, "interleaved: %s: %s\n", std::string(tune::to_string(burst.state)).c_str(),
                     burst.message.c_str());
        return 1;
      }
    }
    for (std::size_t k = 0; k < entries.size(); ++k) {
      const auto& e = entries[k];
      double reported = k == 0 ? best_reported : picked[k].time_ms;
      double retimed = tune::statistic_of(e.times, statistic);
      nlohmann::json out = {{"task", backend->task_key()},
                            {"config", nlohmann::json::parse(picked[k].config_json)},
                            {"reported_ms", reported},
                            {"confirmed", k == 0 && summary->confirmed_ms.has_value()},
                            {"retimed_ms", retimed},
                            {"rounds_ms", e.times},
                            {"optimism", retimed / reported - 1.0},
                            {"statistic", statistic_name}};
      if (k > 0) out["seq"] = picked[k].seq;
      if (flush) {
        out["flushed_rounds_ms"] = e.flushed;
        out["flushed_ms"] = tune::statistic_of(e.flushed, statistic);
        out["flush_ratio"] = tune::statistic_of(e.flushed, statistic) / retimed;
      }
      if (interleaved) {
        out["interleaved_ms"] = tune::statistic_of(burst.time_ms.at(k), statistic);
        out["interleaved_rounds_ms"] = burst.time_ms.at(k);
      }
      std::puts(out.dump().c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_retime: %s\n", e.what());
    return 2;
  }
  return 0;
}
