#include "resident_measurer.hpp"

#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <thread>

#include "measure_rules.hpp"
#include "tune/kernels/cpu_backend.hpp"
#include "tune/kernels/subprocess.hpp"

namespace tune {

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

clock_type::duration from_seconds(double s) {
  return std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(std::max(s, 0.0)));
}

std::string format_g(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

std::string ending_text(int wstatus) {
  if (WIFSIGNALED(wstatus))
    return "killed by signal " + std::to_string(WTERMSIG(wstatus)) + " (" + ::strsignal(WTERMSIG(wstatus)) + ")";
  if (WIFEXITED(wstatus)) return "exited with code " + std::to_string(WEXITSTATUS(wstatus));
  return "ended";
}

// A socket: a process that is gone is an error here, not a SIGPIPE.
bool send_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::send(fd, text.data() + done, text.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

void read_reply(const nlohmann::json& reply, run_result& out) {
  out.state = status_from_string(reply.value("status", "unknown")).value_or(status::unknown);
  out.message = reply.value("message", "");
  out.kernel_s = reply.value("kernel_s", 0.0);
  if (out.state != status::ok) return;
  out.time_ms = reply.value("time_ms", std::nan(""));
  out.objectives = {out.time_ms, reply.value("max_error", 0.0)};
  out.repeats = reply.value("repeats", 0U);
  out.times_ms = reply.value("times_ms", std::vector<double>{});
  out.stopped_early = reply.value("stopped_early", false);
}

resident_measurer& resident_measurers::device(int device, const task_backend_options& options) {
  std::lock_guard lock(mutex_);
  auto& slot = by_device_[device];
  if (!slot)
    slot = std::make_unique<resident_measurer>(kernel_worker_path(options), kind_,
                                               kind_ == resident_measurer::kind::cpu ? options.max_processes : 0);
  return *slot;
}

resident_measurer::resident_measurer(std::string worker, kind what, int max_processes)
    : worker_(std::move(worker)), kind_(what), max_processes_(max_processes) {}

double resident_measurer::restart_ms() const {
  std::lock_guard lock(mutex_);
  return restart_ms_;
}

resident_measurer::~resident_measurer() {
  std::lock_guard lock(mutex_);
  if (pid_ <= 0) return;
  // A closed channel ends the process (and a child it runs); it is given a
  // moment to go by itself, then killed.
  ::close(channel_);
  channel_ = -1;
  auto deadline = clock_type::now() + std::chrono::seconds(2);
  while (clock_type::now() < deadline) {
    if (!reap(false).empty()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  kill_and_reap(0);
}

bool resident_measurer::start(std::string& why) {
  if (kind_ == kind::cpu && max_processes_ > 0) {
    cgroup_ = std::make_unique<pids_cgroup>(max_processes_);
    if (cgroup_->procs_file().empty()) cgroup_.reset();  // not enforced here
  }
  auto started = start_with_channel({worker_, "--resident"}, cgroup_ ? cgroup_->procs_file() : std::string());
  if (started.pid < 0) {
    cgroup_.reset();
    why = started.error;
    return false;
  }
  pid_ = started.pid;
  channel_ = started.channel;
  pending_.clear();
  started_at_ = clock_type::now();
  setting_up_ = true;
  return true;
}

std::string resident_measurer::reap(bool wait) {
  int wstatus = 0;
  pid_t got = 0;
  do {
    got = ::waitpid(static_cast<pid_t>(pid_), &wstatus, wait ? 0 : WNOHANG);
  } while (got < 0 && errno == EINTR);
  if (got == 0) return {};
  // ECHILD: reaped already (an engine that ignores SIGCHLD).
  std::string how = got == pid_ ? ending_text(wstatus) : "ended";
  if (channel_ >= 0) ::close(channel_);
  channel_ = -1;
  pid_ = -1;
  pending_.clear();
  cgroup_.reset();  // what the process left in it is killed
  return how;
}

std::string resident_measurer::kill_and_reap(long child) {
  if (child > 0) ::kill(static_cast<pid_t>(-child), SIGKILL);
  ::kill(static_cast<pid_t>(pid_), SIGKILL);
  auto how = reap(true);
  // What the kernel forked meanwhile (its child died with this process).
  if (child > 0) ::kill(static_cast<pid_t>(-child), SIGKILL);
  return how;
}

bool resident_measurer::read_line(std::string& line) {
  auto newline = pending_.find('\n');
  if (newline == std::string::npos) return false;
  line = pending_.substr(0, newline);
  pending_.erase(0, newline + 1);
  return true;
}

run_result resident_measurer::measure(nlohmann::json request, const run_limits& limits, nlohmann::json* raw_reply) {
  std::lock_guard lock(mutex_);
  const auto start_time = clock_type::now();
  run_result out;
  out.state = status::runtime_error;
  const auto& policy = limits.early_stop;
  request["timeout_s"] = limits.timeout_s;
  if (std::isfinite(limits.reference_ms)) request["reference_ms"] = limits.reference_ms;
  request["slow_factor"] = policy.slow_factor;
  request["min_slow_ms"] = policy.min_slow_ms;
  request["margin"] = policy.margin;
  request["first_limit_ms"] = policy.first_limit_ms;
  const std::string line = request.dump() + "\n";

  // A process that ended between trials ran nothing of this one: it is
  // started again and the request sent again (once).
  bool sent = false;
  std::string why;
  long limit_hits = 0;
  for (int attempt = 0; attempt < 2 && !sent; ++attempt) {
    if (pid_ > 0) reap(false);
    if (pid_ <= 0 && !start(why)) break;
    limit_hits = cgroup_ ? cgroup_->limit_hits() : 0;
    sent = send_all(channel_, line);
    if (!sent) {
      long pid = pid_;
      why = "the measuring process (pid " + std::to_string(pid) + ") ended before the request: " + kill_and_reap(0);
    }
  }
  if (!sent) {
    out.message = why;
    out.run_s = seconds_since(start_time);
    return out;
  }

  // CPU: the process stops the kernel at the timeout itself; this deadline
  // is for the process. GPU: this deadline is the kernel's.
  const auto sent_at = clock_type::now();
  const double grace_s = kind_ == kind::cpu ? 1.0 + 0.1 * limits.timeout_s : 0.0;
  const auto deadline = sent_at + from_seconds(limits.timeout_s + grace_s);
  const double slow_ms = kind_ == kind::gpu ? measure_rules::slow_limit_ms(limits.reference_ms, policy.slow_factor,
                                                                           policy.min_slow_ms, policy.first_limit_ms)
                                            : std::nan("");
  // The start of the run going on, when one is (a plain value and a flag:
  // GCC 12 warns of an optional time_point as maybe uninitialized).
  clock_type::time_point run_began{};
  bool running = false;
  long child = 0;
  nlohmann::json reply;
  enum class ending { replied, died, timed_out, too_slow } end = ending::replied;
  double ran_ms = 0.0;
  std::string record_line;
  for (;;) {
    bool replied = false;
    while (!replied && read_line(record_line)) {
      auto record = nlohmann::json::parse(record_line, nullptr, false);
      if (!record.is_object()) continue;
      if (record.contains("status")) {
        reply = std::move(record);
        replied = true;
      } else if (record.contains("started")) {
        child = record["started"].get<long>();
      } else if (record.contains("run")) {
        run_began = clock_type::now();
        running = true;
        if (setting_up_) {
          restart_ms_ = std::chrono::duration<double, std::milli>(run_began - started_at_).count();
          setting_up_ = false;
        }
      } else if (record.contains("idle")) {
        running = false;
      }
    }
    if (replied) break;
    auto now = clock_type::now();
    auto wake = deadline;
    if (running && std::isfinite(slow_ms)) {
      auto run_deadline = run_began + from_seconds(std::max(slow_ms, restart_ms_) * 1e-3);
      if (now >= run_deadline) {
        ran_ms = std::chrono::duration<double, std::milli>(now - run_began).count();
        end = ending::too_slow;
        break;
      }
      wake = std::min(wake, run_deadline);
    }
    if (now >= deadline) {
      end = ending::timed_out;
      break;
    }
    auto wait_ms = std::chrono::duration_cast<std::chrono::milliseconds>(wake - now).count() + 1;
    pollfd channel{channel_, POLLIN, 0};
    if (::poll(&channel, 1, static_cast<int>(std::min<long long>(wait_ms, 1 << 30))) <= 0) continue;
    char chunk[65536];
    ssize_t n = ::recv(channel_, chunk, sizeof chunk, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {
      end = ending::died;
      break;
    }
    pending_.append(chunk, static_cast<std::size_t>(n));
  }

  const bool limit_reached = cgroup_ && cgroup_->limit_hits() > limit_hits;
  const std::string process = "the measuring process (pid " + std::to_string(pid_) + ")";
  const std::string fresh = "a fresh one measures the next trial";
  switch (end) {
    case ending::replied:
      read_reply(reply, out);
      if (raw_reply) *raw_reply = reply;
      if (reply.value("exit", false)) {
        // It ends after this reply; it is given a moment, then killed.
        auto until = clock_type::now() + std::chrono::seconds(5);
        while (pid_ > 0 && reap(false).empty() && clock_type::now() < until)
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        if (pid_ > 0) kill_and_reap(0);
      }
      break;
    case ending::died:
      out.state = status::runtime_error;
      out.message = process + " ended during the run (" + kill_and_reap(child) + "): this trial is lost, " + fresh;
      break;
    case ending::timed_out:
      kill_and_reap(child);
      out.state = status::run_timeout;
      out.message = kind_ == kind::cpu
                        ? process + " did not answer within " + format_g(limits.timeout_s + grace_s) +
                              " s: killed with its kernel, " + fresh
                        : "kernel killed after " + format_g(limits.timeout_s) + " s with " + process + ", " + fresh;
      break;
    case ending::too_slow:
      kill_and_reap(child);
      out.state = status::too_slow;
      out.message = measure_rules::too_slow_message(ran_ms, limits.reference_ms, policy.slow_factor, policy.min_slow_ms,
                                                    policy.first_limit_ms);
      if (restart_ms_ > slow_ms)
        out.message += ", and longer than the measuring process's set-up, " + format_g(restart_ms_) +
                       " ms, that stopping it costs";
      out.message += " (stopped with " + process + ", " + fresh + ")";
      break;
  }
  // A fork bomb cut at the limit ends however the kernel takes its failed
  // forks: said on the message's first line.
  if (limit_reached && out.state != status::ok)
    out.message.insert(
        std::min(out.message.find('\n'), out.message.size()),
        " after reaching its limit of " + std::to_string(max_processes_) + " processes and threads (max_processes)");
  out.run_s = seconds_since(start_time);
  return out;
}

}  // namespace tune
