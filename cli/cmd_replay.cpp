// tune-engine replay: runs of a strategy against a measured dataset, compared
// with the exact expectation of random search.
#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "tune/kernels/replay.hpp"
#include "tune/kernels/replay_stats.hpp"

namespace tune::cli {
namespace {

struct replay_args {
  std::string dataset;
  std::string strategy;
  std::size_t budget = 100;
  std::size_t runs = 10;
  std::uint64_t seed = 0;
  bool noise = false;
  std::string trajectories;
  bool json = false;
  std::vector<std::string> hyper;
  std::string kinds;
  unsigned threads = 2;
  std::vector<std::string> priors;
};

std::map<std::string, double> parse_hyper_values(const std::vector<std::string>& items) {
  std::map<std::string, double> out;
  for (const auto& item : items) {
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw input_error("--hyper " + item + ": expected name=value, e.g. --hyper lambda=8");
    std::string text = item.substr(eq + 1);
    std::size_t used = 0;
    double value = 0;
    try {
      value = std::stod(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != text.size() || text.empty()) throw input_error("--hyper " + item + ": '" + text + "' is not a number");
    out[item.substr(0, eq)] = value;
  }
  return out;
}

/// The checkpoints of the summary that fit in the budget.
std::vector<std::size_t> checkpoints(std::size_t budget) {
  std::vector<std::size_t> out;
  for (std::size_t n : {20, 50, 100, 200, 500})
    if (n <= budget) out.push_back(n);
  if (out.empty() || out.back() != budget) out.push_back(budget);
  return out;
}

nlohmann::json value_json(const parameter_value& v) {
  if (auto d = std::get_if<double>(&v)) {
    if (*d == std::floor(*d) && std::abs(*d) < 1e15) return static_cast<std::int64_t>(*d);
    return *d;
  }
  if (auto s = std::get_if<std::string>(&v)) return *s;
  return std::get<std::vector<std::int64_t>>(v);
}

void write_trajectories(const std::string& path, const replay_dataset& dataset,
                        const std::vector<replay_run_result>& runs) {
  std::ofstream out(path);
  if (!out) throw input_error("--trajectories " + path + ": cannot write the file; check the folder exists");
  for (std::size_t r = 0; r < runs.size(); ++r) {
    for (std::size_t i = 0; i < runs[r].steps.size(); ++i) {
      const auto& step = runs[r].steps[i];
      nlohmann::ordered_json config = nlohmann::ordered_json::object();
      for (const auto& [name, value] : dataset.space->values(step.config)) config[name] = value_json(value);
      nlohmann::ordered_json line{
          {"run", r},
          {"eval", i + 1},
          {"config", config},
          {"status", std::string(to_string(step.state))},
          {"time_ms", std::isfinite(step.time_ms) ? nlohmann::ordered_json(step.time_ms) : nlohmann::ordered_json()},
          {"sim_time_s", step.sim_time_s}};
      out << line.dump() << '\n';
    }
  }
  if (!out) throw std::runtime_error("--trajectories " + path + ": write failed");
}

nlohmann::json summary_json(const replay_args& a, const replay_dataset& d, const replay_summary& s,
                            const std::vector<replay_run_result>& runs) {
  nlohmann::json at = nlohmann::json::array();
  for (std::size_t n : checkpoints(a.budget))
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
  return {{"dataset", a.dataset},
          {"format", d.format},
          {"configurations", d.configs.size()},
          {"ok_configurations", d.sorted_ok_times().size()},
          {"optimum_ms", s.optimum_ms},
          {"strategy", a.strategy},
          {"hyper", parse_hyper_values(a.hyper)},
          {"runs", s.runs},
          {"budget", s.budget},
          {"seed", a.seed},
          {"noise", a.noise},
          {"prior", a.priors},
          {"at", at},
          {"reach", reach},
          {"score", s.score},
          {"rejected_proposals", rejected},
          {"duplicate_proposals", duplicates}};
}

void print_text(const replay_args& a, const replay_dataset& d, const replay_summary& s) {
  fmt::print("dataset   {} ({}, {} configurations, {} ok), optimum {:.6g} ms\n", a.dataset, d.format, d.configs.size(),
             d.sorted_ok_times().size(), s.optimum_ms);
  fmt::print("strategy  {}, {} runs x {} evaluations, seeds {}..{}{}\n", a.strategy, s.runs, s.budget, a.seed,
             a.seed + s.runs - 1, a.noise ? ", noisy times" : "");
  for (const auto& prior : a.priors) fmt::print("prior     {}\n", prior);
  fmt::print("\nf = optimum / best found     {:>17}   {:>8}\n", "strategy", "random");
  for (std::size_t n : checkpoints(a.budget))
    fmt::print("  after {:>4} evaluations     {:>7.3f} ± {:<7.3f}   {:>8.3f}\n", n, s.mean_f[n - 1], s.std_f[n - 1],
               s.random_f[n - 1]);
  fmt::print("\nevaluations to reach         {:>17}   {:>8}\n", "strategy", "random");
  for (const auto& r : s.reaches) {
    std::string mean = r.mean_evals ? fmt::format("{:.1f}", *r.mean_evals) : "-";
    std::string never = r.never ? fmt::format(" ({} never)", r.never) : "";
    fmt::print("  f >= {:.2f}                  {:>17}   {:>8.1f}\n", r.threshold, mean + never, r.random_evals);
  }
  fmt::print("\nscore (Willemsen et al. 2024, over 1..{} evaluations): {:.3f}\n", s.budget, s.score);
}

int run_replay(const replay_args& a) {
  if (a.budget == 0) throw input_error("--budget must be at least 1 evaluation");
  if (a.runs == 0) throw input_error("--runs must be at least 1");
  kind_overrides overrides;
  if (!a.kinds.empty()) overrides = read_kind_overrides(a.kinds);
  auto dataset = read_replay_dataset(a.dataset, overrides);
  if (dataset.sorted_ok_times().empty())
    throw input_error(a.dataset + ": no configuration of the dataset ran successfully; there is no optimum to reach");
  replay_run_options options;
  options.strategy = a.strategy;
  options.hyper = parse_hyper_values(a.hyper);
  options.budget = a.budget;
  options.seed = a.seed;
  options.noise = a.noise;
  if (!a.priors.empty()) {
    std::vector<replay_dataset> priors;
    for (const auto& path : a.priors) priors.push_back(read_replay_dataset(path, overrides));
    std::vector<const replay_dataset*> pointers;
    for (const auto& p : priors) pointers.push_back(&p);
    try {
      options.prior = replay_prior(pointers, *dataset.space);
    } catch (const std::invalid_argument& e) {
      throw input_error(std::string("--prior: ") + e.what());
    }
  }
  auto runs = replay_searches(dataset, options, a.runs, std::max(1u, std::min(a.threads, 2u)));
  auto summary = summarize(dataset, runs, a.budget);
  if (!a.trajectories.empty()) write_trajectories(a.trajectories, dataset, runs);
  if (a.json)
    fmt::print("{}\n", summary_json(a, dataset, summary, runs).dump(2));
  else
    print_text(a, dataset, summary);
  return exit_ok;
}

}  // namespace

void add_replay_command(CLI::App& app, command_list& commands) {
  auto a = std::make_shared<replay_args>();
  auto* sub = app.add_subcommand("replay", "Replay runs of a strategy on a measured dataset and compare with random");
  sub->add_option("--dataset", a->dataset, "Kernel Tuner cache, T4 results or KTT TuningOutput (.json or .json.gz)")
      ->required();
  sub->add_option("--strategy", a->strategy, "random, ga, opevo, nose, nsga2, opevo+knn, bo")
      ->default_val(default_strategy_name());
  sub->add_option("--budget", a->budget, "evaluations per run (distinct configurations measured)")->required();
  sub->add_option("--runs", a->runs, "independent runs (seeds seed, seed+1, ...)")->required();
  sub->add_option("--seed", a->seed, "seed of the first run")->required();
  sub->add_flag("--noise", a->noise, "draw each time from the recorded runs instead of their mean");
  sub->add_option("--trajectories", a->trajectories, "write one JSON line per evaluation to this file");
  sub->add_flag("--json", a->json, "print the summary as JSON");
  sub->add_option("--hyper", a->hyper, "strategy hyperparameter name=value (repeatable)");
  sub->add_option("--kinds", a->kinds,
                  "JSON file {\"parameter\": \"discrete\"|\"categorical\"} overriding guessed kinds");
  sub->add_option("--threads", a->threads, "threads running runs (1 or 2)");
  sub->add_option("--prior", a->priors,
                  "dataset of the same kernel measured elsewhere (another device, an earlier run) to transfer "
                  "from (repeatable; several are merged by geometric mean); used by bo");
  commands.emplace_back(sub, [a] { return run_replay(*a); });
}

}  // namespace tune::cli
