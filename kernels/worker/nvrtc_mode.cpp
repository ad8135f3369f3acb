#include "nvrtc_mode.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "../src/dl_bind.hpp"

namespace tune::worker {

namespace {

// The few NVRTC entry points used, as nvrtc.h declares them (nvrtcResult is
// an int-sized enum, nvrtcProgram an opaque pointer).
using program_handle = void*;
struct nvrtc_api {
  int (*create)(program_handle*, const char*, const char*, int, const char* const*, const char* const*) = nullptr;
  int (*compile)(program_handle, int, const char* const*) = nullptr;
  int (*log_size)(program_handle, std::size_t*) = nullptr;
  int (*log)(program_handle, char*) = nullptr;
  int (*cubin_size)(program_handle, std::size_t*) = nullptr;
  int (*cubin)(program_handle, char*) = nullptr;
  int (*destroy)(program_handle*) = nullptr;
  const char* (*error_string)(int) = nullptr;
};

int cannot(const std::string& why) {
  std::printf("%s\n", why.c_str());
  return 3;
}

}  // namespace

int run_nvrtc_mode(const char* library, const char* arch, const char* source_path, const char* cubin_path) {
  char* end = nullptr;
  long capability = std::strtol(arch, &end, 10);
  if (*arch == '\0' || *end != '\0' || capability < 10 || capability > 999) {
    std::printf("--nvrtc: ARCH must be a compute capability such as 90, not '%s'\n", arch);
    return 2;
  }
  void* handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (!handle) return cannot(std::string("cannot load NVRTC: ") + dlerror());
  nvrtc_api api;
  if (!(bind_symbol(handle, api.create, "nvrtcCreateProgram") &&
        bind_symbol(handle, api.compile, "nvrtcCompileProgram") &&
        bind_symbol(handle, api.log_size, "nvrtcGetProgramLogSize") &&
        bind_symbol(handle, api.log, "nvrtcGetProgramLog") &&
        bind_symbol(handle, api.cubin_size, "nvrtcGetCUBINSize") && bind_symbol(handle, api.cubin, "nvrtcGetCUBIN") &&
        bind_symbol(handle, api.destroy, "nvrtcDestroyProgram") &&
        bind_symbol(handle, api.error_string, "nvrtcGetErrorString")))
    return cannot(std::string(library) + " lacks an NVRTC entry point: " + dlerror());

  std::ifstream in(source_path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return cannot(std::string("cannot read ") + source_path);
  const std::string source = text.str();

  program_handle program = nullptr;
  if (int rc = api.create(&program, source.c_str(), "tune_kernel.cu", 0, nullptr, nullptr); rc != 0) {
    std::printf("%s\n", api.error_string(rc));
    return 1;
  }
  const std::string arch_option = "--gpu-architecture=sm_" + std::to_string(capability);
  const char* options[] = {arch_option.c_str(), "--std=c++17", "-default-device"};
  int rc = api.compile(program, 3, options);
  std::size_t size = 0;
  api.log_size(program, &size);
  std::string log;
  if (size > 1) {
    log.resize(size);
    api.log(program, log.data());
    log.resize(size - 1);
  }
  if (rc != 0) {
    std::printf("%s\n", log.empty() ? api.error_string(rc) : log.c_str());
    api.destroy(&program);
    return 1;
  }
  std::string binary;
  api.cubin_size(program, &size);
  binary.resize(size);
  api.cubin(program, binary.data());
  api.destroy(&program);
  if (!log.empty()) std::printf("%s\n", log.c_str());
  std::ofstream out(cubin_path, std::ios::binary | std::ios::trunc);
  out.write(binary.data(), static_cast<std::streamsize>(binary.size()));
  out.close();
  if (!out) return cannot(std::string("cannot write ") + cubin_path);
  return 0;
}

}  // namespace tune::worker
