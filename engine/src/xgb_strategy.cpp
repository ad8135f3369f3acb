// xgb: AutoTVM's XGBoost tuner (XGBTuner, a ModelBasedTuner; Chen et al.
// 2018, "Learning to optimize tensor programs"), the baseline OpEvo and NoSE
// measure themselves against.
//
// - Features ("knob" features): each parameter's numeric features of its
//   value (parameter::features: a number itself, a factorization's factors,
//   a permutation's order, a string's index + 1), one row per configuration.
// - Model (xgb_model.hpp): gradient-boosted trees trained on every result
//   so far, rows in an order drawn from the seed; label = fitness / the
//   highest fitness (1 / time; a failure 0, as every strategy scores it).
//   Objective `rank` = 1: pairwise ranking (AutoTVM's default), 0:
//   regression. Trees of depth `max_depth`, learning rate `eta`, at most
//   `max_rounds` rounds, stopped after `stopping_rounds` without a better
//   average recall of the top `plan_size` training rows.
// - Plan: after every `plan_size` results (the k-th training once k *
//   plan_size results are in, and only once one is ok) the model is trained
//   again and simulated annealing over it picks the next plan, the
//   `plan_size` configurations of highest predicted score that are valid and
//   neither measured nor in flight. Proposals take the plan in order; the
//   last floor(`epsilon` * plan_size) places of each plan are random
//   configurations instead (AutoTVM's epsilon-greedy share, 0.05), and so
//   is everything before the first plan and after a plan is used up.
// - Simulated annealing (AutoTVM's SimulatedAnnealingOptimizer): `sa_points`
//   walkers, drawn at random once and kept from plan to plan; each step moves
//   every walker to a configuration that differs in one parameter (a uniform
//   draw among its other values, redrawn while invalid, at most 20 times,
//   else the walker stays), accepted with probability exp(min(gain / (T +
//   1e-5), 1)), the temperature T falling from 1 by 1 / (`sa_steps` + 1) a
//   step; every configuration a walker is offered a move to, accepted or
//   not, is a candidate for the plan (as AutoTVM's). It stops after `sa_steps` steps, or `sa_early_stop` steps
//   without a new candidate in the plan.
//
// Steady state: results are counted as they arrive; configurations in flight
// are kept out of the plan. Every random choice (rows' order, walkers,
// random picks, XGBoost's seed) comes from the strategy's seed, and XGBoost
// runs on one thread, so a seed gives the same proposals. Built without
// XGBoost, the strategy takes its hyperparameters but proposing throws
// std::runtime_error saying to install libxgboost-dev and build again.
// Defaults: xgb_defaults() below, AutoTVM's.
#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <optional>
#include <stdexcept>

#include "strategies.hpp"
#include "tune/engine/strategy_base.hpp"
#include "xgb_model.hpp"

namespace tune::detail {

const hyper_table& xgb_defaults() {
  static const hyper_table table = {
      {"plan_size", 64},    {"epsilon", 0.05},       {"rank", 1},        {"max_depth", 3},  {"eta", 0.3},
      {"max_rounds", 8000}, {"stopping_rounds", 20}, {"sa_points", 128}, {"sa_steps", 500}, {"sa_early_stop", 50}};
  return table;
}

namespace {
class xgb_strategy final : public strategy_base {
 public:
  xgb_strategy(search_space_ptr space, const strategy_options& options)
      : strategy_base("xgb", std::move(space), options, xgb_defaults()),
        plan_size_(hyper_count("plan_size", 1)),
        epsilon_(hyper_in("epsilon", 0.0, 1.0)),
        sa_points_(hyper_count("sa_points", 1)),
        sa_steps_(hyper_count("sa_steps", 0)),
        sa_early_stop_(hyper_count("sa_early_stop", 1)) {
    double rank = hyper("rank");
    if (rank != 0 && rank != 1)
      throw std::invalid_argument(
          "strategy 'xgb': hyperparameter 'rank' must be 1 (pairwise ranking, AutoTVM's 'rank') or 0 (regression, "
          "AutoTVM's 'reg')");
    model_options_.rank = rank == 1;
    model_options_.max_depth = static_cast<int>(hyper_count("max_depth", 1));
    if (model_options_.max_depth > 30)
      throw std::invalid_argument("strategy 'xgb': hyperparameter 'max_depth' must be a whole number in [1, 30]");
    model_options_.eta = hyper_in("eta", 1e-6, 1.0);
    model_options_.max_rounds = hyper_count("max_rounds", 1);
    model_options_.stopping_rounds = hyper_count("stopping_rounds", 1);
    model_options_.recall_at = plan_size_;
    const auto& params = space_->parameters();
    for (std::size_t i = 0; i < params.size(); ++i)
      if (params[i]->cardinality() > 1) movable_.push_back(i);
  }

 protected:
  void on_result(const trial_result& result, double fit) override {
    const auto& params = space_->parameters();
    const auto& c = result.config;
    // A resumed result from another space's file has nothing to teach.
    if (c.size() != params.size()) return;
    for (std::size_t i = 0; i < c.size(); ++i)
      if (c[i] >= params[i]->cardinality()) return;
    for (double f : space_->features(c)) rows_.push_back(static_cast<float>(f));
    fits_.push_back(fit);
    best_fit_ = std::max(best_fit_, fit);
  }

  void generate(std::size_t n, std::vector<configuration>& out) override {
    if (!xgb_available()) throw std::runtime_error(xgb_missing_message());
    if (fits_.size() >= plan_size_ * (trainings_ + 1) && best_fit_ > 0) replan();
    for (; next_ < plan_.size() && out.size() < n; ++next_) claim(out, plan_[next_]);
  }

 private:
  void replan() {
    ++trainings_;
    // Rows in an order drawn from the seed (AutoTVM permutes them): the pairs
    // rank:pairwise samples, and ties between equal splits, follow it.
    std::size_t count = fits_.size();
    std::vector<std::size_t> order(count);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::shuffle(order.begin(), order.end(), rng_);
    const std::size_t features = space_->feature_count();
    std::vector<float> rows, labels;
    rows.reserve(rows_.size());
    labels.reserve(count);
    for (auto i : order) {
      rows.insert(rows.end(), rows_.begin() + static_cast<std::ptrdiff_t>(i * features),
                  rows_.begin() + static_cast<std::ptrdiff_t>((i + 1) * features));
      labels.push_back(static_cast<float>(fits_[i] / best_fit_));
    }
    model_options_.seed = rng_();
    xgb_model model(features, model_options_);
    model.fit(rows, labels);
    plan_ = anneal(model);
    // The plan's tail is left to the random draws of strategy_base.
    plan_.resize(plan_.size() - std::min(plan_.size(), static_cast<std::size_t>(epsilon_ * plan_size_)));
    next_ = 0;
  }

  std::vector<double> predict(const xgb_model& model, const std::vector<configuration>& configs) {
    std::vector<double> features;  // one buffer for every row: this runs for every walker at every step
    std::vector<float> rows;
    rows.reserve(configs.size() * space_->feature_count());
    for (const auto& c : configs) {
      features.clear();
      for (std::size_t i = 0; i < c.size(); ++i) space_->parameters()[i]->features(c[i], features);
      rows.insert(rows.end(), features.begin(), features.end());
    }
    return model.predict(rows);
  }

  /// The walker moved to a valid configuration one parameter away, or left
  /// where it is when 20 draws found none.
  configuration walk(const configuration& from) {
    const auto& params = space_->parameters();
    if (movable_.empty()) return from;
    std::uniform_int_distribution<std::size_t> which(0, movable_.size() - 1);
    for (int attempt = 0; attempt < 20; ++attempt) {
      auto i = movable_[which(rng_)];
      // Uniform over the parameter's other values.
      std::uniform_int_distribution<std::uint64_t> other(0, params[i]->cardinality() - 2);
      auto v = other(rng_);
      auto to = from;
      to[i] = v >= from[i] ? v + 1 : v;
      if (space_->is_valid(to)) return to;
    }
    return from;
  }

  /// The plan: the best `plan_size` configurations by predicted score that
  /// are fresh, found by simulated annealing over the model, best first.
  std::vector<configuration> anneal(const xgb_model& model) {
    if (walkers_.empty())
      for (std::size_t i = 0; i < sa_points_; ++i)
        if (auto c = space_->draw_valid(rng_)) walkers_.push_back(std::move(*c));
    if (walkers_.empty()) return {};
    // A min-heap by score of at most plan_size candidates; `kept` holds them.
    std::vector<std::pair<double, configuration>> heap;
    configuration_set kept;
    auto lower = [](const auto& a, const auto& b) { return a.first > b.first; };
    auto offer = [&](double score, const configuration& c) {
      if (heap.size() == plan_size_ && !(score > heap.front().first)) return false;
      if (kept.count(c) || !fresh(c)) return false;
      if (heap.size() == plan_size_) {
        std::pop_heap(heap.begin(), heap.end(), lower);
        kept.erase(heap.back().second);
        heap.pop_back();
      }
      heap.emplace_back(score, c);
      std::push_heap(heap.begin(), heap.end(), lower);
      kept.insert(c);
      return true;
    };
    auto scores = predict(model, walkers_);
    for (std::size_t i = 0; i < walkers_.size(); ++i) offer(scores[i], walkers_[i]);
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    double temperature = 1.0;
    const double cooling = 1.0 / static_cast<double>(sa_steps_ + 1);
    std::vector<configuration> moved(walkers_.size());
    for (std::size_t step = 0, last_change = 0; step < sa_steps_ && step < last_change + sa_early_stop_; ++step) {
      for (std::size_t i = 0; i < walkers_.size(); ++i) moved[i] = walk(walkers_[i]);
      auto moved_scores = predict(model, moved);
      for (std::size_t i = 0; i < walkers_.size(); ++i) {
        if (offer(moved_scores[i], moved[i])) last_change = step;
        double accept = std::exp(std::min((moved_scores[i] - scores[i]) / (temperature + 1e-5), 1.0));
        if (uniform(rng_) < accept) walkers_[i] = moved[i], scores[i] = moved_scores[i];
      }
      temperature -= cooling;
    }
    std::sort_heap(heap.begin(), heap.end(), lower);  // highest score first
    std::vector<configuration> plan;
    for (auto& [score, c] : heap) plan.push_back(std::move(c));
    return plan;
  }

  std::size_t plan_size_;
  double epsilon_;
  std::size_t sa_points_, sa_steps_, sa_early_stop_;
  xgb_model_options model_options_;
  std::vector<float> rows_;   // every observed configuration's features, row after row
  std::vector<double> fits_;  // their fitness, 0 for failures
  double best_fit_ = 0;
  std::size_t trainings_ = 0;
  std::vector<configuration> plan_;
  std::size_t next_ = 0;  // the next plan entry to offer
  std::vector<configuration> walkers_;
  std::vector<std::size_t> movable_;  // parameters with more than one value
};
}  // namespace

std::unique_ptr<strategy> make_xgb_strategy(search_space_ptr space, const strategy_options& options) {
  return std::make_unique<xgb_strategy>(std::move(space), options);
}

}  // namespace tune::detail
