#pragma once
// The backend of a run of many tasks through one pipeline (a model's tasks,
// tune/engine/multi_task.hpp): one backend per task, and the configurations
// it builds and runs are tagged with their task's index. Each call goes to the
// task's backend with the task's own configuration; what is the device's, not
// the task's (its resources and measuring cores), is the first task's, and
// every task must be of one backend (all cpu, all replay, …).

#include <vector>

#include "tune/kernels/backend.hpp"

namespace tune {

class multi_task_backend final : public backend {
 public:
  /// Throws std::invalid_argument for no task, a null one, or tasks of
  /// different backends (the measurers serve them all).
  explicit multi_task_backend(std::vector<backend_ptr> tasks);

  std::string name() const override { return tasks_.front()->name(); }
  /// "tasks(" + each task's key, joined by " | " + ")".
  std::string task_key() const override { return key_; }
  /// The tasks' device kinds, each once, joined by " | " (replayed datasets
  /// may come from several GPUs).
  std::string device_kind() const override { return kind_; }
  /// multi_task_space over the tasks' spaces.
  search_space_ptr space() const override { return space_; }
  /// A configuration of a task that does not exist, or an empty one, is a
  /// failed build (status unknown, the message says why), not an exception.
  build_result build(const configuration& config, double timeout_s) override;
  bool builds_instantly() const override { return instant_; }
  /// The tasks are of one backend: its answer.
  bool real_builds() const override { return tasks_.front()->real_builds(); }
  run_result run(const configuration& config, const build_result& build, int device, const run_limits& limits) override;
  /// Entries of one task go to its backend's run_interleaved; entries of
  /// several tasks are measured in turn by run().
  interleaved_times run_interleaved(const std::vector<std::pair<configuration, build_result>>& entries, int device,
                                    int rounds, double timeout_s) override;
  std::vector<std::string> device_resources(int device) const override {
    return tasks_.front()->device_resources(device);
  }
  std::vector<int> measuring_cores(int device) const override { return tasks_.front()->measuring_cores(device); }

  std::size_t size() const { return tasks_.size(); }
  const backend_ptr& task(std::size_t i) const { return tasks_.at(i); }

 private:
  /// The task's backend, or nullptr when the configuration names none.
  backend* task_of_config(const configuration& config) const;
  /// Why a configuration of no task fails.
  std::string no_task() const;

  std::vector<backend_ptr> tasks_;
  std::string key_, kind_;
  search_space_ptr space_;
  bool instant_ = true;
};

}  // namespace tune
