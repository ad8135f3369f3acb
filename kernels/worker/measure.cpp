#include "measure.hpp"

#include <dlfcn.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <utility>

#include "../src/cpu/measure_rules.hpp"
#include "address_limit.hpp"
#include "huge_pages.hpp"
#include "input_fill.hpp"
#include "output_compare.hpp"
#include "program_mode.hpp"
#include "tune/engine/limits.hpp"
#include "tune/engine/median.hpp"

namespace tune::worker {

namespace {

using entry_function = void (*)(void* const*);

#ifdef MADV_POPULATE_WRITE
constexpr int populate_write = MADV_POPULATE_WRITE;
#else
constexpr int populate_write = 23;  // Linux 5.14's value; older kernels refuse it (EINVAL)
#endif

// Inputs are the same in every process: a fixed hash of (argument, element),
// hashed_input (input_fill.hpp), which tune-vendor-worker fills them with too.
void fill(argument_buffer& buffer, std::size_t argument, bool poison) {
  auto count = buffer.count;
  switch (buffer.type) {
    case argument_type::f32_array: {
      auto* p = reinterpret_cast<float*>(buffer.bytes.data());
      for (std::size_t i = 0; i < count; ++i)
        p[i] = poison ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(hashed_input(argument, i));
      break;
    }
    case argument_type::f64_array: {
      auto* p = reinterpret_cast<double*>(buffer.bytes.data());
      for (std::size_t i = 0; i < count; ++i)
        p[i] = poison ? std::numeric_limits<double>::quiet_NaN() : hashed_input(argument, i);
      break;
    }
    case argument_type::i32_array: {
      auto* p = reinterpret_cast<std::int32_t*>(buffer.bytes.data());
      for (std::size_t i = 0; i < count; ++i)
        p[i] = poison ? -1 : static_cast<std::int32_t>((hashed_input(argument, i) + 1.0) * 50.0);
      break;
    }
    default:
      break;
  }
}

}  // namespace

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

namespace {

std::size_t array_bytes(const argument_buffer& b) { return b.count * element_bytes(b.type); }

// An input array's elements from a file of exactly that many raw elements.
void load_data(const std::string& path, argument_buffer& buffer) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw std::runtime_error("cannot read the input data " + path);
  auto size = static_cast<std::size_t>(in.tellg());
  if (size != array_bytes(buffer))
    throw std::runtime_error("the input data " + path + " holds " + std::to_string(size) + " bytes, the argument " +
                             std::to_string(array_bytes(buffer)));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(buffer.bytes.data()), static_cast<std::streamsize>(size));
}

class cpu_runner final : public kernel_runner {
 public:
  nlohmann::json attach(const nlohmann::json&, std::vector<argument_buffer>& buffers) override {
    pointers_.clear();
    for (auto& b : buffers) pointers_.push_back(b.bytes.data());
    return nullptr;
  }

  nlohmann::json load(const nlohmann::json& request, const std::string& library, const std::string& entry) override {
    void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) return failure(std::string("dlopen: ") + dlerror());
    entry_ = reinterpret_cast<entry_function>(dlsym(handle, entry.c_str()));
    if (!entry_) return failure("entry '" + entry + "' not found in " + library);
    reported_ = nullptr;
    if (std::string name = request.value("reported_time", ""); !name.empty()) {
      reported_ = static_cast<const double*>(dlsym(handle, name.c_str()));
      if (!reported_) return failure("reported_time '" + name + "' not found in " + library);
    }
    // Optional steps of the checked run that the timed runs leave out.
    for (auto [field, slot] : {std::pair{"prepare", &prepare_}, std::pair{"finish", &finish_}}) {
      std::string name = request.value(field, "");
      *slot = nullptr;
      if (name.empty()) continue;
      *slot = reinterpret_cast<entry_function>(dlsym(handle, name.c_str()));
      if (!*slot) return failure(std::string(field) + " '" + name + "' not found in " + library);
    }
    return nullptr;
  }

  // prepare and finish are outside the marks: they convert layouts, which
  // the best time (of the entry alone) does not cover.
  nlohmann::json run_checked(std::vector<argument_buffer>&, run_marks& marks) override {
    if (prepare_) prepare_(pointers_.data());
    marks.begin();
    entry_(pointers_.data());
    checked_ms_ = marks.end();
    if (reported_) checked_ms_ = *reported_ >= 0 ? *reported_ : std::nan("");
    if (finish_) finish_(pointers_.data());
    return nullptr;
  }

  double checked_run_ms() const override { return checked_ms_; }

  // A kernel that times itself reports its run's milliseconds; the marks
  // still bound the run for the limits.
  double run_timed(run_marks& marks) override {
    marks.begin();
    entry_(pointers_.data());
    double ms = marks.end();
    if (!reported_) return ms;
    if (!(*reported_ >= 0)) error_ = "the kernel reported a time of " + std::to_string(*reported_) + " ms";
    return *reported_;
  }

  void before_timed_runs() override {
    if (prepare_) prepare_(pointers_.data());
  }

 private:
  entry_function entry_ = nullptr, prepare_ = nullptr, finish_ = nullptr;
  const double* reported_ = nullptr;
  double checked_ms_ = std::nan("");
  std::vector<void*> pointers_;
};

/// The caches evicted before each timed run (the request's "flush_cache",
/// measurement_protocol::flush_cache): every line of a buffer twice the
/// last-level cache ("cache_bytes") read, when the kernel's arguments fit in
/// that cache (larger ones evict themselves between runs).
class cache_flusher {
 public:
  cache_flusher(const nlohmann::json& request, const std::vector<argument_buffer>& buffers) {
    if (!request.value("flush_cache", false)) return;
    auto cache = request.value("cache_bytes", std::uint64_t{0});
    std::uint64_t used = 0;
    for (const auto& b : buffers) used += b.bytes.size();
    if (cache == 0 || used > cache) return;
    // Written once here (pages of their own, not the shared zero page), then
    // only read: the lines it leaves in the cache are clean, so the kernel's
    // misses that evict them cost no write-back a plain cold cache would not.
    scratch_.assign(2 * cache, 1);
  }
  bool active() const { return !scratch_.empty(); }
  /// Reads a line of every 64 bytes. Outside the run's marks: not kernel time.
  void flush() {
    unsigned sum = 0;
    for (std::size_t i = 0; i < scratch_.size(); i += 64) sum += static_cast<unsigned char>(scratch_[i]);
    sink_ = sum;
  }

 private:
  std::vector<char> scratch_;
  volatile unsigned sink_ = 0;
};

}  // namespace

nlohmann::json failure(const std::string& message) { return {{"status", "runtime_error"}, {"message", message}}; }

void pin(const nlohmann::json& cores) {
  if (!cores.is_array() || cores.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (const auto& c : cores) CPU_SET(c.get<int>(), &set);
  sched_setaffinity(0, sizeof set, &set);
}

void limit(const nlohmann::json& request, const std::string& device_kind) {
  rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  double mb = request.value("memory_limit_mb", 0.0);
  if (device_kind != "cpu" || !(mb > 0)) return;
  limit_address_space(static_cast<std::uint64_t>(mb * 1024.0 * 1024.0));
}

nlohmann::json out_of_memory(const nlohmann::json& request) {
  return failure("out of memory: the kernel or its buffers need more than the worker's limit of " +
                 std::to_string(request.value("memory_limit_mb", 0.0)) + " MiB (memory_limit_mb)");
}

std::vector<argument_buffer> make_buffers(const nlohmann::json& arguments) {
  std::vector<argument_buffer> buffers;
  for (const auto& a : arguments) {
    argument_buffer b;
    b.type = argument_type_from_string(a.at("type").get<std::string>());
    b.output = a.value("output", false);
    b.count = is_array(b.type) ? a.at("size").get<std::size_t>() : 1;
    const std::size_t size = std::max<std::size_t>(b.count, 1) * element_bytes(b.type) + 64;
    // An output on huge pages where the system allows (huge_pages.hpp).
    b.bytes = b.output ? huge_page_storage<argument_storage>(size) : argument_storage(size, 0);
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
        if (!b.output && a.contains("data")) load_data(a.at("data").get<std::string>(), b);
    }
    buffers.push_back(std::move(b));
  }
  return buffers;
}

void poison_output(argument_buffer& buffer) { fill(buffer, 0, true); }

void own_output_pages(std::vector<argument_buffer>& buffers) {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  for (auto& b : buffers) {
    if (!b.output || !is_array(b.type)) continue;
    if (auto pages = whole_pages(b.bytes.data(), b.bytes.size(), page); pages.last > pages.first) {
      // The whole pages inside the buffer: the shared copies dropped (they
      // read as zero until written), then fresh ones mapped in at once. A
      // system without MADV_POPULATE_WRITE (Linux < 5.14) faults them in
      // during the poisoning below instead.
      auto* start = reinterpret_cast<void*>(pages.first);
      ::madvise(start, pages.last - pages.first, MADV_DONTNEED);
      ::madvise(start, pages.last - pages.first, populate_write);
    }
    poison_output(b);
  }
}

void poison_outputs(std::vector<argument_buffer>& buffers) {
  for (std::size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].output) fill(buffers[i], i, true);
}

std::string read_expected(const std::string& path, const std::vector<argument_buffer>& buffers,
                          expected_outputs& expected) {
  expected.clear();
  std::ifstream in(path, std::ios::binary);
  if (!in) return "cannot read reference outputs " + path;
  for (const auto& b : buffers) {
    if (!b.output) continue;
    auto want = huge_page_storage<std::vector<std::uint8_t>>(array_bytes(b));
    if (!in.read(reinterpret_cast<char*>(want.data()), static_cast<std::streamsize>(want.size())))
      return "reference outputs " + path + " are shorter than the outputs";
    expected.push_back(std::move(want));
  }
  return {};
}

std::string write_expected(const std::string& path, const std::vector<argument_buffer>& buffers, bool every_array) {
  std::ofstream out(path + ".tmp", std::ios::binary);
  for (const auto& b : buffers)
    if (b.output || (every_array && is_array(b.type)))
      out.write(reinterpret_cast<const char*>(b.bytes.data()), static_cast<std::streamsize>(array_bytes(b)));
  out.close();
  if (!out || std::rename((path + ".tmp").c_str(), path.c_str()) != 0)
    return "cannot write reference outputs to " + path;
  return {};
}

nlohmann::json wrong_element(std::size_t i, double got, double expected, double tolerance, bool absolute) {
  double error = output_error(got, expected, absolute);
  char message[256];
  std::snprintf(message, sizeof message, "output element %zu is %.9g, expected %.9g (%s tolerance %g)", i, got,
                expected, absolute ? "absolute" : "relative", tolerance);
  return {{"status", "wrong_answer"}, {"message", message}, {"max_error", std::isnan(error) ? -1 : error}};
}

nlohmann::json compare_outputs(const std::vector<argument_buffer>& buffers, const expected_outputs& expected,
                               double tolerance, bool absolute, double& max_error) {
  max_error = 0.0;
  std::size_t output = 0;
  for (const auto& b : buffers) {
    if (!b.output) continue;
    if (output >= expected.size()) return failure("the reference outputs are fewer than the outputs");
    const auto* got = b.bytes.data();
    const auto* want = expected[output++].data();
    std::size_t i = 0;
    switch (b.type) {
      case argument_type::f32_array:
        i = first_wrong_f32(reinterpret_cast<const float*>(got), reinterpret_cast<const float*>(want), b.count,
                            tolerance, absolute, max_error);
        break;
      case argument_type::f64_array:
        i = first_wrong_exact(reinterpret_cast<const double*>(got), reinterpret_cast<const double*>(want), b.count,
                              tolerance, absolute, max_error);
        break;
      default:
        i = first_wrong_exact(reinterpret_cast<const std::int32_t*>(got), reinterpret_cast<const std::int32_t*>(want),
                              b.count, tolerance, absolute, max_error);
    }
    if (i < b.count) return wrong_element(i, element(b, got, i), element(b, want, i), tolerance, absolute);
  }
  return nullptr;
}

std::unique_ptr<kernel_runner> make_runner(const std::string& device_kind, std::string& why) {
  if (device_kind == "cpu") return std::make_unique<cpu_runner>();
  return make_gpu_runner(device_kind, why);
}

nlohmann::json measure_loaded(kernel_runner& runner, std::vector<argument_buffer>& buffers,
                              const expected_outputs& expected, const nlohmann::json& request, run_marks& marks,
                              bool& device_failed) {
  device_failed = false;
  // The first run is checked (outputs start as NaN so unwritten elements
  // show) and serves as the warm-up.
  if (auto answer = runner.run_checked(buffers, marks); !answer.is_null()) {
    device_failed = true;
    answer["kernel_s"] = marks.kernel_s();
    return answer;
  }
  double max_error = 0.0;
  if (auto answer = runner.check_outputs(buffers, expected, request.value("tolerance", 1e-3),
                                         request.value("absolute_tolerance", false), max_error);
      !answer.is_null()) {
    // Anything but a wrong answer is the device (or the process) failing.
    if (answer.value("status", "") != "wrong_answer") device_failed = true;
    answer["kernel_s"] = marks.kernel_s();
    return answer;
  }

  double min_time = request.value("min_time_s", 0.05);
  int min_repeats = request.value("min_repeats", 3), max_repeats = request.value("max_repeats", 1000);
  double reference_ms = request.value("reference_ms", std::nan("")), margin = request.value("margin", 0.0);
  std::vector<double> times;
  double total = 0.0, fastest = std::numeric_limits<double>::infinity();
  bool stopped_early = false;
  // Clearly slower already: the checked run stands for the timing.
  const double checked_ms = runner.checked_run_ms();
  const double allowance = request.value("checked_allowance", measure_rules::checked_run_allowance);
  const bool from_checked_run = measure_rules::stop_after_checked_run(checked_ms, reference_ms, margin, allowance);
  if (from_checked_run) {
    times.push_back(checked_ms);
    stopped_early = true;
  }
  cache_flusher flusher(request, buffers);
  while (!stopped_early && static_cast<int>(times.size()) < max_repeats &&
         (static_cast<int>(times.size()) < min_repeats || total < min_time)) {
    if (!times.empty() && measure_rules::stop_timing(fastest, reference_ms, margin)) {
      stopped_early = true;
      break;
    }
    if (flusher.active()) flusher.flush();
    double ms = runner.run_timed(marks);
    if (!(ms >= 0)) {
      device_failed = true;
      auto answer = failure("a timed run failed: " + runner.error());
      answer["kernel_s"] = marks.kernel_s();
      return answer;
    }
    times.push_back(ms);
    fastest = std::min(fastest, ms);
    total += ms * 1e-3;
  }
  auto answer = time_statistics(times, request);
  answer.update({{"status", "ok"},
                 {"repeats", times.size()},
                 {"stopped_early", stopped_early},
                 {"timed_from", from_checked_run ? "checked_run" : "timed_runs"},
                 {"max_error", max_error},
                 {"checked_on", runner.checks_on()},
                 {"flushed", flusher.active()},
                 {"kernel_s", marks.kernel_s()}});
  if (checked_ms >= 0) answer["checked_ms"] = checked_ms;
  if (from_checked_run) {
    char text[200];
    std::snprintf(text, sizeof text,
                  "timed from its checked run alone: %.4g ms, more than %.3gx the best time so far, %.4g ms "
                  "(%g for a first run's slowness, times 1 + margin %g)",
                  times.front(), allowance * (1 + margin), reference_ms, allowance, margin);
    answer["message"] = text;
  }
  return answer;
}

nlohmann::json measure_interleaved(std::vector<std::unique_ptr<kernel_runner>>& runners,
                                   std::vector<argument_buffer>& buffers, const expected_outputs& expected,
                                   const nlohmann::json& request, run_marks& marks, bool& device_failed) {
  device_failed = false;
  auto failed = [&](std::size_t k, nlohmann::json answer) {
    answer["message"] = "kernel " + std::to_string(k) + ": " + answer.value("message", "");
    answer["kernel_s"] = marks.kernel_s();
    return answer;
  };
  const double tolerance = request.value("tolerance", 1e-3);
  const bool absolute = request.value("absolute_tolerance", false);
  for (std::size_t k = 0; k < runners.size(); ++k) {
    if (k > 0)
      if (auto answer = runners[k]->reset_outputs(buffers); !answer.is_null()) return failed(k, std::move(answer));
    if (auto answer = runners[k]->run_checked(buffers, marks); !answer.is_null()) {
      device_failed = true;
      return failed(k, std::move(answer));
    }
    double max_error = 0.0;
    if (auto answer = runners[k]->check_outputs(buffers, expected, tolerance, absolute, max_error); !answer.is_null())
      return failed(k, std::move(answer));
  }
  const int rounds = std::max(1, request.value("rounds", 5));
  const double burst_min_s = request.value("burst_min_s", 0.002);
  const int max_repeats = std::max(1, request.value("max_repeats", 1000));
  const auto statistic =
      tune::time_statistic_from_string(request.value("statistic", "median")).value_or(tune::time_statistic::median);
  cache_flusher flusher(request, buffers);
  std::vector<std::vector<double>> per_kernel(runners.size());
  for (int round = 0; round < rounds; ++round) {
    for (std::size_t k = 0; k < runners.size(); ++k) {
      runners[k]->before_timed_runs();
      std::vector<double> burst;
      double total = 0.0;
      while (burst.empty() || (total < burst_min_s && static_cast<int>(burst.size()) < max_repeats)) {
        if (flusher.active()) flusher.flush();
        double ms = runners[k]->run_timed(marks);
        if (!(ms >= 0)) {
          device_failed = true;
          return failed(k, failure("a timed run failed: " + runners[k]->error()));
        }
        burst.push_back(ms);
        total += ms * 1e-3;
      }
      per_kernel[k].push_back(tune::statistic_of(std::move(burst), statistic));
    }
  }
  return {{"status", "ok"}, {"rounds_ms", per_kernel}, {"flushed", flusher.active()}, {"kernel_s", marks.kernel_s()}};
}

}  // namespace tune::worker
