#pragma once
// What tune-kernel-worker does with one kernel, whether it measures one
// request and exits (tune_kernel_worker.cpp) or stays resident and measures
// request after request (resident.cpp): the argument buffers (inputs from a
// fixed hash, outputs poisoned with NaN), the expected outputs, the kernel
// runners (CPU: a dlopen'ed shared object; CUDA and HIP: a module on the
// device), and the measurement itself: one checked run compared with the
// expected outputs, then timed runs until the request's minimum time and
// repeats, stopped early by measure_rules::stop_timing.

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <new>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "huge_pages.hpp"
#include "tune/kernels/kernel_program.hpp"

namespace tune::worker {

/// Allocates on 64-byte boundaries, as numpy does for large arrays: a
/// kernel may read its arrays with aligned vector loads of any width.
template <class T>
struct aligned_allocator {
  using value_type = T;
  static constexpr std::size_t alignment = 64;
  aligned_allocator() = default;
  template <class U>
  aligned_allocator(const aligned_allocator<U>&) noexcept {}  // NOLINT: rebinding
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{alignment})); }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete (p, std::align_val_t{alignment}); }
  template <class U>
  bool operator==(const aligned_allocator<U>&) const noexcept {
    return true;
  }
  template <class U>
  bool operator!=(const aligned_allocator<U>&) const noexcept {
    return false;
  }
};

/// An argument's bytes on a 64-byte boundary. tune-vendor-worker gives a tuned
/// kernel the same (input_fill.hpp): a kernel that reads its operands in place
/// with vector loads is then timed on the alignment it was measured on (on
/// 16-byte-aligned std::vector storage one such MatMul ran 1.6x slower).
using argument_storage = std::vector<std::uint8_t, aligned_allocator<std::uint8_t>>;

struct argument_buffer {
  argument_type type = argument_type::f32_array;
  bool output = false;
  argument_storage bytes;
  std::size_t count = 0;
};

/// The buffers of a request's "arguments": scalars hold their value, input
/// arrays a fixed hash of (argument, element) (the same in every process) or
/// the raw elements of the file their "data" names,
/// output arrays NaN (-1 for int*), so that unwritten elements show. Throws
/// on a malformed argument.
std::vector<argument_buffer> make_buffers(const nlohmann::json& arguments);

/// Fills the output arrays with NaN (-1 for int*) again.
void poison_outputs(std::vector<argument_buffer>& buffers);
/// In a process forked from the one that made the buffers: every output
/// array's pages made this process's own (their copy-on-write share dropped,
/// fresh pages mapped in one call where the system can) and poisoned again,
/// so that the checked run that follows spends its time in the kernel, not in
/// page faults (BMM1's 63 MB output: about 20 ms of its checked run). The
/// fresh pages are huge ones where the system allows (make_buffers asked for
/// them): mapping BMM1's output in 4 KiB pages took 16-20 ms, in 2 MiB pages
/// 5-6 ms, and the child's fork and exit take less too.
void own_output_pages(std::vector<argument_buffer>& buffers);
/// In a process forked from the one that made the buffers: one byte of every
/// page of every input array read (huge_pages.hpp, touch_pages), so that the
/// checked run that follows does not pay the first access to the inherited
/// pages, which some virtual machines make costly (MM1: about 7 ms on a 7 ms
/// kernel; the checked run's time is a timing: measure_rules::
/// stop_after_checked_run). Returns the pages read.
inline std::size_t touch_input_pages(const std::vector<argument_buffer>& buffers) {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  std::size_t pages = 0;
  for (const auto& b : buffers)
    if (!b.output && is_array(b.type)) pages += touch_pages(b.bytes.data(), b.bytes.size(), page);
  return pages;
}
/// One output buffer poisoned as poison_outputs() does.
void poison_output(argument_buffer& buffer);

/// The expected outputs of a task, one block per output array in argument
/// order, as the reference mode wrote them.
using expected_outputs = std::vector<std::vector<std::uint8_t>>;

/// Reads `path` into `expected`; empty on success, else why not.
std::string read_expected(const std::string& path, const std::vector<argument_buffer>& buffers,
                          expected_outputs& expected);

/// Writes the output arrays (`every_array`: all arrays) to `path` (through a
/// temporary name); empty on success, else why not.
std::string write_expected(const std::string& path, const std::vector<argument_buffer>& buffers,
                           bool every_array = false);

/// Null when every output element is within `tolerance` of the expected one
/// (|out - ref| <= tolerance * max(1, |ref|), or |out - ref| <= tolerance
/// when `absolute`), with the largest such error in max_error; else a
/// wrong_answer reply naming the first element off.
nlohmann::json compare_outputs(const std::vector<argument_buffer>& buffers, const expected_outputs& expected,
                               double tolerance, bool absolute, double& max_error);

/// The wrong_answer reply for output element `i`, `got` where `expected` was
/// wanted.
nlohmann::json wrong_element(std::size_t i, double got, double expected, double tolerance, bool absolute);

/// Element `i` of an array of `buffer`'s type at `bytes`, as a double.
double element(const argument_buffer& buffer, const std::uint8_t* bytes, std::size_t i);

/// Where each kernel run begins and ends. The runners call begin() right
/// before the kernel's part of a run and end() right after; whoever watches
/// the runs (the resident process, through shared memory; the engine, through
/// progress records) overrides the hooks. Sums the runs' time.
class run_marks {
 public:
  using clock = std::chrono::steady_clock;
  virtual ~run_marks() = default;
  clock::time_point begin() {
    started_ = clock::now();
    began(started_);
    return started_;
  }
  /// Milliseconds since begin().
  double end() {
    auto now = clock::now();
    double ms = std::chrono::duration<double, std::milli>(now - started_).count();
    kernel_s_ += ms * 1e-3;
    ended(now);
    return ms;
  }
  /// Seconds inside the runs so far.
  double kernel_s() const { return kernel_s_; }

 protected:
  virtual void began(clock::time_point) {}
  virtual void ended(clock::time_point) {}

 private:
  clock::time_point started_{};
  double kernel_s_ = 0.0;
};

/// Runs one kernel on its device. Methods returning JSON return a reply when
/// they fail and null otherwise.
class kernel_runner {
 public:
  virtual ~kernel_runner() = default;
  /// Once per set of buffers (a GPU runner selects the device and copies the
  /// arrays to it).
  virtual nlohmann::json attach(const nlohmann::json& request, std::vector<argument_buffer>& buffers) = 0;
  /// Once per kernel: loads `entry` (and the request's "prepare" and
  /// "finish", CPU only) from `library`.
  virtual nlohmann::json load(const nlohmann::json& request, const std::string& library, const std::string& entry) = 0;
  /// Before every checked run but the first after attach(): the outputs
  /// poisoned again (NaN, -1 for int arrays) where the kernel writes them: the
  /// host buffers (CPU), the device's (GPU: with a device memset where the API
  /// has one, else from the host buffers, poisoned first).
  virtual nlohmann::json reset_outputs(std::vector<argument_buffer>& buffers) {
    poison_outputs(buffers);
    return nullptr;
  }
  /// Once the expected outputs are known (after attach(), and again when
  /// they change): a runner that compares on its device (a CUDA runner given
  /// the request's "check_module") copies them there; the others keep
  /// nothing, and so does one that cannot (it compares on the host then).
  virtual void keep_expected(const nlohmann::json& /*request*/, const expected_outputs& /*expected*/) {}
  /// Runs once (with prepare and finish) and leaves the outputs in the host
  /// buffers, or on the device when the runner compares there.
  virtual nlohmann::json run_checked(std::vector<argument_buffer>& buffers, run_marks& marks) = 0;
  /// The checked run's outputs against `expected`: compare_outputs() on the
  /// host buffers, or on the device (checks_on() says which).
  virtual nlohmann::json check_outputs(std::vector<argument_buffer>& buffers, const expected_outputs& expected,
                                       double tolerance, bool absolute, double& max_error) {
    return compare_outputs(buffers, expected, tolerance, absolute, max_error);
  }
  /// Where check_outputs() compares: "host" or "device".
  virtual const char* checks_on() const { return "host"; }
  /// Milliseconds of the last checked run when it may stand for a timing (a
  /// run of the entry alone, like the timed ones, only the process's first:
  /// measure_rules::stop_after_checked_run); NaN where it may not (a GPU
  /// runner's checked run includes what the timed runs leave out).
  virtual double checked_run_ms() const { return std::nan(""); }
  /// Milliseconds of one run of the entry alone; negative on failure (see
  /// error()).
  virtual double run_timed(run_marks& marks) = 0;
  /// Before a burst of timed runs that may follow another kernel's runs on
  /// the same buffers (measure_interleaved): a CPU kernel's "prepare" again.
  virtual void before_timed_runs() {}
  /// Forgets the loaded kernel (GPU: unloads its module).
  virtual void unload() {}
  const std::string& error() const { return error_; }

 protected:
  std::string error_;
};

/// "cpu", "cuda" or "hip" (by the request's "device"); a HIP runner only in
/// a worker built with HIP (else null and `why`).
std::unique_ptr<kernel_runner> make_runner(const std::string& device_kind, std::string& why);
std::unique_ptr<kernel_runner> make_gpu_runner(const std::string& device_kind, std::string& why);

/// The measurement of a loaded kernel: the checked run, the comparison with
/// `expected` (tolerance: the request's "tolerance"), then timed runs until
/// "min_time_s" of kernel time and "min_repeats" runs (at most
/// "max_repeats"), stopped early when measure_rules::stop_timing says so
/// against the request's "reference_ms" and "margin", or before any timed run
/// when measure_rules::stop_after_checked_run says so of the checked run (then
/// the checked run's time is the time, "repeats" 1, "timed_from" "checked_run"
/// instead of "timed_runs"); with "flush_cache"
/// the caches are evicted before each timed run when the arguments fit in
/// "cache_bytes" (the last-level cache). The reply: "status", "time_ms" (the
/// "statistic": median or min), "median_ms", "min_ms", "repeats" (timed
/// runs), "stopped_early", "max_error", "checked_on" (host or device),
/// "flushed", "kernel_s"; or a failure. A run (or a comparison on the device)
/// that fails on the device sets `device_failed`.
nlohmann::json measure_loaded(kernel_runner& runner, std::vector<argument_buffer>& buffers,
                              const expected_outputs& expected, const nlohmann::json& request, run_marks& marks,
                              bool& device_failed);

/// Loaded kernels timed against each other on the same buffers: each checked
/// once as measure_loaded() does (its outputs poisoned first), then, in each
/// of the request's "rounds" rounds, each kernel's timed runs in turn, a
/// burst of at least "burst_min_s" of kernel time (at least one run, at most
/// "max_repeats"), the round's time the burst's "statistic" (median, the
/// default, or min). The reply: "status"
/// ok and "rounds_ms" (per kernel, per round), "kernel_s"; or the first
/// failure, its message naming the kernel ("kernel N: …").
nlohmann::json measure_interleaved(std::vector<std::unique_ptr<kernel_runner>>& runners,
                                   std::vector<argument_buffer>& buffers, const expected_outputs& expected,
                                   const nlohmann::json& request, run_marks& marks, bool& device_failed);

/// A runtime_error reply.
nlohmann::json failure(const std::string& message);

/// Pins this process to the request's "cores" (best effort: a missing core
/// only costs accuracy).
void pin(const nlohmann::json& cores);

/// The limits a kernel runs under: no core file when it crashes, and for a
/// CPU kernel an address space of the request's "memory_limit_mb", so that
/// one that allocates without end fails there instead of pressing the
/// machine out of memory. GPU drivers reserve address ranges far beyond
/// physical memory: no limit there.
void limit(const nlohmann::json& request, const std::string& device_kind);

/// The runtime_error reply of a kernel (or its buffers) that ran out of the
/// address space limit.
nlohmann::json out_of_memory(const nlohmann::json& request);

}  // namespace tune::worker
