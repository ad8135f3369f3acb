// Replayed evaluation and searches: strategies ask, the dataset answers.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <stdexcept>

#include "parallel_runs.hpp"
#include "tune/engine/strategy.hpp"
#include "tune/kernels/replay.hpp"

namespace tune {

replay_evaluation evaluate(const replay_dataset& dataset, const configuration& config, rng_type* noise) {
  const replay_record* rec = dataset.find(config);
  if (!rec)
    throw std::invalid_argument(dataset.origin + ": configuration " + dataset.space->to_json(config) +
                                " is not in the dataset");
  replay_evaluation out;
  out.state = rec->state;
  out.time_ms = rec->time_ms;
  if (noise && rec->state == status::ok && !rec->times_ms.empty()) {
    std::uniform_int_distribution<std::size_t> pick(0, rec->times_ms.size() - 1);
    out.time_ms = rec->times_ms[pick(*noise)];
  }
  out.cost_s = rec->compile_s + rec->benchmark_s + rec->verification_s;
  return out;
}

std::vector<trial_result> replay_prior(const std::vector<const replay_dataset*>& priors, const search_space& space) {
  std::vector<trial_result> carried;
  for (const auto* prior : priors) {
    for (std::size_t i = 0; i < prior->configs.size(); ++i) {
      std::map<std::string, parameter_value> values;
      for (auto& [name, value] : prior->space->values(prior->configs[i])) values.emplace(name, value);
      trial_result r;
      try {
        r.config = space.from_values(values);
      } catch (const std::invalid_argument&) {
        continue;  // a value this space does not have
      }
      r.state = prior->records[i].state;
      r.time_ms = prior->records[i].time_ms;
      carried.push_back(std::move(r));
    }
  }
  if (carried.empty())
    throw std::invalid_argument((priors.empty() ? std::string("prior") : priors.front()->origin) +
                                ": no configuration of the prior is in the search space " + space.origin() +
                                "; a prior must come from the same kernel's space");
  return merged_prior(carried);
}

replay_run_result replay_search(const replay_dataset& dataset, const replay_run_options& options) {
  strategy_options sopt;
  sopt.seed = options.seed;
  sopt.hyper = options.hyper;
  sopt.prior = options.prior;
  auto search = make_strategy(options.strategy, dataset.space, sopt);
  return replay_search(dataset, *search, options);
}

replay_run_result replay_search(const replay_dataset& dataset, strategy& search, const replay_run_options& options) {
  auto* strat = &search;
  auto started = std::chrono::steady_clock::now();
  rng_type noise_rng(fork_seed(options.seed, 0x6e6f697365));
  replay_run_result out;
  configuration_set seen;
  double clock = 0.0;
  // The best found is the configuration with the fastest measurement; with
  // noise it is judged by its recorded mean time, so f never exceeds 1.
  double best_measured = std::nan("");
  double best = std::nan("");
  const std::size_t budget = std::min(options.budget, dataset.configs.size());
  // A strategy that only repeats itself must not loop forever.
  std::size_t idle = 0;
  const std::size_t idle_limit = 1000 + 10 * budget;
  while (out.steps.size() < budget && idle < idle_limit) {
    auto proposals = strat->propose(1);
    if (proposals.empty()) break;
    for (auto& config : proposals) {
      trial_result tr;
      tr.config = config;
      if (!dataset.space->is_valid(config)) {
        ++out.rejected;
        ++idle;
        tr.state = status::instantiation_error;
        strat->observe(tr);
        continue;
      }
      auto ev = evaluate(dataset, config, options.noise ? &noise_rng : nullptr);
      tr.state = ev.state;
      tr.time_ms = ev.time_ms;
      if (!seen.insert(config).second || out.steps.size() >= budget) {
        if (out.steps.size() < budget) ++out.duplicates;
        ++idle;
        strat->observe(tr);
        continue;
      }
      idle = 0;
      clock += ev.cost_s;
      if (tr.ok() && !(best_measured <= tr.time_ms)) {
        best_measured = tr.time_ms;
        best = dataset.find(config)->time_ms;
      }
      out.steps.push_back({config, ev.state, ev.time_ms, clock, best});
      strat->observe(tr);
    }
  }
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return out;
}

std::vector<replay_run_result> replay_searches(const replay_dataset& dataset, const replay_run_options& options,
                                               std::size_t runs, unsigned threads) {
  std::vector<replay_run_result> out(runs);
  detail::parallel_runs(runs, threads, [&](std::size_t r) {
    auto o = options;
    o.seed = options.seed + r;
    out[r] = replay_search(dataset, o);
  });
  return out;
}

}  // namespace tune
