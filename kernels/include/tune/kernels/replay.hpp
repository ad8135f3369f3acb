#pragma once
// Replay: a dataset of exhaustively measured configurations stands in for the
// device. Looking a configuration up returns its recorded status and time, and
// a simulated clock is charged its recorded compile and benchmark time, so a
// search (and its time to solution) can be replayed without the hardware.
//
//   Kernel Tuner cache / T4 results / KTT TuningOutput
//       ──read_replay_dataset──> space (restricted to the recorded configurations) + records
//
// A configuration absent from the dataset broke the kernel's restrictions: it
// is not a member of the space, so it is rejected before compile.

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tune/engine/readers.hpp"
#include "tune/engine/result.hpp"
#include "tune/engine/space.hpp"
#include "tune/engine/strategy.hpp"
#include "tune/kernels/backend.hpp"

namespace tune {

/// What a dataset recorded for one configuration.
struct replay_record {
  status state = status::unknown;
  /// Mean kernel time in ms; NaN unless ok.
  double time_ms = std::nan("");
  /// Individual runs in ms (may be empty).
  std::vector<double> times_ms;
  double compile_s = 0.0;
  double benchmark_s = 0.0;
  double verification_s = 0.0;
};

struct replay_dataset {
  std::string origin;  ///< the file read
  std::string format;  ///< "kernel_tuner", "t4", "ktt"
  std::string kernel;
  std::string device;
  /// The problem measured (Kernel Tuner's problem_size as JSON text); empty
  /// when the format does not say.
  std::string problem;
  search_space_ptr space;  ///< restricted to `configs`
  std::vector<configuration> configs;
  std::vector<replay_record> records;  ///< parallel to configs
  std::unordered_map<configuration, std::size_t, configuration_hash> index;

  /// The record of a configuration; nullptr when it is not in the dataset.
  const replay_record* find(const configuration& config) const;
  /// Fastest recorded ok time in ms; NaN when no configuration is ok.
  double best_time_ms() const;
  /// Times of the ok configurations, sorted ascending.
  std::vector<double> sorted_ok_times() const;
};

/// Reads a dataset, detecting its format (".gz" allowed). Throws
/// std::invalid_argument naming the file, the field and the problem.
replay_dataset read_replay_dataset(const std::string& path, const kind_overrides& overrides = {});

/// Reads a kind-override file: a JSON object {"parameter": "discrete" | "categorical"}.
kind_overrides read_kind_overrides(const std::string& path);

/// The outcome of sending one configuration to a replayed measurement.
struct replay_evaluation {
  status state = status::unknown;
  double time_ms = std::nan("");
  /// Simulated seconds it cost: compile + benchmark + verification.
  double cost_s = 0.0;
};

/// The recorded outcome of a configuration of the dataset (which must be in
/// it). With `noise`, the time is one of the recorded runs drawn uniformly.
replay_evaluation evaluate(const replay_dataset& dataset, const configuration& config, rng_type* noise);

/// One counted evaluation of a replayed search.
struct replay_step {
  configuration config;
  status state = status::unknown;
  double time_ms = std::nan("");
  /// Simulated clock after this evaluation, seconds.
  double sim_time_s = 0.0;
  /// Recorded (mean) time of the configuration measured fastest so far (ms);
  /// NaN while none is ok.
  double best_ms = std::nan("");
};

struct replay_run_options {
  std::string strategy = "random";
  std::map<std::string, double> hyper;
  std::size_t budget = 100;
  std::uint64_t seed = 0;
  bool noise = false;
  /// Passed to the strategy as strategy_options::prior (replay_prior()).
  std::vector<trial_result> prior;
};

/// The results of other datasets of the same kernel (other devices, earlier
/// runs) as a prior for a search of `space`: each recorded configuration
/// mapped onto `space` by its parameter values (those `space` lacks are
/// left out); with several datasets, a configuration's time is the
/// geometric mean of its times, and a failure on any of them is a failure.
/// Throws std::invalid_argument when no configuration maps onto `space`.
std::vector<trial_result> replay_prior(const std::vector<const replay_dataset*>& priors, const search_space& space);

struct replay_run_result {
  std::vector<replay_step> steps;
  /// Proposals not counted: outside the dataset (rejected) or repeated.
  std::size_t rejected = 0;
  std::size_t duplicates = 0;
  /// Real seconds the search took: the strategy's own work, mostly.
  double wall_s = 0.0;
};

/// One search of `options.budget` evaluations. One evaluation is one distinct
/// configuration of the dataset sent to measurement, failures included;
/// rejected and repeated proposals do not count. Stops early when the strategy
/// has nothing left to propose.
replay_run_result replay_search(const replay_dataset& dataset, const replay_run_options& options);

/// The same with a strategy made by the caller (options.strategy and
/// options.hyper are then unused).
replay_run_result replay_search(const replay_dataset& dataset, strategy& search, const replay_run_options& options);

/// `runs` searches with seeds seed, seed+1, …, on at most `threads` threads.
std::vector<replay_run_result> replay_searches(const replay_dataset& dataset, const replay_run_options& options,
                                               std::size_t runs, unsigned threads = 2);

struct replay_backend_options {
  /// Real seconds slept per recorded second, as everywhere a time scale is
  /// given (1: the recorded pace; 0: no sleeping at all).
  double time_scale = 1.0;
  bool noise = false;
  std::uint64_t seed = 0;
};

/// A backend answering from the dataset: build() sleeps time_scale × the
/// recorded compile time and returns it as compile_s; run() sleeps time_scale
/// × (benchmark + verification time) and returns the recorded status and time.
backend_ptr make_replay_backend(std::shared_ptr<const replay_dataset> dataset, const replay_backend_options& options);

}  // namespace tune
