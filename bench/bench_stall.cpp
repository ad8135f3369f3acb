// What a strategy proposes once it stops improving, on replayed datasets.
//
//   bench_stall [--runs R] [--budget N] [--seed S] [--out DIR] [--strategy NAME]
//               [--hyper strategy:name=value …] [--worst K] [--window W]
//               [--trace] [--kinds KINDS.json] DATASET …
//
// R runs of N evaluations per dataset (seeds S, S+1, …). Per dataset, for all
// runs and for the K runs that end lowest (f at N, ties broken by f at 300,
// 200, 100): mean f at 20 / 50 / 100 / 200 / 300 / 500, the evaluation after which f
// no longer rises (the last faster time; median and range over the runs),
// and what the runs proposed after it. A third row takes the stalls below
// f = 0.99: every stretch of at least W evaluations without a faster time
// while f < 0.99, whatever follows it. Of the proposals in each group:
//   - steps: distance to the incumbent (the fastest configuration measured
//     before the proposal) in parameter steps: |index difference| for an
//     ordered (discrete) parameter, 1 for another value of any other kind,
//     summed over the parameters; the share within 1 and 2 steps;
//   - time / incumbent: the median over the ok proposals of their recorded
//     time over the incumbent's, and the share that failed;
//   - near repeats: the share within one step of any configuration measured
//     before (the incumbent included);
//   - regions: per run, the proposals grouped by leader clustering in order
//     (a proposal more than 2 steps from every earlier leader opens a region);
//     the median over the runs.
// Writes DIR/stall.md and prints it; with --trace also DIR/<dataset>_trace.csv,
// every step of every run.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "bench_replay.hpp"
#include "bench_text.hpp"
#include "tune/engine/strategy.hpp"
#include "tune/kernels/replay.hpp"
#include "tune/kernels/replay_stats.hpp"

namespace {

using namespace tune;

/// Distance in parameter steps (see the header comment).
std::uint64_t steps_between(const search_space& space, const configuration& a, const configuration& b) {
  const auto& params = space.parameters();
  std::uint64_t d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] == b[i]) continue;
    d += params[i]->kind() == parameter_kind::discrete ? (a[i] > b[i] ? a[i] - b[i] : b[i] - a[i]) : 1;
  }
  return d;
}

/// Parameters whose values differ.
std::size_t differing(const configuration& a, const configuration& b) {
  std::size_t d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d += a[i] != b[i];
  return d;
}

/// One counted proposal, seen against what the run had measured before it.
struct proposal {
  std::uint64_t steps = 0;   // to the incumbent
  double ratio = NAN;        // time / incumbent's time; NaN when it failed
  bool near_repeat = false;  // within one step of an earlier measured configuration
};

struct run_view {
  std::vector<double> f;               // after each evaluation
  std::vector<proposal> proposals;     // parallel to the run's steps
  std::vector<std::size_t> incumbent;  // step index of the incumbent before each step (npos: none)
  std::size_t plateau = 0;             // evaluations up to and including the last faster time
};

constexpr std::size_t none = static_cast<std::size_t>(-1);

run_view view_run(const replay_dataset& data, const replay_run_result& run, std::size_t budget) {
  const auto& space = *data.space;
  run_view v;
  v.f = fraction_curve(run, data.best_time_ms(), budget);
  const auto& steps = run.steps;
  std::size_t best = none;
  for (std::size_t k = 0; k < steps.size(); ++k) {
    v.incumbent.push_back(best);
    proposal p;
    if (best != none) {
      p.steps = steps_between(space, steps[k].config, steps[best].config);
      if (steps[k].state == status::ok) p.ratio = steps[k].time_ms / steps[best].time_ms;
    }
    for (std::size_t j = 0; j < k && !p.near_repeat; ++j)
      p.near_repeat = steps_between(space, steps[k].config, steps[j].config) <= 1;
    v.proposals.push_back(p);
    if (steps[k].state == status::ok && (best == none || steps[k].time_ms < steps[best].time_ms)) {
      best = k;
      v.plateau = k + 1;
    }
  }
  return v;
}

double median(std::vector<double> x) {
  if (x.empty()) return NAN;
  std::sort(x.begin(), x.end());
  std::size_t n = x.size();
  return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

/// The proposals of a group: per run, the step indices that belong to it.
struct group_stats {
  std::size_t proposals = 0, runs_with = 0;
  double within1 = 0, within2 = 0, failed = 0, near = 0;
  double median_ratio = NAN, median_steps = NAN, median_regions = NAN, median_per_run = NAN;
};

group_stats describe(const replay_dataset& data, const std::vector<replay_run_result>& runs,
                     const std::vector<run_view>& views, const std::vector<std::vector<std::size_t>>& picked) {
  group_stats g;
  std::vector<double> ratios, steps, regions, per_run;
  for (std::size_t r = 0; r < picked.size(); ++r) {
    if (picked[r].empty()) continue;
    ++g.runs_with;
    per_run.push_back(static_cast<double>(picked[r].size()));
    std::vector<const configuration*> leaders;
    for (auto k : picked[r]) {
      const auto& p = views[r].proposals[k];
      ++g.proposals;
      g.within1 += p.steps <= 1;
      g.within2 += p.steps <= 2;
      g.near += p.near_repeat;
      steps.push_back(static_cast<double>(p.steps));
      if (std::isnan(p.ratio))
        ++g.failed;
      else
        ratios.push_back(p.ratio);
      const auto& c = runs[r].steps[k].config;
      if (std::none_of(leaders.begin(), leaders.end(),
                       [&](const configuration* l) { return steps_between(*data.space, c, *l) <= 2; }))
        leaders.push_back(&c);
    }
    regions.push_back(static_cast<double>(leaders.size()));
  }
  if (g.proposals > 0) {
    double n = static_cast<double>(g.proposals);
    g.within1 /= n, g.within2 /= n, g.failed /= n, g.near /= n;
  }
  g.median_ratio = median(ratios);
  g.median_steps = median(steps);
  g.median_regions = median(regions);
  g.median_per_run = median(per_run);
  return g;
}

std::string pct(double x) { return fmt::format("{:.0f}%", 100 * x); }

std::string row_of(const group_stats& g) {
  if (g.proposals == 0) return "– | – | – | – | – | – | – | –";
  return fmt::format("{} ({:.0f}) | {} | {} | {:.0f} | {:.2f} | {} | {} | {:.0f}", g.proposals, g.median_per_run,
                     pct(g.within1), pct(g.within2), g.median_steps, g.median_ratio, pct(g.failed), pct(g.near),
                     g.median_regions);
}

int run(int argc, char** argv) {
  bench::replay_bench_args args;
  args.runs = 30;
  std::string strategy = "bo";
  std::map<std::string, std::map<std::string, double>> hyper;
  std::size_t worst = 5, window = 50;
  bool trace = false;  // DIR/<dataset>_trace.csv: every step of every run
  std::vector<std::string> hypers;
  CLI::App app{
      "Where a strategy stalls on replayed datasets: f after n evaluations, the plateau, and what it "
      "proposes after it (the comment at the top of bench/bench_stall.cpp says more)"};
  bench::last_value_wins(app);
  args.add_to(app);
  app.add_option("--strategy", strategy, "Strategy")->capture_default_str();
  bench::add_repeatable(app, "--hyper", hypers, "A strategy's hyperparameter, strategy:name=value");
  app.add_option("--worst", worst, "Runs that end lowest, looked at apart")->capture_default_str();
  app.add_option("--window", window, "Evaluations without a faster time that make a stall")->capture_default_str();
  app.add_flag("--trace", trace, "Write every step of every run to DIR/<dataset>_trace.csv");
  if (auto rc = tune::bench::parse_options(app, argc, argv)) return *rc;
  args.finish(app);
  for (const auto& h : hypers) bench::add_hyper(h, hyper);
  const std::size_t runs = args.runs, budget = args.budget;
  worst = std::min(worst, runs);
  std::ostringstream md, targets;
  md << fmt::format(
      "`{}`, {} runs (seeds {}..{}) of {} evaluations per dataset. f@n: mean f after n evaluations (f = optimum / "
      "best found). Plateau: the "
      "evaluation of the last faster time, median (min–max) over the runs. Then, of the proposals after the "
      "plateau (\"after\"; all runs, then the {} runs that end lowest) and of those in stretches of at least {} "
      "evaluations without a faster time while f < 0.99 (\"stalls\"): count (median per run that has any), share "
      "within 1 and 2 parameter steps of the incumbent, median steps, median time / incumbent's (ok ones), share "
      "failed, share within 1 step of a configuration measured before, median regions per run (leaders more than "
      "2 steps apart). Hyperparameters set: ",
      strategy, runs, args.seed, args.seed + runs - 1, budget, worst, window);
  if (auto it = hyper.find(strategy); it != hyper.end())
    for (const auto& [name, value] : it->second) md << fmt::format("`{}={}` ", name, value);
  else
    md << "none (the defaults)";
  md << "\n\n| dataset | runs | f@20 / 50 / 100 / 200 / 300 / 500 | plateau | proposals | ≤1 step | ≤2 steps | median "
        "steps | time / incumbent | failed | near repeats | regions |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& [path, kinds_file] : args.datasets) {
    auto label = bench::dataset_label(path);
    auto data = read_replay_dataset(path, kinds_file.empty() ? kind_overrides{} : read_kind_overrides(kinds_file));
    replay_run_options options;
    options.strategy = strategy;
    options.budget = budget;
    options.seed = args.seed;
    if (auto it = hyper.find(strategy); it != hyper.end()) options.hyper = it->second;
    auto results = replay_searches(data, options, runs, 2);
    std::vector<run_view> views;
    for (const auto& r : results) views.push_back(view_run(data, r, budget));
    // The runs that end lowest: f at the budget, then at 300, 200, 100.
    std::vector<std::size_t> order(runs);
    std::iota(order.begin(), order.end(), std::size_t{0});
    auto key = [&](std::size_t r) {
      std::vector<double> k;
      for (std::size_t e : {budget, std::size_t{300}, std::size_t{200}, std::size_t{100}})
        k.push_back(e <= budget ? views[r].f[e - 1] : 0.0);
      return k;
    };
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return key(a) < key(b); });
    std::vector<std::size_t> lowest(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(worst));
    std::vector<std::size_t> all(order);
    std::sort(all.begin(), all.end());

    auto f_at = [&](const std::vector<std::size_t>& set, std::size_t e) {
      if (e > budget) return std::string("–");
      double sum = 0;
      for (auto r : set) sum += views[r].f[e - 1];
      return fmt::format("{:.3f}", sum / static_cast<double>(set.size()));
    };
    auto plateau = [&](const std::vector<std::size_t>& set) {
      std::vector<double> p;
      for (auto r : set) p.push_back(static_cast<double>(views[r].plateau));
      auto [lo, hi] = std::minmax_element(p.begin(), p.end());
      return fmt::format("{:.0f} ({:.0f}–{:.0f})", median(p), *lo, *hi);
    };
    auto after_plateau = [&](const std::vector<std::size_t>& set) {
      std::vector<std::vector<std::size_t>> picked(runs);
      for (auto r : set)
        for (std::size_t k = views[r].plateau; k < results[r].steps.size(); ++k) picked[r].push_back(k);
      return describe(data, results, views, picked);
    };
    // Stretches of at least `window` evaluations without a faster time while f < 0.99.
    std::vector<std::vector<std::size_t>> stalls(runs);
    std::size_t stretches = 0;
    std::vector<const configuration*> good;  // f >= 0.99
    for (std::size_t c = 0; c < data.configs.size(); ++c)
      if (data.records[c].state == status::ok && data.best_time_ms() / data.records[c].time_ms >= 0.99)
        good.push_back(&data.configs[c]);
    std::vector<double> to_target, top_to_target, stall_start, target_differing, stall_f;
    for (auto r : all) {
      const auto& v = views[r];
      std::size_t n = results[r].steps.size();
      // Consecutive steps with one incumbent; the last of them may be the one that beats it.
      for (std::size_t j = 0; j < n;) {
        if (v.incumbent[j] == none) {
          ++j;
          continue;
        }
        std::size_t start = j;
        while (j < n && v.incumbent[j] == v.incumbent[start]) ++j;
        if (j - start >= window && v.f[start - 1] < 0.99) {
          ++stretches;
          // How far the target lay: from the incumbent, and from the nearest
          // of the ten fastest configurations measured before the stretch.
          auto to_good = [&](const configuration& c) {
            std::uint64_t d = std::numeric_limits<std::uint64_t>::max();
            for (const auto* g : good) d = std::min(d, steps_between(*data.space, c, *g));
            return static_cast<double>(d);
          };
          const auto& steps = results[r].steps;
          const auto& incumbent = steps[v.incumbent[start]];
          to_target.push_back(to_good(incumbent.config));
          std::size_t apart = incumbent.config.size();
          for (const auto* g : good) apart = std::min(apart, differing(incumbent.config, *g));
          target_differing.push_back(static_cast<double>(apart));
          stall_f.push_back(v.f[start - 1]);
          std::vector<std::size_t> measured(start);
          std::iota(measured.begin(), measured.end(), std::size_t{0});
          std::erase_if(measured, [&](std::size_t k) { return steps[k].state != status::ok; });
          std::size_t top = std::min<std::size_t>(10, measured.size());
          std::partial_sort(measured.begin(), measured.begin() + static_cast<std::ptrdiff_t>(top), measured.end(),
                            [&](auto a, auto b) { return steps[a].time_ms < steps[b].time_ms; });
          double nearest = std::numeric_limits<double>::infinity();
          for (std::size_t t = 0; t < top; ++t) nearest = std::min(nearest, to_good(steps[measured[t]].config));
          top_to_target.push_back(nearest);
          stall_start.push_back(static_cast<double>(start));
          for (std::size_t k = start; k < j; ++k) stalls[r].push_back(k);
        }
      }
    }
    auto curve = [&](const std::vector<std::size_t>& set) {
      std::string out;
      for (std::size_t e : {20, 50, 100, 200, 300, 500}) out += (out.empty() ? "" : " / ") + f_at(set, e);
      return out;
    };
    md << fmt::format("| {} | all {} | {} | {} | after: {} |\n", label, runs, curve(all), plateau(all),
                      row_of(after_plateau(all)));
    md << fmt::format("| {} | lowest {} | {} | {} | after: {} |\n", label, worst, curve(lowest), plateau(lowest),
                      row_of(after_plateau(lowest)));
    md << fmt::format("| {} | stalls: {} in {} runs | | from {} | {} |\n", label, stretches,
                      std::count_if(stalls.begin(), stalls.end(), [](const auto& s) { return !s.empty(); }),
                      stall_start.empty() ? "–" : fmt::format("{:.0f}", median(stall_start)),
                      row_of(describe(data, results, views, stalls)));
    if (stretches > 0)
      targets << fmt::format("| {} | {} | {} | {:.3f} | {:.0f} | {:.0f} | {:.0f} |\n", label, good.size(), stretches,
                             median(stall_f), median(to_target), median(target_differing), median(top_to_target));
    if (trace) {
      auto name = label;
      std::replace(name.begin(), name.end(), '/', '_');
      std::filesystem::create_directories(args.out_dir);
      std::ofstream csv(args.out_dir + "/" + name + "_trace.csv");
      csv << "seed,eval,f,steps_to_incumbent,time_over_incumbent,near_repeat,config\n";
      for (std::size_t r = 0; r < runs; ++r)
        for (std::size_t k = 0; k < results[r].steps.size(); ++k) {
          const auto& p = views[r].proposals[k];
          std::string config = fmt::format("{}", fmt::join(results[r].steps[k].config, " "));
          csv << fmt::format("{},{},{:.4f},{},{:.4f},{},{}\n", args.seed + r, k + 1, views[r].f[k], p.steps, p.ratio,
                             p.near_repeat ? 1 : 0, config);
        }
    }
    fmt::print(stderr, "{} done\n", label);
  }
  md << "\nWhere the stalls are (datasets with any): the configurations with f >= 0.99, the stalls, the median f "
        "in them, and the median distance to the nearest configuration with f >= 0.99 from the incumbent (parameter "
        "steps; parameters differing) and from the nearest of the ten fastest configurations measured before the "
        "stall (steps).\n\n| dataset | f >= 0.99 | stalls | f | steps from the incumbent | parameters differing | "
        "steps from the nearest of the top 10 |\n|---|---|---|---|---|---|---|\n"
     << targets.str();
  std::filesystem::create_directories(args.out_dir);
  std::ofstream(args.out_dir + "/stall.md") << md.str();
  fmt::print("{}", md.str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return tune::bench::guarded_main("bench_stall", run, argc, argv); }
