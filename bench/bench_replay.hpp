#pragma once
// What the replay benchmarks share: the best of Kernel Tuner 1.0's strategies
// on the vendored datasets, as published with them (datasets/README.md), the
// datasets' short labels, and the common command-line arguments.

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

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

/// The value after option argv[i] (i moves onto it).
inline std::string next_value(int argc, char** argv, int& i) {
  if (i + 1 >= argc) throw std::invalid_argument(std::string(argv[i]) + " needs a value");
  return argv[++i];
}

/// "strategy:name=value" (--hyper) added to hyper[strategy][name].
inline void add_hyper(const std::string& h, std::map<std::string, std::map<std::string, double>>& hyper) {
  auto colon = h.find(':'), eq = h.find('=');
  if (colon == std::string::npos || eq == std::string::npos || eq < colon)
    throw std::invalid_argument("--hyper " + h + ": expected strategy:name=value, e.g. opevo:lambda=8");
  hyper[h.substr(0, colon)][h.substr(colon + 1, eq - colon - 1)] = std::stod(h.substr(eq + 1));
}

/// --runs R, --budget N, --seed S, --out DIR and the dataset files, each
/// after an optional --kinds FILE (parameter kind overrides) that applies to it.
struct replay_bench_args {
  std::size_t runs = 50;
  std::size_t budget = 500;
  std::uint64_t seed = 1;
  std::string out_dir = "bench/results";
  std::vector<std::pair<std::string, std::string>> datasets;  ///< path, kind-override file ("" for none)

  /// Takes argv[i] (and its value) when it is one of these; false for another option.
  bool take(int argc, char** argv, int& i) {
    std::string arg = argv[i];
    if (arg == "--runs")
      runs = std::stoul(next_value(argc, argv, i));
    else if (arg == "--budget")
      budget = std::stoul(next_value(argc, argv, i));
    else if (arg == "--seed")
      seed = std::stoull(next_value(argc, argv, i));
    else if (arg == "--out")
      out_dir = next_value(argc, argv, i);
    else if (arg == "--kinds")
      kinds_ = next_value(argc, argv, i);
    else if (!arg.empty() && arg[0] == '-')
      return false;
    else
      datasets.emplace_back(arg, std::exchange(kinds_, {}));
    return true;
  }

  /// Throws when no dataset was given or a --kinds came after the last one.
  void check() const {
    if (datasets.empty()) throw std::invalid_argument("give at least one dataset file");
    if (!kinds_.empty())
      throw std::invalid_argument("--kinds " + kinds_ + " must come before the dataset it applies to");
    if (runs == 0) throw std::invalid_argument("--runs must be at least 1");
  }

 private:
  std::string kinds_;
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
