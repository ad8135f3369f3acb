// Transfer between devices: replays a strategy on each dataset of a family
// (one kernel's space measured on several devices) with no prior, with the
// other devices' results merged as the prior, and with each other device
// alone, and prints mean f after 10, 20, 50 and 100 evaluations.
// Usage: bench_transfer [--strategy bo] [--runs R] [--seed S] [--budget N]
//                       [--hyper name=value …] DATASET DATASET …
#include <fmt/format.h>

#include <filesystem>
#include <stdexcept>
#include <string>

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
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--strategy")
      options.strategy = value();
    else if (arg == "--runs")
      runs = std::stoul(value());
    else if (arg == "--seed")
      options.seed = std::stoull(value());
    else if (arg == "--budget")
      options.budget = std::stoul(value());
    else if (arg == "--hyper") {
      auto h = value();
      auto eq = h.find('=');
      if (eq == std::string::npos) throw std::invalid_argument("--hyper " + h + ": expected name=value");
      options.hyper[h.substr(0, eq)] = std::stod(h.substr(eq + 1));
    } else if (!arg.empty() && arg[0] == '-')
      throw std::invalid_argument("unknown option " + arg);
    else
      paths.push_back(arg);
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
