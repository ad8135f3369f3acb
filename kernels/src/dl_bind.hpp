#pragma once
// A function pointer bound to a symbol of a library opened with dlopen: the
// CUDA driver (driver/cuda_driver.cpp) and NVRTC (worker/nvrtc_mode.cpp) are
// loaded at run time, never linked.

#include <dlfcn.h>

namespace tune {

/// Sets `slot` to `symbol` of `library` (dlsym); false when it has none.
template <typename F>
bool bind_symbol(void* library, F& slot, const char* symbol) {
  slot = reinterpret_cast<F>(::dlsym(library, symbol));
  return slot != nullptr;
}

}  // namespace tune
