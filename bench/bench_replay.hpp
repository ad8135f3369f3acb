#pragma once
// What the replay benchmarks share: the best of Kernel Tuner 1.0's strategies
// on the vendored datasets, as published with them (datasets/README.md), the
// datasets' short labels, and the common command-line arguments.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bench_text.hpp"

namespace tune::bench {

/// Mean f of the best of Kernel Tuner 1.0's eleven strategies at 20, 50, 100,
/// 200 and 500 evaluations (30 runs, simulation mode, one evaluation = one
/// distinct configuration, failures included), as published with the datasets.
struct peer_row {
  const char* dataset;
  double f20, f50, f100, f200, f500;
  const char *s20, *s50, *s100, *s200, *s500;
};
inline constexpr peer_row peer_table[] = {
    {"gemm_clblast/RTX_3090", 0.806, 0.892, 0.943, 0.976, 0.997, "dual_annealing", "bayes_opt", "greedy_ils",
     "greedy_ils", "greedy_ils"},
    {"convolution/A100", 0.615, 0.750, 0.854, 0.940, 0.979, "dual_annealing", "mls", "genetic_algorithm",
     "genetic_algorithm", "mls"},
    {"convolution_v1_rtx/RTX_2080_Ti", 0.819, 0.896, 0.956, 0.999, 0.999, "dual_annealing", "dual_annealing",
     "dual_annealing", "genetic_algorithm", "greedy_mls"},
    {"pnpoly/RTX_3090", 0.895, 0.987, 0.999, 0.999, 1.000, "dual_annealing", "pso", "bayes_opt", "firefly_algorithm",
     "mls"},
    {"dedispersion/MI250X", 0.703, 0.989, 0.998, 0.962, 1.000, "basinhopping", "bayes_opt", "bayes_opt",
     "dual_annealing", "dual_annealing"},
};

/// "data/datasets/gemm_clblast/RTX_3090.json.gz" -> "gemm_clblast/RTX_3090".
inline std::string dataset_label(const std::string& path) {
  std::filesystem::path p(path);
  std::string stem = p.filename().string();
  for (const char* ext : {".gz", ".json"})
    if (stem.size() > std::strlen(ext) && stem.substr(stem.size() - std::strlen(ext)) == ext)
      stem.resize(stem.size() - std::strlen(ext));
  return p.parent_path().filename().string() + "/" + stem;
}

inline const peer_row* find_peer(const std::string& label) {
  for (const auto& row : peer_table)
    if (label == row.dataset) return &row;
  return nullptr;
}

/// --runs R, --budget N, --seed S, --out DIR and the dataset files, each
/// after an optional --kinds FILE (parameter kind overrides) that applies to it.
struct replay_bench_args {
  std::size_t runs = 50;
  std::size_t budget = 500;
  std::uint64_t seed = 1;
  std::string out_dir = "bench/results";
  std::vector<std::pair<std::string, std::string>> datasets;  ///< path, kind-override file ("" for none)

  /// Adds these options and the dataset files (positional) to `app`.
  void add_to(CLI::App& app) {
    app.add_option("--runs", runs, "Runs (seeds) per dataset")->capture_default_str()->check(more_than_zero());
    app.add_option("--budget", budget, "Evaluations per run")->capture_default_str()->check(more_than_zero());
    app.add_option("--seed", seed, "The first run's seed")->capture_default_str();
    app.add_option("--out", out_dir, "Folder of the result tables")->capture_default_str();
    kinds_option_ =
        add_repeatable(app, "--kinds", kinds_, "Parameter kind overrides (JSON) for the dataset that follows");
    paths_option_ = app.add_option("datasets", paths_, "Measured datasets (JSON, .json.gz or a Kernel Tuner cache)")
                        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  }

  /// After the parse: pairs each dataset with the --kinds before it. Throws
  /// when no dataset was given or a --kinds came after the last one.
  void finish(const CLI::App& app) {
    std::size_t kinds = 0, paths = 0;
    std::string pending;
    for (const CLI::Option* o : app.parse_order()) {
      if (o == kinds_option_)
        pending = kinds_.at(kinds++);
      else if (o == paths_option_)
        datasets.emplace_back(paths_.at(paths++), std::exchange(pending, {}));
    }
    if (datasets.empty()) throw std::invalid_argument("give at least one dataset file");
    if (!pending.empty())
      throw std::invalid_argument("--kinds " + pending + " must come before the dataset it applies to");
  }

 private:
  std::vector<std::string> kinds_, paths_;
  const CLI::Option* kinds_option_ = nullptr;
  const CLI::Option* paths_option_ = nullptr;
};

/// The main() of a replay benchmark: run(argc, argv), an exception printed
/// as "name: what" with exit code 2 (bad options, unreadable datasets).
template <class Run>
int guarded_main(const char* name, Run run, int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 2;
  }
}

}  // namespace tune::bench
