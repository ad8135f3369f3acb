// The replay backend: a dataset answers build() and run() with recorded
// statuses and times, sleeping a scaled share of the recorded durations.
#include <chrono>
#include <mutex>
#include <thread>

#include "tune/kernels/replay.hpp"

namespace tune {
namespace {

void sleep_scaled(double seconds, double scale) {
  if (scale > 0 && seconds > 0) std::this_thread::sleep_for(std::chrono::duration<double>(seconds * scale));
}

class replay_backend final : public backend {
 public:
  replay_backend(std::shared_ptr<const replay_dataset> dataset, const replay_backend_options& options)
      : dataset_(std::move(dataset)), options_(options), noise_(fork_seed(options.seed, 0x7265706c6179)) {}

  std::string name() const override { return "replay"; }
  /// The same kernel, problem and parameters measured on several devices is
  /// one task (so runs on one device can be a prior for another); a dataset
  /// that names no kernel is a task of its own file.
  std::string task_key() const override {
    std::string params;
    for (const auto& p : dataset_->space->parameters()) params += (params.empty() ? "" : ",") + p->name();
    if (dataset_->kernel.empty()) return "replay:" + dataset_->origin;
    return "replay:" + dataset_->kernel + ":" + dataset_->problem + ":" + params;
  }
  /// The device named by the dataset, else its file.
  std::string device_kind() const override {
    return "replay:" + (dataset_->device.empty() ? dataset_->origin : dataset_->device);
  }
  search_space_ptr space() const override { return dataset_->space; }
  /// The recorded compile times are replayed as they are.
  bool real_builds() const override { return false; }

  build_result build(const configuration& config, double timeout_s) override {
    build_result out;
    const replay_record* rec = dataset_->find(config);
    if (!rec) {
      out.state = status::instantiation_error;
      out.message = "configuration is not in the dataset (it breaks the kernel's restrictions)";
      return out;
    }
    out.compile_s = rec->compile_s;
    if (timeout_s > 0 && rec->compile_s > timeout_s) {
      sleep_scaled(timeout_s, options_.time_scale);
      out.state = status::build_timeout;
      out.compile_s = timeout_s;
      return out;
    }
    sleep_scaled(rec->compile_s, options_.time_scale);
    if (rec->state == status::compile_error || rec->state == status::compile_error_device ||
        rec->state == status::instantiation_error || rec->state == status::build_timeout) {
      out.state = rec->state;
      out.message = "recorded " + std::string(to_string(rec->state));
    } else {
      out.state = status::ok;
    }
    return out;
  }

  run_result run(const configuration& config, const build_result& build, int, const run_limits& limits) override {
    const double timeout_s = limits.timeout_s;  // the recorded time is what it is: no early stop
    run_result out;
    if (build.state != status::ok) {
      out.state = build.state;
      out.message = "not built";
      return out;
    }
    const replay_record* rec = dataset_->find(config);
    if (!rec) {
      out.state = status::instantiation_error;
      return out;
    }
    double cost = rec->benchmark_s + rec->verification_s;
    if (timeout_s > 0 && cost > timeout_s) {
      sleep_scaled(timeout_s, options_.time_scale);
      out.state = status::run_timeout;
      out.run_s = timeout_s;
      return out;
    }
    sleep_scaled(cost, options_.time_scale);
    replay_evaluation ev;
    {
      std::lock_guard lock(noise_mutex_);
      ev = evaluate(*dataset_, config, options_.noise ? &noise_ : nullptr);
    }
    out.state = ev.state;
    out.time_ms = ev.time_ms;
    out.run_s = cost;
    // The recorded benchmark is the kernel's runs; its verification the rest.
    // A replay measures every candidate in full: it never stops one early.
    out.kernel_s = rec->benchmark_s;
    out.repeats = static_cast<std::uint32_t>(rec->times_ms.size());
    if (ev.state != status::ok) out.message = "recorded " + std::string(to_string(ev.state));
    return out;
  }

 private:
  std::shared_ptr<const replay_dataset> dataset_;
  replay_backend_options options_;
  std::mutex noise_mutex_;
  rng_type noise_;
};

}  // namespace

backend_ptr make_replay_backend(std::shared_ptr<const replay_dataset> dataset, const replay_backend_options& options) {
  return std::make_shared<replay_backend>(std::move(dataset), options);
}

}  // namespace tune
