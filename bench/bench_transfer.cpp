// Transfer between devices: replays a strategy on each dataset of a family
// (one kernel's space measured on several devices) with no prior, with the
// other devices' results merged as the prior, and with each other device
// alone, and prints mean f after 10, 20, 50 and 100 evaluations.
// Usage: bench_transfer [--strategy bo] [--runs R] [--seed S] [--budget N]
//                       [--hyper name=value …] DATASET DATASET …
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "bench_text.hpp"
#include "tune/kernels/replay.hpp"
#include "tune/kernels/replay_stats.hpp"

using namespace tune;

namespace {
std::string device_of(const std::string& path) {
  std::string stem = std::filesystem::path(path).filename().string();
  return stem.substr(0, stem.find('.'));
}
}  // namespace

int main(int argc, char** argv) try {
  replay_run_options options;
  options.strategy = default_strategy_name();
  options.budget = 100;
  options.seed = 1;
  std::size_t runs = 50;
  std::vector<std::string> paths;
  std::vector<std::string> hypers;
  CLI::App app{
      "Transfer between devices: a strategy replayed on each dataset of one kernel with no prior, with the "
      "other devices' results as the prior, and with each other device alone: mean f after 10, 20, 50 and "
      "100 evaluations"};
  bench::last_value_wins(app);
  app.add_option("--strategy", options.strategy, "Strategy")->capture_default_str();
  app.add_option("--runs", runs, "Runs (seeds) per dataset and prior")
      ->capture_default_str()
      ->check(bench::more_than_zero());
  app.add_option("--seed", options.seed, "The first run's seed")->capture_default_str();
  app.add_option("--budget", options.budget, "Evaluations per run")
      ->capture_default_str()
      ->check(bench::more_than_zero());
  bench::add_repeatable(app, "--hyper", hypers, "The strategy's hyperparameter, name=value");
  app.add_option("datasets", paths, "Two or more measured datasets of the same kernel")
      ->required()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  if (auto rc = tune::bench::parse_options(app, argc, argv)) return *rc;
  for (const auto& h : hypers) {
    auto eq = h.find('=');
    if (eq == std::string::npos) throw std::invalid_argument("--hyper " + h + ": expected name=value");
    options.hyper[h.substr(0, eq)] = std::stod(h.substr(eq + 1));
  }
  if (paths.size() < 2) throw std::invalid_argument("give at least two datasets of the same kernel");
  std::vector<replay_dataset> datasets;
  for (const auto& p : paths) datasets.push_back(read_replay_dataset(p));
  const std::size_t checkpoints[] = {10, 20, 50, 100};
  fmt::print("strategy {}, {} runs (seeds {}..{}), mean f after 10 / 20 / 50 / 100 evaluations\n\n", options.strategy,
             runs, options.seed, options.seed + runs - 1);
  fmt::print("| target | prior | f@10 | f@20 | f@50 | f@100 |\n|---|---|---|---|---|---|\n");
  for (std::size_t t = 0; t < datasets.size(); ++t) {
    const auto& target = datasets[t];
    std::vector<std::pair<std::string, std::vector<const replay_dataset*>>> priors = {{"none", {}}};
    std::vector<const replay_dataset*> others;
    for (std::size_t o = 0; o < datasets.size(); ++o)
      if (o != t) others.push_back(&datasets[o]);
    priors.emplace_back("all others", others);
    for (const auto* o : others) priors.emplace_back(device_of(o->origin), std::vector<const replay_dataset*>{o});
    for (const auto& [label, list] : priors) {
      auto o = options;
      if (!list.empty()) o.prior = replay_prior(list, *target.space);
      auto summary = summarize(target, replay_searches(target, o, runs, 2), o.budget);
      fmt::print("| {} | {} |", device_of(target.origin), label);
      for (auto n : checkpoints)
        fmt::print("{}", n <= o.budget ? fmt::format(" {:.3f} |", summary.mean_f[n - 1]) : std::string(" – |"));
      fmt::print("\n");
      std::fflush(stdout);
    }
  }
  return 0;
} catch (const std::exception& e) {
  fmt::print(stderr, "bench_transfer: {}\n", e.what());
  return 2;
}
