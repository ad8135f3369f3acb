#include "resident.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <new>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "../src/cpu/measure_rules.hpp"
#include "measure.hpp"

namespace tune::worker {

namespace {

constexpr int channel_fd = 3;
using clock_type = std::chrono::steady_clock;

std::int64_t nanoseconds(clock_type::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

clock_type::time_point from_nanoseconds(std::int64_t ns) {
  return clock_type::time_point(std::chrono::duration_cast<clock_type::duration>(std::chrono::nanoseconds(ns)));
}

std::string format(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

// The channel is a socket: a closed engine is an error, not a SIGPIPE.
bool send_line(const nlohmann::json& record) {
  std::string text = record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::send(channel_fd, text.data() + done, text.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

bool write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// Reads what is there without blocking, at most 16 chunks (a kernel that
// writes without end must not hold the watch here); false at end of file.
bool drain(int fd, std::string& into, std::size_t limit) {
  char chunk[65536];
  for (int reads = 0; reads < 16; ++reads) {
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return true;  // EAGAIN: nothing more now
    if (n == 0) return false;
    if (into.size() < limit)
      into.append(chunk, std::min<std::size_t>(static_cast<std::size_t>(n), limit - into.size()));
  }
  return true;
}

// A kernel's output: its head and its tail, whatever it writes.
class output_capture {
 public:
  void add(const std::string& data) {
    std::size_t to_head = std::min(data.size(), head_.size() < half ? half - head_.size() : 0);
    head_.append(data, 0, to_head);
    tail_.append(data, to_head, std::string::npos);
    if (tail_.size() > 2 * half) {
      left_out_ += tail_.size() - half;
      tail_.erase(0, tail_.size() - half);
    }
  }
  bool empty() const { return head_.empty(); }
  std::string text() {
    if (tail_.size() > half) {
      left_out_ += tail_.size() - half;
      tail_.erase(0, tail_.size() - half);
    }
    std::string all = head_;
    if (left_out_ > 0) all += "\n[... " + std::to_string(left_out_) + " bytes of output left out ...]\n";
    return all + tail_;
  }

 private:
  static constexpr std::size_t half = 2000;
  std::string head_, tail_;
  std::size_t left_out_ = 0;
};

// Where the child marks its runs, in memory shared with this process.
struct progress_page {
  std::atomic<std::int64_t> run_started_ns{0};  // steady clock; 0 between runs
  std::atomic<std::int64_t> kernel_ns{0};       // inside finished runs
};
static_assert(std::atomic<std::int64_t>::is_always_lock_free, "the page is shared between processes");

class shared_marks final : public run_marks {
 public:
  explicit shared_marks(progress_page* page) : page_(page) {}

 protected:
  void began(clock_type::time_point t) override {
    page_->run_started_ns.store(nanoseconds(t), std::memory_order_release);
  }
  void ended(clock_type::time_point t) override {
    auto started = page_->run_started_ns.load(std::memory_order_relaxed);
    page_->kernel_ns.fetch_add(nanoseconds(t) - started, std::memory_order_relaxed);
    page_->run_started_ns.store(0, std::memory_order_release);
  }

 private:
  progress_page* page_;
};

// GPU runs are watched by the engine: each run's start and end, the checked
// run's too (the module is loaded onto the device before it, eagerly, so its
// first launch is the kernel's own), are sent to it when a run may be too
// slow, as a CPU kernel's runs are watched by this process.
class channel_marks final : public run_marks {
 public:
  explicit channel_marks(bool report) : report_(report) {}

 protected:
  void began(clock_type::time_point) override {
    if (report_) send_line({{"run", runs_}});
  }
  void ended(clock_type::time_point) override {
    if (report_) send_line({{"idle", runs_}});
    ++runs_;
  }

 private:
  bool report_;
  unsigned runs_ = 0;
};

// What stays between requests.
struct resident_state {
  std::string arguments;  // the arguments' JSON the buffers were made for
  std::vector<argument_buffer> buffers;
  std::string expected_path;
  expected_outputs expected;
  std::string cores;
  // CPU
  // Each task's (arguments') first runs on this device against its kernels'
  // times: the checked run's allowance (measure_rules::first_run_allowance).
  std::map<std::string, measure_rules::first_run_allowance> first_runs;
  progress_page* page = nullptr;
  int child_exits = -1;  // signalfd of SIGCHLD
  // GPU
  std::unique_ptr<kernel_runner> runner;
  std::string device;           // device kind, index and arguments the runner is attached to
  std::string runner_expected;  // the expected outputs and comparison module the runner keeps
  bool outputs_fresh = false;
  bool watchdog = false;
};

// The buffers and expected outputs of a request, kept while they stay the
// same; a failure reply or null.
nlohmann::json keep_inputs(const nlohmann::json& request, resident_state& state) {
  try {
    const auto& arguments = request.at("arguments");
    auto key = arguments.dump();
    if (key != state.arguments) {
      state.arguments.clear();
      state.expected_path.clear();
      state.buffers = make_buffers(arguments);
      state.arguments = key;
    }
  } catch (const std::exception& e) {
    return failure(std::string("bad arguments: ") + e.what());
  }
  std::string reference = request.value("reference", "");
  if (reference != state.expected_path) {
    if (auto problem = read_expected(reference, state.buffers, state.expected); !problem.empty())
      return failure(problem);
    state.expected_path = reference;
  }
  return nullptr;
}

// The child: measures the request's kernel and writes its reply on
// descriptor 3. It leads a process group of its own (killed as a whole) and
// dies with this process.
[[noreturn]] void run_child(const nlohmann::json& request, resident_state& state, int output, int reply_pipe,
                            pid_t resident) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != resident) ::_exit(1);
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  ::sigemptyset(&default_action.sa_mask);
  for (int s : {SIGPIPE, SIGCHLD}) ::sigaction(s, &default_action, nullptr);
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // 0: /dev/null (this process's), 1 and 2: the output pipe, 3: the reply
  // pipe; nothing else (not the engine's channel).
  if (::dup2(output, 1) < 0 || ::dup2(output, 2) < 0 || ::dup2(reply_pipe, 3) < 0) ::_exit(1);
  ::close_range(4, ~0U, 0);

  auto answer = [&]() -> nlohmann::json {
    limit(request, "cpu");
    try {
      std::string why;
      shared_marks marks(state.page);
      bool device_failed = false;
      own_output_pages(state.buffers);
      touch_input_pages(state.buffers);
      if (request.value("mode", "measure") == "interleave") {
        // Built configurations of the same task against each other: every
        // library loaded into this child, each with its own runner.
        std::vector<std::unique_ptr<kernel_runner>> runners;
        for (const auto& library : request.at("libraries")) {
          runners.push_back(make_runner("cpu", why));
          auto failed = runners.back()->attach(request, state.buffers);
          if (failed.is_null())
            failed = runners.back()->load(request, library.get<std::string>(), request.value("entry", "tune_entry"));
          if (!failed.is_null()) {
            failed["message"] = "kernel " + std::to_string(runners.size() - 1) + ": " + failed.value("message", "");
            return failed;
          }
        }
        return measure_interleaved(runners, state.buffers, state.expected, request, marks, device_failed);
      }
      auto runner = make_runner("cpu", why);
      if (auto failed = runner->attach(request, state.buffers); !failed.is_null()) return failed;
      if (auto failed = runner->load(request, request.value("library", ""), request.value("entry", "tune_entry"));
          !failed.is_null())
        return failed;
      return measure_loaded(*runner, state.buffers, state.expected, request, marks, device_failed);
    } catch (const std::bad_alloc&) {
      return out_of_memory(request);
    } catch (const std::exception& e) {
      return failure(e.what());
    }
  }();
  std::fflush(stdout);
  std::fflush(stderr);
  write_all(3, answer.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  ::_exit(0);
}

// This process is the subreaper of what its children start: the orphans a
// kernel leaves become its children. After each trial they are killed and
// reaped, so that none outlives its trial (not even one that left the
// kernel's process group with setsid) or counts against the next trial's
// process limit (pids.max of the cgroup this process runs in).
void clear_descendants(int child_exits) {
  const std::string list = "/proc/self/task/" + std::to_string(::getpid()) + "/children";
  auto until = clock_type::now() + std::chrono::seconds(2);
  for (;;) {
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    std::ifstream children(list);
    std::vector<pid_t> left;
    for (long pid = 0; children >> pid;) left.push_back(static_cast<pid_t>(pid));
    if (left.empty() || clock_type::now() >= until) return;
    for (pid_t pid : left) ::kill(pid, SIGKILL);
    pollfd exits{child_exits, POLLIN, 0};
    ::poll(&exits, 1, 10);
    signalfd_siginfo info;
    while (::read(child_exits, &info, sizeof info) > 0) {
    }
  }
}

// How the watch of a child ended.
enum class ending { exited, timed_out, too_slow, engine_gone };

nlohmann::json measure_cpu(const nlohmann::json& request, resident_state& state) {
  const auto received = clock_type::now();
  const double timeout_s = request.value("timeout_s", 10.0);
  const auto deadline = received + std::chrono::duration_cast<clock_type::duration>(
                                       std::chrono::duration<double>(std::max(timeout_s, 0.0)));
  const double reference_ms = request.value("reference_ms", std::nan(""));
  const double slow_factor = request.value("slow_factor", 0.0), min_slow_ms = request.value("min_slow_ms", 0.0);
  const double first_limit_ms = request.value("first_limit_ms", 0.0);
  const double limit_ms = measure_rules::slow_limit_ms(reference_ms, slow_factor, min_slow_ms, first_limit_ms);
  const auto limit = std::chrono::duration_cast<clock_type::duration>(
      std::chrono::duration<double, std::milli>(std::isfinite(limit_ms) ? limit_ms : 0.0));

  if (auto failed = keep_inputs(request, state); !failed.is_null()) return failed;
  auto cores = request.value("cores", nlohmann::json::array());
  if (cores.dump() != state.cores) {
    pin(cores);  // the children inherit it
    state.cores = cores.dump();
  }

  int output[2] = {-1, -1}, reply_pipe[2] = {-1, -1};
  if (::pipe2(output, O_CLOEXEC) != 0 || ::pipe2(reply_pipe, O_CLOEXEC) != 0) {
    int error = errno;
    for (int fd : {output[0], output[1]})
      if (fd >= 0) ::close(fd);
    return failure(std::string("pipe: ") + std::strerror(error));
  }
  state.page->run_started_ns.store(0);
  state.page->kernel_ns.store(0);
  pid_t resident = ::getpid();
  // The checked run's allowance this device's first runs of the task call
  // for, unless the request names one.
  auto& first_runs = state.first_runs[state.arguments];
  nlohmann::json child_request = request;
  if (!request.contains("checked_allowance")) child_request["checked_allowance"] = first_runs.value();
  pid_t child = ::fork();
  if (child == 0) run_child(child_request, state, output[1], reply_pipe[1], resident);
  int fork_error = errno;
  ::close(output[1]);
  ::close(reply_pipe[1]);
  if (child < 0) {
    ::close(output[0]);
    ::close(reply_pipe[0]);
    return failure(std::string("fork: ") + std::strerror(fork_error));
  }
  ::setpgid(child, child);  // as the child does: whichever runs first
  int out_fd = output[0], reply_fd = reply_pipe[0];
  for (int fd : {out_fd, reply_fd}) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);

  output_capture captured;
  std::string reply_text, chunk;
  ending end = ending::exited;
  double ran_ms = 0.0;
  int wstatus = 0;
  bool reaped = false;
  if (!send_line({{"started", child}})) end = ending::engine_gone;
  while (end == ending::exited) {
    if (::waitpid(child, &wstatus, WNOHANG) == child) {
      reaped = true;
      break;
    }
    auto now = clock_type::now();
    if (now >= deadline) {
      end = ending::timed_out;
      break;
    }
    // The slow limit applies to the run going on; between runs (loading,
    // comparing) it is looked at again after half a limit.
    auto wake = deadline;
    if (std::isfinite(limit_ms)) {
      auto started = state.page->run_started_ns.load(std::memory_order_acquire);
      if (started != 0) {
        auto run_deadline = from_nanoseconds(started) + limit;
        if (now >= run_deadline) {
          ran_ms = std::chrono::duration<double, std::milli>(now - from_nanoseconds(started)).count();
          end = ending::too_slow;
          break;
        }
        wake = std::min(wake, run_deadline);
      } else {
        wake = std::min(wake, now + limit / 2);
      }
    }
    auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(wake - now);
    timespec timeout{static_cast<time_t>(wait.count() / 1000000000), static_cast<long>(wait.count() % 1000000000)};
    pollfd watched[4] = {
        {channel_fd, POLLRDHUP, 0}, {state.child_exits, POLLIN, 0}, {out_fd, POLLIN, 0}, {reply_fd, POLLIN, 0}};
    if (::ppoll(watched, 4, &timeout, nullptr) < 0) continue;  // EINTR
    if (watched[0].revents & (POLLRDHUP | POLLHUP | POLLERR)) end = ending::engine_gone;
    if (watched[1].revents & POLLIN) {
      signalfd_siginfo info;
      while (::read(state.child_exits, &info, sizeof info) > 0) {
      }
    }
    if (out_fd >= 0 && watched[2].revents) {
      chunk.clear();
      bool open = drain(out_fd, chunk, std::size_t(1) << 20);
      captured.add(chunk);
      if (!open) {
        ::close(out_fd);
        out_fd = -1;
      }
    }
    if (reply_fd >= 0 && watched[3].revents && !drain(reply_fd, reply_text, std::size_t(1) << 20)) {
      ::close(reply_fd);
      reply_fd = -1;
    }
  }
  const auto stopped = clock_type::now();
  if (!reaped) {
    ::kill(-child, SIGKILL);
    ::kill(child, SIGKILL);
    while (::waitpid(child, &wstatus, 0) < 0 && errno == EINTR) {
    }
  }
  ::kill(-child, SIGKILL);  // what the kernel forked and left in its group
  clear_descendants(state.child_exits);
  if (out_fd >= 0) {
    chunk.clear();
    drain(out_fd, chunk, std::size_t(1) << 20);
    captured.add(chunk);
    ::close(out_fd);
  }
  if (reply_fd >= 0) {
    drain(reply_fd, reply_text, std::size_t(1) << 20);
    ::close(reply_fd);
  }
  if (end == ending::engine_gone) ::_exit(0);

  double kernel_s = static_cast<double>(state.page->kernel_ns.load()) * 1e-9;
  if (auto started = state.page->run_started_ns.load(); started != 0 && end != ending::exited)
    kernel_s += std::chrono::duration<double>(stopped - from_nanoseconds(started)).count();
  nlohmann::json answer;
  if (end == ending::timed_out) {
    answer = {{"status", "run_timeout"}, {"message", "kernel killed after " + format("%g", timeout_s) + " s"}};
  } else if (end == ending::too_slow) {
    answer = {
        {"status", "too_slow"},
        {"message", measure_rules::too_slow_message(ran_ms, reference_ms, slow_factor, min_slow_ms, first_limit_ms)}};
  } else if (WIFSIGNALED(wstatus)) {
    int sig = WTERMSIG(wstatus);
    answer = failure("kernel crashed: signal " + std::to_string(sig) + " (" + ::strsignal(sig) + ")");
  } else {
    try {
      auto line_end = reply_text.find('\n');
      answer = nlohmann::json::parse(reply_text.substr(0, line_end));
    } catch (const std::exception&) {
    }
    if (!answer.is_object() || !answer.contains("status"))
      answer = failure("kernel exited with code " + std::to_string(WEXITSTATUS(wstatus)) + " and no reply");
    else if (answer.value("status", "") == "ok" && answer.value("timed_from", "") == "timed_runs")
      first_runs.add(answer.value("checked_ms", std::nan("")), answer.value("median_ms", std::nan("")));
  }
  if (answer.value("status", "") != "ok" && !captured.empty())
    answer["message"] = answer.value("message", "") + "\nits output:\n" + captured.text();
  answer["kernel_s"] = kernel_s;
  return answer;
}

nlohmann::json measure_gpu(const nlohmann::json& request, resident_state& state, bool& exit_after) {
  if (!state.runner) {
    // Every kernel of a module loaded onto the device when the module is
    // loaded, not at its first launch (unless the environment says
    // otherwise): the checked run is then the kernel's own.
    ::setenv("CUDA_MODULE_LOADING", "EAGER", 0);
  }
  if (!state.watchdog) {
    // The main thread may be stuck in a kernel that never ends: a thread of
    // its own ends this process when the engine is gone.
    std::thread([] {
      pollfd channel{channel_fd, POLLRDHUP, 0};
      for (;;) {
        if (::poll(&channel, 1, -1) > 0 && (channel.revents & (POLLRDHUP | POLLHUP | POLLERR))) ::_exit(0);
      }
    }).detach();
    state.watchdog = true;
  }
  if (auto failed = keep_inputs(request, state); !failed.is_null()) return failed;
  // Attached anew for another device or other buffers.
  std::string device =
      request.value("device", "") + ":" + std::to_string(request.value("device_index", 0)) + ":" + state.arguments;
  if (device != state.device || !state.runner) {
    std::string why;
    state.runner.reset();
    state.device.clear();
    state.runner = make_gpu_runner(request.value("device", ""), why);
    if (!state.runner) return failure(why);
    if (auto failed = state.runner->attach(request, state.buffers); !failed.is_null()) {
      exit_after = true;
      return failed;
    }
    state.device = device;
    state.runner_expected.clear();
    state.outputs_fresh = true;
  }
  auto& runner = *state.runner;
  if (auto expected = state.expected_path + "\n" + request.value("check_module", std::string());
      expected != state.runner_expected) {
    runner.keep_expected(request, state.expected);
    state.runner_expected = expected;
  }
  if (!state.outputs_fresh) {
    if (auto failed = runner.reset_outputs(state.buffers); !failed.is_null()) {
      exit_after = true;
      return failed;
    }
  }
  state.outputs_fresh = false;
  if (auto failed = runner.load(request, request.value("library", ""), request.value("entry", "tune_entry"));
      !failed.is_null()) {
    runner.unload();
    return failed;
  }
  double limit_ms =
      measure_rules::slow_limit_ms(request.value("reference_ms", std::nan("")), request.value("slow_factor", 0.0),
                                   request.value("min_slow_ms", 0.0), request.value("first_limit_ms", 0.0));
  channel_marks marks(std::isfinite(limit_ms));
  bool device_failed = false;
  auto answer = measure_loaded(runner, state.buffers, state.expected, request, marks, device_failed);
  runner.unload();
  if (device_failed) {
    answer["message"] =
        answer.value("message", "") + " (the device may be left unusable: a fresh process measures next)";
    exit_after = true;
  }
  return answer;
}

// Requests, one per line, from the channel.
class line_reader {
 public:
  bool next(std::string& line) {
    for (;;) {
      auto newline = buffer_.find('\n');
      if (newline != std::string::npos) {
        line = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        return true;
      }
      char chunk[65536];
      ssize_t n = ::recv(channel_fd, chunk, sizeof chunk, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      buffer_.append(chunk, static_cast<std::size_t>(n));
    }
  }

 private:
  std::string buffer_;
};

}  // namespace

}  // namespace tune::worker

int run_resident() {
  using namespace tune::worker;
  ::signal(SIGPIPE, SIG_IGN);
  ::signal(SIGCHLD, SIG_DFL);  // its children are waited for, never reaped by themselves
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  resident_state state;
  // A child's exit wakes the watch through a signalfd: SIGCHLD stays blocked
  // here (the children unblock it).
  sigset_t child_exit;
  ::sigemptyset(&child_exit);
  ::sigaddset(&child_exit, SIGCHLD);
  ::sigprocmask(SIG_BLOCK, &child_exit, nullptr);
  state.child_exits = ::signalfd(-1, &child_exit, SFD_NONBLOCK | SFD_CLOEXEC);
  void* page = ::mmap(nullptr, sizeof(progress_page), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (state.child_exits < 0 || page == MAP_FAILED) return 1;
  state.page = new (page) progress_page;

  line_reader requests;
  std::string line;
  enum class kind { none, cpu, gpu } serving = kind::none;
  while (requests.next(line)) {
    if (line.empty()) continue;
    nlohmann::json request, answer;
    bool exit_after = false;
    try {
      request = nlohmann::json::parse(line);
    } catch (const std::exception& e) {
      answer = failure(std::string("bad request: ") + e.what());
    }
    if (answer.is_null()) {
      std::string device = request.value("device", "cpu");
      kind wanted = device == "cpu" ? kind::cpu : kind::gpu;
      std::string mode = request.value("mode", "measure");
      if (mode != "measure" && !(mode == "interleave" && wanted == kind::cpu)) {
        answer = failure("a resident worker only measures (mode \"measure\", and \"interleave\" for the CPU)");
      } else if (serving != kind::none && serving != wanted) {
        // A process with GPU threads may not fork, nor one with CPU children
        // take a GPU: one process per kind.
        answer = failure("this resident worker measures " + std::string(serving == kind::cpu ? "CPU" : "GPU") +
                         " kernels only");
      } else {
        serving = wanted;
        try {
          answer = wanted == kind::cpu ? measure_cpu(request, state) : measure_gpu(request, state, exit_after);
        } catch (const std::bad_alloc&) {
          answer = failure("out of memory in the resident worker");
          exit_after = true;
        }
      }
    }
    if (exit_after) answer["exit"] = true;
    if (!send_line(answer) || exit_after) return 0;
  }
  return 0;
}
