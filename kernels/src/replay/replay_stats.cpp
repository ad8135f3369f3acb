// Fractions of the optimum, the analytic random baseline and the Willemsen score.
#include "tune/kernels/replay_stats.hpp"

#include <algorithm>
#include <cmath>

namespace tune {

std::vector<double> fraction_curve(const replay_run_result& run, double optimum_ms, std::size_t budget) {
  std::vector<double> out(budget, 0.0);
  double f = 0.0;
  for (std::size_t i = 0; i < budget; ++i) {
    if (i < run.steps.size() && std::isfinite(run.steps[i].best_ms)) f = optimum_ms / run.steps[i].best_ms;
    out[i] = f;
  }
  return out;
}

std::optional<std::size_t> first_step_reaching(const replay_run_result& run, double optimum_ms, double threshold) {
  for (std::size_t i = 0; i < run.steps.size(); ++i)
    if (std::isfinite(run.steps[i].best_ms) && optimum_ms / run.steps[i].best_ms >= threshold) return i;
  return std::nullopt;
}

std::optional<double> sim_time_to_reach(const replay_run_result& run, double optimum_ms, double threshold) {
  auto i = first_step_reaching(run, optimum_ms, threshold);
  if (!i) return std::nullopt;
  return run.steps[*i].sim_time_s;
}

std::vector<double> random_fraction_curve(const std::vector<double>& sorted_ok_ms, std::size_t total,
                                          std::size_t budget) {
  // Best of n draws is the j-th best ok configuration (1-based) exactly when
  // none of the first j-1 was drawn but the j-th was:
  //   P(best = j) = q(j-1) - q(j),  q(m) = C(T-m, n) / C(T, n),
  // and q(m+1) = q(m) (T-m-n) / (T-m). With no ok configuration drawn, f = 0.
  const std::size_t k = sorted_ok_ms.size();
  const double t = static_cast<double>(total);
  std::vector<double> out(budget, 0.0);
  if (k == 0) return out;
  const double best = sorted_ok_ms.front();
  for (std::size_t n = 1; n <= budget; ++n) {
    if (n >= total) {
      out[n - 1] = 1.0;
      continue;
    }
    double expected = 0.0;
    double q = 1.0;  // q(0)
    for (std::size_t m = 0; m < k && q > 0; ++m) {
      double next = (t - m - n) <= 0 ? 0.0 : q * (t - m - n) / (t - m);
      expected += (q - next) * (best / sorted_ok_ms[m]);
      q = next;
    }
    out[n - 1] = expected;
  }
  return out;
}

double random_evals_to_reach(const std::vector<double>& sorted_ok_ms, std::size_t total, double threshold) {
  if (sorted_ok_ms.empty()) return std::nan("");
  const double best = sorted_ok_ms.front();
  std::size_t good = 0;
  for (double x : sorted_ok_ms)
    if (best / x >= threshold - 1e-12) ++good;
  return (static_cast<double>(total) + 1.0) / (static_cast<double>(good) + 1.0);
}

double willemsen_score(const std::vector<double>& strategy_mean, const std::vector<double>& random_mean) {
  double sum = 0;
  std::size_t count = 0;
  for (std::size_t i = 0; i < std::min(strategy_mean.size(), random_mean.size()); ++i) {
    if (random_mean[i] >= 1.0) continue;
    sum += (strategy_mean[i] - random_mean[i]) / (1.0 - random_mean[i]);
    ++count;
  }
  return count ? sum / static_cast<double>(count) : 0.0;
}

replay_summary summarize(const replay_dataset& dataset, const std::vector<replay_run_result>& runs,
                         std::size_t budget) {
  replay_summary s;
  s.runs = runs.size();
  s.budget = budget;
  auto sorted = dataset.sorted_ok_times();
  s.optimum_ms = sorted.empty() ? std::nan("") : sorted.front();
  s.mean_f.assign(budget, 0.0);
  s.std_f.assign(budget, 0.0);
  std::vector<std::vector<double>> curves;
  for (const auto& run : runs) curves.push_back(fraction_curve(run, s.optimum_ms, budget));
  for (std::size_t i = 0; i < budget && !runs.empty(); ++i) {
    double sum = 0, sq = 0;
    for (const auto& c : curves) sum += c[i];
    double mean = sum / static_cast<double>(runs.size());
    for (const auto& c : curves) sq += (c[i] - mean) * (c[i] - mean);
    s.mean_f[i] = mean;
    s.std_f[i] = runs.size() > 1 ? std::sqrt(sq / static_cast<double>(runs.size() - 1)) : 0.0;
  }
  s.random_f = random_fraction_curve(sorted, dataset.configs.size(), budget);
  for (double threshold : {0.90, 0.95, 0.99}) {
    replay_summary::reach r;
    r.threshold = threshold;
    double sum = 0;
    std::size_t reached = 0;
    for (const auto& c : curves) {
      auto it = std::find_if(c.begin(), c.end(), [&](double f) { return f >= threshold - 1e-12; });
      if (it == c.end()) {
        ++r.never;
      } else {
        sum += static_cast<double>(it - c.begin() + 1);
        ++reached;
      }
    }
    if (reached) r.mean_evals = sum / static_cast<double>(reached);
    r.random_evals = random_evals_to_reach(sorted, dataset.configs.size(), threshold);
    s.reaches.push_back(r);
  }
  s.score = willemsen_score(s.mean_f, s.random_f);
  return s;
}

}  // namespace tune
