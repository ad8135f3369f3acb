// The CUDA and HIP kernel runners. attach() selects the device and copies
// the arrays to it once; keep_expected() copies the expected outputs there
// too when the request names a comparison module (CUDA), so that a checked
// run's outputs are compared where they are instead of copied back to the
// host; load() loads one kernel's module and checks its launch against the
// device; reset_outputs() poisons the device's outputs again before the next
// kernel's checked run; unload() unloads the module. A resident worker keeps
// one runner (its context, its buffers, its expected outputs, its events) for
// request after request.
#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <type_traits>

#include "measure.hpp"
#include "tune/kernels/cuda_backend.hpp"
#include "tune/kernels/cuda_driver.hpp"

#ifdef TUNE_WITH_HIP
#include "../src/hip/hip_runtime.hpp"
#endif

namespace tune::worker {

namespace {

// What the CUDA and HIP runners share: every array lives in device memory
// (one 64-bit address each), a launch takes the request's grid and block and
// parameters pointing at those addresses or at the scalars' values, a checked
// run copies the outputs back, and a timed run is measured with events.
class gpu_runner : public kernel_runner {
 public:
  nlohmann::json reset_outputs(std::vector<argument_buffer>& buffers) override {
    std::size_t array = 0;
    for (auto& b : buffers) {
      if (!is_array(b.type)) continue;
      auto address = device_memory_[array++];
      if (b.output && !poison_on_device(address, b)) return failure(error_);
    }
    return nullptr;
  }

  nlohmann::json run_checked(std::vector<argument_buffer>& buffers, run_marks& marks) override {
    marks.begin();
    bool ran = launch() && synchronize();
    marks.end();
    if (!ran) return failure(error_);
    if (compares_on_device()) return nullptr;
    std::size_t array = 0;
    for (auto& b : buffers) {
      if (!is_array(b.type)) continue;
      auto address = device_memory_[array++];
      if (b.output && !download(b.bytes.data(), address, b.count * element_bytes(b.type))) return failure(error_);
    }
    return nullptr;
  }

  double run_timed(run_marks& marks) override {
    float ms = 0;
    marks.begin();
    bool ran = record(start_event) && launch() && record(stop_event) && elapsed_since_start(&ms);
    marks.end();
    return ran ? ms : -1;
  }

 protected:
  using device_address = unsigned long long;
  static constexpr bool start_event = false, stop_event = true;

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
      if (!is_array(b.type)) continue;
      device_address address = 0;
      bool uploaded = upload(&address, b.bytes.data(), b.count * element_bytes(b.type));
      if (address != 0) device_memory_.push_back(address);
      if (!uploaded) return false;
    }
    std::size_t array = 0;
    for (auto& b : buffers)
      params_.push_back(is_array(b.type) ? static_cast<void*>(&device_memory_[array++])
                                         : static_cast<void*>(b.bytes.data()));
    return true;
  }

  /// Whether the outputs are compared on the device (and stay there after
  /// a checked run).
  virtual bool compares_on_device() const { return false; }

  // The API-specific steps; each sets error_ when it fails. upload() stores
  // the address it allocated even when the copy fails, so it is freed.
  virtual bool upload(device_address* address, const void* host, std::size_t bytes) = 0;
  virtual bool copy_to_device(device_address address, const void* host, std::size_t bytes) = 0;
  /// The output array at `address` poisoned as poison_output() poisons `b`;
  /// by default `b` is poisoned and copied over (an API with a device memset
  /// does without the host).
  virtual bool poison_on_device(device_address address, argument_buffer& b) {
    poison_output(b);
    return copy_to_device(address, b.bytes.data(), b.count * element_bytes(b.type));
  }
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
  static_assert(std::is_same_v<device_address, cuda::device_pointer>);

 public:
  ~cuda_runner() override {
    if (!api_) return;
    unload();
    forget_expected();
    for (auto p : device_memory_) api_->mem_free(p);
  }

  void keep_expected(const nlohmann::json& request, const expected_outputs& expected) override {
    forget_expected();
    auto path = request.value("check_module", std::string());
    if (path.empty()) return;
    auto module = read_binary(path);
    bool kept = !module.empty() && ok(api_->module_load_data(&check_module_, module.data()), "cuModuleLoadData");
    for (std::size_t t = 0; kept && t < 3; ++t)
      kept = ok(api_->module_get_function(&check_functions_[t], check_module_, cuda_check_entries[t]),
                "cuModuleGetFunction");
    kept = kept && upload(&check_result_, nullptr, 0, 2 * sizeof(device_address));
    for (const auto& block : expected) {
      if (!kept) break;
      device_address address = 0;
      kept = upload(&address, block.data(), block.size(), block.size());
      if (address != 0) expected_memory_.push_back(address);
    }
    // Without the module or the memory the host compares, as it always can.
    if (!kept) forget_expected();
    error_.clear();
  }

  nlohmann::json check_outputs(std::vector<argument_buffer>& buffers, const expected_outputs& expected,
                               double tolerance, bool absolute, double& max_error) override {
    if (!compares_on_device()) return gpu_runner::check_outputs(buffers, expected, tolerance, absolute, max_error);
    max_error = 0.0;
    std::size_t array = 0, output = 0;
    for (auto& b : buffers) {
      if (!is_array(b.type)) continue;
      auto address = device_memory_[array++];
      if (!b.output) continue;
      if (output >= expected.size() || output >= expected_memory_.size())
        return failure("the reference outputs are fewer than the outputs");
      auto want = expected_memory_[output];
      const auto& want_host = expected[output++];
      unsigned long long n = b.count, result[2] = {~0ull, 0ull};
      int absolute_flag = absolute ? 1 : 0;
      void* params[] = {&address, &want, &n, &tolerance, &absolute_flag, &check_result_};
      auto function = check_functions_[b.type == argument_type::f32_array   ? 0
                                       : b.type == argument_type::f64_array ? 1
                                                                            : 2];
      // A thread per element up to 1024 blocks of 256, then a grid-stride loop.
      auto blocks = static_cast<unsigned>(std::clamp<unsigned long long>((n + 255) / 256, 1, 1024));
      if (!copy_to_device(check_result_, result, sizeof result) ||
          !ok(api_->launch_kernel(function, blocks, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr), "cuLaunchKernel") ||
          !ok(api_->ctx_synchronize(), "the output comparison") || !download(result, check_result_, sizeof result))
        return failure(error_);
      double worst = 0.0;
      std::memcpy(&worst, &result[1], sizeof worst);
      max_error = std::max(max_error, worst);
      if (result[0] != ~0ull) {
        auto i = static_cast<std::size_t>(result[0]);
        auto bytes = element_bytes(b.type);
        std::uint8_t got[8] = {};
        if (i >= b.count)
          return failure("the comparison on the device named element " + std::to_string(i) + " of " +
                         std::to_string(b.count));
        if (!download(got, address + i * bytes, bytes)) return failure(error_);
        return wrong_element(i, element(b, got, 0), element(b, want_host.data(), i), tolerance, absolute);
      }
    }
    return nullptr;
  }

  const char* checks_on() const override { return compares_on_device() ? "device" : "host"; }

  nlohmann::json attach(const nlohmann::json& request, std::vector<argument_buffer>& buffers) override {
    std::string why;
    api_ = cuda::load_driver(&why);
    if (!api_) return failure(why);
    int index = request.value("device_index", 0), count = 0;
    api_->device_get_count(&count);
    if (index < 0 || index >= count)
      return failure("no CUDA device " + std::to_string(index) + " (the driver sees " + std::to_string(count) + ")");
    cuda::context_handle context = nullptr;
    if (!ok(api_->device_get(&device_, index), "cuDeviceGet") ||
        !ok(api_->primary_ctx_retain(&context, device_), "cuDevicePrimaryCtxRetain") ||
        !ok(api_->ctx_set_current(context), "cuCtxSetCurrent"))
      return failure(error_);
    if (!upload_arguments(buffers) || !ok(api_->event_create(&events_[0], 0), "cuEventCreate") ||
        !ok(api_->event_create(&events_[1], 0), "cuEventCreate"))
      return failure(error_);
    return nullptr;
  }

  nlohmann::json load(const nlohmann::json& request, const std::string& library, const std::string& entry) override {
    unload();
    auto cubin = read_binary(library);
    if (cubin.empty()) return failure("cannot read " + library);
    if (!ok(api_->module_load_data(&module_, cubin.data()), "cuModuleLoadData") ||
        !ok(api_->module_get_function(&function_, module_, entry.c_str()), "cuModuleGetFunction"))
      return failure(error_);
    long threads = read_launch(request);
    // Resource limits of this kernel on this device, before any launch.
    int max_threads = 0, registers = 0, block_registers = 0;
    api_->func_get_attribute(&max_threads, cuda::function_max_threads_per_block, function_);
    api_->func_get_attribute(&registers, cuda::function_num_regs, function_);
    api_->device_get_attribute(&block_registers, cuda::max_registers_per_block, device_);
    if (threads > max_threads || (block_registers > 0 && threads * registers > block_registers))
      return {
          {"status", "instantiation_error"},
          {"message", std::to_string(threads) + " threads x " + std::to_string(registers) +
                          " registers exceed the device (at most " + std::to_string(max_threads) +
                          " threads for this kernel, " + std::to_string(block_registers) + " registers per block)"}};
    return nullptr;
  }

  void unload() override {
    if (module_) api_->module_unload(module_);
    module_ = nullptr;
    function_ = nullptr;
  }

 private:
  bool compares_on_device() const override { return check_module_ != nullptr; }

  void forget_expected() {
    for (auto p : expected_memory_) api_->mem_free(p);
    expected_memory_.clear();
    if (check_result_) api_->mem_free(check_result_);
    check_result_ = 0;
    if (check_module_) api_->module_unload(check_module_);
    check_module_ = nullptr;
  }

  bool ok(cuda::result_code rc, const char* what) {
    if (rc == 0) return true;
    error_ = std::string(what) + ": " + api_->error_text(rc);
    return false;
  }
  bool upload(device_address* address, const void* host, std::size_t bytes) override {
    return upload(address, host, bytes, bytes);
  }
  /// `allocate` bytes on the device, the first `bytes` copied from `host`.
  bool upload(device_address* address, const void* host, std::size_t bytes, std::size_t allocate) {
    return ok(api_->mem_alloc(address, std::max<std::size_t>(allocate, 1)), "cuMemAlloc") &&
           (bytes == 0 || copy_to_device(*address, host, bytes));
  }
  bool copy_to_device(device_address address, const void* host, std::size_t bytes) override {
    return ok(api_->memcpy_htod(address, host, bytes), "cuMemcpyHtoD");
  }
  bool poison_on_device(device_address address, argument_buffer& b) override {
    // A 32-bit pattern repeated: NaN as a float, NaN as a double
    // (0x7FF800007FF80000), -1 as an int.
    unsigned pattern = b.type == argument_type::f32_array   ? 0x7FC00000u
                       : b.type == argument_type::f64_array ? 0x7FF80000u
                                                            : 0xFFFFFFFFu;
    return ok(api_->memset_d32(address, pattern, b.count * element_bytes(b.type) / 4), "cuMemsetD32");
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

  const cuda::driver_api* api_ = nullptr;
  cuda::device_handle device_ = 0;
  cuda::module_handle module_ = nullptr;
  cuda::function_handle function_ = nullptr;
  cuda::event_handle events_[2] = {nullptr, nullptr};
  // The comparison on the device: its module and entries (by element type:
  // f32, f64, i32), the expected outputs, the two-word result.
  cuda::module_handle check_module_ = nullptr;
  cuda::function_handle check_functions_[3] = {nullptr, nullptr, nullptr};
  std::vector<device_address> expected_memory_;
  device_address check_result_ = 0;
};

#ifdef TUNE_WITH_HIP
// A code object loaded with hipModuleLoadData, launched with
// hipModuleLaunchKernel; device addresses are the runtime's void*.
class hip_runner final : public gpu_runner {
  static_assert(sizeof(void*) == sizeof(device_address));

 public:
  ~hip_runner() override {
    if (!api_) return;
    unload();
    for (auto p : device_memory_) (void)api_->free(pointer(p));
  }

  nlohmann::json attach(const nlohmann::json& request, std::vector<argument_buffer>& buffers) override {
    std::string why;
    if (!(api_ = hip::load_runtime(&why))) return failure(why);
    int count = 0, index = request.value("device_index", 0);
    if (!ok(api_->get_device_count(&count), "hipGetDeviceCount")) return failure(error_);
    if (index >= count || index < 0)
      return failure("no AMD GPU " + std::to_string(index) + " (the HIP runtime sees " + std::to_string(count) + ")");
    if (!ok(api_->set_device(index), "hipSetDevice")) return failure(error_);
    if (!upload_arguments(buffers) || !ok(api_->event_create(&events_[0]), "hipEventCreate") ||
        !ok(api_->event_create(&events_[1]), "hipEventCreate"))
      return failure(error_);
    return nullptr;
  }

  nlohmann::json load(const nlohmann::json& request, const std::string& library, const std::string& entry) override {
    unload();
    auto code_object = read_binary(library);
    if (code_object.empty()) return failure("cannot read " + library);
    if (!ok(api_->module_load_data(&module_, code_object.data()), "hipModuleLoadData"))
      return failure(error_ + " (code object built for " + request.value("arch", std::string("?")) +
                     "; set hip_arch or $TUNE_HIP_ARCH to this device's offload arch)");
    if (!ok(api_->module_get_function(&function_, module_, entry.c_str()), "hipModuleGetFunction"))
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
    return nullptr;
  }

  void unload() override {
    if (module_) (void)api_->module_unload(module_);
    module_ = nullptr;
    function_ = nullptr;
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
    return copy_to_device(*address, host, bytes);
  }
  bool copy_to_device(device_address address, const void* host, std::size_t bytes) override {
    return ok(api_->memcpy_htod(pointer(address), const_cast<void*>(host), bytes), "hipMemcpyHtoD");
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

  const hip::runtime_api* api_ = nullptr;
  hipModule_t module_ = nullptr;
  hipFunction_t function_ = nullptr;
  hipEvent_t events_[2] = {nullptr, nullptr};
};
#endif

}  // namespace

std::unique_ptr<kernel_runner> make_gpu_runner(const std::string& device_kind, std::string& why) {
  if (device_kind == "cuda") return std::make_unique<cuda_runner>();
  if (device_kind == "hip") {
#ifdef TUNE_WITH_HIP
    return std::make_unique<hip_runner>();
#else
    why = "this worker was built without HIP (no hipcc at build time)";
    return nullptr;
#endif
  }
  why = "unknown device '" + device_kind + "' (expected cpu, cuda or hip)";
  return nullptr;
}

}  // namespace tune::worker
