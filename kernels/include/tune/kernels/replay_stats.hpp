#pragma once
// Statistics of replayed searches against a dataset's optimum:
//   f = (best time in the dataset) / (best time found so far), 0 before any ok result,
// the exact expectation of f for random search without replacement, and the
// score of Willemsen et al. 2024: (strategy − random) / (optimum − random),
// averaged over the evaluation range.

#include <cstddef>
#include <optional>
#include <vector>

#include "tune/kernels/replay.hpp"

namespace tune {

/// f after each evaluation of a run: out[i] is f after i+1 evaluations. A run
/// that stopped early keeps its last f up to `budget`.
std::vector<double> fraction_curve(const replay_run_result& run, double optimum_ms, std::size_t budget);

/// Exact E[f] after n = 1 … budget evaluations of random sampling without
/// replacement from `total` configurations, of which those with `sorted_ok_ms`
/// (ascending) are ok and the rest failures: out[n-1].
std::vector<double> random_fraction_curve(const std::vector<double>& sorted_ok_ms, std::size_t total,
                                          std::size_t budget);

/// Exact expected number of random draws without replacement until one with
/// f >= threshold, (T + 1) / (G + 1) for G such configurations among T.
double random_evals_to_reach(const std::vector<double>& sorted_ok_ms, std::size_t total, double threshold);

/// Index of the first step whose f = optimum_ms / best_ms reaches
/// `threshold` (so index + 1 evaluations); nullopt when no step does.
std::optional<std::size_t> first_step_reaching(const replay_run_result& run, double optimum_ms, double threshold);

/// Simulated seconds (replay_step::sim_time_s) at that step; nullopt when no step reaches it.
std::optional<double> sim_time_to_reach(const replay_run_result& run, double optimum_ms, double threshold);

/// Mean of (s - r) / (1 - r) over n = 1 … size, skipping n where r == 1.
double willemsen_score(const std::vector<double>& strategy_mean, const std::vector<double>& random_mean);

struct replay_summary {
  std::size_t runs = 0;
  std::size_t budget = 0;
  double optimum_ms = 0;
  std::vector<double> mean_f;  ///< mean over runs of f after n evaluations
  std::vector<double> std_f;
  std::vector<double> random_f;
  struct reach {
    double threshold = 0;
    /// Mean evaluations over the runs that reached it; nullopt when none did.
    std::optional<double> mean_evals;
    std::size_t never = 0;
    double random_evals = 0;
  };
  std::vector<reach> reaches;  ///< for 0.90, 0.95, 0.99
  double score = 0;
};

replay_summary summarize(const replay_dataset& dataset, const std::vector<replay_run_result>& runs, std::size_t budget);

}  // namespace tune
