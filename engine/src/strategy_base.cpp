#include "tune/engine/strategy_base.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tune {

double fitness(const trial_result& result) {
  if (!result.ok() || !(result.time_ms > 0)) return 0.0;
  return 1.0 / result.time_ms;
}

void ranked_configurations::insert(double fit, const configuration& config) {
  if (!(fit > 0)) return;
  auto pos = std::upper_bound(entries_.begin(), entries_.end(), fit,
                              [](double f, const auto& entry) { return f > entry.first; });
  entries_.insert(pos, {fit, config});
  if (entries_.size() > capacity_) entries_.pop_back();
}

std::vector<double> ranked_configurations::fitnesses(std::size_t top) const {
  std::vector<double> out;
  for (std::size_t i = 0; i < top && i < entries_.size(); ++i) out.push_back(entries_[i].first);
  return out;
}

namespace {
// Stream id of strategy randomness within a run's seed ("strategy").
constexpr std::uint64_t strategy_stream = 0x7374726174656779ULL;
}  // namespace

strategy_base::strategy_base(std::string name, search_space_ptr space, const strategy_options& options,
                             std::map<std::string, double> defaults)
    : space_(std::move(space)),
      rng_(fork_seed(options.seed, strategy_stream)),
      name_(std::move(name)),
      hyper_(std::move(defaults)) {
  if (!space_) throw std::invalid_argument("strategy '" + name_ + "': no search space");
  for (auto& [key, value] : options.hyper) {
    auto it = hyper_.find(key);
    if (it == hyper_.end()) {
      std::string accepted;
      for (auto& [known, unused] : hyper_) accepted += (accepted.empty() ? "" : ", ") + known;
      throw std::invalid_argument("strategy '" + name_ + "': unknown hyperparameter '" + key +
                                  "' (accepted: " + (accepted.empty() ? "none" : accepted) + ")");
    }
    it->second = value;
  }
}

std::size_t strategy_base::hyper_count(const std::string& key, std::size_t minimum) const {
  double v = hyper(key);
  if (!(v >= static_cast<double>(minimum)) || v != std::floor(v) || v > 1e9)
    throw std::invalid_argument("strategy '" + name_ + "': hyperparameter '" + key +
                                "' must be a whole number >= " + std::to_string(minimum));
  return static_cast<std::size_t>(v);
}

double strategy_base::hyper_in(const std::string& key, double low, double high) const {
  double v = hyper(key);
  if (!(v >= low && v <= high))
    throw std::invalid_argument("strategy '" + name_ + "': hyperparameter '" + key + "' must lie in [" +
                                std::to_string(low) + ", " + std::to_string(high) + "]");
  return v;
}

bool strategy_base::seen(const configuration& config) const {
  if (auto key = space_->key(config)) return seen_keys_.contains(*key);
  return seen_.count(config) > 0;
}

bool strategy_base::mark_seen(const configuration& config) {
  if (auto key = space_->key(config)) return seen_keys_.insert(*key);
  return seen_.insert(config).second;
}

bool strategy_base::fresh(const configuration& config) const {
  // By key, the seen set costs a probe: asked first, it spares evaluating
  // constraints (and a member lookup) on what was measured. By value it costs
  // hashing the configuration: without constraints or a codec, validity (a
  // bounds check and at most a member lookup) is asked first, which spares it
  // for the many mutations that leave a measured dataset's members.
  if (auto key = space_->key(config)) return !seen_keys_.contains(*key) && space_->is_valid(config, *key);
  if (!space_->codec() && space_->constraint_expressions().empty())
    return space_->is_valid(config) && !seen_.count(config);
  return !seen_.count(config) && space_->is_valid(config);
}

bool strategy_base::claim(std::vector<configuration>& out, const configuration& config) {
  if (auto key = space_->key(config)) {  // fresh() and mark_seen() on one key
    if (seen_keys_.contains(*key) || !space_->is_valid(config, *key)) return false;
    seen_keys_.insert(*key);
  } else {
    if (!fresh(config)) return false;
    seen_.insert(config);
  }
  ++seen_valid_;
  out.push_back(config);
  return true;
}

std::vector<configuration> strategy_base::propose(std::size_t n) {
  std::vector<configuration> out;
  if (n == 0) return out;
  generate(n, out);
  while (out.size() < n) {
    auto config = random_unseen();
    if (!config) break;
    claim(out, *config);
  }
  return out;
}

void strategy_base::observe(const trial_result& result) {
  // A result never proposed (resume) counts as measured from now on.
  if (mark_seen(result.config) && space_->is_valid(result.config)) ++seen_valid_;
  ++observed_;
  double fit = fitness(result);
  if (fit > best_fitness_) best_fitness_ = fit, last_improvement_ = observed_;
  on_result(result, fit);
}

std::optional<configuration> strategy_base::random_unseen() {
  if (valid_count_ && *valid_count_ && seen_valid_ >= **valid_count_) return std::nullopt;
  if (!unseen_listed_) {
    // Rejection is cheap while most of the space is unseen.
    for (int attempt = 0; attempt < 64; ++attempt) {
      auto config = space_->draw_valid(rng_, 1000);
      if (!config) break;
      if (!seen(*config)) return config;
    }
    // Mostly seen (or valid points are rare): from now on, draw among the
    // members of the enumerated valid set that were unseen at this point.
    const auto* valid = space_->enumerate_valid();
    if (!valid) return std::nullopt;
    if (!valid_count_) valid_count_ = std::optional<std::uint64_t>(valid->size());
    for (auto& config : *valid)
      if (!seen(config)) unseen_.push_back(&config);
    unseen_listed_ = true;
  }
  // Uniform among the unseen: a draw that meets a member seen since it was
  // listed drops it (swapped with the last) and draws again, so each call
  // costs O(1) amortised instead of a pass over the valid set.
  while (!unseen_.empty()) {
    std::uniform_int_distribution<std::size_t> pick(0, unseen_.size() - 1);
    auto at = pick(rng_);
    if (!seen(*unseen_[at])) return *unseen_[at];
    unseen_[at] = unseen_.back();
    unseen_.pop_back();
  }
  return std::nullopt;
}

void strategy_base::claim_best(std::vector<std::pair<double, configuration>> scored, std::size_t n,
                               std::vector<configuration>& out) {
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (auto& [score, config] : scored) {
    if (out.size() >= n) break;
    claim(out, config);
  }
}

std::optional<configuration> strategy_base::refresh(configuration config,
                                                    const std::function<void(configuration&)>& mutate, int tries) {
  for (int attempt = 0;; ++attempt) {
    if (fresh(config)) return config;
    if (attempt >= tries) return random_unseen();
    mutate(config);
  }
}

void strategy_base::uniform_mutation(configuration& config, double rate) {
  std::bernoulli_distribution flip(rate);
  for (std::size_t i = 0; i < config.size(); ++i)
    if (flip(rng_)) config[i] = space_->parameters()[i]->draw(rng_);
}

configuration strategy_base::single_point_crossover(const configuration& a, const configuration& b) {
  if (a.size() < 2) return a;
  std::uniform_int_distribution<std::size_t> cut_at(1, a.size() - 1);
  auto cut = cut_at(rng_);
  configuration child(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(cut));
  child.insert(child.end(), b.begin() + static_cast<std::ptrdiff_t>(cut), b.end());
  return child;
}

std::size_t strategy_base::roulette(const std::vector<double>& weights) {
  double total = 0;
  for (double w : weights) total += w;
  if (!(total > 0)) {
    std::uniform_int_distribution<std::size_t> pick(0, weights.size() - 1);
    return pick(rng_);
  }
  std::uniform_real_distribution<double> u(0.0, total);
  double r = u(rng_);
  for (std::size_t i = 0; i < weights.size(); ++i) {
    r -= weights[i];
    if (r < 0) return i;
  }
  return weights.size() - 1;
}

}  // namespace tune
