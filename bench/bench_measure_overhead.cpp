// What a CPU trial costs beyond its kernel's runs (run_s - kernel_s; and
// beyond its timed runs, run_s - repeats * time_ms: the checked first run
// too, where a kernel's first writes to its outputs land), with a
// worker process per trial (task_backend_options::resident_measurer off, the
// way before) and with the device's resident measuring process: fixed
// configurations of one task, built once, each measured `runs` times both
// ways, alternated (the order flips every round). A third pass measures them
// with the resident process against the best time of the first passes (slow
// limit and early stop on) and says what that saves.
//
// With --other-worker PATH, a last pass times the same configurations in
// full with that tune-kernel-worker's resident process and this build's, in
// turn, and prints their times side by side: whether a change to the worker
// moved the figures themselves.
//
//   bench_measure_overhead [--task matmul:512x1024x1024] [--configs 10] [--runs 5] [--seed 7]
//                          [--max-processes 1024 (0: no pids cgroup per trial)] [--other-worker PATH]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_text.hpp"
#include "tune/engine/median.hpp"
#include "tune/kernels/task.hpp"

namespace {

struct sample {
  double run_s, kernel_s, time_ms;
  std::uint32_t repeats;
  bool ok, stopped_early, too_slow;
};

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return std::nan("");
  std::sort(values.begin(), values.end());
  double at = p * static_cast<double>(values.size() - 1);
  auto low = static_cast<std::size_t>(at);
  auto high = std::min(low + 1, values.size() - 1);
  return values[low] + (values[high] - values[low]) * (at - static_cast<double>(low));
}

void report(const char* name, const std::vector<sample>& samples) {
  std::vector<double> overhead_ms, run_ms, beyond_timed_ms;
  double run_total = 0, kernel_total = 0;
  int ok = 0, early = 0, slow = 0;
  for (const auto& s : samples) {
    overhead_ms.push_back((s.run_s - s.kernel_s) * 1e3);
    if (s.ok) beyond_timed_ms.push_back(s.run_s * 1e3 - s.repeats * s.time_ms);
    run_ms.push_back(s.run_s * 1e3);
    run_total += s.run_s;
    kernel_total += s.kernel_s;
    ok += s.ok;
    early += s.stopped_early;
    slow += s.too_slow;
  }
  std::printf(
      "%-28s %4zu trials (%d ok, %d stopped early, %d too slow)  overhead ms: median %6.2f  p10 %6.2f  "
      "p90 %6.2f  max %6.2f | beyond the timed runs ms: median %6.2f | run ms median %7.2f | total run %6.2f s, "
      "in kernels %6.2f s\n",
      name, samples.size(), ok, early, slow, percentile(overhead_ms, 0.5), percentile(overhead_ms, 0.1),
      percentile(overhead_ms, 0.9), percentile(overhead_ms, 1.0), percentile(beyond_timed_ms, 0.5),
      percentile(run_ms, 0.5), run_total, kernel_total);
}

sample measure(tune::backend& backend, const tune::configuration& config, const tune::build_result& build,
               const tune::run_limits& limits) {
  auto r = backend.run(config, build, 0, limits);
  if (r.state != tune::status::ok && r.state != tune::status::too_slow)
    std::fprintf(stderr, "%s: %s\n", std::string(tune::to_string(r.state)).c_str(), r.message.c_str());
  return {r.run_s,
          r.kernel_s,
          r.time_ms,
          r.repeats,
          r.state == tune::status::ok,
          r.stopped_early,
          r.state == tune::status::too_slow};
}

// The configurations timed in full by the other worker's resident process and
// this build's, in turn (the order flips every round).
void compare_workers(const std::string& task, tune::task_backend_options options, const std::string& other_worker,
                     const std::vector<std::pair<tune::configuration, tune::build_result>>& built, int runs) {
  options.resident_measurer = true;
  auto mine = tune::make_task_backend(task, "cpu", options);
  options.worker_path = other_worker;
  auto other = tune::make_task_backend(task, "cpu", options);
  std::vector<std::vector<double>> mine_ms(built.size()), other_ms(built.size());
  std::vector<sample> mine_samples, other_samples;
  for (int round = 0; round < runs; ++round)
    for (std::size_t c = 0; c < built.size(); ++c)
      for (int side = 0; side < 2; ++side) {
        bool mine_now = (side == 0) == (round % 2 == 0);
        auto s = measure(mine_now ? *mine : *other, built[c].first, built[c].second, 60.0);
        (mine_now ? mine_samples : other_samples).push_back(s);
        if (s.ok) (mine_now ? mine_ms : other_ms)[c].push_back(s.time_ms);
      }
  std::printf("in full, this build's worker and %s in turn:\n", other_worker.c_str());
  report("this build's worker", mine_samples);
  report("the other worker", other_samples);
  std::vector<double> ratios;
  for (std::size_t c = 0; c < built.size(); ++c) {
    if (mine_ms[c].empty() || other_ms[c].empty()) continue;
    double a = tune::median(mine_ms[c]), b = tune::median(other_ms[c]);
    ratios.push_back(a / b);
    std::printf("  configuration %2zu: %9.3f ms against %9.3f ms, this / other %.4f\n", c, a, b, a / b);
  }
  std::printf("this / other, median over %zu configurations: %.4f (min %.4f, max %.4f)\n", ratios.size(),
              tune::median(ratios), percentile(ratios, 0.0), percentile(ratios, 1.0));
}

}  // namespace

int main(int argc, char** argv) {
  std::string task = "matmul:512x1024x1024";
  int configs = 10, runs = 5;
  unsigned seed = 7;
  int max_processes = tune::task_backend_options{}.max_processes;
  CLI::App app(
      "What a CPU trial costs beyond its kernel's runs: a worker process per trial against the device's "
      "resident measuring process, alternated; then the resident process against the best time.");
  tune::bench::last_value_wins(app);
  app.add_option("--task", task, "task to measure")->capture_default_str();
  app.add_option("--configs", configs, "fixed configurations, drawn and built once")
      ->check(tune::bench::more_than_zero())
      ->capture_default_str();
  app.add_option("--runs", runs, "measurements of each configuration each way")
      ->check(tune::bench::more_than_zero())
      ->capture_default_str();
  app.add_option("--seed", seed, "seed of the configurations drawn")->capture_default_str();
  app.add_option("--max-processes", max_processes, "pids cgroup limit (0: none)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  std::string other_worker;
  app.add_option("--other-worker", other_worker,
                 "another build's tune-kernel-worker: time the configurations in full with it and with this build's, "
                 "in turn, and compare")
      ->check(CLI::ExistingFile);
  if (auto rc = tune::bench::parse_options(app, argc, argv)) return *rc;
  tune::task_backend_options options;
  options.max_processes = max_processes;
  auto resident = tune::make_task_backend(task, "cpu", options);
  options.resident_measurer = false;
  auto per_trial = tune::make_task_backend(task, "cpu", options);

  // Fixed configurations, built once (the compile cache serves both backends).
  tune::rng_type rng(seed);
  std::vector<std::pair<tune::configuration, tune::build_result>> built;
  for (int tries = 0; static_cast<int>(built.size()) < configs && tries < 1000; ++tries) {
    auto config = resident->space()->draw_valid(rng);
    if (!config) break;
    auto build = resident->build(*config, 600.0);
    if (build.state == tune::status::ok) built.emplace_back(*config, build);
  }
  std::printf("%s: %zu configurations, %d runs each, both ways alternated\n", task.c_str(), built.size(), runs);

  std::vector<sample> old_way, new_way;
  double best_ms = INFINITY;
  for (int round = 0; round < runs; ++round)
    for (auto& [config, build] : built)
      for (int side = 0; side < 2; ++side) {
        bool resident_first = round % 2 == 1;
        bool use_resident = (side == 0) == resident_first;
        auto s = measure(use_resident ? *resident : *per_trial, config, build, 60.0);
        (use_resident ? new_way : old_way).push_back(s);
        if (s.ok) best_ms = std::min(best_ms, s.time_ms);
      }
  report("process per trial", old_way);
  report("resident process", new_way);
  // The resident process's first trial starts it: shown apart.
  std::vector<sample> warm(new_way.begin() + 1, new_way.end());
  report("resident, first trial out", warm);
  std::printf("first resident trial: run %.1f ms, overhead %.1f ms\n", new_way.front().run_s * 1e3,
              (new_way.front().run_s - new_way.front().kernel_s) * 1e3);

  tune::run_limits against_best(60.0);
  against_best.reference_ms = best_ms;
  std::vector<sample> with_best;
  for (int round = 0; round < runs; ++round)
    for (auto& [config, build] : built) with_best.push_back(measure(*resident, config, build, against_best));
  std::printf("against the best time, %.3f ms:\n", best_ms);
  report("resident, best time known", with_best);
  if (!other_worker.empty()) compare_workers(task, options, other_worker, built, runs);
  return 0;
}
