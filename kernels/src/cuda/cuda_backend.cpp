#include "tune/kernels/cuda_backend.hpp"

#include <dlfcn.h>
#include <nvrtc.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../cpu/measurement.hpp"
#include "../cpu/resident_measurer.hpp"
#include "../tasks/codegen.hpp"
#include "tune/kernels/compile_cache.hpp"
#include "tune/kernels/cpu_backend.hpp"
#include "tune/kernels/cuda_driver.hpp"
#include "tune/kernels/subprocess.hpp"

namespace tune {

namespace fs = std::filesystem;

std::string nvrtc_version() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return "NVRTC " + std::to_string(major) + "." + std::to_string(minor);
}

std::string nvrtc_library_path() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&nvrtcVersion), &info) != 0 && info.dli_fname && *info.dli_fname)
    return info.dli_fname;
  return "libnvrtc.so";
}

nvrtc_output nvrtc_compile(const std::string& source, int arch, double timeout_s, const std::string& worker,
                           const fs::path& cubin) {
  // In the worker's process (--nvrtc), not on an engine thread: NVRTC cannot
  // be interrupted, and a compile past its limit is stopped by killing it.
  // The worker reads the source from a file beside the cubin and writes the
  // cubin where the caller wants it (the compile cache's temporary name).
  nvrtc_output out;
  std::error_code ec;
  const fs::path source_file = cubin.string() + ".cu";
  {
    std::ofstream file(source_file, std::ios::binary | std::ios::trunc);
    file << source;
    if (!file.flush()) {
      fs::remove(source_file, ec);
      out.state = status::compile_error;
      out.log = "cannot write " + source_file.string();
      return out;
    }
  }
  auto ran = run_process(
      {worker, "--nvrtc", nvrtc_library_path(), std::to_string(arch), source_file.string(), cubin.string()}, timeout_s);
  fs::remove(source_file, ec);
  out.seconds = ran.seconds;
  out.log = ran.output;
  while (!out.log.empty() && out.log.back() == '\n') out.log.pop_back();
  if (!ran.started) {
    out.state = status::compile_error;
    out.log = "cannot start " + worker + " for the CUDA compile: " + ran.error;
  } else if (ran.timed_out) {
    out.state = status::build_timeout;
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g", timeout_s);
    out.log = std::string("NVRTC killed after ") + seconds + " s";
  } else if (ran.signal != 0 || ran.exit_code == 3 || ran.exit_code == 2) {
    out.state = status::compile_error;
    if (ran.signal != 0)
      out.log = "the CUDA compile was killed by signal " + std::to_string(ran.signal) + ": " + out.log;
  } else if (ran.exit_code != 0) {
    out.state = status::compile_error_device;
  } else if (const auto size = fs::file_size(cubin, ec); ec || size == 0) {
    out.state = status::compile_error;
    out.log = "NVRTC wrote no cubin to " + cubin.string();
  }
  // A compile stopped while the worker wrote leaves no part of a cubin.
  if (out.state != status::ok) fs::remove(cubin, ec);
  return out;
}

namespace {

// The comparison kernels (cuda_check_entries): a grid-stride loop keeps each
// thread's lowest wrong index and largest error, a warp reduces them with
// shuffles, and one lane per warp folds them into the result with atomics
// (a non-negative double orders as its bits do).
constexpr const char* check_source = R"(
template <typename T>
__device__ void check(const T* got, const T* want, unsigned long long n, double tolerance, int absolute,
                      unsigned long long* result) {
  unsigned long long first = ~0ull;
  double worst = 0.0;
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    double g = (double)got[i], r = (double)want[i];
    double error = fabs(g - r) / (absolute ? 1.0 : fmax(1.0, fabs(r)));
    if (!(error <= tolerance)) {
      if (i < first) first = i;
    } else if (error > worst) {
      worst = error;
    }
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    unsigned long long other_first = __shfl_down_sync(0xffffffffu, first, offset);
    double other_worst = __shfl_down_sync(0xffffffffu, worst, offset);
    if (other_first < first) first = other_first;
    if (other_worst > worst) worst = other_worst;
  }
  if ((threadIdx.x & 31) == 0) {
    if (first != ~0ull) atomicMin(&result[0], first);
    if (worst > 0.0) atomicMax(&result[1], (unsigned long long)__double_as_longlong(worst));
  }
}
extern "C" __global__ void tune_check_f32(const float* got, const float* want, unsigned long long n,
                                          double tolerance, int absolute, unsigned long long* result) {
  check(got, want, n, tolerance, absolute, result);
}
extern "C" __global__ void tune_check_f64(const double* got, const double* want, unsigned long long n,
                                          double tolerance, int absolute, unsigned long long* result) {
  check(got, want, n, tolerance, absolute, result);
}
extern "C" __global__ void tune_check_i32(const int* got, const int* want, unsigned long long n,
                                          double tolerance, int absolute, unsigned long long* result) {
  check(got, want, n, tolerance, absolute, result);
}
)";

}  // namespace

std::string cuda_check_module(int arch, const std::string& cache_dir, const std::string& worker, std::string* why) {
  compile_cache cache(fs::path(cache_dir) / "cuda", ".cubin");
  auto built =
      cache.fetch({"check-module", check_source, std::to_string(arch), nvrtc_version()}, [&](const fs::path& cubin) {
        auto compiled = nvrtc_compile(check_source, arch, 120.0, worker, cubin);
        return build_result{compiled.state, {}, compiled.seconds, compiled.log};
      });
  if (built.state == status::ok) return built.artifact;
  if (why) *why = "the comparison module did not build: " + built.message;
  return {};
}

namespace {

int device_arch(int device) {
  const auto* api = cuda::load_driver();
  if (!api) return 80;
  cuda::device_handle handle = 0;
  int major = 8, minor = 0;
  if (api->device_get(&handle, device) == 0) {
    api->device_get_attribute(&major, cuda::compute_capability_major, handle);
    api->device_get_attribute(&minor, cuda::compute_capability_minor, handle);
  }
  return major * 10 + minor;
}

class cuda_backend final : public backend {
 public:
  cuda_backend(kernel_program_ptr program, task_backend_options options)
      : program_(std::move(program)), options_(std::move(options)) {
    arch_ = options_.cuda_arch > 0 ? options_.cuda_arch : device_arch(0);
  }

  std::string name() const override { return "cuda"; }
  std::string task_key() const override { return program_->key; }
  std::string device_kind() const override { return "cuda:sm_" + std::to_string(arch_) + ":" + nvrtc_version(); }
  search_space_ptr space() const override { return program_->space; }

  build_result build(const configuration& config, double timeout_s) override {
    if (auto failed = instantiation_failure(*program_, config)) return *failed;
    auto source = program_->source(config);
    compile_cache cache(fs::path(kernel_cache_dir(options_)) / "cuda", ".cubin");
    return cache.fetch({source, std::to_string(arch_), nvrtc_version()}, [&](const fs::path& cubin) {
      auto compiled = nvrtc_compile(source, arch_, timeout_s, kernel_worker_path(options_), cubin);
      return build_result{compiled.state, {}, compiled.seconds, compiled.log};
    });
  }

  run_result run(const configuration& config, const build_result& build, int device,
                 const run_limits& limits) override {
    std::string why;
    if (build.state == status::ok && !cuda::load_driver(&why)) {
      // Said here rather than by the worker: no reference is worth computing.
      run_result out;
      out.state = status::runtime_error;
      out.message = why;
      return out;
    }
    auto plan = plan_measurement(*program_, options_, build);
    if (plan.failure) return *plan.failure;
    auto geometry = program_->geometry(config);
    plan.request["device"] = "cuda";
    plan.request["device_index"] = device;
    plan.request["grid"] = {geometry.grid[0], geometry.grid[1], geometry.grid[2]};
    plan.request["block"] = {geometry.block[0], geometry.block[1], geometry.block[2]};
    if (auto module = check_module(); !module.empty()) plan.request["check_module"] = module;
    if (!options_.resident_measurer)
      return run_worker(kernel_worker_path(options_), plan.request.dump(), limits.timeout_s, options_.max_processes);
    return measurers_.device(device, options_).measure(std::move(plan.request), limits);
  }

  std::vector<std::string> device_resources(int device) const override { return {"cuda-" + std::to_string(device)}; }

 private:
  // The comparison module, built on the first run (a build alone needs none);
  // when it cannot be built the worker compares on the host.
  std::string check_module() {
    std::call_once(check_module_built_, [&] {
      std::string why;
      check_module_ = cuda_check_module(arch_, kernel_cache_dir(options_), kernel_worker_path(options_), &why);
    });
    return check_module_;
  }

  kernel_program_ptr program_;
  task_backend_options options_;
  int arch_ = 80;
  std::once_flag check_module_built_;
  std::string check_module_;
  resident_measurers measurers_{resident_measurer::kind::gpu};  // context, module and buffers kept per device
};

}  // namespace

backend_ptr make_cuda_backend(kernel_program_ptr program, const task_backend_options& options) {
  if (!program->geometry || !program->check)
    throw std::invalid_argument("a CUDA kernel program needs a launch geometry and a resource check");
  return std::make_shared<cuda_backend>(std::move(program), options);
}

backend_ptr make_cuda_task_backend(const task_spec& task, const task_backend_options& options) {
  return make_cuda_backend(codegen::make_cuda_program(task), options);
}

}  // namespace tune
