// The cost model of `xgb` (engine/src/xgb_model.cpp): AutoTVM's recall score,
// ranking and regression on a separable objective, the seed, XGBoost's errors.
// Without XGBoost the model's tests report SKIPPED.
#include <algorithm>
#include <catch2/catch.hpp>

#include "../../engine/src/xgb_model.hpp"
#include "skip.hpp"

using namespace tune::detail;

namespace {

// Rows (x, y) of a 10 x 10 grid; label 1 where x >= 5 (fast), 0.2 elsewhere.
struct separable {
  std::vector<float> rows, labels;
  separable() {
    for (int x = 0; x < 10; ++x)
      for (int y = 0; y < 10; ++y) {
        rows.push_back(static_cast<float>(x));
        rows.push_back(static_cast<float>(y));
        labels.push_back(x >= 5 ? 1.0f : 0.2f);
      }
  }
};

}  // namespace

TEST_CASE("average recall is AutoTVM's a-recall of the predicted order", "[engine][xgb]") {
  std::vector<float> labels = {4, 3, 2, 1};
  // Predicted in the true order: 0, 1/2, 2/3, 3/4 over 4 positions.
  CHECK(average_recall({9, 8, 7, 6}, labels, 4) == Approx((0.5 + 2.0 / 3 + 0.75) / 4));
  // Reversed: only at position 3 do two of the first three (ranks 4, 3, 2) lie within the top 3.
  CHECK(average_recall({6, 7, 8, 9}, labels, 4) == Approx(0.5 / 4));
  // N beyond the rows: the missing positions count 0, the mean is still over N.
  CHECK(average_recall({9, 8, 7, 6}, labels, 8) == Approx((0.5 + 2.0 / 3 + 0.75) / 8));
  CHECK_THROWS_AS(average_recall({1, 2}, labels, 4), std::invalid_argument);
}

TEST_CASE("the model ranks a separable objective correctly, by ranking and by regression", "[engine][xgb]") {
  if (!xgb_available()) SKIP_TEST("built without XGBoost (libxgboost-dev)");
  separable data;
  for (bool rank : {true, false}) {
    INFO((rank ? "rank:pairwise" : "reg:squarederror"));
    xgb_model_options options;
    options.rank = rank;
    options.recall_at = 16;
    xgb_model model(2, options);
    CHECK(model.predict(data.rows) == std::vector<double>(100, 0.0));  // no fit yet
    model.fit(data.rows, data.labels);
    CHECK(model.rounds() >= 1);
    // Unseen points on both sides of the boundary: every fast one above every slow one.
    std::vector<float> fast = {5.5f, 0.5f, 7.2f, 3.3f, 9.9f, 8.8f, 6.0f, 4.4f};
    std::vector<float> slow = {0.1f, 0.5f, 2.2f, 3.3f, 4.4f, 9.9f, 3.9f, 6.1f};
    auto f = model.predict(fast), s = model.predict(slow);
    REQUIRE(f.size() == 4);
    REQUIRE(s.size() == 4);
    CHECK(*std::min_element(f.begin(), f.end()) > *std::max_element(s.begin(), s.end()));
  }
}

TEST_CASE("the same rows, labels and seed give the same model", "[engine][xgb]") {
  if (!xgb_available()) SKIP_TEST("built without XGBoost (libxgboost-dev)");
  separable data;
  // Labels with structure in y too, so that the trees have choices to make.
  for (std::size_t i = 0; i < data.labels.size(); ++i) data.labels[i] *= 1.0f / (1.0f + data.rows[2 * i + 1]);
  xgb_model_options options;
  options.seed = 11;
  xgb_model a(2, options), b(2, options);
  a.fit(data.rows, data.labels);
  b.fit(data.rows, data.labels);
  CHECK(a.rounds() == b.rounds());
  CHECK(a.predict(data.rows) == b.predict(data.rows));
}

TEST_CASE("the model refuses rows that do not match and reports XGBoost's errors", "[engine][xgb]") {
  if (!xgb_available()) SKIP_TEST("built without XGBoost (libxgboost-dev)");
  separable data;
  xgb_model model(2, {});
  data.labels.pop_back();
  CHECK_THROWS_AS(model.fit(data.rows, data.labels), std::invalid_argument);
  xgb_model_options bad;
  bad.max_depth = -1;  // XGBoost checks its parameters when it trains
  xgb_model refused(2, bad);
  separable fresh;
  CHECK_THROWS_WITH(refused.fit(fresh.rows, fresh.labels),
                    Catch::Contains("strategy 'xgb'") && Catch::Contains("XGBoost") && Catch::Contains("max_depth"));
}

TEST_CASE("without XGBoost a model says to install libxgboost-dev and build again", "[engine][xgb]") {
  if (xgb_available()) SKIP_TEST("this build has XGBoost");
  CHECK_THROWS_WITH(xgb_model(2, {}), Catch::Contains("libxgboost-dev") && Catch::Contains("build again"));
}
