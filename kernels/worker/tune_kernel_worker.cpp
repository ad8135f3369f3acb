// tune-kernel-worker: measures one compiled CPU kernel in a process of its own,
// so that a kernel that crashes or hangs ends this process and not the engine.
//
//   tune-kernel-worker '<request JSON>'
//
// Request ("program" mode: see program_mode.hpp): {"mode": "measure" | "reference", "library": ".so", "entry": name,
//           "arguments": [{"type": "float*", "size": n, "output": bool, "value": x}],
//           "reference": file of expected outputs (written in reference mode),
//           "tolerance": t, "cores": [c, ...], "min_time_s": s,
//           "min_repeats": r, "max_repeats": r, "statistic": "median" | "min",
//           "memory_limit_mb": address space of this process (RLIMIT_AS, CPU kernels only; absent or 0: none),
//           CUDA only: "device": "cuda", "device_index": i, "grid": [x, y, z], "block": [x, y, z];
//           HIP only: "device": "hip", the same fields and "arch": the code object's offload arch}
// ("library" is then a cubin or an AMD code object and "entry" the kernel's name).
// Reply (last line of stdout): {"status": "ok" | "wrong_answer" | "runtime_error",
//           "time_ms": median (or min), "median_ms", "min_ms", "repeats": n, "max_error": e, "message": text}
#include <dlfcn.h>
#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <new>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <vector>

#include "address_limit.hpp"
#include "program_mode.hpp"
#include "tune/kernels/cuda_driver.hpp"
#include "tune/kernels/kernel_program.hpp"

#ifdef TUNE_WITH_HIP
#include "../src/hip/hip_runtime.hpp"
#endif

namespace {

using entry_function = void (*)(void* const*);
using tune::argument_type;

struct argument_buffer {
  argument_type type;
  bool output = false;
  std::vector<std::uint8_t> bytes;
  std::size_t count = 0;
};

// On a line of its own: a kernel may have printed a line without its end.
int reply(const nlohmann::json& answer) {
  std::printf("\n%s\n", answer.dump().c_str());
  std::fflush(stdout);
  return 0;
}

int fail(const std::string& message) { return reply({{"status", "runtime_error"}, {"message", message}}); }

// Inputs are the same in every process: a fixed hash of (argument, element).
double input_value(std::size_t argument, std::size_t index) {
  std::uint64_t z = (argument + 1) * 0x9e3779b97f4a7c15ULL + index * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 31)) * 0x94d049bb133111ebULL;
  z ^= z >> 29;
  return static_cast<double>(z >> 11) / static_cast<double>(1ULL << 53) * 2.0 - 1.0;
}

void fill(argument_buffer& buffer, std::size_t argument, bool poison) {
  auto count = buffer.count;
  switch (buffer.type) {
    case argument_type::f32_array: {
      auto* p = reinterpret_cast<float*>(buffer.bytes.data());
      for (std::size_t i = 0; i < count; ++i)
        p[i] = poison ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(input_value(argument, i));
      break;
    }
    case argument_type::f64_array: {
      auto* p = reinterpret_cast<double*>(buffer.bytes.data());
      for (std::size_t i = 0; i < count; ++i)
        p[i] = poison ? std::numeric_limits<double>::quiet_NaN() : input_value(argument, i);
      break;
    }
    case argument_type::i32_array: {
      auto* p = reinterpret_cast<std::int32_t*>(buffer.bytes.data());
      for (std::size_t i = 0; i < count; ++i)
        p[i] = poison ? -1 : static_cast<std::int32_t>((input_value(argument, i) + 1.0) * 50.0);
      break;
    }
    default:
      break;
  }
}

double element(const argument_buffer& buffer, const std::uint8_t* bytes, std::size_t i) {
  switch (buffer.type) {
    case argument_type::f32_array:
      return reinterpret_cast<const float*>(bytes)[i];
    case argument_type::f64_array:
      return reinterpret_cast<const double*>(bytes)[i];
    default:
      return reinterpret_cast<const std::int32_t*>(bytes)[i];
  }
}

// The limits a kernel runs under: no core file when it crashes, and for a CPU
// kernel an address space of "memory_limit_mb", so that one that allocates
// without end fails here instead of pressing the machine out of memory. GPU
// drivers reserve address ranges far beyond physical memory: no limit there.
void limit(const nlohmann::json& request, const std::string& device_kind) {
  rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  double mb = request.value("memory_limit_mb", 0.0);
  if (device_kind != "cpu" || !(mb > 0)) return;
  tune::worker::limit_address_space(static_cast<std::uint64_t>(mb * 1024.0 * 1024.0));
}

void pin(const nlohmann::json& cores) {
  if (!cores.is_array() || cores.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (const auto& c : cores) CPU_SET(c.get<int>(), &set);
  sched_setaffinity(0, sizeof set, &set);  // best effort: a missing core only costs accuracy
}

// Runs the kernel on its device. load() and run_checked() return a reply
// (JSON) when they fail, null otherwise; run_checked() leaves the outputs in
// the host buffers.
class kernel_runner {
 public:
  virtual ~kernel_runner() = default;
  virtual nlohmann::json load(const nlohmann::json& request, const std::string& library, const std::string& entry,
                              std::vector<argument_buffer>& buffers) = 0;
  virtual nlohmann::json run_checked(std::vector<argument_buffer>& buffers) = 0;
  /// Milliseconds of one run; negative on failure (see error()).
  virtual double run_timed() = 0;
  const std::string& error() const { return error_; }

 protected:
  std::string error_;
};

class cpu_runner final : public kernel_runner {
 public:
  nlohmann::json load(const nlohmann::json& request, const std::string& library, const std::string& entry,
                      std::vector<argument_buffer>& buffers) override {
    void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) return {{"status", "runtime_error"}, {"message", std::string("dlopen: ") + dlerror()}};
    entry_ = reinterpret_cast<entry_function>(dlsym(handle, entry.c_str()));
    if (!entry_) return {{"status", "runtime_error"}, {"message", "entry '" + entry + "' not found in " + library}};
    // Optional steps of the checked run that the timed runs leave out.
    for (auto [field, slot] : {std::pair{"prepare", &prepare_}, std::pair{"finish", &finish_}}) {
      std::string name = request.value(field, "");
      if (name.empty()) continue;
      *slot = reinterpret_cast<entry_function>(dlsym(handle, name.c_str()));
      if (!*slot)
        return {{"status", "runtime_error"},
                {"message", std::string(field) + " '" + name + "' not found in " + library}};
    }
    for (auto& b : buffers) pointers_.push_back(b.bytes.data());
    return nullptr;
  }
  nlohmann::json run_checked(std::vector<argument_buffer>&) override {
    if (prepare_) prepare_(pointers_.data());
    entry_(pointers_.data());
    if (finish_) finish_(pointers_.data());
    return nullptr;
  }
  double run_timed() override {
    auto start = std::chrono::steady_clock::now();
    entry_(pointers_.data());
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  }

 private:
  entry_function entry_ = nullptr, prepare_ = nullptr, finish_ = nullptr;
  std::vector<void*> pointers_;
};

// What the CUDA and HIP runners share: every array lives in device memory
// (one 64-bit address each), a launch takes the request's grid and block and
// parameters pointing at those addresses or at the scalars' values, a checked
// run copies the outputs back, and a timed run is measured with events.
class gpu_runner : public kernel_runner {
 public:
  nlohmann::json run_checked(std::vector<argument_buffer>& buffers) override {
    if (!launch() || !synchronize()) return failure(error_);
    std::size_t array = 0;
    for (auto& b : buffers) {
      if (!tune::is_array(b.type)) continue;
      auto address = device_memory_[array++];
      if (b.output && !download(b.bytes.data(), address, b.count * tune::element_bytes(b.type))) return failure(error_);
    }
    return nullptr;
  }

  double run_timed() override {
    float ms = 0;
    if (!record(start_event) || !launch() || !record(stop_event) || !elapsed_since_start(&ms)) return -1;
    return ms;
  }

 protected:
  using device_address = unsigned long long;
  static constexpr bool start_event = false, stop_event = true;

  static nlohmann::json failure(const std::string& message) {
    return {{"status", "runtime_error"}, {"message", message}};
  }

  static std::string read_binary(const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
  }

  /// Threads of one block of the request's launch (read into grid_, block_).
  long read_launch(const nlohmann::json& request) {
    for (int i = 0; i < 3; ++i) {
      grid_[i] = request.at("grid")[i].get<unsigned>();
      block_[i] = request.at("block")[i].get<unsigned>();
    }
    return static_cast<long>(block_[0]) * block_[1] * block_[2];
  }

  /// Copies the arrays to the device and points the launch parameters at
  /// them (arrays) or at the values (scalars); false with error_ set.
  bool upload_arguments(std::vector<argument_buffer>& buffers) {
    for (auto& b : buffers) {
      if (!tune::is_array(b.type)) continue;
      device_address address = 0;
      bool uploaded = upload(&address, b.bytes.data(), b.count * tune::element_bytes(b.type));
      if (address != 0) device_memory_.push_back(address);
      if (!uploaded) return false;
    }
    std::size_t array = 0;
    for (auto& b : buffers)
      params_.push_back(tune::is_array(b.type) ? static_cast<void*>(&device_memory_[array++])
                                               : static_cast<void*>(b.bytes.data()));
    return true;
  }

  // The API-specific steps; each sets error_ when it fails. upload() stores
  // the address it allocated even when the copy fails, so it is freed.
  virtual bool upload(device_address* address, const void* host, std::size_t bytes) = 0;
  virtual bool download(void* host, device_address address, std::size_t bytes) = 0;
  virtual bool launch() = 0;
  virtual bool synchronize() = 0;
  virtual bool record(bool stop) = 0;
  virtual bool elapsed_since_start(float* ms) = 0;

  unsigned grid_[3] = {1, 1, 1}, block_[3] = {1, 1, 1};
  std::vector<device_address> device_memory_;
  std::vector<void*> params_;
};

class cuda_runner final : public gpu_runner {
  static_assert(std::is_same_v<device_address, tune::cuda::device_pointer>);

 public:
  ~cuda_runner() override {
    if (!api_) return;
    for (auto p : device_memory_) api_->mem_free(p);
  }

  nlohmann::json load(const nlohmann::json& request, const std::string& library, const std::string& entry,
                      std::vector<argument_buffer>& buffers) override {
    std::string why;
    api_ = tune::cuda::load_driver(&why);
    if (!api_) return failure(why);
    int index = request.value("device_index", 0), count = 0;
    api_->device_get_count(&count);
    if (index < 0 || index >= count)
      return failure("no CUDA device " + std::to_string(index) + " (the driver sees " + std::to_string(count) + ")");
    tune::cuda::device_handle device = 0;
    tune::cuda::context_handle context = nullptr;
    if (!ok(api_->device_get(&device, index), "cuDeviceGet") ||
        !ok(api_->primary_ctx_retain(&context, device), "cuDevicePrimaryCtxRetain") ||
        !ok(api_->ctx_set_current(context), "cuCtxSetCurrent"))
      return failure(error_);
    auto cubin = read_binary(library);
    if (cubin.empty()) return failure("cannot read " + library);
    tune::cuda::module_handle module = nullptr;
    if (!ok(api_->module_load_data(&module, cubin.data()), "cuModuleLoadData") ||
        !ok(api_->module_get_function(&function_, module, entry.c_str()), "cuModuleGetFunction"))
      return failure(error_);
    long threads = read_launch(request);
    // Resource limits of this kernel on this device, before any launch.
    int max_threads = 0, registers = 0, block_registers = 0;
    api_->func_get_attribute(&max_threads, tune::cuda::function_max_threads_per_block, function_);
    api_->func_get_attribute(&registers, tune::cuda::function_num_regs, function_);
    api_->device_get_attribute(&block_registers, tune::cuda::max_registers_per_block, device);
    if (threads > max_threads || (block_registers > 0 && threads * registers > block_registers))
      return {
          {"status", "instantiation_error"},
          {"message", std::to_string(threads) + " threads x " + std::to_string(registers) +
                          " registers exceed the device (at most " + std::to_string(max_threads) +
                          " threads for this kernel, " + std::to_string(block_registers) + " registers per block)"}};
    if (!upload_arguments(buffers) || !ok(api_->event_create(&events_[0], 0), "cuEventCreate") ||
        !ok(api_->event_create(&events_[1], 0), "cuEventCreate"))
      return failure(error_);
    return nullptr;
  }

 private:
  bool ok(tune::cuda::result_code rc, const char* what) {
    if (rc == 0) return true;
    error_ = std::string(what) + ": " + api_->error_text(rc);
    return false;
  }
  bool upload(device_address* address, const void* host, std::size_t bytes) override {
    return ok(api_->mem_alloc(address, bytes), "cuMemAlloc") &&
           ok(api_->memcpy_htod(*address, host, bytes), "cuMemcpyHtoD");
  }
  bool download(void* host, device_address address, std::size_t bytes) override {
    return ok(api_->memcpy_dtoh(host, address, bytes), "cuMemcpyDtoH");
  }
  bool launch() override {
    return ok(api_->launch_kernel(function_, grid_[0], grid_[1], grid_[2], block_[0], block_[1], block_[2], 0, nullptr,
                                  params_.data(), nullptr),
              "cuLaunchKernel");
  }
  bool synchronize() override { return ok(api_->ctx_synchronize(), "kernel"); }
  bool record(bool stop) override { return ok(api_->event_record(events_[stop], nullptr), "cuEventRecord"); }
  bool elapsed_since_start(float* ms) override {
    return ok(api_->event_synchronize(events_[1]), "kernel") &&
           ok(api_->event_elapsed_time(ms, events_[0], events_[1]), "cuEventElapsedTime");
  }

  const tune::cuda::driver_api* api_ = nullptr;
  tune::cuda::function_handle function_ = nullptr;
  tune::cuda::event_handle events_[2] = {nullptr, nullptr};
};

#ifdef TUNE_WITH_HIP
// A code object loaded with hipModuleLoadData, launched with
// hipModuleLaunchKernel; device addresses are the runtime's void*.
class hip_runner final : public gpu_runner {
  static_assert(sizeof(void*) == sizeof(device_address));

 public:
  ~hip_runner() override {
    if (!api_) return;
    for (auto p : device_memory_) (void)api_->free(pointer(p));
  }

  nlohmann::json load(const nlohmann::json& request, const std::string& library, const std::string& entry,
                      std::vector<argument_buffer>& buffers) override {
    std::string why;
    if (!(api_ = tune::hip::load_runtime(&why))) return failure(why);
    int count = 0, index = request.value("device_index", 0);
    if (!ok(api_->get_device_count(&count), "hipGetDeviceCount")) return failure(error_);
    if (index >= count || index < 0)
      return failure("no AMD GPU " + std::to_string(index) + " (the HIP runtime sees " + std::to_string(count) + ")");
    if (!ok(api_->set_device(index), "hipSetDevice")) return failure(error_);
    auto code_object = read_binary(library);
    if (code_object.empty()) return failure("cannot read " + library);
    hipModule_t module = nullptr;
    if (!ok(api_->module_load_data(&module, code_object.data()), "hipModuleLoadData"))
      return failure(error_ + " (code object built for " + request.value("arch", std::string("?")) +
                     "; set hip_arch or $TUNE_HIP_ARCH to this device's offload arch)");
    if (!ok(api_->module_get_function(&function_, module, entry.c_str()), "hipModuleGetFunction"))
      return failure(error_);
    // The threads this kernel allows (launch bounds, registers) on this device.
    int max_threads = 0, registers = 0;
    if (api_->func_get_attribute(&max_threads, HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, function_) != hipSuccess)
      max_threads = 0;  // unknown: the launch itself will say
    if (api_->func_get_attribute(&registers, HIP_FUNC_ATTRIBUTE_NUM_REGS, function_) != hipSuccess) registers = 0;
    if (long threads = read_launch(request); max_threads > 0 && threads > max_threads)
      return {
          {"status", "instantiation_error"},
          {"message", std::to_string(threads) + " threads exceed the device (at most " + std::to_string(max_threads) +
                          " threads for this kernel, which uses " + std::to_string(registers) + " registers)"}};
    if (!upload_arguments(buffers) || !ok(api_->event_create(&events_[0]), "hipEventCreate") ||
        !ok(api_->event_create(&events_[1]), "hipEventCreate"))
      return failure(error_);
    return nullptr;
  }

 private:
  static void* pointer(device_address address) { return reinterpret_cast<void*>(address); }
  bool ok(hipError_t rc, const char* what) {
    if (rc == hipSuccess) return true;
    error_ = std::string(what) + ": " + api_->error_text(rc);
    return false;
  }
  bool upload(device_address* address, const void* host, std::size_t bytes) override {
    void* p = nullptr;
    if (!ok(api_->malloc(&p, bytes), "hipMalloc")) return false;
    *address = reinterpret_cast<device_address>(p);
    return ok(api_->memcpy_htod(p, const_cast<void*>(host), bytes), "hipMemcpyHtoD");
  }
  bool download(void* host, device_address address, std::size_t bytes) override {
    return ok(api_->memcpy_dtoh(host, pointer(address), bytes), "hipMemcpyDtoH");
  }
  bool launch() override {
    return ok(api_->module_launch_kernel(function_, grid_[0], grid_[1], grid_[2], block_[0], block_[1], block_[2], 0,
                                         nullptr, params_.data(), nullptr),
              "hipModuleLaunchKernel");
  }
  bool synchronize() override { return ok(api_->device_synchronize(), "kernel"); }
  bool record(bool stop) override { return ok(api_->event_record(events_[stop], nullptr), "hipEventRecord"); }
  bool elapsed_since_start(float* ms) override {
    return ok(api_->event_synchronize(events_[1]), "kernel") &&
           ok(api_->event_elapsed_time(ms, events_[0], events_[1]), "hipEventElapsedTime");
  }

  const tune::hip::runtime_api* api_ = nullptr;
  hipFunction_t function_ = nullptr;
  hipEvent_t events_[2] = {nullptr, nullptr};
};
#endif

}  // namespace

// Loads, checks and times the kernel of one request; the reply is its result.
static int measure(const nlohmann::json& request) {
  std::string mode = request.value("mode", "measure");
  if (mode == "program") return run_program_mode(request);
  std::string library = request.value("library", "");
  std::string entry_name = request.value("entry", "tune_entry");

  std::vector<argument_buffer> buffers;
  try {
    for (const auto& a : request.at("arguments")) {
      argument_buffer b;
      b.type = tune::argument_type_from_string(a.at("type").get<std::string>());
      b.output = a.value("output", false);
      b.count = tune::is_array(b.type) ? a.at("size").get<std::size_t>() : 1;
      b.bytes.assign(std::max<std::size_t>(b.count, 1) * tune::element_bytes(b.type) + 64, 0);
      double value = a.value("value", 0.0);
      switch (b.type) {
        case argument_type::i32: {
          auto v = static_cast<std::int32_t>(value);
          std::memcpy(b.bytes.data(), &v, sizeof v);
          break;
        }
        case argument_type::i64: {
          auto v = static_cast<std::int64_t>(value);
          std::memcpy(b.bytes.data(), &v, sizeof v);
          break;
        }
        case argument_type::f32: {
          auto v = static_cast<float>(value);
          std::memcpy(b.bytes.data(), &v, sizeof v);
          break;
        }
        case argument_type::f64:
          std::memcpy(b.bytes.data(), &value, sizeof value);
          break;
        default:
          fill(b, buffers.size(), b.output);
      }
      buffers.push_back(std::move(b));
    }
  } catch (const std::exception& e) {
    return fail(std::string("bad arguments: ") + e.what());
  }

  std::unique_ptr<kernel_runner> runner;
  std::string device_kind = request.value("device", "cpu");
  if (device_kind == "cuda") {
    runner = std::make_unique<cuda_runner>();
  } else if (device_kind == "hip") {
#ifdef TUNE_WITH_HIP
    runner = std::make_unique<hip_runner>();
#else
    return fail("this worker was built without HIP (no hipcc at build time)");
#endif
  } else {
    runner = std::make_unique<cpu_runner>();
  }
  if (auto answer = runner->load(request, library, entry_name, buffers); !answer.is_null()) return reply(answer);

  std::string reference_path = request.value("reference", "");
  if (mode == "reference") {
    if (auto answer = runner->run_checked(buffers); !answer.is_null()) return reply(answer);
    std::ofstream out(reference_path + ".tmp", std::ios::binary);
    for (const auto& b : buffers)
      if (b.output) out.write(reinterpret_cast<const char*>(b.bytes.data()), b.count * tune::element_bytes(b.type));
    out.close();
    if (!out || std::rename((reference_path + ".tmp").c_str(), reference_path.c_str()) != 0)
      return fail("cannot write reference outputs to " + reference_path);
    return reply({{"status", "ok"}});
  }

  // The first run is checked (outputs start as NaN so unwritten elements
  // show) and serves as the warm-up.
  if (auto answer = runner->run_checked(buffers); !answer.is_null()) return reply(answer);
  std::ifstream expected(reference_path, std::ios::binary);
  if (!expected) return fail("cannot read reference outputs " + reference_path);
  double tolerance = request.value("tolerance", 1e-3);
  double max_error = 0.0;
  for (const auto& b : buffers) {
    if (!b.output) continue;
    std::vector<std::uint8_t> want(b.count * tune::element_bytes(b.type));
    if (!expected.read(reinterpret_cast<char*>(want.data()), static_cast<std::streamsize>(want.size())))
      return fail("reference outputs " + reference_path + " are shorter than the outputs");
    for (std::size_t i = 0; i < b.count; ++i) {
      double got = element(b, b.bytes.data(), i), ref = element(b, want.data(), i);
      double error = std::fabs(got - ref) / std::max(1.0, std::fabs(ref));
      if (!(error <= tolerance)) {
        char message[256];
        std::snprintf(message, sizeof message, "output element %zu is %.9g, expected %.9g (tolerance %g)", i, got, ref,
                      tolerance);
        return reply({{"status", "wrong_answer"}, {"message", message}, {"max_error", std::isnan(error) ? -1 : error}});
      }
      max_error = std::max(max_error, error);
    }
  }

  double min_time = request.value("min_time_s", 0.05);
  int min_repeats = request.value("min_repeats", 3), max_repeats = request.value("max_repeats", 1000);
  std::vector<double> times;
  double total = 0.0;
  while (static_cast<int>(times.size()) < max_repeats &&
         (static_cast<int>(times.size()) < min_repeats || total < min_time)) {
    double ms = runner->run_timed();
    if (!(ms >= 0)) return fail("a timed run failed: " + runner->error());
    times.push_back(ms);
    total += ms * 1e-3;
  }
  auto answer = time_statistics(times, request);
  answer.update({{"status", "ok"}, {"repeats", times.size()}, {"max_error", max_error}});
  return reply(answer);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: tune-kernel-worker '<request JSON>'\n");
    return 2;
  }
  nlohmann::json request;
  try {
    request = nlohmann::json::parse(argv[1]);
  } catch (const std::exception& e) {
    return fail(std::string("bad request: ") + e.what());
  }
  pin(request.value("cores", nlohmann::json::array()));
  std::string device_kind = request.value("device", "cpu");
  limit(request, device_kind);
  try {
    return measure(request);
  } catch (const std::bad_alloc&) {
    return fail("out of memory: the kernel or its buffers need more than the worker's limit of " +
                std::to_string(request.value("memory_limit_mb", 0.0)) + " MiB (memory_limit_mb)");
  }
}
