#include "tune/kernels/subprocess.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

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

}  // namespace

process_result run_process(const std::vector<std::string>& argv, double timeout_s, std::size_t output_limit) {
  process_result result;
  auto start = clock_type::now();
  if (argv.empty()) {
    result.error = "empty command";
    return result;
  }
  pipe_pair out;
  // O_CLOEXEC: a pipe end leaked into a process spawned at the same time by
  // another thread would keep our read end from ever seeing end-of-file.
  if (::pipe2(out.fd, O_CLOEXEC) != 0) {
    result.error = std::string("pipe: ") + std::strerror(errno);
    return result;
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out.fd[1], 1);
  posix_spawn_file_actions_adddup2(&actions, out.fd[1], 2);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t no_signals, default_signals;
  sigemptyset(&no_signals);
  sigemptyset(&default_signals);
  for (int s : {SIGPIPE, SIGINT, SIGTERM, SIGCHLD, SIGALRM, SIGXFSZ}) sigaddset(&default_signals, s);
  posix_spawnattr_setsigmask(&attr, &no_signals);
  posix_spawnattr_setsigdefault(&attr, &default_signals);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  pid_t pid = 0;
  int rc = ::posix_spawnp(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(out.fd[1]);
  out.fd[1] = -1;
  if (rc != 0) {
    result.error = "cannot run " + argv[0] + ": " + std::strerror(rc);
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
  if (WIFEXITED(wstatus)) result.exit_code = WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus) && !result.timed_out) result.signal = WTERMSIG(wstatus);
  result.seconds = since(start);
  return result;
}

}  // namespace tune
