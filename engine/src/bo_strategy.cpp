// bo: Bayesian optimisation with a Gaussian process and expected improvement,
// the method of Kernel Tuner's bayes_opt strategy (Willemsen et al. 2021,
// "Bayesian optimization for auto-tuning GPU kernels"), with a NoSE
// explorer for when it stalls.
//
// - Pool: the configurations the acquisition chooses from, fixed at the
//   start: every valid configuration when there are at most `pool` of them
//   (a measured dataset's members, or the enumerated valid set), else `pool`
//   distinct valid configurations drawn uniformly from the seed.
// - Until `initial` results were observed, and while none of them is ok,
//   proposals are uniform random unseen valid configurations.
// - Model: a Gaussian process (Matérn 5/2, length scale `length_scale` on the
//   [0, 1] coordinates of gp_encoding with power-of-two alignment weight
//   `alignment`, `jitter` on the diagonal) over every observed
//   configuration. Target: log(time), standardised (mean 0, standard
//   deviation 1). A failed configuration counts as the slowest ok time seen
//   when it is observed (failures before the first ok result wait for it),
//   with `failure_noise` added to its diagonal, so the model steers away from
//   it without an outlier stretching the scale or a guess pinning the fit.
// - Acquisition: expected improvement below the best target, margin `xi`;
//   a request for n proposals takes the n unmeasured pool members with the
//   highest expected improvement. Steady state: results are added as they
//   arrive; configurations in flight are skipped, not modelled.
// - Stall: after `stall` results in a row without a faster time, proposals
//   come from NoSE (nose_strategy.cpp, its defaults), which has observed
//   every result and recombines the best measured configurations, until a
//   faster time arrives; 0 turns this off. A smooth model settles on one
//   basin and misses an optimum whose neighbours are slow (convolution A100
//   in docs/replay.md); crossover of good configurations finds it.
//
// Cost per observation: O(pool × observations) (gaussian_process keeps
// every pool member's solve vector up to date). Defaults: initial = 20,
// length_scale = 0.7, jitter = 1e-4, xi = 0.01, pool = 20000, alignment = 0.5,
// failure_noise = 0.1, stall = 40, chosen on the replay benchmark
// (docs/replay.md).
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <unordered_map>

#include "strategies.hpp"
#include "tune/engine/gaussian_process.hpp"
#include "tune/engine/strategy_base.hpp"

namespace tune::detail {

namespace {
class bo_strategy final : public strategy_base {
 public:
  bo_strategy(search_space_ptr space, const strategy_options& options)
      : strategy_base("bo", std::move(space), options,
                      {{"initial", 20},
                       {"length_scale", 0.7},
                       {"jitter", 1e-4},
                       {"xi", 0.01},
                       {"pool", 20000},
                       {"alignment", 0.5},
                       {"failure_noise", 0.1},
                       {"stall", 40}}),
        initial_(hyper_count("initial", 1)),
        xi_(hyper_in("xi", 0.0, 10.0)),
        failure_noise_(hyper_in("failure_noise", 0.0, 100.0)),
        encoding_(*space_, hyper_in("alignment", 0.0, 10.0)),
        gp_(encoding_.dimension(), hyper_in("length_scale", 1e-3, 1e3), hyper_in("jitter", 1e-9, 1.0)) {
    build_pool(hyper_count("pool", 1));
    stall_ = hyper_count("stall", 0);
    if (stall_ > 0) {
      // NoSE with its defaults, on its own stream of the seed; it sees every
      // result, so its population is the best of everything measured.
      strategy_options inner;
      inner.seed = fork_seed(options.seed, 0x6578706c6f7265);
      explorer_ = make_strategy("nose", space_, inner);
    }
  }

 protected:
  void on_result(const trial_result& result, double fit) override {
    take(result.config);
    if (explorer_) explorer_->observe(result);
    if (fit > 0) {
      double y = std::log(result.time_ms);
      worst_ = std::max(worst_, y);
      observe(result.config, y);
      for (auto& failed : waiting_) observe(failed, worst_, failure_noise_);
      waiting_.clear();
    } else if (gp_.size() > 0) {
      observe(result.config, worst_, failure_noise_);
    } else {
      waiting_.push_back(result.config);
    }
  }

  void generate(std::size_t n, std::vector<configuration>& out) override {
    if (observed_count() < initial_ || gp_.size() == 0) return;
    if (explorer_ && results_since_improvement() >= stall_) {
      // Stalled: the model's expected improvement has settled on one basin.
      for (auto& c : explorer_->propose(n - out.size()))
        if (claim(out, c)) take(c);
      return;
    }
    double best = gp_.best();
    // The top n by expected improvement among the untaken pool members. A
    // candidate whose bound on EI (expected_improvement_bound) is below the
    // n-th best so far is skipped without evaluating erfc.
    while (out.size() < n) {
      std::size_t want = n - out.size();
      top_.clear();
      double threshold = -1;
      for (std::size_t c = 0; c < pool_.size(); ++c) {
        if (taken_[c]) continue;
        double mean = gp_.candidate_mean(c);
        double sd = std::sqrt(gp_.candidate_variance(c));
        if (top_.size() == want && expected_improvement_bound(best - mean - xi_, sd) <= threshold) continue;
        double ei = expected_improvement(mean, sd, best, xi_);
        if (top_.size() == want && ei <= threshold) continue;
        // Ties keep the earlier pool member: strictly better replaces the last.
        auto at = std::find_if(top_.begin(), top_.end(), [&](const auto& t) { return ei > t.first; });
        top_.insert(at, {ei, c});
        if (top_.size() > want) top_.pop_back();
        if (top_.size() == want) threshold = top_.back().first;
      }
      if (top_.empty()) return;  // pool exhausted: strategy_base tops up at random
      for (auto& [ei, c] : top_) {
        taken_[c] = true;
        claim(out, pool_[c]);
      }
    }
  }

 private:
  /// Measured, in flight or claimed: never offered from the pool again.
  void take(const configuration& config) {
    if (auto it = index_.find(config); it != index_.end()) taken_[it->second] = true;
  }

  void observe(const configuration& config, double y, double extra_noise = 0.0) {
    point_.clear();
    encoding_.encode(config, point_);
    gp_.add(point_.data(), y, extra_noise);
  }

  void build_pool(std::size_t limit) {
    // A dataset's members, or the valid set of a Cartesian product of at
    // most 4,000,000; nullptr for larger spaces.
    const auto* all = space_->enumerate_valid(4'000'000);
    if (all && all->size() <= limit) {
      pool_ = *all;
    } else if (all) {
      // A uniform sample without replacement (partial Fisher-Yates on indices).
      std::vector<std::size_t> order(all->size());
      std::iota(order.begin(), order.end(), std::size_t{0});
      for (std::size_t i = 0; i < limit; ++i) {
        std::uniform_int_distribution<std::size_t> pick(i, order.size() - 1);
        std::swap(order[i], order[pick(rng_)]);
        pool_.push_back((*all)[order[i]]);
      }
    } else {
      configuration_set drawn;
      for (std::size_t tries = 0; pool_.size() < limit && tries < 4 * limit; ++tries) {
        auto config = space_->draw_valid(rng_);
        if (!config) break;
        if (drawn.insert(*config).second) pool_.push_back(std::move(*config));
      }
    }
    std::vector<double> points;
    points.reserve(pool_.size() * encoding_.dimension());
    for (std::size_t c = 0; c < pool_.size(); ++c) {
      encoding_.encode(pool_[c], points);
      index_.emplace(pool_[c], c);
    }
    gp_.set_candidates(std::move(points));
    taken_.assign(pool_.size(), false);
  }

  std::size_t initial_;
  std::size_t stall_ = 0;
  std::unique_ptr<strategy> explorer_;
  double xi_;
  double failure_noise_;
  gp_encoding encoding_;
  gaussian_process gp_;
  std::vector<configuration> pool_;
  std::unordered_map<configuration, std::size_t, configuration_hash> index_;
  std::vector<bool> taken_;
  std::vector<configuration> waiting_;  // failures before the first ok result
  double worst_ = -std::numeric_limits<double>::infinity();
  std::vector<double> point_;
  std::vector<std::pair<double, std::size_t>> top_;
};
}  // namespace

std::unique_ptr<strategy> make_bo_strategy(search_space_ptr space, const strategy_options& options) {
  return std::make_unique<bo_strategy>(std::move(space), options);
}

}  // namespace tune::detail
