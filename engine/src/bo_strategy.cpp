// bo: Bayesian optimisation with a Gaussian process and expected improvement,
// the method of Kernel Tuner's bayes_opt strategy (Willemsen et al. 2021,
// "Bayesian optimization for auto-tuning GPU kernels"), with a NoSE
// explorer for when it stalls.
//
// - Pool: the configurations the acquisition chooses from, fixed at the
//   start: every valid configuration when there are at most `pool` of them
//   (a measured dataset's members, or the enumerated valid set), else `pool`
//   distinct valid configurations drawn uniformly from the seed.
// - Start: a space-filling design (space_filling.hpp) of `initial` pool
//   members, the best spread of `design_tries` Latin hypercubes; with a
//   prior, its `prior_top` fastest configurations come first. The model
//   takes over after `initial` results (counted after the prior's), or from
//   `initial_min` on once its leave-one-out predictions correlate with the
//   observed targets by `switch_correlation`; never before an ok result.
//   What the design leaves unfilled is random.
// - Prior (strategy_options::prior): the prior's standardised log times
//   are the model's trend (gaussian_process::set_trend, slope ridged towards
//   `prior_slope` with weight `prior_strength`, clamped at 0); a share
//   `prior_share` of the model's proposals use it, the rest rank by the
//   process alone. After `prior_phase` results (0: never) the prior is
//   dropped: the model is rebuilt from this run's own results, without the
//   trend and without the prior's configurations, and the model goes on as
//   it would without a prior (the NoSE explorer below keeps every result). The prior leads the start, where it gains
//   most; a prior from a device whose optimum lies elsewhere cannot hold the search in the basin it ranks first
//   (dedispersion W6600 in docs/replay.md). Expected improvement and the stall rules below count from this run's own
//   fastest result: the prior's configurations are a head start, not
//   progress of the search.
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
//   in docs/replay.md); crossover of good configurations finds it. A share
//   `stall_model_share` of the requests made while stalled still go to the
//   model (0: none; docs/replay.md, "What `bo` does after it stops
//   improving", has what it costs and gains).
// - Longer stall: after `local_after` results without a faster time, the
//   unmeasured one-step neighbours of the best configuration (one parameter
//   moved to a neighbouring value, parameter::neighbours) come first, in an
//   order drawn from the seed, until one is faster (then the model resumes)
//   or none is left (then NoSE again); 0 turns this off. The explorer
//   recombines what is measured; this tries what lies next to the best,
//   where an optimum a step away hides when its other neighbours are slow.
// - Cap: once the model holds `model_limit` observations it takes no more
//   and NoSE proposes from then on (0: no cap).
//
// Cost per observation: O(pool × observations) (gaussian_process keeps
// every pool member's solve vector up to date) up to the cap, then NoSE's.
// Defaults: bo_defaults() below, chosen on the replay benchmark
// (docs/replay.md).
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <tuple>
#include <unordered_map>

#include "strategies.hpp"
#include "tune/engine/gaussian_process.hpp"
#include "tune/engine/space_filling.hpp"
#include "tune/engine/strategy_base.hpp"

namespace tune::detail {

const hyper_table& bo_defaults() {
  static const hyper_table table = {{"initial", 10},
                                    {"length_scale", 1.0},
                                    {"jitter", 1e-4},
                                    {"xi", 0.01},
                                    {"pool", 20000},
                                    {"alignment", 0.5},
                                    {"failure_noise", 0.1},
                                    {"stall", 40},
                                    {"design_tries", 1},
                                    {"initial_min", 5},
                                    {"switch_correlation", 0.5},
                                    {"model_limit", 300},
                                    {"prior_top", 2},
                                    {"prior_slope", 1.0},
                                    {"prior_strength", 1.0},
                                    {"prior_share", 0.5},
                                    {"local_after", 60},
                                    {"stall_model_share", 0.0},
                                    {"prior_phase", 10}};
  return table;
}

namespace {
class bo_strategy final : public strategy_base {
 public:
  bo_strategy(search_space_ptr space, const strategy_options& options)
      : strategy_base("bo", std::move(space), options, bo_defaults()),
        initial_(hyper_count("initial", 1)),
        initial_min_(hyper_count("initial_min", 1)),
        switch_correlation_(hyper_in("switch_correlation", -1.0, 1.0)),
        prior_share_(hyper_in("prior_share", 0.0, 1.0)),
        xi_(hyper_in("xi", 0.0, 10.0)),
        failure_noise_(hyper_in("failure_noise", 0.0, 100.0)),
        encoding_(*space_, hyper_in("alignment", 0.0, 10.0)),
        gp_(encoding_.dimension(), hyper_in("length_scale", 1e-3, 1e3), hyper_in("jitter", 1e-9, 1.0)) {
    build_pool(hyper_count("pool", 1));
    use_prior(options.prior, hyper_count("prior_top", 0), hyper_in("prior_slope", 0.0, 10.0),
              hyper_in("prior_strength", 1e-6, 1e6));
    prior_design_ = design_.size();
    prior_active_ = !trend_.empty();
    auto avoid = taken_;  // the space-filling part avoids the prior's configurations
    for (auto c : design_) avoid[c] = true;
    auto filling = space_filling_design(*space_, pool_, avoid, initial_, hyper_count("design_tries", 1), rng_);
    design_.insert(design_.end(), filling.begin(), filling.end());
    stall_ = hyper_count("stall", 0);
    prior_phase_ = hyper_count("prior_phase", 0);
    local_after_ = hyper_count("local_after", 0);
    stall_model_share_ = hyper_in("stall_model_share", 0.0, 1.0);
    model_limit_ = hyper_count("model_limit", 0);
    if (stall_ > 0 || model_limit_ > 0) {
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
    if (fit > best_fit_) best_fit_ = fit, best_config_ = result.config;
    ++own_stall_;
    if (fit > 0 && !from_prior(result.config) && std::log(result.time_ms) < own_lowest_)
      own_lowest_ = std::log(result.time_ms), own_stall_ = 0;
    if (model_full()) return;
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
    if (prior_phase_ > 0 && prior_active_ && observed_count() >= prior_phase_) drop_prior();
    if (gp_.size() == 0 || (!modelled_ && !model_ready())) {
      // The space-filling design first; strategy_base tops up at random.
      for (; next_design_ < design_.size() && out.size() < n; ++next_design_) {
        std::size_t c = design_[next_design_];
        if (taken_[c]) continue;
        taken_[c] = true;
        claim(out, pool_[c]);
      }
      return;
    }
    if (local_after_ > 0 && stalled_for() >= local_after_ && !best_config_.empty()) {
      // Stalled for longer: every one-step neighbour of the best, one
      // parameter at a time, in random order, until one is faster.
      std::vector<configuration> steps;
      const auto& params = space_->parameters();
      for (std::size_t i = 0; i < best_config_.size(); ++i)
        for (auto j : params[i]->neighbours(best_config_[i])) {
          auto c = best_config_;
          c[i] = j;
          if (fresh(c)) steps.push_back(std::move(c));
        }
      std::shuffle(steps.begin(), steps.end(), rng_);
      for (auto& c : steps) {
        if (out.size() >= n) break;
        if (claim(out, c)) take(c);
      }
      if (out.size() >= n) return;
    }
    if (explorer_ && (model_full() || (stall_ > 0 && stalled_for() >= stall_ && !model_turn()))) {
      // Stalled: the model's expected improvement has settled on one basin.
      for (auto& c : explorer_->propose(n - out.size()))
        if (claim(out, c)) take(c);
      return;
    }
    // Expected improvement over this run's own best: with a prior, its
    // configurations give the early answer, but the fastest of them, from a
    // basin another device ranks first, must not hold the search there.
    double best =
        prior_design_ > 0 && std::isfinite(own_lowest_) ? (own_lowest_ - gp_.shift()) / gp_.scale() : gp_.best();
    // The top n by expected improvement among the untaken pool members. A
    // candidate whose bound on EI (expected_improvement_bound) is below the
    // n-th best so far is skipped without evaluating erfc.
    while (out.size() < n) {
      // With a prior, proposals alternate between the model with its trend
      // and the same model without it (`prior_share` of them with), so that
      // a misleading prior costs at most a share of the proposals.
      bool with_trend = false;
      std::size_t want = n - out.size();
      if (!trend_.empty()) {
        want = 1;
        with_trend = std::floor(static_cast<double>(model_proposals_ + 1) * prior_share_) >
                     std::floor(static_cast<double>(model_proposals_) * prior_share_);
        ++model_proposals_;
      }
      top_.clear();
      double threshold = -1;
      for (std::size_t c = 0; c < pool_.size(); ++c) {
        if (taken_[c]) continue;
        double mean = gp_.candidate_mean(c, with_trend);
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
  /// Whether the model takes over from the design: after `initial` results,
  /// or earlier, from `initial_min` on, once its leave-one-out predictions
  /// of the observed targets correlate with them by `switch_correlation`.
  bool model_ready() {
    // The prior's configurations lie together: the space-filling part counts.
    if (observed_count() >= prior_design_ + initial_) return modelled_ = true;
    if (observed_count() < prior_design_ + initial_min_) return false;
    std::size_t n = early_y_.size();
    if (n < 3) return false;
    // Dense K = k(X, X) + noise, its Cholesky factor and inverse (n is small).
    std::vector<double> lower(n * n, 0.0);
    std::size_t dim = encoding_.dimension();
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j <= i; ++j) {
        double sum = gp_.kernel(early_points_.data() + i * dim, early_points_.data() + j * dim);
        if (i == j) sum += gp_.noise() + early_noise_[i];
        for (std::size_t k = 0; k < j; ++k) sum -= lower[i * n + k] * lower[j * n + k];
        lower[i * n + j] = i == j ? std::sqrt(std::max(sum, 1e-12)) : sum / lower[j * n + j];
      }
    // Columns of K⁻¹ by two triangular solves per unit vector.
    std::vector<double> inverse(n * n);
    for (std::size_t c = 0; c < n; ++c) {
      std::vector<double> z(n, 0.0);
      for (std::size_t i = 0; i < n; ++i) {
        double sum = i == c ? 1.0 : 0.0;
        for (std::size_t k = 0; k < i; ++k) sum -= lower[i * n + k] * z[k];
        z[i] = sum / lower[i * n + i];
      }
      for (std::size_t i = n; i-- > 0;) {
        double sum = z[i];
        for (std::size_t k = i + 1; k < n; ++k) sum -= lower[k * n + i] * z[k];
        z[i] = sum / lower[i * n + i];
      }
      for (std::size_t i = 0; i < n; ++i) inverse[i * n + c] = z[i];
    }
    double mean = std::accumulate(early_y_.begin(), early_y_.end(), 0.0) / static_cast<double>(n);
    std::vector<double> centred(n), loo(n);
    for (std::size_t i = 0; i < n; ++i) centred[i] = early_y_[i] - mean;
    // Leave-one-out mean: y_i - [K⁻¹ y]_i / [K⁻¹]_ii (zero prior mean).
    for (std::size_t i = 0; i < n; ++i) {
      double alpha = 0;
      for (std::size_t k = 0; k < n; ++k) alpha += inverse[i * n + k] * centred[k];
      loo[i] = centred[i] - alpha / inverse[i * n + i];
    }
    if (pearson(loo, centred) < switch_correlation_) return false;
    return modelled_ = true;
  }

  static double pearson(const std::vector<double>& a, const std::vector<double>& b) {
    double ma = std::accumulate(a.begin(), a.end(), 0.0) / static_cast<double>(a.size());
    double mb = std::accumulate(b.begin(), b.end(), 0.0) / static_cast<double>(b.size());
    double ab = 0, aa = 0, bb = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      ab += (a[i] - ma) * (b[i] - mb);
      aa += (a[i] - ma) * (a[i] - ma);
      bb += (b[i] - mb) * (b[i] - mb);
    }
    return aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : 0.0;
  }

  /// While stalled, whether this request goes to the model: a share
  /// `stall_model_share` of them, spread evenly; the rest go to the explorer.
  bool model_turn() {
    double before = std::floor(static_cast<double>(stalled_requests_) * stall_model_share_);
    ++stalled_requests_;
    return std::floor(static_cast<double>(stalled_requests_) * stall_model_share_) > before;
  }

  /// The model holds `model_limit` observations: it takes no more (each one
  /// costs O(pool × observations)) and the explorer proposes from now on.
  bool model_full() const { return model_limit_ > 0 && gp_.size() >= model_limit_; }

  /// The prior's standardised log times become the model's trend (failures
  /// as its slowest time, configurations it lacks as its mean, 0), and its
  /// `top` fastest pool members open the design.
  void use_prior(const std::vector<trial_result>& prior, std::size_t top, double slope, double strength) {
    std::vector<std::pair<double, std::size_t>> known;  // log time, pool index
    std::vector<std::size_t> failed;
    for (const auto& r : prior) {
      auto it = index_.find(r.config);
      if (it == index_.end()) continue;
      if (r.ok() && r.time_ms > 0)
        known.emplace_back(std::log(r.time_ms), it->second);
      else
        failed.push_back(it->second);
    }
    if (known.size() < 2) return;
    double sum = 0, squares = 0, slowest = -std::numeric_limits<double>::infinity();
    for (auto& [y, c] : known) sum += y, squares += y * y, slowest = std::max(slowest, y);
    double count = static_cast<double>(known.size());
    double mean = sum / count, sd = std::sqrt(std::max(squares / count - mean * mean, 0.0));
    if (!(sd > 0)) return;
    std::vector<double> trend(pool_.size(), 0.0);
    for (auto& [y, c] : known) trend[c] = (y - mean) / sd;
    for (auto c : failed) trend[c] = (slowest - mean) / sd;
    std::stable_sort(known.begin(), known.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (std::size_t i = 0; i < known.size() && design_.size() < top; ++i)
      if (std::find(design_.begin(), design_.end(), known[i].second) == design_.end())
        design_.push_back(known[i].second);
    gp_.set_trend(trend, slope, strength);
    trend_ = std::move(trend);
  }

  /// Whether config is one of the prior's configurations that open the design.
  bool from_prior(const configuration& config) const {
    auto it = index_.find(config);
    auto end = design_.begin() + static_cast<std::ptrdiff_t>(prior_design_);
    return it != index_.end() && std::find(design_.begin(), end, it->second) != end;
  }

  /// Results without a faster time, for the stall rules: without a prior,
  /// since the fastest result; with one, since this run's own fastest (the
  /// prior's configurations do not count), so that a head start from another
  /// device does not cut short the time the model needs to learn this one.
  std::size_t stalled_for() const { return prior_design_ > 0 ? own_stall_ : results_since_improvement(); }

  /// Measured, in flight or claimed: never offered from the pool again.
  void take(const configuration& config) {
    if (auto it = index_.find(config); it != index_.end()) taken_[it->second] = true;
  }

  /// The model starts again from this run's own results, without the
  /// prior's trend and configurations.
  void drop_prior() {
    prior_active_ = false;
    trend_.clear();
    gp_ = gaussian_process(encoding_.dimension(), gp_.length_scale(), gp_.noise());
    std::vector<double> points;
    points.reserve(pool_.size() * encoding_.dimension());
    for (const auto& c : pool_) encoding_.encode(c, points);
    gp_.set_candidates(std::move(points));
    early_points_.clear(), early_y_.clear(), early_noise_.clear();
    auto history = std::move(history_);
    history_.clear();
    for (auto& [config, y, noise] : history)
      if (!from_prior(config)) observe(config, y, noise);
  }

  void observe(const configuration& config, double y, double extra_noise = 0.0) {
    if (prior_active_) history_.emplace_back(config, y, extra_noise);
    point_.clear();
    encoding_.encode(config, point_);
    double trend = 0;
    if (!trend_.empty())
      if (auto it = index_.find(config); it != index_.end()) trend = trend_[it->second];
    gp_.add(point_.data(), y, extra_noise, trend);
    if (!modelled_) {
      early_points_.insert(early_points_.end(), point_.begin(), point_.end());
      early_y_.push_back(y);
      early_noise_.push_back(extra_noise);
    }
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
  std::size_t initial_min_;
  double switch_correlation_;
  double prior_share_;
  std::size_t model_proposals_ = 0;  // proposals of the model while a prior is used
  std::size_t prior_design_ = 0;     // the prior's configurations opening the design
  // Log time of the fastest ok result that is not one of the prior's
  // configurations, and the results since it improved (all of them before).
  double own_lowest_ = std::numeric_limits<double>::infinity();
  std::size_t own_stall_ = 0;
  std::size_t prior_phase_ = 0;
  bool prior_active_ = false;  // a prior is set and not yet dropped
  std::vector<std::tuple<configuration, double, double>> history_;
  bool modelled_ = false;  // the model has taken over from the design
  // Observations made before: encoded points, targets, extra noise.
  std::vector<double> early_points_, early_y_, early_noise_;
  std::size_t stall_ = 0;
  std::size_t local_after_ = 0;       // results without a faster time before the neighbour sweep
  double stall_model_share_ = 0;      // share of the model's proposals while stalled
  std::size_t stalled_requests_ = 0;  // requests while stalled, for model_turn()
  double best_fit_ = 0;
  configuration best_config_;
  std::size_t model_limit_ = 0;
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
  std::vector<std::size_t> design_;  // pool indices, proposed in order
  std::vector<double> trend_;        // per pool member, from the prior
  std::size_t next_design_ = 0;
};
}  // namespace

std::unique_ptr<strategy> make_bo_strategy(search_space_ptr space, const strategy_options& options) {
  return std::make_unique<bo_strategy>(std::move(space), options);
}

}  // namespace tune::detail
