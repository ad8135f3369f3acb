#include "xgb_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <locale>
#include <numeric>
#include <sstream>
#include <stdexcept>

#ifdef TUNE_WITH_XGBOOST
#include <xgboost/c_api.h>
#endif

namespace tune::detail {

std::string xgb_missing_message() {
  return "strategy 'xgb': this build of tune-engine has no XGBoost, the strategy's cost model; install "
         "libxgboost-dev (apt-get install libxgboost-dev, or scripts/setup.sh) and build again (scripts/build.sh)";
}

std::vector<std::size_t> label_ranks(const std::vector<float>& labels) {
  std::vector<std::size_t> by_label(labels.size());
  std::iota(by_label.begin(), by_label.end(), std::size_t{0});
  std::stable_sort(by_label.begin(), by_label.end(), [&](auto x, auto y) { return labels[x] > labels[y]; });
  std::vector<std::size_t> rank(labels.size());  // 1 = the highest label
  for (std::size_t r = 0; r < by_label.size(); ++r) rank[by_label[r]] = r + 1;
  return rank;
}

double average_recall(const float* predicted, const std::vector<std::size_t>& rank, std::size_t n) {
  if (n == 0) return 0.0;
  std::size_t rows = rank.size();
  std::vector<std::size_t> order(rows);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](auto x, auto y) { return predicted[x] > predicted[y]; });
  // hits = how many of the first i rows by prediction have a true rank <= i.
  // From i to i + 1 it gains the row at i when its rank is <= i + 1, and an
  // earlier row whose rank is exactly i + 1: O(1) per position.
  std::vector<bool> in_prefix(rows + 2, false);
  std::size_t hits = 0;
  double sum = 0;
  for (std::size_t i = 0; i < n && i < rows; ++i) {
    sum += static_cast<double>(hits) / static_cast<double>(i + 1);
    std::size_t r = rank[order[i]];
    hits += (in_prefix[i + 1] ? 1 : 0) + (r <= i + 1 ? 1 : 0);
    in_prefix[r] = true;
  }
  return sum / static_cast<double>(n);
}

double average_recall(const std::vector<float>& predicted, const std::vector<float>& labels, std::size_t n) {
  if (predicted.size() != labels.size()) throw std::invalid_argument("average_recall: predictions and labels differ");
  return average_recall(predicted.data(), label_ranks(labels), n);
}

#ifdef TUNE_WITH_XGBOOST

bool xgb_available() { return true; }

namespace {

void check(int rc, const char* call) {
  if (rc != 0) {
    const char* why = XGBGetLastError();
    throw std::runtime_error(std::string("strategy 'xgb': XGBoost's ") + call +
                             " failed: " + (why ? why : "no message"));
  }
}

/// A DMatrix of dense rows, freed with its scope.
class matrix {
 public:
  matrix(const std::vector<float>& rows, std::size_t features) {
    check(XGDMatrixCreateFromMat(rows.data(), rows.size() / features, features, std::numeric_limits<float>::quiet_NaN(),
                                 &handle_),
          "XGDMatrixCreateFromMat");
  }
  ~matrix() { XGDMatrixFree(handle_); }
  matrix(const matrix&) = delete;
  matrix& operator=(const matrix&) = delete;
  DMatrixHandle get() const { return handle_; }

 private:
  DMatrixHandle handle_ = nullptr;
};

// Plain values (no margin transform) from every tree; not a training step.
constexpr const char* predict_config =
    R"({"type": 0, "training": false, "iteration_begin": 0, "iteration_end": 0, "strict_shape": false})";

/// Predictions for every row of m, valid until the booster's next call.
const float* predict_rows(BoosterHandle booster, const matrix& m, std::size_t rows) {
  const bst_ulong* shape = nullptr;
  bst_ulong dim = 0;
  const float* out = nullptr;
  check(XGBoosterPredictFromDMatrix(booster, m.get(), predict_config, &shape, &dim, &out),
        "XGBoosterPredictFromDMatrix");
  bst_ulong length = 1;
  for (bst_ulong i = 0; i < dim; ++i) length *= shape[i];
  if (length != rows)
    throw std::runtime_error("strategy 'xgb': XGBoost predicted " + std::to_string(length) + " values for " +
                             std::to_string(rows) + " rows");
  return out;
}

std::string number(double v) {
  std::ostringstream s;
  s.imbue(std::locale::classic());
  s.precision(17);
  s << v;
  return s.str();
}

}  // namespace

xgb_model::xgb_model(std::size_t features, xgb_model_options options) : features_(features), options_(options) {
  if (features_ == 0) throw std::invalid_argument("strategy 'xgb': a model needs at least one feature");
}

xgb_model::~xgb_model() {
  if (booster_) XGBoosterFree(booster_);
}

void xgb_model::fit(const std::vector<float>& rows, const std::vector<float>& labels) {
  if (rows.size() != labels.size() * features_)
    throw std::invalid_argument("strategy 'xgb': " + std::to_string(rows.size()) + " numbers are not " +
                                std::to_string(labels.size()) + " rows of " + std::to_string(features_));
  if (booster_) XGBoosterFree(booster_), booster_ = nullptr;
  rounds_ = 0;
  if (labels.empty()) return;
  matrix train(rows, features_);
  check(XGDMatrixSetFloatInfo(train.get(), "label", labels.data(), labels.size()), "XGDMatrixSetFloatInfo");
  DMatrixHandle cached = train.get();
  check(XGBoosterCreate(&cached, 1, &booster_), "XGBoosterCreate");
  // AutoTVM's parameters; one thread and the exact tree method, so that a
  // seed gives the same trees on any machine.
  const std::pair<const char*, std::string> params[] = {
      {"objective", options_.rank ? "rank:pairwise" : "reg:squarederror"},
      {"max_depth", std::to_string(options_.max_depth)},
      {"eta", number(options_.eta)},
      {"gamma", "0.0001"},
      {"min_child_weight", "1"},
      {"subsample", "1"},
      {"lambda", "1"},
      {"alpha", "0"},
      {"tree_method", "exact"},
      {"nthread", "1"},
      {"seed", std::to_string(options_.seed & 0x7fffffffU)},
      {"verbosity", "0"},
  };
  for (const auto& [name, value] : params) check(XGBoosterSetParam(booster_, name, value.c_str()), "XGBoosterSetParam");
  // Early stopping as AutoTVM's callback: stop once `stopping_rounds` rounds
  // passed without a higher average recall on the training rows.
  double best = -std::numeric_limits<double>::infinity();
  std::size_t best_round = 0;
  const auto rank = label_ranks(labels);  // the labels do not change during the fit
  for (std::size_t round = 0; round < options_.max_rounds; ++round) {
    check(XGBoosterUpdateOneIter(booster_, static_cast<int>(round), train.get()), "XGBoosterUpdateOneIter");
    rounds_ = round + 1;
    double score = average_recall(predict_rows(booster_, train, labels.size()), rank, options_.recall_at);
    if (score > best)
      best = score, best_round = round;
    else if (round - best_round >= options_.stopping_rounds)
      break;
  }
}

std::vector<double> xgb_model::predict(const std::vector<float>& rows) const {
  std::size_t count = rows.size() / features_;
  if (!booster_ || count == 0) return std::vector<double>(count, 0.0);
  matrix m(rows, features_);
  const float* out = predict_rows(booster_, m, count);
  return {out, out + count};
}

#else  // built without XGBoost

bool xgb_available() { return false; }

xgb_model::xgb_model(std::size_t features, xgb_model_options options) : features_(features), options_(options) {
  throw std::runtime_error(xgb_missing_message());
}

xgb_model::~xgb_model() = default;

// Unreachable: no model can be constructed.
void xgb_model::fit(const std::vector<float>&, const std::vector<float>&) {
  throw std::runtime_error(xgb_missing_message());
}

std::vector<double> xgb_model::predict(const std::vector<float>&) const {
  throw std::runtime_error(xgb_missing_message());
}

#endif

}  // namespace tune::detail
