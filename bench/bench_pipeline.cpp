// Measures the actor pipeline against its bounds: busy fractions of the
// compile pool and the devices, trials per simulated second against
// min(W / mean compile, G / mean measure), engine CPU per trial, and the
// simulated time steady state and generational batches need to reach 95% of
// the optimum. Backends sleep `--time-scale` times their latencies, so 8
// workers and 4 devices are simulated by waiting threads on any machine.
//
// It runs twice: on a latency model of the two regimes, and on the recorded
// latencies of the datasets themselves through the replay backend (GEMM on an
// RTX 3090: measurement-bound; convolution on an A100: compile-bound).
//
//   bench_pipeline [--time-scale X] [--trials N] [--seeds K] [--strategy NAME] [--data DIR]
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "bench_latency.hpp"
#include "bench_text.hpp"
#include "tune/actors/pipeline.hpp"
#include "tune/engine/parameter.hpp"
#include "tune/kernels/replay.hpp"

using namespace tune;
using namespace tune::actors;

namespace {

/// A latency model of one kernel: every configuration has a compile and a
/// measure latency (lognormal around the means, fixed per configuration) and
/// a kernel time from a smooth objective with one optimum. The means are those
/// of the two regimes of the datasets: GEMM on an RTX 3090 (0.08 s compile,
/// 0.9 s measure: measurement-bound) and convolution on an A100 (2.7 s
/// compile, 0.07 s measure: compile-bound).
class latency_model_backend : public backend {
 public:
  latency_model_backend(double compile_s, double measure_s, double time_scale)
      : compile_s_(compile_s), measure_s_(measure_s), time_scale_(time_scale) {
    std::vector<parameter_ptr> params;
    for (int p = 0; p < 4; ++p) {
      std::vector<double> values;
      for (int v = 0; v < 6; ++v) values.push_back(v);
      params.push_back(make_discrete_parameter("p" + std::to_string(p), values));
    }
    space_ = std::make_shared<search_space>(params, "latency-model");
  }

  std::string name() const override { return "latency-model"; }
  std::string task_key() const override { return "latency-model"; }
  std::string device_kind() const override { return "simulated"; }
  search_space_ptr space() const override { return space_; }

  double compile_latency(const configuration& c) const { return compile_s_ * spread(c, 1); }
  double measure_latency(const configuration& c) const { return measure_s_ * spread(c, 2); }
  /// Kernel time: 1 ms at the optimum (all parameters at 3), worse away from
  /// it; only the optimum is within 95% of it (1 of 1296 configurations).
  static double kernel_ms(const configuration& c) {
    double d = 0.0;
    for (auto v : c) d += std::abs(static_cast<double>(v) - 3.0);
    return 1.0 + 0.15 * d + 0.02 * d * d;
  }

  build_result build(const configuration& config, double) override {
    build_result out;
    out.compile_s = compile_latency(config);
    std::this_thread::sleep_for(std::chrono::duration<double>(out.compile_s * time_scale_));
    out.state = status::ok;
    return out;
  }

  run_result run(const configuration& config, const build_result&, int, const run_limits&) override {
    run_result out;
    out.run_s = measure_latency(config);
    std::this_thread::sleep_for(std::chrono::duration<double>(out.run_s * time_scale_));
    out.state = status::ok;
    out.time_ms = kernel_ms(config);
    return out;
  }

 private:
  // exp(0.3 z), z ~ N(0, 1) from a hash of the configuration: fixed per
  // configuration, mean about 1.046.
  static double spread(const configuration& c, std::uint64_t stream) {
    rng_type rng(fork_seed(configuration_hash{}(c), stream));
    std::normal_distribution<double> z(0.0, 1.0);
    return std::exp(0.3 * z(rng));
  }

  double compile_s_, measure_s_, time_scale_;
  search_space_ptr space_;
};

double process_cpu_s() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec);
}

pipeline_options topology_8x4(double time_scale, std::uint64_t budget) {
  pipeline_options o;
  o.compile_workers = 8;
  o.devices.clear();
  for (int d = 0; d < 4; ++d) o.devices.push_back({d, 2});
  o.timing.timeouts.compile_s = 600;
  o.timing.timeouts.run_s = 600;
  o.timing.time_scale = time_scale;
  o.budget.trials = budget;
  return o;
}

/// Mean latencies over every configuration of the model: the bound's inputs.
std::pair<double, double> mean_latencies(const latency_model_backend& be) {
  double c = 0, m = 0;
  auto size = *be.space()->cartesian_size();
  for (std::uint64_t i = 0; i < size; ++i) {
    auto config = be.space()->unflatten(i);
    c += be.compile_latency(config);
    m += be.measure_latency(config);
  }
  return {c / static_cast<double>(size), m / static_cast<double>(size)};
}

/// Runs `trials` random trials on 8 workers and 4 devices and prints busy
/// fractions, the rate against the bound min(W / compile, G / measure) for
/// these mean latencies, and CPU per trial.
void throughput(const std::string& title, backend_ptr be, double mean_compile_s, double mean_measure_s, double scale,
                std::uint64_t trials) {
  double bound = std::min(8.0 / mean_compile_s, 4.0 / mean_measure_s);
  auto options = topology_8x4(scale, trials);
  strategy_options so;
  so.seed = 1;
  double cpu0 = process_cpu_s();
  auto s = run_pipeline(be, make_strategy("random", be->space(), so), options);
  double cpu = process_cpu_s() - cpu0;
  std::printf("%s (compile %.3f s, measure %.3f s mean; 8 workers, 4 devices, prefetch 2)\n", title.c_str(),
              mean_compile_s, mean_measure_s);
  std::printf("  trials %llu in %.2f s wall = %.1f s simulated\n", static_cast<unsigned long long>(s.trials), s.wall_s,
              s.sim_s);
  std::printf("  compile pool busy   %6.1f%%\n", 100.0 * s.compile.busy_fraction());
  for (std::size_t d = 0; d < s.devices.size(); ++d)
    std::printf("  device %zu busy      %6.1f%%\n", d, 100.0 * s.devices[d].busy_fraction());
  std::printf("  trials / sim s      %6.3f   bound min(W/c, G/m) %6.3f   ratio %5.1f%%\n", s.steady_rate, bound,
              100.0 * s.steady_rate / bound);
  std::printf("  engine CPU / trial  %6.1f us (actors' handlers)   process CPU / trial %6.1f us\n\n",
              1e6 * s.engine_cpu_s / static_cast<double>(s.trials), 1e6 * cpu / static_cast<double>(s.trials));
}

/// Simulated seconds until the best reaches `target_ms`; NaN when it never does.
double time_to_target(const run_summary& s, double target_ms) {
  for (const auto& p : s.trace)
    if (p.time_ms <= target_ms) return p.at_s;
  return std::nan("");
}

/// Steady state against generational batches of 8, same strategy and seeds:
/// simulated time until the best found is at most `target_ms`. `make_backend`
/// gives a fresh backend for a seed.
void steady_vs_generational(const std::string& title, const std::function<backend_ptr(std::uint64_t)>& make_backend,
                            double target_ms, std::uint64_t budget, double scale, int seeds,
                            const std::string& strategy) {
  std::printf("steady vs generational%s: %s, batch = rho = lambda = 8, %d seeds, target 95%% of the optimum\n",
              title.c_str(), strategy.c_str(), seeds);
  std::printf("  seed   steady s   generational s   ratio\n");
  std::vector<double> ratios;
  int never = 0;
  for (int seed = 1; seed <= seeds; ++seed) {
    double t[2];
    for (int mode = 0; mode < 2; ++mode) {
      auto be = make_backend(static_cast<std::uint64_t>(seed));
      auto options = topology_8x4(scale, budget);
      options.mode = mode == 0 ? pipeline_mode::steady : pipeline_mode::generational;
      options.batch = 8;
      strategy_options so;
      so.seed = static_cast<std::uint64_t>(seed);
      if (strategy == "opevo") so.hyper = {{"lambda", 8}, {"rho", 8}};
      auto search = make_strategy(strategy, be->space(), so);
      // Stop once the target is reached: what follows does not change the time.
      auto reached = std::make_shared<std::atomic<bool>>(false);
      struct watcher : trial_listener {
        std::shared_ptr<std::atomic<bool>> flag;
        double target;
        void on_trial(const measured_trial& trial, bool) override {
          if (trial.ok() && trial.time_ms <= target) *flag = true;
        }
      };
      auto w = std::make_shared<watcher>();
      w->flag = reached;
      w->target = target_ms;
      options.listener = w;
      options.stop_requested = [reached] { return reached->load(); };
      auto s = run_pipeline(be, std::move(search), options);
      t[mode] = time_to_target(s, target_ms);
    }
    if (std::isnan(t[0]) || std::isnan(t[1])) {
      ++never;
      std::printf("  %4d   %8.1f   %14.1f   (target not reached)\n", seed, t[0], t[1]);
      continue;
    }
    double ratio = t[1] / t[0];
    ratios.push_back(ratio);
    std::printf("  %4d   %8.1f   %14.1f   %5.2f\n", seed, t[0], t[1], ratio);
  }
  if (ratios.empty()) return;
  double mean = 0, geo = 0;
  for (double r : ratios) {
    mean += r;
    geo += std::log(r);
  }
  mean /= static_cast<double>(ratios.size());
  geo = std::exp(geo / static_cast<double>(ratios.size()));
  std::sort(ratios.begin(), ratios.end());
  std::printf(
      "  generational / steady time to target: mean %.2f, geometric mean %.2f, median %.2f (target >= 1.5)%s\n\n", mean,
      geo, ratios[ratios.size() / 2], never ? " (seeds that never reached it left out)" : "");
}

/// A replay backend on a dataset, sleeping `scale` × the recorded latencies.
backend_ptr replay(const std::shared_ptr<const replay_dataset>& data, double scale, std::uint64_t seed) {
  replay_backend_options ro;
  ro.time_scale = scale;
  ro.seed = seed;
  return make_replay_backend(data, ro);
}

}  // namespace

int main(int argc, char** argv) {
  double scale = 0.01;
  std::uint64_t trials = 600;
  int seeds = 10;
  std::string strategy = "opevo";
  std::string data_dir = TUNE_DATA_DIR;
  CLI::App app{
      "The actor pipeline against its bounds, on a latency model of two regimes and on replayed datasets: "
      "busy shares, trials per simulated second, engine CPU per trial, steady state against generations"};
  bench::last_value_wins(app);
  app.add_option("--time-scale", scale, "Wall seconds per simulated second")
      ->capture_default_str()
      ->check(bench::more_than_zero());
  app.add_option("--trials", trials, "Trials of each throughput run")
      ->capture_default_str()
      ->check(bench::more_than_zero());
  app.add_option("--seeds", seeds, "Seeds of the steady-state against generations comparison")
      ->capture_default_str()
      ->check(bench::more_than_zero());
  app.add_option("--strategy", strategy, "Strategy of that comparison")->capture_default_str();
  app.add_option("--data", data_dir, "The data folder (the vendored datasets inside)")->capture_default_str();
  if (auto rc = tune::bench::parse_options(app, argc, argv)) return *rc;
  std::printf("bench_pipeline: time scale %g (wall seconds per simulated second)\n\n", scale);
  for (auto [label, compile_s, measure_s] : {std::tuple{"measurement-bound (GEMM RTX 3090 latencies)", 0.08, 0.9},
                                             std::tuple{"compile-bound (convolution A100 latencies)", 2.7, 0.07}}) {
    auto be = std::make_shared<latency_model_backend>(compile_s, measure_s, scale);
    auto [mc, mm] = mean_latencies(*be);
    throughput(label, be, mc, mm, scale, trials);
  }
  // The compile-bound regime, where a generation waits for its slowest build.
  steady_vs_generational(
      "", [scale](std::uint64_t) { return std::make_shared<latency_model_backend>(2.7, 0.07, scale); }, 1.0 / 0.95,
      2000, scale, seeds, strategy);

  const std::string gemm = data_dir + "/datasets/gemm_clblast/RTX_3090.json.gz";
  const std::string conv = data_dir + "/datasets/convolution/A100.json.gz";
  auto gemm_data = std::make_shared<const replay_dataset>(read_replay_dataset(gemm));
  auto conv_data = std::make_shared<const replay_dataset>(read_replay_dataset(conv));
  for (auto [label, data] : {std::pair{"measurement-bound, replayed: " + gemm, gemm_data},
                             std::pair{"compile-bound, replayed: " + conv, conv_data}}) {
    auto [mc, mm] = bench::dataset_latencies(*data);
    throughput(label + " (recorded)", replay(data, scale, 1), mc, mm, scale,
               std::min<std::uint64_t>(trials, data->configs.size()));
  }
  steady_vs_generational(
      " on " + conv, [&](std::uint64_t seed) { return replay(conv_data, scale, seed); },
      conv_data->best_time_ms() / 0.95, conv_data->configs.size(), scale, seeds, strategy);
  return 0;
}
