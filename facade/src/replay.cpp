// tune::replay_statistics: runs of a strategy against a measured dataset,
// compared with the exact expectation of random search (what `tune-engine
// replay` prints).
#include "tune/kernels/replay.hpp"

#include <cmath>
#include <fstream>

#include "report_detail.hpp"
#include "tune/engine/strategy.hpp"
#include "tune/kernels/replay_stats.hpp"
#include "tune/tune.hpp"

namespace tune {
namespace {

/// The checkpoints of the summary that fit in the budget.
std::vector<std::size_t> checkpoints(std::size_t budget) {
  std::vector<std::size_t> out;
  for (std::size_t n : {20, 50, 100, 200, 500})
    if (n <= budget) out.push_back(n);
  if (out.empty() || out.back() != budget) out.push_back(budget);
  return out;
}

void write_trajectories(std::ofstream& out, const std::string& option, const std::string& path,
                        const replay_dataset& dataset, const std::vector<replay_run_result>& runs) {
  for (std::size_t r = 0; r < runs.size(); ++r) {
    for (std::size_t i = 0; i < runs[r].steps.size(); ++i) {
      const auto& step = runs[r].steps[i];
      nlohmann::ordered_json line{
          {"run", r},
          {"eval", i + 1},
          {"config", nlohmann::ordered_json::parse(dataset.space->to_json(step.config))},
          {"status", std::string(to_string(step.state))},
          {"time_ms", std::isfinite(step.time_ms) ? nlohmann::ordered_json(step.time_ms) : nlohmann::ordered_json()},
          {"sim_time_s", step.sim_time_s}};
      out << line.dump() << '\n';
    }
  }
  if (!out) throw std::runtime_error(option + " " + path + ": write failed");
}

}  // namespace

nlohmann::json replay_statistics(const replay_options& o) {
  auto name = [&](const char* field) { return detail::option_name(o.option_names, field); };
  if (o.budget == 0) throw input_error(name("budget") + ": must be at least 1 evaluation");
  if (o.runs == 0) throw input_error(name("runs") + ": must be at least 1");
  if (o.dataset.empty())
    throw input_error(name("dataset") + ": no dataset given; name a Kernel Tuner cache, T4 or KTT file");
  kind_overrides overrides;
  if (!o.kinds_file.empty()) overrides = read_kind_overrides(o.kinds_file);
  auto dataset = read_replay_dataset(o.dataset, overrides);
  if (dataset.sorted_ok_times().empty())
    throw input_error(o.dataset + ": no configuration of the dataset ran successfully; there is no optimum to reach");
  replay_run_options options;
  options.strategy = o.strategy.empty() ? default_strategy_name() : o.strategy;
  options.hyper = o.hyper;
  options.budget = o.budget;
  options.seed = o.seed;
  options.noise = o.noise;
  if (!o.priors.empty()) {
    std::vector<replay_dataset> priors;
    for (const auto& path : o.priors) priors.push_back(read_replay_dataset(path, overrides));
    std::vector<const replay_dataset*> pointers;
    for (const auto& p : priors) pointers.push_back(&p);
    try {
      options.prior = replay_prior(pointers, *dataset.space);
    } catch (const std::invalid_argument& e) {
      throw input_error(name("priors") + ": " + e.what());
    }
  }
  validate_strategy(options.strategy, options.hyper, dataset.space);
  // Opened before the runs, so that a path that cannot be written is said at
  // once, not after them.
  std::ofstream trajectories;
  if (!o.trajectories_file.empty()) {
    trajectories.open(o.trajectories_file);
    if (!trajectories)
      throw input_error(name("trajectories_file") + " " + o.trajectories_file +
                        ": cannot write the file; check the folder exists");
  }
  auto runs = replay_searches(dataset, options, o.runs, std::max(1u, std::min(o.threads, 2u)));
  auto s = summarize(dataset, runs, o.budget);
  if (trajectories.is_open())
    write_trajectories(trajectories, name("trajectories_file"), o.trajectories_file, dataset, runs);

  nlohmann::json at = nlohmann::json::array();
  for (std::size_t n : checkpoints(o.budget))
    at.push_back(
        {{"evals", n}, {"mean_f", s.mean_f[n - 1]}, {"std_f", s.std_f[n - 1]}, {"random_f", s.random_f[n - 1]}});
  nlohmann::json reach = nlohmann::json::array();
  for (const auto& r : s.reaches)
    reach.push_back({{"f", r.threshold},
                     {"mean_evals", r.mean_evals ? nlohmann::json(*r.mean_evals) : nlohmann::json()},
                     {"never", r.never},
                     {"random_evals", r.random_evals}});
  std::size_t rejected = 0, duplicates = 0;
  for (const auto& r : runs) {
    rejected += r.rejected;
    duplicates += r.duplicates;
  }
  return {{"dataset", o.dataset},
          {"format", dataset.format},
          {"configurations", dataset.configs.size()},
          {"ok_configurations", dataset.sorted_ok_times().size()},
          {"optimum_ms", s.optimum_ms},
          {"strategy", options.strategy},
          {"hyper", o.hyper},
          {"runs", s.runs},
          {"budget", s.budget},
          {"seed", o.seed},
          {"noise", o.noise},
          {"prior", o.priors},
          {"at", at},
          {"reach", reach},
          {"score", s.score},
          {"rejected_proposals", rejected},
          {"duplicate_proposals", duplicates}};
}

}  // namespace tune
