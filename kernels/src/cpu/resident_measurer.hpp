#pragma once
// The engine's side of a resident measuring process (tune-kernel-worker
// --resident; the protocol is in kernels/worker/resident.hpp). One per device
// of a backend: started on the device's first run and kept, so that a trial
// costs a request and a reply instead of a process with freshly filled
// inputs.
//
// The process dying is survived: one that is gone between trials (nothing of
// the next trial ran) is started again and the request sent again; one that
// dies during a trial (SIGKILL, a GPU kernel that breaks it) fails that trial
// as a runtime_error naming what ended it, without a retry (a kernel that
// kills its measuring process would do it again), and the next trial starts a
// fresh process. One that does not answer by its deadline is killed (with
// the kernel's process group) and the trial is a run_timeout: for CPU
// kernels the process enforces the run timeout itself and the engine's
// deadline is a backstop a little later; GPU kernels run in the process
// itself, so the engine enforces the run timeout and the slow limit
// (measure_rules::slow_limit_ms, on the start of each run the process reports)
// by killing it. Killing it costs the next trial a fresh process (context,
// module, inputs and expected outputs set up again: about 1 s for Conv2D C1
// on an H200, against kernels of 3-60 ms), so a GPU run is stopped as too
// slow only once it has also run longer than the process's last set-up took
// (restart_ms()); runs shorter than that end by themselves, and timing stops
// early after them (measure_rules::stop_timing).

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "tune/kernels/backend.hpp"
#include "tune/kernels/subprocess.hpp"
#include "tune/kernels/task.hpp"

namespace tune {

class resident_measurer {
 public:
  enum class kind {
    cpu,  ///< kernels in forked children; the process enforces the limits
    gpu,  ///< kernels in the process; the engine enforces the limits
  };

  /// `worker`: the tune-kernel-worker program; `max_processes`: CPU only,
  /// the pids.max of the cgroup the process and its kernels run in (0: none;
  /// see process_limits). The process reaps and kills what a kernel left
  /// after each trial, so each trial starts with the process alone in it.
  resident_measurer(std::string worker, kind what, int max_processes);
  ~resident_measurer();
  resident_measurer(const resident_measurer&) = delete;
  resident_measurer& operator=(const resident_measurer&) = delete;

  /// Measures one worker request (mode "measure") within `limits`, starting
  /// the process when none runs. run_s counts from the call (a start
  /// included) to the reply. Serialised: one trial at a time.
  /// `reply`, when given, receives the process's reply as it came (empty
  /// when there was none: the process died or timed out).
  run_result measure(nlohmann::json request, const run_limits& limits, nlohmann::json* reply = nullptr);

  /// GPU: milliseconds from the start of the latest process to the first
  /// run it reported (start, driver, context, inputs, expected outputs, the
  /// module): what a kill costs the next trial. 0 until a process has run.
  double restart_ms() const;

 private:
  using clock_type = std::chrono::steady_clock;
  bool start(std::string& why);
  /// Kills the process (and the trial's process group `child`, when known),
  /// reaps it and closes the channel; what ended it, in words.
  std::string kill_and_reap(long child);
  /// Reaps a process that has ended; what ended it, in words.
  std::string reap(bool wait);
  bool read_line(std::string& line);

  std::string worker_;
  kind kind_;
  int max_processes_;
  mutable std::mutex mutex_;
  // CPU: the pids cgroup the process runs in (its children are born in it:
  // joining one per trial would cost milliseconds); made with the process,
  // removed (what is left in it killed) when the process is gone.
  std::unique_ptr<pids_cgroup> cgroup_;
  long pid_ = -1;
  int channel_ = -1;
  std::string pending_;  // received, not yet read as lines
  clock_type::time_point started_at_{};
  bool setting_up_ = false;  // started, no run reported yet
  double restart_ms_ = 0.0;
};

/// A backend's resident measurers, one per device, each made on its
/// device's first run. Thread-safe.
class resident_measurers {
 public:
  explicit resident_measurers(resident_measurer::kind what) : kind_(what) {}
  /// The device's measurer: the worker of `options` (kernel_worker_path)
  /// and, CPU only, its max_processes.
  resident_measurer& device(int device, const task_backend_options& options);

 private:
  resident_measurer::kind kind_;
  std::mutex mutex_;
  std::map<int, std::unique_ptr<resident_measurer>> by_device_;
};

/// A worker's reply (one-shot or resident) as a run_result: its status,
/// message, time, objectives {time, max_error}, repeats, stopped_early and
/// kernel_s; run_s is left as it was.
void read_reply(const nlohmann::json& reply, run_result& out);

}  // namespace tune
