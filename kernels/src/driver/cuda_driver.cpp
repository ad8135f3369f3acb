#include "tune/kernels/cuda_driver.hpp"

#include <dlfcn.h>

#include <mutex>

#include "../dl_bind.hpp"

namespace tune::cuda {

std::string driver_api::error_text(result_code code) const {
  const char* text = nullptr;
  if (get_error_string && get_error_string(code, &text) == 0 && text) return std::string(text);
  return "CUDA error " + std::to_string(code);
}

namespace {

struct loaded_driver {
  driver_api api;
  bool ok = false;
  std::string why;
};

loaded_driver load() {
  loaded_driver d;
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    d.why = no_driver_message;
    return d;
  }
  auto& a = d.api;
  bool all =
      bind_symbol(library, a.init, "cuInit") && bind_symbol(library, a.device_get_count, "cuDeviceGetCount") &&
      bind_symbol(library, a.device_get, "cuDeviceGet") && bind_symbol(library, a.device_get_name, "cuDeviceGetName") &&
      bind_symbol(library, a.device_get_attribute, "cuDeviceGetAttribute") &&
      bind_symbol(library, a.device_total_mem, "cuDeviceTotalMem_v2") &&
      bind_symbol(library, a.primary_ctx_retain, "cuDevicePrimaryCtxRetain") &&
      bind_symbol(library, a.ctx_set_current, "cuCtxSetCurrent") &&
      bind_symbol(library, a.ctx_synchronize, "cuCtxSynchronize") &&
      bind_symbol(library, a.module_load_data, "cuModuleLoadData") &&
      bind_symbol(library, a.module_unload, "cuModuleUnload") &&
      bind_symbol(library, a.module_get_function, "cuModuleGetFunction") &&
      bind_symbol(library, a.func_get_attribute, "cuFuncGetAttribute") &&
      bind_symbol(library, a.mem_alloc, "cuMemAlloc_v2") && bind_symbol(library, a.mem_free, "cuMemFree_v2") &&
      bind_symbol(library, a.memcpy_htod, "cuMemcpyHtoD_v2") &&
      bind_symbol(library, a.memcpy_dtoh, "cuMemcpyDtoH_v2") && bind_symbol(library, a.memset_d32, "cuMemsetD32_v2") &&
      bind_symbol(library, a.launch_kernel, "cuLaunchKernel") &&
      bind_symbol(library, a.event_create, "cuEventCreate") && bind_symbol(library, a.event_record, "cuEventRecord") &&
      bind_symbol(library, a.event_synchronize, "cuEventSynchronize") &&
      bind_symbol(library, a.event_elapsed_time, "cuEventElapsedTime") &&
      bind_symbol(library, a.get_error_string, "cuGetErrorString");
  if (!all) {
    d.why = std::string("libcuda.so.1 lacks a driver API entry point: ") + dlerror();
    return d;
  }
  if (auto rc = a.init(0); rc != 0) {
    d.why = "cuInit failed: " + a.error_text(rc);
    return d;
  }
  d.ok = true;
  return d;
}

}  // namespace

const driver_api* load_driver(std::string* why) {
  static loaded_driver driver = load();
  if (!driver.ok) {
    if (why) *why = driver.why;
    return nullptr;
  }
  return &driver.api;
}

}  // namespace tune::cuda
