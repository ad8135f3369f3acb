// Strategy benchmark on replayed datasets: every strategy, R runs of N
// evaluations each on every dataset, against the exact random baseline and
// the best of Kernel Tuner 1.0's eleven strategies on the same data.
//
//   bench_strategies [--runs R] [--budget N] [--seed S] [--out DIR]
//                    [--strategies a,b,…] [--hyper strategy:name=value …]
//                    [--kinds KINDS.json] DATASET …
//
// A --kinds file (parameter kind overrides) applies to the dataset after it.
// Writes DIR/strategies.md, DIR/strategies.csv and DIR/<dataset>.svg.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "bench_replay.hpp"
#include "bench_text.hpp"
#include "tune/engine/strategy.hpp"
#include "tune/kernels/replay.hpp"
#include "tune/kernels/replay_stats.hpp"

namespace {

using namespace tune;
using bench::dataset_label;
using bench::find_peer;

struct cell {
  std::string strategy;
  replay_summary summary;
  double wall_s = 0;
};

const char* colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

/// Mean f versus evaluations (log x axis), one line per strategy, random dashed.
void write_svg(const std::string& path, const std::string& title, const std::vector<cell>& cells,
               const std::vector<double>& random_f) {
  const double w = 820, h = 460, left = 70, right = 230, top = 40, bottom = 60;
  const double pw = w - left - right, ph = h - top - bottom;
  const std::size_t n = random_f.size();
  // The first few evaluations are near-random for every strategy: scale the
  // y axis to what happens from 10 evaluations on.
  const std::size_t from = n >= 10 ? 9 : 0;
  double lo = 1.0;
  for (std::size_t i = from; i < n; ++i) lo = std::min(lo, random_f[i]);
  for (const auto& c : cells)
    for (std::size_t i = from; i < n; ++i) lo = std::min(lo, c.summary.mean_f[i]);
  lo = std::max(0.0, std::floor(lo * 10) / 10);
  auto x = [&](double evals) { return left + pw * std::log(evals) / std::log(static_cast<double>(n)); };
  auto y = [&](double f) { return top + ph * (1.0 - (std::max(f, lo) - lo) / (1.0 - lo)); };
  std::ofstream out(path);
  out << fmt::format(
             R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif" font-size="12">)",
             w, h)
      << "\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  out << fmt::format(R"(<text x="{}" y="22" font-size="15">{}: mean f = optimum / best found</text>)", 10, title)
      << "\n";
  for (double f = lo; f <= 1.0001; f += (1.0 - lo) / 5) {
    out << fmt::format(R"(<line x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}" stroke="#ddd"/>)", left, y(f), left + pw, y(f))
        << fmt::format(R"(<text x="{}" y="{:.1f}" text-anchor="end">{:.2f}</text>)", left - 6, y(f) + 4, f) << "\n";
  }
  for (double e : {1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0}) {
    if (e > static_cast<double>(n)) break;
    out << fmt::format(R"(<line x1="{:.1f}" y1="{}" x2="{:.1f}" y2="{}" stroke="#ddd"/>)", x(e), top, x(e), top + ph)
        << fmt::format(R"(<text x="{:.1f}" y="{}" text-anchor="middle">{}</text>)", x(e), top + ph + 16, e) << "\n";
  }
  out << fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="black"/>)", left, top, pw, ph)
      << fmt::format(R"~(<text x="{}" y="{}" text-anchor="middle">evaluations (log scale)</text>)~", left + pw / 2,
                     h - 18)
      << fmt::format(R"~(<text x="18" y="{}" transform="rotate(-90 18 {})" text-anchor="middle">mean f</text>)~",
                     top + ph / 2, top + ph / 2)
      << "\n";
  auto polyline = [&](const std::vector<double>& f, const char* colour, const char* dash) {
    out << "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"" << colour << "\" " << dash << " points=\"";
    for (std::size_t i = 0; i < n; ++i) out << fmt::format("{:.1f},{:.1f} ", x(static_cast<double>(i + 1)), y(f[i]));
    out << "\"/>\n";
  };
  auto legend = [&](std::size_t row, const std::string& label, const char* colour, const char* dash) {
    double ly = top + 10 + 20 * static_cast<double>(row);
    out << fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke-width="2" stroke="{}" {}/>)", left + pw + 12, ly,
                       left + pw + 40, ly, colour, dash)
        << fmt::format(R"(<text x="{}" y="{}">{}</text>)", left + pw + 46, ly + 4, label) << "\n";
  };
  for (std::size_t i = 0; i < cells.size(); ++i) {
    polyline(cells[i].summary.mean_f, colours[i % 8], "");
    legend(i, cells[i].strategy, colours[i % 8], "");
  }
  polyline(random_f, "black", "stroke-dasharray=\"6,4\"");
  legend(cells.size(), "random (exact)", "black", "stroke-dasharray=\"6,4\"");
  if (const auto* peer = find_peer(title)) {
    std::size_t row = cells.size() + 1;
    for (auto [evals, f] : {std::pair{100.0, peer->f100}, {200.0, peer->f200}, {500.0, peer->f500}}) {
      if (evals > static_cast<double>(n)) break;
      out << fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="5" fill="none" stroke="black" stroke-width="1.5"/>)",
                         x(evals), y(f))
          << "\n";
    }
    double ly = top + 10 + 20 * static_cast<double>(row);
    out << fmt::format(R"(<circle cx="{}" cy="{}" r="5" fill="none" stroke="black" stroke-width="1.5"/>)",
                       left + pw + 26, ly)
        << fmt::format(R"(<text x="{}" y="{}">best of Kernel Tuner 1.0</text>)", left + pw + 46, ly + 4) << "\n";
  }
  out << "</svg>\n";
}

std::string fmt_f(const replay_summary& s, std::size_t evals) {
  if (evals > s.budget) return "–";
  return fmt::format("{:.3f} ± {:.3f}", s.mean_f[evals - 1], s.std_f[evals - 1]);
}

int run(int argc, char** argv) {
  bench::replay_bench_args args;
  std::vector<std::string> strategies = strategy_names();
  std::map<std::string, std::map<std::string, double>> hyper;
  std::vector<std::string> hypers;
  CLI::App app{
      "Every strategy replayed on measured datasets: mean f after 20 to 500 evaluations, against exact "
      "random search and Kernel Tuner's best, and the Willemsen score"};
  bench::last_value_wins(app);
  args.add_to(app);
  bench::add_list(app, "--strategies", strategies, "Strategies");
  bench::add_repeatable(app, "--hyper", hypers, "A strategy's hyperparameter, strategy:name=value");
  if (auto rc = tune::bench::parse_options(app, argc, argv)) return *rc;
  args.finish(app);
  for (const auto& h : hypers) bench::add_hyper(h, hyper);
  const std::size_t runs = args.runs, budget = args.budget;
  const std::uint64_t seed = args.seed;
  const std::string& out_dir = args.out_dir;
  const auto& datasets = args.datasets;
  std::filesystem::create_directories(out_dir);
  std::ofstream csv(out_dir + "/strategies.csv");
  csv << "dataset,strategy,evals,mean_f,std_f,random_f\n";
  std::ostringstream md;
  md << fmt::format(
      "Mean f = optimum / best found ± standard deviation over {} runs (seeds {}..{}); one evaluation = "
      "one distinct configuration measured, failures included. Random = exact expectation of random "
      "search without replacement. Score = Willemsen et al. 2024, averaged over 1..{} evaluations.\n\n",
      runs, seed, seed + runs - 1, budget);
  for (const auto& [path, kinds_file] : datasets)
    if (!kinds_file.empty())
      md << fmt::format("Parameter kinds of {} overridden by {}.\n\n", dataset_label(path), kinds_file);
  std::map<std::string, std::vector<replay_summary>> totals;
  md << "| dataset | strategy | f@20 | f@50 | f@100 | f@200 | f@500 | evals to 0.95 (never) | score | wall s |\n"
        "|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& [path, kinds_file] : datasets) {
    auto label = dataset_label(path);
    auto t0 = std::chrono::steady_clock::now();
    auto dataset = read_replay_dataset(path, kinds_file.empty() ? kind_overrides{} : read_kind_overrides(kinds_file));
    double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    fmt::print(stderr, "{}: {} configurations, loaded in {:.2f} s\n", label, dataset.configs.size(), load_s);
    std::vector<cell> cells;
    for (const auto& name : strategies) {
      replay_run_options options;
      options.strategy = name;
      options.budget = budget;
      options.seed = seed;
      if (auto it = hyper.find(name); it != hyper.end()) options.hyper = it->second;
      auto start = std::chrono::steady_clock::now();
      auto results = replay_searches(dataset, options, runs, 2);
      double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      cells.push_back({name, summarize(dataset, results, budget), wall});
      fmt::print(stderr, "  {:<10} {:.1f} s\n", name, wall);
    }
    const auto& random_f = cells.front().summary.random_f;
    for (const auto& c : cells) {
      const auto& s = c.summary;
      const auto& r95 = s.reaches[1];
      md << fmt::format(
          "| {} | {} | {} | {} | {} | {} | {} | {} | {:.3f} | {:.1f} |\n", label, c.strategy, fmt_f(s, 20),
          fmt_f(s, 50), fmt_f(s, 100), fmt_f(s, 200), fmt_f(s, 500),
          r95.mean_evals ? fmt::format("{:.0f} ({})", *r95.mean_evals, r95.never) : fmt::format("– ({})", r95.never),
          s.score, c.wall_s);
      for (std::size_t i = 0; i < budget; ++i)
        csv << fmt::format("{},{},{},{:.6f},{:.6f},{:.6f}\n", label, c.strategy, i + 1, s.mean_f[i], s.std_f[i],
                           s.random_f[i]);
    }
    auto at = [&](std::size_t e) { return e <= budget ? fmt::format("{:.3f}", random_f[e - 1]) : std::string("–"); };
    md << fmt::format("| {} | random (exact) | {} | {} | {} | {} | {} | {:.0f} | 0 | |\n", label, at(20), at(50),
                      at(100), at(200), at(500), cells.front().summary.reaches[1].random_evals);
    if (const auto* p = find_peer(label))
      md << fmt::format(
          "| {} | best of Kernel Tuner 1.0 | {:.3f} ({}) | {:.3f} ({}) | {:.3f} ({}) | {:.3f} ({}) | {:.3f} ({}) | | | "
          "|\n",
          label, p->f20, p->s20, p->f50, p->s50, p->f100, p->s100, p->f200, p->s200, p->f500, p->s500);
    for (const auto& c : cells) totals[c.strategy].push_back(c.summary);
    auto svg_name = label;
    std::replace(svg_name.begin(), svg_name.end(), '/', '_');
    write_svg(out_dir + "/" + svg_name + ".svg", label, cells, random_f);
  }
  // Mean over the datasets, per strategy (every dataset counts once).
  md << fmt::format(
      "\nMean over the {} datasets:\n\n| strategy | f@20 | f@50 | f@100 | f@200 | f@500 | score |\n"
      "|---|---|---|---|---|---|---|\n",
      datasets.size());
  for (const auto& name : strategies) {
    const auto& list = totals[name];
    md << "| " << name;
    for (std::size_t evals : {20, 50, 100, 200, 500}) {
      if (evals > budget) {
        md << " | –";
        continue;
      }
      double sum = 0;
      for (const auto& s : list) sum += s.mean_f[evals - 1];
      md << fmt::format(" | {:.3f}", sum / static_cast<double>(list.size()));
    }
    double score = 0;
    for (const auto& s : list) score += s.score;
    md << fmt::format(" | {:.3f} |\n", score / static_cast<double>(list.size()));
  }
  std::ofstream(out_dir + "/strategies.md") << md.str();
  fmt::print("{}", md.str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return tune::bench::guarded_main("bench_strategies", run, argc, argv); }
