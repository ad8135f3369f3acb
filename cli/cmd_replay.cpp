// tune-engine replay: runs of a strategy against a measured dataset, compared
// with the exact expectation of random search.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "tune/engine/strategy.hpp"
#include "tune/tune.hpp"

namespace tune::cli {
namespace {

struct replay_args {
  std::string dataset;
  std::string strategy;
  std::size_t budget = 100;
  std::size_t runs = 10;
  std::uint64_t seed = 0;
  bool noise = false;
  std::string trajectories;
  bool json = false;
  std::vector<std::string> hyper;
  std::string kinds;
  unsigned threads = 2;
  std::vector<std::string> priors;
  std::map<std::string, std::string> names;  ///< replay_options field -> flag (declared with the options)
};

void print_text(const nlohmann::json& s) {
  fmt::print("dataset   {} ({}, {} configurations, {} ok), optimum {:.6g} ms\n", s["dataset"].get<std::string>(),
             s["format"].get<std::string>(), s["configurations"].get<std::size_t>(),
             s["ok_configurations"].get<std::size_t>(), s["optimum_ms"].get<double>());
  auto runs = s["runs"].get<std::size_t>();
  auto seed = s["seed"].get<std::uint64_t>();
  fmt::print("strategy  {}, {} runs x {} evaluations, seeds {}..{}{}\n", s["strategy"].get<std::string>(), runs,
             s["budget"].get<std::size_t>(), seed, seed + runs - 1, s["noise"].get<bool>() ? ", noisy times" : "");
  for (const auto& prior : s["prior"]) fmt::print("prior     {}\n", prior.get<std::string>());
  fmt::print("\nf = optimum / best found     {:>17}   {:>8}\n", "strategy", "random");
  for (const auto& at : s["at"])
    fmt::print("  after {:>4} evaluations     {:>7.3f} ± {:<7.3f}   {:>8.3f}\n", at["evals"].get<std::size_t>(),
               at["mean_f"].get<double>(), at["std_f"].get<double>(), at["random_f"].get<double>());
  fmt::print("\nevaluations to reach         {:>17}   {:>8}\n", "strategy", "random");
  for (const auto& r : s["reach"]) {
    std::string mean = r["mean_evals"].is_null() ? "-" : fmt::format("{:.1f}", r["mean_evals"].get<double>());
    auto never_count = r["never"].get<std::size_t>();
    std::string never = never_count ? fmt::format(" ({} never)", never_count) : "";
    fmt::print("  f >= {:.2f}                  {:>17}   {:>8.1f}\n", r["f"].get<double>(), mean + never,
               r["random_evals"].get<double>());
  }
  fmt::print("\nscore (Willemsen et al. 2024, over 1..{} evaluations): {:.3f}\n", s["budget"].get<std::size_t>(),
             s["score"].get<double>());
}

int run_replay(const replay_args& a) {
  replay_options o;
  o.dataset = a.dataset;
  o.kinds_file = a.kinds;
  o.strategy = a.strategy;
  o.hyper = parse_hyper(a.hyper, a.names.at("hyper"));
  o.budget = a.budget;
  o.runs = a.runs;
  o.seed = a.seed;
  o.noise = a.noise;
  o.threads = a.threads;
  o.trajectories_file = a.trajectories;
  o.priors = a.priors;
  o.option_names = a.names;
  auto summary = replay_statistics(o);
  if (a.json)
    fmt::print("{}\n", summary.dump(2));
  else
    print_text(summary);
  return exit_ok;
}

}  // namespace

void add_replay_command(CLI::App& app, command_list& commands) {
  auto a = std::make_shared<replay_args>();
  auto* sub = app.add_subcommand("replay", "Replay runs of a strategy on a measured dataset and compare with random");
  field_options f(sub);
  f.option("dataset", "--dataset", a->dataset, "Kernel Tuner cache, T4 results or KTT TuningOutput (.json or .json.gz)")
      ->required();
  f.option("strategy", "--strategy", a->strategy, strategy_help())->default_val(default_strategy_name());
  f.option("budget", "--budget", a->budget, "evaluations per run (distinct configurations measured)")->required();
  f.option("runs", "--runs", a->runs, "independent runs (seeds seed, seed+1, ...)")->required();
  f.option("seed", "--seed", a->seed, "seed of the first run")->required();
  f.flag("noise", "--noise", a->noise, "draw each time from the recorded runs instead of their mean");
  f.option("trajectories_file", "--trajectories", a->trajectories, "write one JSON line per evaluation to this file");
  sub->add_flag("--json", a->json, "print the summary as JSON");
  f.option("hyper", "--hyper", a->hyper, "strategy hyperparameter name=value (repeatable)");
  f.option("kinds_file", "--kinds", a->kinds,
           "JSON file {\"parameter\": \"discrete\"|\"categorical\"} overriding guessed kinds");
  f.option("threads", "--threads", a->threads, "threads running runs (1 or 2)");
  f.option("priors", "--prior", a->priors,
           "dataset of the same kernel measured elsewhere (another device, an earlier run) to transfer "
           "from (repeatable; several are merged by geometric mean); used by bo")
      ->check(CLI::ExistingFile);
  a->names = f.names();
  declare_option_names("replay", a->names);
  commands.emplace_back(sub, [a] { return run_replay(*a); });
}

}  // namespace tune::cli
