#include "tune/kernels/subprocess.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <thread>

extern char** environ;

namespace tune {

namespace {

using clock_type = std::chrono::steady_clock;

double since(clock_type::time_point start) { return std::chrono::duration<double>(clock_type::now() - start).count(); }

// Closes its descriptors on every path out of run_process.
struct pipe_pair {
  int fd[2] = {-1, -1};
  ~pipe_pair() {
    for (int f : fd)
      if (f >= 0) ::close(f);
  }
};

// A pids cgroup of its own for a program with a process limit: the folder of
// this process's cgroup in the pids hierarchy (cgroup v1) or in the unified
// one (v2, where pids is enabled below it) when a child folder with a
// pids.max can be made there, which needs write access to the cgroup file
// system (root, or a delegated cgroup). Found once per process.
const std::string& pids_cgroup_base() {
  static const std::string base = [] {
    std::ifstream self("/proc/self/cgroup");
    std::string line, v1, v2;
    while (std::getline(self, line)) {
      auto first = line.find(':'), second = line.find(':', first + 1);
      if (first == std::string::npos || second == std::string::npos) continue;
      std::string controllers = line.substr(first + 1, second - first - 1), path = line.substr(second + 1);
      if (controllers.empty()) v2 = path;
      std::size_t at = 0;
      while (at <= controllers.size()) {
        auto comma = controllers.find(',', at);
        if (comma == std::string::npos) comma = controllers.size();
        if (controllers.substr(at, comma - at) == "pids") v1 = path;
        at = comma + 1;
      }
    }
    std::vector<std::string> candidates;
    if (!v1.empty()) candidates.push_back("/sys/fs/cgroup/pids" + v1);
    if (!v2.empty()) {
      candidates.push_back("/sys/fs/cgroup" + v2);
      candidates.push_back("/sys/fs/cgroup/unified" + v2);
    }
    for (auto& dir : candidates) {
      while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
      std::string probe = dir + "/tune-probe-" + std::to_string(::getpid());
      if (::mkdir(probe.c_str(), 0755) != 0) continue;
      bool has_max = ::access((probe + "/pids.max").c_str(), W_OK) == 0;
      ::rmdir(probe.c_str());
      if (has_max) return dir;
    }
    return std::string();
  }();
  return base;
}

bool write_text(const std::string& file, const std::string& text) {
  int fd = ::open(file.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  return ::close(fd) == 0 && ok;
}

// How many forks in the cgroup failed at its pids.max ("max N" in pids.events).
long pids_limit_hits(const std::string& dir) {
  std::ifstream events(dir + "/pids.events");
  std::string key;
  long count = 0;
  while (events >> key >> count)
    if (key == "max") return count;
  return 0;
}

// Kills every process in a cgroup (also those that left the process group
// with setsid) and removes it once it is empty.
void remove_cgroup(const std::string& dir) {
  auto deadline = clock_type::now() + std::chrono::seconds(5);
  while (::rmdir(dir.c_str()) != 0 && errno == EBUSY && clock_type::now() < deadline) {
    std::ifstream procs(dir + "/cgroup.procs");
    long pid = 0;
    while (procs >> pid)
      if (pid > 0) ::kill(static_cast<pid_t>(pid), SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// A cgroup "tune-PID-N" whose pids.max is the limit; empty when none can be
// made. Cgroups left by a process that was killed before it removed them
// are removed first (once per process).
std::string make_pids_cgroup(int max_processes) {
  const auto& base = pids_cgroup_base();
  if (base.empty()) return {};
  static std::once_flag swept;
  std::call_once(swept, [&] {
    DIR* d = ::opendir(base.c_str());
    if (!d) return;
    std::vector<std::string> stale;
    while (auto* entry = ::readdir(d)) {
      std::string name = entry->d_name;
      if (name.rfind("tune-", 0) != 0) continue;
      long owner = std::atol(name.c_str() + 5);
      if (owner > 0 && owner != ::getpid() && ::kill(static_cast<pid_t>(owner), 0) != 0 && errno == ESRCH)
        stale.push_back(base + "/" + name);
    }
    ::closedir(d);
    for (const auto& dir : stale) remove_cgroup(dir);
  });
  static std::atomic<unsigned long> next{0};
  std::string dir = base + "/tune-" + std::to_string(::getpid()) + "-" + std::to_string(next++);
  if (::mkdir(dir.c_str(), 0755) != 0) return {};
  if (!write_text(dir + "/pids.max", std::to_string(max_processes))) {
    ::rmdir(dir.c_str());
    return {};
  }
  return dir;
}

// What the forked guard needs, prepared before the fork: after fork() in a
// threaded process the child may only make async-signal-safe calls.
struct spawn_plan {
  const char* path;
  char* const* argv;
  char* const* envp;
  int output;                // write end of the output pipe
  int report;                // write end of the exec-failure pipe (close-on-exec)
  const char* cgroup_procs;  // the pids cgroup to join, or null
  pid_t engine;
};

// In a forked child about to execute a program (async-signal-safe): SIGPIPE
// and the termination signals at their defaults, no signal blocked.
void default_signals() {
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  ::sigemptyset(&default_action.sa_mask);
  for (int s : {SIGPIPE, SIGINT, SIGTERM, SIGQUIT, SIGHUP, SIGALRM, SIGXFSZ, SIGUSR1, SIGUSR2})
    ::sigaction(s, &default_action, nullptr);
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

// The exec-failure pipe closes when the program has started (close-on-exec)
// or carries the errno of what failed (negative: an error of our own): that
// number, or 0.
int exec_failure(int report) {
  int error = 0;
  ssize_t got = 0;
  do {
    got = ::read(report, &error, sizeof error);
  } while (got < 0 && errno == EINTR);
  return got == static_cast<ssize_t>(sizeof error) ? error : 0;
}

// What the guard's child needs to execute the program.
struct program_start {
  const char* path;
  char* const* argv;
  char* const* envp;
  int report;  // the exec-failure pipe
};

// The guard's child (clone with CLONE_VM | CLONE_VFORK: the guard waits until
// it has executed the program or ended): the program's signals, its death with
// the guard, then the program; an exec failure goes into the report pipe.
int start_program(void* argument) {
  const auto& start = *static_cast<const program_start*>(argument);
  default_signals();
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // the guard was killed alone: no orphan
  ::execve(start.path, start.argv, start.envp);
  int error = errno;
  (void)!::write(start.report, &error, sizeof error);
  ::_exit(127);
}

// The guard: the process group's leader between the engine and the program.
// It dies with the engine's thread that started it (PR_SET_PDEATHSIG) and
// then kills its whole group: the program and every process the program
// started in it (a compiler's cc1plus, a kernel's forked children), which a
// death signal of the program alone would leave running. Otherwise it waits
// for the program and ends as the program ended (same exit code or signal).
[[noreturn]] void run_guard(const spawn_plan& plan) {
  ::setpgid(0, 0);
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  ::sigemptyset(&default_action.sa_mask);
  // Every signal is blocked here (inherited from run_process); these two are
  // waited for, and a SIGCHLD ignored by the engine would reap the program.
  ::sigaction(SIGCHLD, &default_action, nullptr);
  ::sigaction(SIGUSR1, &default_action, nullptr);
  ::prctl(PR_SET_PDEATHSIG, SIGUSR1);
  if (::getppid() != plan.engine) ::_exit(127);  // the engine is already gone
  if (plan.cgroup_procs) {
    int fd = ::open(plan.cgroup_procs, O_WRONLY | O_CLOEXEC);
    bool joined = fd >= 0 && ::write(fd, "0\n", 2) == 2;
    if (fd >= 0) ::close(fd);
    if (!joined) {
      int error = -1;  // not an errno: the cgroup could not be joined
      (void)!::write(plan.report, &error, sizeof error);
      ::_exit(127);
    }
  }
  // Standard input from /dev/null, output and errors into the pipe, and no
  // other descriptor of the engine kept: a guard never executes a program, so
  // close-on-exec does not close the pipes of programs other threads run.
  int output = ::fcntl(plan.output, F_DUPFD_CLOEXEC, 3), report = ::fcntl(plan.report, F_DUPFD_CLOEXEC, 3);
  int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (output < 0 || report < 0 || null < 0 || ::dup2(null, 0) < 0 || ::dup2(output, 1) < 0 || ::dup2(output, 2) < 0) {
    int error = errno;
    (void)!::write(report >= 0 ? report : plan.report, &error, sizeof error);
    ::_exit(127);
  }
  if (report > 3) ::close_range(3, static_cast<unsigned>(report) - 1, 0);
  ::close_range(static_cast<unsigned>(report) + 1, ~0U, 0);

  // The program is started as posix_spawn starts one: a child sharing the
  // guard's memory, on a stack of its own, the guard suspended until it has
  // executed the program (or failed to). A fork would copy the page tables of
  // the engine the guard was forked from once more (8 ms for a process with
  // 120 MB touched; docs/kernels.md). Under a sanitizer, whose run-time state
  // such a child would share, a fork as before.
  program_start start{plan.path, plan.argv, plan.envp, report};
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  pid_t program = ::fork();
  if (program == 0) start_program(&start);
#else
  alignas(16) char stack[32768];
  pid_t program = ::clone(start_program, stack + sizeof stack, CLONE_VM | CLONE_VFORK | SIGCHLD, &start);
#endif
  if (program < 0) {
    int error = errno;
    (void)!::write(report, &error, sizeof error);
    ::_exit(127);
  }
  ::close(report);

  sigset_t wanted;
  ::sigemptyset(&wanted);
  ::sigaddset(&wanted, SIGCHLD);
  ::sigaddset(&wanted, SIGUSR1);
  for (;;) {
    siginfo_t info;
    int sig = ::sigwaitinfo(&wanted, &info);
    if (sig == SIGUSR1) ::kill(0, SIGKILL);  // the engine died: the whole group goes
    if (sig != SIGCHLD) continue;
    int status = 0;
    if (::waitpid(program, &status, WNOHANG) != program) continue;
    if (WIFEXITED(status)) ::_exit(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) {
      int end = WTERMSIG(status);
      rlimit no_core{0, 0};
      ::setrlimit(RLIMIT_CORE, &no_core);
      ::sigaction(end, &default_action, nullptr);
      sigset_t only;
      ::sigemptyset(&only);
      ::sigaddset(&only, end);
      ::sigprocmask(SIG_UNBLOCK, &only, nullptr);
      ::kill(::getpid(), end);
      ::_exit(128 + end);
    }
  }
}

}  // namespace

// Looked up before forking because the forked child may not allocate.
std::string find_program(const std::string& name, int& error) {
  error = 0;
  if (name.find('/') != std::string::npos) {
    if (::access(name.c_str(), X_OK) != 0) error = errno;
    return name;
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
  error = ENOENT;
  std::size_t begin = 0;
  while (begin <= dirs.size()) {
    auto end = dirs.find(':', begin);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(begin, end - begin);
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    struct stat info {};
    if (::stat(candidate.c_str(), &info) == 0 && S_ISREG(info.st_mode)) {
      if (::access(candidate.c_str(), X_OK) == 0) {
        error = 0;
        return candidate;
      }
      error = EACCES;
    }
    begin = end + 1;
  }
  return name;
}

bool process_limits_enforced() { return !pids_cgroup_base().empty(); }

pids_cgroup::pids_cgroup(int max_processes) {
  if (max_processes > 0) dir_ = make_pids_cgroup(max_processes);
  if (!dir_.empty()) procs_ = dir_ + "/cgroup.procs";
}

pids_cgroup::~pids_cgroup() {
  if (!dir_.empty()) remove_cgroup(dir_);
}

long pids_cgroup::limit_hits() const { return dir_.empty() ? 0 : pids_limit_hits(dir_); }

namespace {

// What execve needs, made before forking (the child may not allocate): the
// program of argv[0] and the argument pointers; false and why not.
struct exec_plan {
  std::string path;
  std::vector<char*> args;
};
bool plan_exec(const std::vector<std::string>& argv, exec_plan& plan, std::string& error) {
  if (argv.empty()) {
    error = "empty command";
    return false;
  }
  int missing = 0;
  plan.path = find_program(argv[0], missing);
  if (missing != 0) {
    error = "cannot run " + argv[0] + ": " + std::strerror(missing);
    return false;
  }
  for (const auto& a : argv) plan.args.push_back(const_cast<char*>(a.c_str()));
  plan.args.push_back(nullptr);
  return true;
}

}  // namespace

channel_process start_with_channel(const std::vector<std::string>& argv, const std::string& cgroup_procs) {
  channel_process result;
  exec_plan exec;
  if (!plan_exec(argv, exec, result.error)) return result;
  // Close-on-exec everywhere: a copy leaked into a program another thread
  // starts would keep the channel open after the engine closed its end.
  int sockets[2] = {-1, -1};
  pipe_pair report;
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) != 0) {
    result.error = std::string("socketpair: ") + std::strerror(errno);
    return result;
  }
  int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null < 0 || ::pipe2(report.fd, O_CLOEXEC) != 0) {
    result.error = std::string("cannot start ") + argv[0] + ": " + std::strerror(errno);
    for (int fd : {sockets[0], sockets[1], null})
      if (fd >= 0) ::close(fd);
    return result;
  }
  sigset_t all, previous;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &previous);
  pid_t pid = ::fork();
  if (pid == 0) {
    // Only async-signal-safe calls from here: the caller may have threads.
    ::setpgid(0, 0);
    if (!cgroup_procs.empty()) {
      int fd = ::open(cgroup_procs.c_str(), O_WRONLY | O_CLOEXEC);
      bool joined = fd >= 0 && ::write(fd, "0\n", 2) == 2;
      if (fd >= 0) ::close(fd);
      if (!joined) {
        int error = -1;  // not an errno: the cgroup could not be joined
        (void)!::write(report.fd[1], &error, sizeof error);
        ::_exit(127);
      }
    }
    int channel = ::fcntl(sockets[1], F_DUPFD_CLOEXEC, 10), failed = ::fcntl(report.fd[1], F_DUPFD_CLOEXEC, 10);
    int input = ::fcntl(null, F_DUPFD_CLOEXEC, 10);
    if (channel < 0 || failed < 0 || input < 0 || ::dup2(input, 0) < 0 || ::dup2(input, 1) < 0 ||
        ::dup2(input, 2) < 0 || ::dup2(channel, 3) < 0) {
      int error = errno;
      (void)!::write(failed >= 0 ? failed : report.fd[1], &error, sizeof error);
      ::_exit(127);
    }
    // `failed` stays (close-on-exec) to carry an exec failure.
    ::close_range(4, static_cast<unsigned>(failed) - 1, 0);
    ::close_range(static_cast<unsigned>(failed) + 1, ~0U, 0);
    default_signals();
    ::execve(exec.path.c_str(), exec.args.data(), environ);
    int error = errno;
    (void)!::write(failed, &error, sizeof error);
    ::_exit(127);
  }
  int fork_error = errno;
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  ::close(sockets[1]);
  ::close(null);
  ::close(report.fd[1]);
  report.fd[1] = -1;
  if (pid < 0) {
    ::close(sockets[0]);
    result.error = "cannot run " + argv[0] + ": " + std::strerror(fork_error);
    return result;
  }
  ::setpgid(pid, pid);  // as the child does: whichever runs first
  if (int exec_error = exec_failure(report.fd[0]); exec_error != 0) {
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    ::close(sockets[0]);
    result.error = "cannot run " + argv[0] + ": " +
                   (exec_error < 0 ? "could not join its pids cgroup " + cgroup_procs : std::strerror(exec_error));
    return result;
  }
  result.pid = pid;
  result.channel = sockets[0];
  return result;
}

process_result run_process(const std::vector<std::string>& argv, double timeout_s, std::size_t output_limit,
                           const process_limits& limits, const std::vector<std::string>& environment) {
  process_result result;
  auto start = clock_type::now();
  exec_plan exec;
  if (!plan_exec(argv, exec, result.error)) {
    result.seconds = since(start);
    return result;
  }
  // The program's environment, made before forking: the caller's, less the
  // variables `environment` sets, then those.
  std::vector<char*> envp;
  if (!environment.empty()) {
    auto named = [](const char* entry, const std::string& set) {
      auto name = set.substr(0, set.find('=') + 1);
      return std::strncmp(entry, name.c_str(), name.size()) == 0;
    };
    for (char** e = environ; *e; ++e)
      if (std::none_of(environment.begin(), environment.end(), [&](const std::string& set) { return named(*e, set); }))
        envp.push_back(*e);
    for (const auto& set : environment) envp.push_back(const_cast<char*>(set.c_str()));
    envp.push_back(nullptr);
  }
  pipe_pair out, report;
  // O_CLOEXEC: a pipe end leaked into a process spawned at the same time by
  // another thread would keep our read end from ever seeing end-of-file.
  if (::pipe2(out.fd, O_CLOEXEC) != 0 || ::pipe2(report.fd, O_CLOEXEC) != 0) {
    result.error = std::string("pipe: ") + std::strerror(errno);
    return result;
  }

  std::string cgroup = limits.max_processes > 0 ? make_pids_cgroup(limits.max_processes) : std::string();
  std::string cgroup_procs = cgroup.empty() ? std::string() : cgroup + "/cgroup.procs";
  spawn_plan plan{exec.path.c_str(), exec.args.data(), envp.empty() ? environ : envp.data(),
                  out.fd[1],         report.fd[1],     cgroup.empty() ? nullptr : cgroup_procs.c_str(),
                  ::getpid()};

  // Every signal blocked across the fork: no handler of the engine runs in
  // the guard.
  sigset_t all, previous;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &previous);
  pid_t pid = ::fork();
  if (pid == 0) run_guard(plan);
  int fork_error = errno;
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  ::close(out.fd[1]);
  out.fd[1] = -1;
  ::close(report.fd[1]);
  report.fd[1] = -1;
  if (pid < 0) {
    if (!cgroup.empty()) remove_cgroup(cgroup);
    result.error = "cannot run " + argv[0] + ": " + std::strerror(fork_error);
    result.seconds = since(start);
    return result;
  }
  ::setpgid(pid, pid);  // as the guard does: whichever runs first

  if (int exec_error = exec_failure(report.fd[0]); exec_error != 0) {
    int wstatus = 0;
    while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
    result.error = "cannot run " + argv[0] + ": " +
                   (exec_error < 0 ? "could not join its pids cgroup " + cgroup : std::strerror(exec_error));
    if (!cgroup.empty()) remove_cgroup(cgroup);
    result.seconds = since(start);
    return result;
  }
  result.started = true;

  auto remaining_ms = [&] {
    double left = timeout_s - since(start);
    return left <= 0 ? 0 : static_cast<int>(left * 1000.0) + 1;
  };

  // Output past the limit keeps its head and its tail (a worker's reply is
  // its last line), whatever a program writes.
  const std::size_t head_limit = output_limit / 2, tail_limit = output_limit - head_limit;
  std::string tail;
  std::size_t left_out = 0;
  auto keep = [&](const char* data, std::size_t n) {
    std::size_t to_head = std::min(n, head_limit > result.output.size() ? head_limit - result.output.size() : 0);
    result.output.append(data, to_head);
    tail.append(data + to_head, n - to_head);
    if (tail.size() > 2 * tail_limit) {
      left_out += tail.size() - tail_limit;
      tail.erase(0, tail.size() - tail_limit);
    }
  };

  // Reads until the output closes. Once the program itself has exited, the
  // helpers it left in its group are killed, so that one holding the pipe
  // open cannot keep us waiting until the timeout.
  bool open = true, exited = false;
  int wstatus = 0;
  char buffer[65536];
  while (open) {
    int wait_ms = remaining_ms();
    if (wait_ms == 0) {
      result.timed_out = true;
      break;
    }
    pollfd p{out.fd[0], POLLIN, 0};
    int ready = ::poll(&p, 1, exited ? std::min(wait_ms, 100) : std::min(wait_ms, 50));
    if (ready < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (ready == 0) {
      if (exited) break;  // a helper outside the group still holds the pipe: stop here
      pid_t done = ::waitpid(pid, &wstatus, WNOHANG);
      if (done == pid) {
        exited = true;
        ::kill(-pid, SIGKILL);
      }
      continue;
    }
    ssize_t n = ::read(out.fd[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      open = false;
      break;
    }
    keep(buffer, static_cast<std::size_t>(n));
  }
  if (tail.size() > tail_limit) {
    left_out += tail.size() - tail_limit;
    tail.erase(0, tail.size() - tail_limit);
  }
  if (left_out > 0) result.output += "\n[... " + std::to_string(left_out) + " bytes of output left out ...]\n";
  result.output += tail;

  // The output closed (or time ran out); wait for the exit within the timeout.
  while (!result.timed_out && !exited) {
    pid_t done = ::waitpid(pid, &wstatus, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) break;
    if (remaining_ms() == 0) {
      result.timed_out = true;
      break;
    }
    ::usleep(1000);
  }
  if (result.timed_out) {
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
    while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
  } else {
    // Helpers the program left behind in its group must not outlive it.
    ::kill(-pid, SIGKILL);
  }
  if (!cgroup.empty()) {
    result.process_limit_reached = pids_limit_hits(cgroup) > 0;
    remove_cgroup(cgroup);
  }
  if (WIFEXITED(wstatus)) result.exit_code = WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus) && !result.timed_out) result.signal = WTERMSIG(wstatus);
  result.seconds = since(start);
  return result;
}

}  // namespace tune
