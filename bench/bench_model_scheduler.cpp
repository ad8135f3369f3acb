// The task scheduler on a replayed model: the model's tasks are measured
// datasets (tune/model.hpp's `dataset:` entries), each searched by its own
// strategy; one trial budget for the model, spent in rounds of R trials of the
// task the scheduler picks. For each seed, gradient and round robin run on the
// same seeds; the figure is the model's weighted latency, sum of count x best
// recorded time, over the trials, relative to its optimum (every task at the
// fastest time its dataset holds).
//
//   bench_model_scheduler [--model FILE] [--seeds N] [--budget B] [--round R]
//                         [--strategy NAME] [--half-life H] [--patience P] [--out FILE.md]
//
// --half-life and --patience set the scheduler's stall_half_life and patience
// (task_scheduler_options); TUNE_BENCH_VERBOSE=1 prints each run's rounds and
// best time per task on stderr.
//
// Headline: the trials the gradient scheduler needs to reach the weighted
// latency round robin has at the full budget (per seed; the median and the
// mean over seeds, as a fraction of the budget). Beside it the oracle, the
// bound on every scheduler: each task's search run alone in the same rounds,
// then the best split of the rounds among the tasks knowing those curves
// (tune::best_split_latency). TUNE_BENCH_CURVES=FILE writes those curves, one
// line per seed and task: seed, count, the task's best after each round.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <numeric>

#include "bench_replay.hpp"
#include "bench_text.hpp"
#include "tune/engine/median.hpp"
#include "tune/engine/strategy.hpp"
#include "tune/engine/task_scheduler.hpp"
#include "tune/kernels/replay.hpp"
#include "tune/model.hpp"

namespace {

using namespace tune;

struct options {
  std::string model = std::string(TUNE_DATA_DIR) + "/../examples/models/replayed_gpu.yaml";
  std::size_t seeds = 20;
  std::size_t budget = 0;  // 0: 100 per task
  std::uint32_t round = 8;
  std::string strategy;
  std::string out;
  std::uint32_t patience = 0;
  double half_life = task_scheduler_options{}.stall_half_life;
};

/// One trial of a replayed task: its recorded result goes to the task's
/// search, and lowers `best` when it is faster.
void replay_trial(const replay_dataset& data, strategy& search, const configuration& config, double& best) {
  auto e = evaluate(data, config, nullptr);
  trial_result r;
  r.config = config;
  r.state = e.state;
  r.time_ms = e.time_ms;
  search.observe(r);
  if (r.ok() && !(r.time_ms >= best)) best = r.time_ms;
}

/// The weighted latency after each trial (NaN until every task has a best) and
/// after each round.
struct model_run {
  std::vector<double> trials, rounds;
};

model_run run_model(const model& m, const std::vector<std::shared_ptr<replay_dataset>>& data, scheduler_kind kind,
                    const options& o, std::uint64_t seed) {
  std::vector<scheduled_task> tasks;
  for (const auto& t : m.tasks) tasks.push_back({t.label(), t.count, 0.0, t.family});
  task_scheduler_options so;
  so.kind = kind;
  so.seed = seed;
  so.patience = o.patience;
  so.stall_half_life = o.half_life;
  task_scheduler scheduler(tasks, so);
  std::vector<std::unique_ptr<strategy>> searches;
  for (const auto& d : data) {
    strategy_options sopt;
    sopt.seed = seed;
    searches.push_back(make_strategy(o.strategy, d->space, sopt));
  }
  std::vector<double> best(m.tasks.size(), std::nan(""));
  std::vector<double> curve, after_round;
  auto latency = [&] {
    double sum = 0;
    for (std::size_t i = 0; i < best.size(); ++i) sum += m.tasks[i].count * best[i];
    return sum;  // NaN while a task has none
  };
  while (curve.size() < o.budget) {
    auto pick = scheduler.next();
    if (!pick) break;
    const std::size_t t = *pick;
    std::size_t measured = 0;
    while (measured < o.round && curve.size() < o.budget) {
      auto proposals = searches[t]->propose(std::min<std::size_t>(o.round - measured, o.budget - curve.size()));
      if (proposals.empty()) break;
      for (const auto& config : proposals) {
        replay_trial(*data[t], *searches[t], config, best[t]);
        curve.push_back(latency());
        ++measured;
      }
    }
    if (measured == 0) scheduler.mark_done(t);
    scheduler.record_round(t, best[t]);
    after_round.push_back(latency());
  }
  if (std::getenv("TUNE_BENCH_VERBOSE"))
    for (std::size_t i = 0; i < best.size(); ++i)
      std::fprintf(stderr, "%s %s: rounds %u best %.4f (optimum %.4f) x%g\n", to_string(kind).data(),
                   m.tasks[i].label().c_str(), scheduler.rounds(i), best[i], data[i]->best_time_ms(), m.tasks[i].count);
  return {curve, after_round};
}

/// Each task's search alone, in rounds of o.round trials as the scheduler gives
/// them: the task's best time after each of its rounds (NaN before its first
/// result). A task's search does not depend on the order in which rounds of
/// other tasks come, so these are the curves every scheduler draws from.
std::vector<std::vector<double>> task_curves(const model& m, const std::vector<std::shared_ptr<replay_dataset>>& data,
                                             const options& o, std::uint64_t seed, std::size_t rounds) {
  std::vector<std::vector<double>> curves;
  for (std::size_t t = 0; t < m.tasks.size(); ++t) {
    strategy_options sopt;
    sopt.seed = seed;
    auto search = make_strategy(o.strategy, data[t]->space, sopt);
    double best = std::nan("");
    std::vector<double> curve;
    for (std::size_t r = 0; r < rounds; ++r) {
      std::size_t measured = 0;
      while (measured < o.round) {
        auto proposals = search->propose(o.round - measured);
        if (proposals.empty()) break;
        for (const auto& config : proposals) {
          replay_trial(*data[t], *search, config, best);
          ++measured;
        }
      }
      curve.push_back(best);
    }
    curves.push_back(std::move(curve));
  }
  return curves;
}

int run(int argc, char** argv) {
  options o;
  CLI::App app{
      "The task scheduler on a replayed model: weighted latency against trials for the gradient rule, "
      "Ansor's rule and round robin, against the oracle (the comment at the top of "
      "bench/bench_model_scheduler.cpp says more)"};
  bench::last_value_wins(app);
  app.add_option("--model", o.model, "The model file (its tasks replayed datasets)")->capture_default_str();
  app.add_option("--seeds", o.seeds, "Seeds 1..N")->capture_default_str()->check(bench::more_than_zero());
  app.add_option("--budget", o.budget, "Trials of the model (0: 100 per task)")->capture_default_str();
  app.add_option("--round", o.round, "Trials of a round")->capture_default_str()->check(bench::more_than_zero());
  app.add_option("--strategy", o.strategy, "Strategy (default: the default strategy)");
  app.add_option("--half-life", o.half_life, "The gradient rule's stall half-life in rounds (0: Ansor's rule)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--patience", o.patience, "Rounds without a gain after which a task is done (0: never)")
      ->capture_default_str();
  app.add_option("--out", o.out, "Also write the table to this Markdown file");
  if (auto rc = tune::bench::parse_options(app, argc, argv)) return *rc;
  if (o.strategy.empty()) o.strategy = default_strategy_name();
  const model m = read_model(o.model);
  if (o.budget == 0) o.budget = 100 * m.tasks.size();
  std::vector<std::shared_ptr<replay_dataset>> data;
  double optimum = 0;
  for (const auto& t : m.tasks) {
    if (t.dataset.empty()) throw std::invalid_argument(o.model + ": task " + t.label() + " is not a dataset");
    data.push_back(std::make_shared<replay_dataset>(read_replay_dataset(t.dataset)));
    optimum += t.count * data.back()->best_time_ms();
  }

  std::string md = fmt::format(
      "Model {} ({} tasks), strategy `{}`, {} trials in rounds of {}, seeds 1–{}: weighted latency "
      "(sum of count × best recorded time) relative to its optimum ({:.4f} ms), mean over seeds.\n\n",
      m.name, m.tasks.size(), o.strategy, o.budget, o.round, o.seeds, optimum);
  std::vector<std::vector<double>> curves[2], round_curves[2];
  std::vector<std::vector<double>> oracle;  // per seed, index: rounds - 1
  const std::size_t rounds = (o.budget + o.round - 1) / o.round;
  std::vector<double> weights;
  for (const auto& t : m.tasks) weights.push_back(t.count);
  for (std::size_t s = 1; s <= o.seeds; ++s) {
    for (int k = 0; k < 2; ++k) {
      auto run = run_model(m, data, k == 0 ? scheduler_kind::gradient : scheduler_kind::round_robin, o, s);
      curves[k].push_back(std::move(run.trials));
      round_curves[k].push_back(std::move(run.rounds));
    }
    const auto alone = task_curves(m, data, o, s, rounds);
    if (const char* dump = std::getenv("TUNE_BENCH_CURVES")) {
      // One line per seed and task: the task's best after each of its rounds.
      std::ofstream f(dump, s == 1 ? std::ios::trunc : std::ios::app);
      for (std::size_t t = 0; t < alone.size(); ++t) {
        f << s << ' ' << m.tasks[t].count;
        for (double g : alone[t]) f << ' ' << g;
        f << '\n';
      }
    }
    oracle.push_back(best_split_latency(weights, alone, rounds));
  }
  // Every scheduler's split is one of those the oracle looked at: a run below
  // it after as many rounds would mean a task's search depended on when its
  // rounds came.
  for (std::size_t s = 0; s < o.seeds; ++s)
    for (int k = 0; k < 2; ++k)
      for (std::size_t r = 1; r <= round_curves[k][s].size() && r <= rounds; ++r)
        if (round_curves[k][s][r - 1] < oracle[s][r - 1] * (1.0 - 1e-12))
          throw std::logic_error(
              fmt::format("seed {}: a scheduler's latency after {} rounds is below the oracle's", s + 1, r));
  // The oracle's latency after `trials` trials: its best split of the whole
  // rounds among them.
  auto oracle_at = [&](std::size_t seed, std::size_t trials) {
    const std::size_t r = trials / o.round;
    return r == 0 ? std::nan("") : oracle[seed][r - 1];
  };
  // The relative latency at fractions of the budget.
  md += "| trials | gradient | round robin | oracle |\n|---:|---:|---:|---:|\n";
  for (double frac : {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0}) {
    const std::size_t at = std::max<std::size_t>(1, static_cast<std::size_t>(std::lround(frac * o.budget)));
    double mean[3] = {0, 0, 0};
    std::size_t n[3] = {0, 0, 0};
    for (int k = 0; k < 2; ++k)
      for (const auto& c : curves[k])
        if (c.size() >= at && std::isfinite(c[at - 1])) {
          mean[k] += c[at - 1] / optimum;
          ++n[k];
        }
    for (std::size_t s = 0; s < o.seeds; ++s)
      if (const double v = oracle_at(s, at); std::isfinite(v)) {
        mean[2] += v / optimum;
        ++n[2];
      }
    auto cell = [&](int k) { return n[k] ? fmt::format("{:.4f}", mean[k] / n[k]) : std::string("—"); };
    md += fmt::format("| {} | {} | {} | {} |\n", at, cell(0), cell(1), cell(2));
  }
  // Per seed: whole rounds the oracle needs to reach round robin's latency at
  // the budget (at most the budget's rounds: round robin is one of its splits).
  std::vector<double> oracle_fractions;
  for (std::size_t s = 0; s < o.seeds; ++s) {
    const double target = curves[1][s].empty() ? std::nan("") : curves[1][s].back();
    for (std::size_t r = 1; r <= rounds; ++r)
      if (oracle[s][r - 1] <= target) {
        oracle_fractions.push_back(static_cast<double>(r * o.round) / static_cast<double>(curves[1][s].size()));
        break;
      }
  }
  // Per seed: trials for gradient to reach round robin's latency at the budget.
  std::vector<double> fractions;
  std::size_t never = 0;
  for (std::size_t s = 0; s < o.seeds; ++s) {
    const auto& rr = curves[1][s];
    const auto& gr = curves[0][s];
    const double target = rr.empty() ? std::nan("") : rr.back();
    std::size_t reached = 0;
    for (std::size_t i = 0; i < gr.size(); ++i)
      if (gr[i] <= target) {
        reached = i + 1;
        break;
      }
    if (reached)
      fractions.push_back(static_cast<double>(reached) / static_cast<double>(rr.size()));
    else
      ++never;
  }
  const double med = fractions.empty() ? std::nan("") : median(fractions);
  const double mean =
      fractions.empty() ? std::nan("") : std::accumulate(fractions.begin(), fractions.end(), 0.0) / fractions.size();
  md += fmt::format(
      "\nTrials the gradient scheduler needs to reach round robin's weighted latency at {} trials: "
      "median {:.2f}×, mean {:.2f}× the budget over {} seeds ({} never reached it).\n",
      o.budget, med, mean, fractions.size(), never);
  if (!oracle_fractions.empty())
    md += fmt::format(
        "The oracle (each task's search run alone first, then the best split of whole rounds among the tasks): "
        "median {:.2f}×, mean {:.2f}× the budget over {} seeds; no scheduler can need fewer with these searches.\n",
        median(oracle_fractions),
        std::accumulate(oracle_fractions.begin(), oracle_fractions.end(), 0.0) / oracle_fractions.size(),
        oracle_fractions.size());
  std::fputs(md.c_str(), stdout);
  if (!o.out.empty()) std::ofstream(o.out) << md;
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return tune::bench::guarded_main("bench_model_scheduler", run, argc, argv); }
