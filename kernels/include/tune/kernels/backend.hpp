#pragma once
// A backend compiles and measures the configurations of one task (a kernel
// and its problem shape) on one kind of device:
//
//   configuration ──build()──> build_result ──run(device)──> run_result
//
// Both calls block and are meant to run on a thread of their own (the actor
// pipeline hosts them in detached actors). Failures are statuses in the
// results, never exceptions; every call honours its timeout.

#include <memory>
#include <string>
#include <vector>

#include "tune/engine/result.hpp"
#include "tune/engine/space.hpp"

namespace tune {

struct build_result {
  status state = status::unknown;
  /// What run() needs: a path to a shared object or cubin, a cache key, or
  /// empty (replay).
  std::string artifact;
  /// Seconds the build took (simulated seconds for replay).
  double compile_s = 0.0;
  /// Compiler output or the reason of a failure.
  std::string message;
};

struct run_result {
  status state = status::unknown;
  /// Kernel time in ms (median of the repeats); NaN unless ok.
  double time_ms = std::nan("");
  /// Seconds the measurement took, verification included (simulated for replay).
  double run_s = 0.0;
  std::string message;
  /// Extra objectives (e.g. error) for multi-objective strategies.
  std::vector<double> objectives;
};

struct device_info {
  std::string backend;  ///< "cpu", "cuda", "hip", "replay"
  int id = 0;
  std::string name;
};

class backend {
 public:
  virtual ~backend() = default;

  /// "cpu", "cuda", "hip", "replay".
  virtual std::string name() const = 0;
  /// Identifies the task (kernel, shape, dtype): results of one task key are comparable.
  virtual std::string task_key() const = 0;
  /// Identifies the device model and toolchain a measurement depends on.
  virtual std::string device_kind() const = 0;
  virtual search_space_ptr space() const = 0;

  /// Builds one configuration. Thread-safe; may be called from many threads.
  virtual build_result build(const configuration& config, double timeout_s) = 0;

  /// True when build() does no work worth a thread of its own and returns at
  /// once (an in-process objective's): the compile pool then calls it itself,
  /// in order, instead of handing it to a build worker, which would cost two
  /// thread hand-offs per trial. Its compile timeout is not enforced then.
  virtual bool builds_instantly() const { return false; }

  /// Measures one built configuration on `device`. The caller serialises calls
  /// per device; calls on different devices may overlap.
  virtual run_result run(const configuration& config, const build_result& build, int device, double timeout_s) = 0;
};

using backend_ptr = std::shared_ptr<backend>;

}  // namespace tune
