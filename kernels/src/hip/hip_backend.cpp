#include "tune/kernels/hip_backend.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <utility>

#include "../cpu/measurement.hpp"
#include "../cpu/resident_measurer.hpp"
#include "../tasks/codegen.hpp"
#include "hip_runtime.hpp"
#include "tune/kernels/compile_cache.hpp"
#include "tune/kernels/cpu_backend.hpp"
#include "tune/kernels/subprocess.hpp"

namespace tune {

namespace fs = std::filesystem;

std::string hipcc_path() {
#ifdef TUNE_HIPCC_PATH
  return TUNE_HIPCC_PATH;
#else
  return "hipcc";
#endif
}

std::string hipcc_version() {
  static const std::string version = [] {
    auto result = run_process({hipcc_path(), "--version"}, 60.0, 64 * 1024);
    if (!result.ok()) return std::string("hipcc (version unknown)");
    std::string lines;
    std::size_t start = 0;
    for (int i = 0; i < 2 && start < result.output.size(); ++i) {
      auto end = result.output.find('\n', start);
      if (end == std::string::npos) end = result.output.size();
      lines += (lines.empty() ? "" : "; ") + result.output.substr(start, end - start);
      start = end + 1;
    }
    return lines;
  }();
  return version;
}

std::vector<std::string> hip_compile_flags(const std::string& arch) {
  return {"--genco", "--offload-arch=" + arch, "-O3", "-std=c++17"};
}

std::string hip_offload_arch(const task_backend_options& options) {
  static const std::regex form("gfx[0-9a-f]+(:[a-z]+[+-])*");
  const char* from_environment = std::getenv("TUNE_HIP_ARCH");
  std::string arch = !options.hip_arch.empty() ? options.hip_arch : from_environment ? from_environment : "gfx90a";
  if (!std::regex_match(arch, form))
    throw std::invalid_argument(
        std::string(options.hip_arch.empty() ? "$TUNE_HIP_ARCH" : "task_backend_options.hip_arch") + " '" + arch +
        "' is not an AMD offload arch; expected gfx followed by the ISA version, e.g. "
        "gfx90a (MI200) or gfx908 (MI100)");
  return arch;
}

namespace {

run_result runtime_error(const std::string& message) {
  run_result out;
  out.state = status::runtime_error;
  out.message = message;
  return out;
}

// hipcc's outcome as a build status and message: a process that could not
// start is a host problem, a failing hipcc a device compile error.
std::pair<status, std::string> hipcc_outcome(const process_result& result, double timeout_s) {
  if (!result.started) return {status::compile_error, "cannot run " + hipcc_path() + ": " + result.error};
  if (result.timed_out) return {status::build_timeout, "hipcc killed after " + std::to_string(timeout_s) + " s"};
  if (result.ok()) return {status::ok, result.output};
  if (!result.output.empty()) return {status::compile_error_device, result.output};
  return {status::compile_error_device, "hipcc failed (exit code " + std::to_string(result.exit_code) + ", signal " +
                                            std::to_string(result.signal) + ")"};
}

class hip_backend final : public backend {
  kernel_program_ptr program_;
  task_backend_options options_;
  resident_measurers measurers_{resident_measurer::kind::gpu};  // context, module and buffers kept per device

 public:
  hip_backend(kernel_program_ptr program, task_backend_options options)
      : program_(std::move(program)), options_(std::move(options)) {
    options_.hip_arch = hip_offload_arch(options_);
    if (!program_->geometry || !program_->check)
      throw std::invalid_argument("a HIP kernel program needs a launch geometry and a resource check");
  }

  std::string name() const override { return "hip"; }
  std::string task_key() const override { return program_->key; }
  std::string device_kind() const override { return "hip:" + options_.hip_arch + ":" + hipcc_version(); }
  search_space_ptr space() const override { return program_->space; }

  build_result build(const configuration& config, double timeout_s) override {
    if (auto failed = instantiation_failure(*program_, config)) return *failed;
    auto source = program_->source(config);
    auto flags = hip_compile_flags(options_.hip_arch);
    std::vector<std::string> key_parts{source, hipcc_path(), hipcc_version(), options_.hip_arch};
    key_parts.insert(key_parts.end(), flags.begin(), flags.end());
    compile_cache cache(fs::path(kernel_cache_dir(options_)) / "hip", ".co");
    auto kept_source = cache.artifact_path(key_parts).replace_extension(".hip");
    return cache.fetch(key_parts, [&](const fs::path& code_object) {
      return compile(source, flags, code_object, kept_source, timeout_s);
    });
  }

  run_result run(const configuration& config, const build_result& build, int device,
                 const run_limits& limits) override {
    // Without a device no reference is worth computing: said here, not by the worker.
    if (std::string no_device; build.state == status::ok && !hip::load_runtime(&no_device))
      return runtime_error(no_device);
    auto plan = plan_measurement(*program_, options_, build);
    if (plan.failure) return *plan.failure;
    auto launch = program_->geometry(config);
    plan.request.update({{"device", "hip"},
                         {"device_index", device},
                         {"arch", options_.hip_arch},
                         {"grid", launch.grid},
                         {"block", launch.block}});
    if (!options_.resident_measurer)
      return run_worker(kernel_worker_path(options_), plan.request.dump(), limits.timeout_s, options_.max_processes);
    return measurers_.device(device, options_).measure(std::move(plan.request), limits);
  }

  std::vector<std::string> device_resources(int device) const override { return {"hip-" + std::to_string(device)}; }

 private:
  // hipcc builds `code_object` (a temporary name of the cache's) from a
  // source file of this thread's own; the source is kept beside the cached
  // code object.
  static build_result compile(const std::string& source, const std::vector<std::string>& flags,
                              const fs::path& code_object, const fs::path& kept_source, double timeout_s) {
    build_result out{status::compile_error, {}, 0.0, {}};
    std::error_code ec;
    if (!fs::exists(hipcc_path(), ec)) {
      out.message = "hipcc not found at " + hipcc_path() + " (found there at build time; install hipcc again)";
      return out;
    }
    if (auto problem = compile_cache::write_file(kept_source, source); !problem.empty()) {
      out.message = problem;
      return out;
    }
    // hipcc picks NVIDIA's toolchain when HIP_PLATFORM says so; code objects
    // for AMD GPUs need the AMD one whatever the environment holds.
    std::vector<std::string> argv{"env", "HIP_PLATFORM=amd", hipcc_path()};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {"-o", code_object.string(), kept_source.string()});
    auto result = run_process(argv, timeout_s, 64 * 1024);
    std::tie(out.state, out.message) = hipcc_outcome(result, timeout_s);
    out.compile_s = result.seconds;
    return out;
  }
};

}  // namespace

backend_ptr make_hip_backend(kernel_program_ptr program, const task_backend_options& options) {
  return std::make_shared<hip_backend>(std::move(program), options);
}

backend_ptr make_hip_task_backend(const task_spec& task, const task_backend_options& options) {
  return make_hip_backend(codegen::make_hip_program(task), options);
}

}  // namespace tune
