#pragma once
// The HIP runtime, loaded at run time with dlopen("libamdhip64.so.5", then
// "libamdhip64.so") so that nothing links it: a machine without the runtime or
// without an AMD GPU gets a clear message, not a failed start. The types and
// enum values come from the HIP headers of the build; only the entry points
// the backend and `tune-engine devices` use are bound.

#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__
#endif
#include <hip/hip_runtime_api.h>

#include <cstddef>
#include <string>

namespace tune::hip {

struct runtime_api {
  hipError_t (*init)(unsigned) = nullptr;
  hipError_t (*get_device_count)(int*) = nullptr;
  hipError_t (*set_device)(int) = nullptr;
  hipError_t (*device_get_name)(char*, int, hipDevice_t) = nullptr;
  hipError_t (*device_get_attribute)(int*, hipDeviceAttribute_t, int) = nullptr;
  hipError_t (*device_total_mem)(std::size_t*, hipDevice_t) = nullptr;
  hipError_t (*device_synchronize)() = nullptr;
  hipError_t (*module_load_data)(hipModule_t*, const void*) = nullptr;
  hipError_t (*module_unload)(hipModule_t) = nullptr;
  hipError_t (*module_get_function)(hipFunction_t*, hipModule_t, const char*) = nullptr;
  hipError_t (*func_get_attribute)(int*, hipFunction_attribute, hipFunction_t) = nullptr;
  hipError_t (*malloc)(void**, std::size_t) = nullptr;
  hipError_t (*free)(void*) = nullptr;
  hipError_t (*memcpy_htod)(hipDeviceptr_t, void*, std::size_t) = nullptr;
  hipError_t (*memcpy_dtoh)(void*, hipDeviceptr_t, std::size_t) = nullptr;
  hipError_t (*module_launch_kernel)(hipFunction_t, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                     unsigned, hipStream_t, void**, void**) = nullptr;
  hipError_t (*event_create)(hipEvent_t*) = nullptr;
  hipError_t (*event_record)(hipEvent_t, hipStream_t) = nullptr;
  hipError_t (*event_synchronize)(hipEvent_t) = nullptr;
  hipError_t (*event_elapsed_time)(float*, hipEvent_t, hipEvent_t) = nullptr;
  const char* (*get_error_name)(hipError_t) = nullptr;
  const char* (*get_error_string)(hipError_t) = nullptr;

  /// "hipErrorNoDevice: no ROCm-capable device is detected" or the number.
  std::string error_text(hipError_t code) const;
};

/// The runtime, loaded and initialised once, when it sees at least one
/// device; nullptr otherwise, and then `why` says so, beginning with
/// no_gpu_message ("no AMD GPU found (HIP runtime libamdhip64.so.5 not
/// found)", "no AMD GPU found (HIP runtime: hipInit: hipErrorInvalidDevice
/// ...)").
const runtime_api* load_runtime(std::string* why = nullptr);

/// How every "no device" message of the HIP backend begins.
inline constexpr const char* no_gpu_message = "no AMD GPU found";

}  // namespace tune::hip
