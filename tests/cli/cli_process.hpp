#pragma once
// Runs the built tune-engine as a child process (argv, no shell) with its
// stdout and stderr captured, for tests of the command line.

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

namespace tune::test {

class cli_process {
 public:
  /// Starts `tune-engine args…`.
  explicit cli_process(const std::vector<std::string>& args) {
    int out[2], err[2];
    if (pipe(out) != 0 || pipe(err) != 0) throw std::runtime_error("pipe failed");
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      dup2(out[1], STDOUT_FILENO);
      dup2(err[1], STDERR_FILENO);
      close(out[0]);
      close(err[0]);
      close(out[1]);
      close(err[1]);
      std::vector<char*> argv;
      std::string program = TUNE_CLI_PATH;
      argv.push_back(program.data());
      std::vector<std::string> copies(args);
      for (auto& a : copies) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(program.c_str(), argv.data());
      _exit(127);
    }
    close(out[1]);
    close(err[1]);
    out_ = out[0];
    err_ = err[0];
  }
  ~cli_process() {
    if (pid_ > 0 && !waited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    close(out_);
    close(err_);
  }
  cli_process(const cli_process&) = delete;
  cli_process& operator=(const cli_process&) = delete;

  void signal(int sig) { kill(pid_, sig); }

  /// Reads both pipes until the process exits (or `timeout` passes, then it
  /// is killed) and returns the exit code; -signal when killed by a signal.
  int wait(std::chrono::seconds timeout = std::chrono::seconds(120)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    bool out_open = true, err_open = true;
    while (out_open || err_open) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        kill(pid_, SIGKILL);
        break;
      }
      pollfd fds[2] = {{out_open ? out_ : -1, POLLIN, 0}, {err_open ? err_ : -1, POLLIN, 0}};
      if (::poll(fds, 2, static_cast<int>(left.count())) < 0) continue;
      if (out_open && fds[0].revents) out_open = drain(out_, stdout_);
      if (err_open && fds[1].revents) err_open = drain(err_, stderr_);
    }
    int status = 0;
    waitpid(pid_, &status, 0);
    waited_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  }

  /// Reads stderr until it holds `text` (true) or `timeout` passes or the
  /// process closes it (false); for a long-running process such as a node.
  bool wait_for_err(const std::string& text, std::chrono::seconds timeout = std::chrono::seconds(30)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (stderr_.find(text) == std::string::npos) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd fd{err_, POLLIN, 0};
      if (::poll(&fd, 1, static_cast<int>(left.count())) <= 0) continue;
      if (!drain(err_, stderr_)) return stderr_.find(text) != std::string::npos;
    }
    return true;
  }

  const std::string& out() const { return stdout_; }
  const std::string& err() const { return stderr_; }

 private:
  static bool drain(int fd, std::string& into) {
    char buffer[4096];
    ssize_t n = read(fd, buffer, sizeof buffer);
    if (n <= 0) return false;
    into.append(buffer, static_cast<std::size_t>(n));
    return true;
  }

  pid_t pid_ = -1;
  int out_ = -1, err_ = -1;
  bool waited_ = false;
  std::string stdout_, stderr_;
};

}  // namespace tune::test
