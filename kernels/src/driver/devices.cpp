#include "tune/kernels/devices.hpp"

#include <sched.h>

#include <fstream>
#include <thread>

#include "tune/kernels/cuda_driver.hpp"
#include "tune/kernels/task.hpp"

#ifdef TUNE_WITH_HIP
#include "../hip/hip_runtime.hpp"
#endif

namespace tune {

std::string cpu_model_name() {
  std::ifstream info("/proc/cpuinfo");
  std::string line;
  while (std::getline(info, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  }
  return "unknown CPU";
}

int cpu_core_count() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  return static_cast<int>(std::thread::hardware_concurrency());
}

namespace {

backend_devices cpu_devices() {
  backend_devices cpu;
  cpu.backend = "cpu";
  cpu.available = true;
  backend_devices::device d;
  d.info = {"cpu", 0, cpu_model_name()};
  d.details = {{"cores", std::to_string(cpu_core_count())}};
  cpu.devices.push_back(d);
  return cpu;
}

backend_devices cuda_devices() {
  backend_devices cuda;
  cuda.backend = "cuda";
  bool built = false;
  for (const auto& name : task_backend_names()) built = built || name == "cuda";
  cuda.built = built;
  std::string why;
  const auto* api = cuda::load_driver(&why);
  if (!api) {
    cuda.message = why;
    if (!built) cuda.message += "; CUDA backend not built (no NVRTC at build time)";
    return cuda;
  }
  int count = 0;
  if (auto rc = api->device_get_count(&count); rc != 0) {
    cuda.message = "cuDeviceGetCount failed: " + api->error_text(rc);
    return cuda;
  }
  for (int i = 0; i < count; ++i) {
    cuda::device_handle handle = 0;
    if (api->device_get(&handle, i) != 0) continue;
    char name[256] = {};
    api->device_get_name(name, sizeof name, handle);
    int major = 0, minor = 0, sms = 0;
    api->device_get_attribute(&major, cuda::compute_capability_major, handle);
    api->device_get_attribute(&minor, cuda::compute_capability_minor, handle);
    api->device_get_attribute(&sms, cuda::multiprocessor_count, handle);
    std::size_t memory = 0;
    api->device_total_mem(&memory, handle);
    backend_devices::device d;
    d.info = {"cuda", i, name};
    d.details = {{"compute capability", std::to_string(major) + "." + std::to_string(minor)},
                 {"multiprocessors", std::to_string(sms)},
                 {"memory MiB", std::to_string(memory >> 20)}};
    cuda.devices.push_back(d);
  }
  cuda.available = !cuda.devices.empty();
  if (!cuda.available) cuda.message = "the CUDA driver sees no device";
  if (!built) cuda.message = "CUDA backend not built (no NVRTC at build time)";
  return cuda;
}

backend_devices hip_devices() {
  backend_devices hip;
  hip.backend = "hip";
#ifdef TUNE_WITH_HIP
  std::string why;
  const auto* api = hip::load_runtime(&why);
  if (!api) {
    hip.message = why;
    return hip;
  }
  int count = 0;
  if (auto rc = api->get_device_count(&count); rc != hipSuccess) {
    hip.message = "hipGetDeviceCount failed: " + api->error_text(rc);
    return hip;
  }
  for (int i = 0; i < count; ++i) {
    char name[256] = {};
    if (api->device_get_name(name, sizeof name, i) != hipSuccess) continue;
    auto attribute = [&](hipDeviceAttribute_t which) {
      int value = 0;
      return api->device_get_attribute(&value, which, i) == hipSuccess ? value : 0;
    };
    std::size_t memory = 0;
    if (api->device_total_mem(&memory, i) != hipSuccess) memory = 0;
    backend_devices::device d;
    d.info = {"hip", i, name};
    d.details = {{"compute units", std::to_string(attribute(hipDeviceAttributeMultiprocessorCount))},
                 {"wavefront", std::to_string(attribute(hipDeviceAttributeWarpSize))},
                 {"memory MiB", std::to_string(memory >> 20)}};
    hip.devices.push_back(d);
  }
  hip.available = !hip.devices.empty();
  if (!hip.available) hip.message = std::string(hip::no_gpu_message) + " (the HIP runtime lists no device)";
#else
  hip.built = false;
  hip.message = "HIP backend not built (no hipcc at build time)";
#endif
  return hip;
}

}  // namespace

std::vector<backend_devices> list_devices() { return {cpu_devices(), cuda_devices(), hip_devices()}; }

nlohmann::json devices_json(const std::vector<backend_devices>& all) {
  auto out = nlohmann::json::array();
  for (const auto& b : all) {
    auto devices = nlohmann::json::array();
    for (const auto& d : b.devices) {
      nlohmann::json details = nlohmann::json::object();
      for (const auto& [key, value] : d.details) details[key] = value;
      devices.push_back({{"id", d.info.id}, {"name", d.info.name}, {"details", details}});
    }
    out.push_back({{"backend", b.backend},
                   {"built", b.built},
                   {"available", b.available},
                   {"message", b.message},
                   {"devices", devices}});
  }
  return out;
}

}  // namespace tune
