#pragma once
// The CUDA driver API, loaded at run time with dlopen("libcuda.so.1") so that
// nothing links libcuda: a machine without a driver gets a clear message, not
// a failed start. Only the few entry points the backend uses are declared.

#include <cstddef>
#include <string>

namespace tune::cuda {

using result_code = int;  // CUresult; 0 is success
using device_handle = int;
using context_handle = void*;
using module_handle = void*;
using function_handle = void*;
using event_handle = void*;
using device_pointer = unsigned long long;

/// Device attribute numbers of the driver API (CUdevice_attribute).
enum attribute : int {
  max_threads_per_block = 1,
  max_shared_memory_per_block = 8,
  max_registers_per_block = 12,
  multiprocessor_count = 16,
  compute_capability_major = 75,
  compute_capability_minor = 76,
};

/// Function attributes (CUfunction_attribute).
enum function_attribute : int {
  function_max_threads_per_block = 0,
  function_shared_size_bytes = 1,
  function_num_regs = 4,
};

struct driver_api {
  result_code (*init)(unsigned) = nullptr;
  result_code (*device_get_count)(int*) = nullptr;
  result_code (*device_get)(device_handle*, int) = nullptr;
  result_code (*device_get_name)(char*, int, device_handle) = nullptr;
  result_code (*device_get_attribute)(int*, int, device_handle) = nullptr;
  result_code (*device_total_mem)(std::size_t*, device_handle) = nullptr;
  result_code (*primary_ctx_retain)(context_handle*, device_handle) = nullptr;
  result_code (*ctx_set_current)(context_handle) = nullptr;
  result_code (*ctx_synchronize)() = nullptr;
  result_code (*module_load_data)(module_handle*, const void*) = nullptr;
  result_code (*module_unload)(module_handle) = nullptr;
  result_code (*module_get_function)(function_handle*, module_handle, const char*) = nullptr;
  result_code (*func_get_attribute)(int*, int, function_handle) = nullptr;
  result_code (*mem_alloc)(device_pointer*, std::size_t) = nullptr;
  result_code (*mem_free)(device_pointer) = nullptr;
  result_code (*memcpy_htod)(device_pointer, const void*, std::size_t) = nullptr;
  result_code (*memcpy_dtoh)(void*, device_pointer, std::size_t) = nullptr;
  result_code (*memset_d32)(device_pointer, unsigned, std::size_t) = nullptr;
  result_code (*launch_kernel)(function_handle, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                               void*, void**, void**) = nullptr;
  result_code (*event_create)(event_handle*, unsigned) = nullptr;
  result_code (*event_record)(event_handle, void*) = nullptr;
  result_code (*event_synchronize)(event_handle) = nullptr;
  result_code (*event_elapsed_time)(float*, event_handle, event_handle) = nullptr;
  result_code (*get_error_string)(result_code, const char**) = nullptr;

  /// Text of a result code ("CUDA_ERROR_…: …" when the driver knows it).
  std::string error_text(result_code code) const;
};

/// The driver, loaded and initialised once; nullptr when libcuda.so.1 is
/// absent or cuInit fails — then `why` says which.
const driver_api* load_driver(std::string* why = nullptr);

/// The message every tool prints when there is no driver.
inline constexpr const char* no_driver_message = "no CUDA driver found (libcuda.so.1)";

}  // namespace tune::cuda
