#include "hip_runtime.hpp"

#include <dlfcn.h>

#include <optional>
#include <type_traits>

namespace tune::hip {

// The slots must have the signatures of the headers the build saw.
#define TUNE_SAME_SIGNATURE(slot, function) \
  static_assert(std::is_same_v<decltype(runtime_api::slot), decltype(&::function)>, #function)
TUNE_SAME_SIGNATURE(init, hipInit);
TUNE_SAME_SIGNATURE(get_device_count, hipGetDeviceCount);
TUNE_SAME_SIGNATURE(device_get_name, hipDeviceGetName);
TUNE_SAME_SIGNATURE(device_get_attribute, hipDeviceGetAttribute);
TUNE_SAME_SIGNATURE(device_total_mem, hipDeviceTotalMem);
TUNE_SAME_SIGNATURE(module_load_data, hipModuleLoadData);
TUNE_SAME_SIGNATURE(module_unload, hipModuleUnload);
TUNE_SAME_SIGNATURE(module_get_function, hipModuleGetFunction);
TUNE_SAME_SIGNATURE(func_get_attribute, hipFuncGetAttribute);
TUNE_SAME_SIGNATURE(memcpy_htod, hipMemcpyHtoD);
TUNE_SAME_SIGNATURE(memcpy_dtoh, hipMemcpyDtoH);
TUNE_SAME_SIGNATURE(module_launch_kernel, hipModuleLaunchKernel);
TUNE_SAME_SIGNATURE(event_create, hipEventCreate);
TUNE_SAME_SIGNATURE(event_synchronize, hipEventSynchronize);
TUNE_SAME_SIGNATURE(event_elapsed_time, hipEventElapsedTime);
TUNE_SAME_SIGNATURE(get_error_string, hipGetErrorString);
#undef TUNE_SAME_SIGNATURE

std::string runtime_api::error_text(hipError_t code) const {
  std::string text = get_error_name ? get_error_name(code) : "";
  const char* detail = get_error_string ? get_error_string(code) : nullptr;
  if (detail && text != detail) text += std::string(text.empty() ? "" : ": ") + detail;
  return text.empty() ? "HIP error " + std::to_string(static_cast<int>(code)) : text;
}

namespace {

struct loaded_runtime {
  std::optional<runtime_api> api;  // empty: see why
  std::string why;
};

loaded_runtime load() {
  void* library = nullptr;
  for (const char* name : {"libamdhip64.so.5", "libamdhip64.so"})
    if (!library) library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!library) return {std::nullopt, std::string(no_gpu_message) + " (HIP runtime libamdhip64.so.5 not found)"};
  runtime_api a;
  const char* missing = nullptr;
  auto bind = [&](auto& slot, const char* symbol) {
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(dlsym(library, symbol));
    if (!slot && !missing) missing = symbol;
  };
  bind(a.init, "hipInit");
  bind(a.get_device_count, "hipGetDeviceCount");
  bind(a.set_device, "hipSetDevice");
  bind(a.device_get_name, "hipDeviceGetName");
  bind(a.device_get_attribute, "hipDeviceGetAttribute");
  bind(a.device_total_mem, "hipDeviceTotalMem");
  bind(a.device_synchronize, "hipDeviceSynchronize");
  bind(a.module_load_data, "hipModuleLoadData");
  bind(a.module_unload, "hipModuleUnload");
  bind(a.module_get_function, "hipModuleGetFunction");
  bind(a.func_get_attribute, "hipFuncGetAttribute");
  bind(a.malloc, "hipMalloc");
  bind(a.free, "hipFree");
  bind(a.memcpy_htod, "hipMemcpyHtoD");
  bind(a.memcpy_dtoh, "hipMemcpyDtoH");
  bind(a.module_launch_kernel, "hipModuleLaunchKernel");
  bind(a.event_create, "hipEventCreate");
  bind(a.event_record, "hipEventRecord");
  bind(a.event_synchronize, "hipEventSynchronize");
  bind(a.event_elapsed_time, "hipEventElapsedTime");
  bind(a.get_error_name, "hipGetErrorName");
  bind(a.get_error_string, "hipGetErrorString");
  if (missing) return {std::nullopt, std::string(no_gpu_message) + " (the HIP runtime lacks " + missing + ")"};
  if (auto rc = a.init(0); rc != hipSuccess)
    return {std::nullopt, std::string(no_gpu_message) + " (HIP runtime: hipInit: " + a.error_text(rc) + ")"};
  int count = 0;
  if (auto rc = a.get_device_count(&count); rc != hipSuccess || count == 0)
    return {std::nullopt, std::string(no_gpu_message) + " (HIP runtime sees no device" +
                              (rc != hipSuccess ? ": " + a.error_text(rc) : std::string()) + ")"};
  return {a, {}};
}

}  // namespace

const runtime_api* load_runtime(std::string* why) {
  static const loaded_runtime runtime = load();
  if (!runtime.api && why) *why = runtime.why;
  return runtime.api ? &*runtime.api : nullptr;
}

}  // namespace tune::hip
