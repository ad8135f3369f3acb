#include "objective_backend.hpp"

#include <chrono>
#include <cmath>
#include <exception>
#include <utility>

namespace tune::detail {
namespace {

class objective_backend final : public backend {
 public:
  objective_backend(objective_fn objective, search_space_ptr space, std::string task_name)
      : objective_(std::move(objective)), space_(std::move(space)), task_name_(std::move(task_name)) {}

  std::string name() const override { return "objective"; }
  std::string task_key() const override { return task_name_; }
  std::string device_kind() const override { return "callable"; }
  search_space_ptr space() const override { return space_; }

  build_result build(const configuration&, double) override {
    build_result out;
    out.state = status::ok;
    return out;
  }
  bool builds_instantly() const override { return true; }

  run_result run(const configuration& config, const build_result&, int, const run_limits&) override {
    run_result out;
    auto start = std::chrono::steady_clock::now();
    try {
      double value = objective_(config);
      if (std::isfinite(value)) {
        out.state = status::ok;
        out.time_ms = value;
      } else {
        out.state = status::runtime_error;
        out.message = "the objective returned " + std::string(std::isnan(value) ? "NaN" : "an infinite value");
      }
    } catch (const std::exception& e) {
      out.state = status::runtime_error;
      out.message = e.what();
    } catch (...) {
      out.state = status::runtime_error;
      out.message = "the objective threw an exception that is not a std::exception";
    }
    out.run_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return out;
  }

 private:
  objective_fn objective_;
  search_space_ptr space_;
  std::string task_name_;
};

}  // namespace

backend_ptr make_objective_backend(objective_fn objective, search_space_ptr space, const std::string& task_name) {
  if (!objective) throw input_error("objective: no callable given");
  if (!space) throw input_error("objective: no search space given; set space or space_file");
  if (task_name.empty()) throw input_error("task_name: empty; name the objective's task (e.g. \"my-kernel\")");
  return std::make_shared<objective_backend>(std::move(objective), std::move(space), task_name);
}

}  // namespace tune::detail
