#pragma once
// The cost model of the `xgb` strategy (xgb_strategy.cpp): gradient-boosted
// trees over XGBoost's C API, trained as AutoTVM's XGBoostCostModel trains
// them. Rows are feature vectors (row-major floats), labels a throughput
// normalised to [0, 1] (failures 0). Training adds one tree per round until
// `max_rounds`, or until the model's average recall of the top `recall_at`
// training rows (average_recall below) has not improved for
// `stopping_rounds` rounds; prediction uses every tree trained. One thread
// and a fixed seed: the same rows, labels and options give the same model.
//
// Built without XGBoost (no libxgboost-dev at configure time), xgb_available()
// is false and constructing a model throws std::runtime_error with
// xgb_missing_message().
#include <cstdint>
#include <string>
#include <vector>

namespace tune::detail {

/// Whether this build has XGBoost.
bool xgb_available();

/// What a build without XGBoost says when a model is needed: which package
/// to install, and that the project must be built again.
std::string xgb_missing_message();

struct xgb_model_options {
  /// Pairwise ranking (XGBoost's rank:pairwise, AutoTVM's 'rank'), or
  /// squared-error regression (reg:squarederror, AutoTVM's 'reg').
  bool rank = true;
  int max_depth = 3;
  double eta = 0.3;
  std::size_t max_rounds = 8000;
  std::size_t stopping_rounds = 20;
  /// N of the early-stopping metric, the average recall of the top N.
  std::size_t recall_at = 64;
  /// XGBoost's own seed (the pairs rank:pairwise samples).
  std::uint64_t seed = 0;
};

/// AutoTVM's early-stopping score "a-recall@N": rows ordered by predicted
/// score, highest first (ties by row); at each position i < N (and below the
/// row count), the number of the i rows before it whose true rank (1 = the
/// highest label, ties by row) is at most i, divided by i + 1; the mean of
/// those N values. 1 would need every prefix to hold exactly the best rows.
double average_recall(const std::vector<float>& predicted, const std::vector<float>& labels, std::size_t n);
/// The same for predictions of rows whose true ranks label_ranks() gave.
double average_recall(const float* predicted, const std::vector<std::size_t>& rank, std::size_t n);
/// Each row's true rank by label, 1 = the highest (ties by row).
std::vector<std::size_t> label_ranks(const std::vector<float>& labels);

class xgb_model {
 public:
  /// A model over rows of `features` numbers. Throws std::runtime_error
  /// without XGBoost (xgb_missing_message()).
  xgb_model(std::size_t features, xgb_model_options options);
  ~xgb_model();
  xgb_model(const xgb_model&) = delete;
  xgb_model& operator=(const xgb_model&) = delete;

  /// Trains a new model on rows (labels.size() of them) and labels,
  /// replacing the previous one. Throws std::runtime_error with XGBoost's
  /// message when a call fails.
  void fit(const std::vector<float>& rows, const std::vector<float>& labels);
  /// The model's score of each row, higher = predicted faster (0 for each
  /// row before the first fit).
  std::vector<double> predict(const std::vector<float>& rows) const;
  /// Trees in the model (rounds trained by the last fit).
  std::size_t rounds() const { return rounds_; }

 private:
  std::size_t features_;
  xgb_model_options options_;
  void* booster_ = nullptr;  // BoosterHandle
  std::size_t rounds_ = 0;
};

}  // namespace tune::detail
