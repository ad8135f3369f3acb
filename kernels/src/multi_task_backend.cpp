#include "tune/kernels/multi_task_backend.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "tune/engine/multi_task.hpp"

namespace tune {

multi_task_backend::multi_task_backend(std::vector<backend_ptr> tasks) : tasks_(std::move(tasks)) {
  if (tasks_.empty()) throw std::invalid_argument("multi_task_backend: no task");
  std::vector<search_space_ptr> spaces;
  std::vector<std::string> kinds;
  key_ = "tasks(";
  for (std::size_t i = 0; i < tasks_.size(); ++i) {
    const auto& t = tasks_[i];
    if (!t) throw std::invalid_argument("multi_task_backend: task " + std::to_string(i) + " has no backend");
    if (t->name() != tasks_.front()->name())
      throw std::invalid_argument("multi_task_backend: task " + std::to_string(i) + " is a " + t->name() +
                                  " task, task 0 a " + tasks_.front()->name() +
                                  " one; one pipeline's measurers serve one backend");
    spaces.push_back(t->space());
    key_ += (i ? " | " : "") + t->task_key();
    if (auto kind = t->device_kind(); std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) {
      kind_ += (kinds.empty() ? "" : " | ") + kind;
      kinds.push_back(std::move(kind));
    }
    instant_ = instant_ && t->builds_instantly();
  }
  key_ += ")";
  space_ = multi_task_space(std::move(spaces));
}

std::string multi_task_backend::no_task() const {
  return "a configuration of no task of this run (" + std::to_string(tasks_.size()) + " tasks)";
}

backend* multi_task_backend::task_of_config(const configuration& config) const {
  if (config.empty() || config.front() >= tasks_.size()) return nullptr;
  return tasks_[config.front()].get();
}

build_result multi_task_backend::build(const configuration& config, double timeout_s) {
  auto* be = task_of_config(config);
  if (!be) return {status::unknown, {}, 0.0, no_task()};
  return be->build(untagged(config), timeout_s);
}

run_result multi_task_backend::run(const configuration& config, const build_result& build, int device,
                                   const run_limits& limits) {
  auto* be = task_of_config(config);
  if (!be) {
    run_result r;
    r.message = no_task();
    return r;
  }
  return be->run(untagged(config), build, device, limits);
}

interleaved_times multi_task_backend::run_interleaved(
    const std::vector<std::pair<configuration, build_result>>& entries, int device, int rounds, double timeout_s) {
  backend* one = entries.empty() ? nullptr : task_of_config(entries.front().first);
  std::vector<std::pair<configuration, build_result>> own;
  for (const auto& [config, build] : entries) {
    if (!one || task_of_config(config) != one) {
      one = nullptr;
      break;
    }
    own.emplace_back(untagged(config), build);
  }
  if (one) return one->run_interleaved(own, device, rounds, timeout_s);
  return backend::run_interleaved(entries, device, rounds, timeout_s);
}

}  // namespace tune
