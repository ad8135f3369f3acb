#pragma once
// Runs the built tune-engine as a child process (argv, no shell) for tests of
// the command line: its stdout and stderr captured through pipes, or appended
// to a file (output_file) for a run that is killed, resumed and read after.

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace tune::test {

/// Where a cli_process writes stdout and stderr instead of pipes: appended to
/// `path`. With a file size limit (RLIMIT_FSIZE, as `ulimit -f` sets it) no
/// file the process writes can grow past that many bytes, which stands for a
/// full disk.
struct output_file {
  std::string path;
  rlim_t file_size_limit = 0;
};

class cli_process {
 public:
  /// Starts `tune-engine args…` with stdout and stderr captured (out(), err()).
  explicit cli_process(const std::vector<std::string>& args) {
    int out[2], err[2];
    if (pipe(out) != 0 || pipe(err) != 0) throw std::runtime_error("pipe failed");
    start(args, [&] {
      dup2(out[1], STDOUT_FILENO);
      dup2(err[1], STDERR_FILENO);
      close(out[0]);
      close(err[0]);
      close(out[1]);
      close(err[1]);
    });
    close(out[1]);
    close(err[1]);
    out_ = out[0];
    err_ = err[0];
  }

  /// Starts `tune-engine args…` with stdout and stderr appended to a file;
  /// out() and err() stay empty.
  cli_process(const std::vector<std::string>& args, const output_file& output) {
    start(args, [&] {
      int fd = open(output.path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd < 0) _exit(127);
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
      if (fd > STDERR_FILENO) close(fd);
      if (output.file_size_limit > 0) {
        rlimit limit{output.file_size_limit, output.file_size_limit};
        setrlimit(RLIMIT_FSIZE, &limit);
      }
    });
  }

  ~cli_process() {
    if (!ended_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (out_ >= 0) close(out_);
    if (err_ >= 0) close(err_);
  }
  cli_process(const cli_process&) = delete;
  cli_process& operator=(const cli_process&) = delete;

  void signal(int sig) {
    if (!ended_) kill(pid_, sig);
  }

  /// False once the process has ended (it is reaped then; wait() gives its code).
  bool running() {
    if (ended_) return false;
    if (waitpid(pid_, &status_, WNOHANG) != pid_) return true;
    ended_ = true;
    return false;
  }

  /// Waits until the process exits (with pipes, reading both until they
  /// close) or `timeout` passes (then it is killed) and returns the exit
  /// code; -signal when killed by a signal.
  int wait(std::chrono::seconds timeout = std::chrono::seconds(120)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    bool out_open = out_ >= 0, err_open = err_ >= 0;
    while (out_open || err_open) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        signal(SIGKILL);
        break;
      }
      pollfd fds[2] = {{out_open ? out_ : -1, POLLIN, 0}, {err_open ? err_ : -1, POLLIN, 0}};
      if (::poll(fds, 2, static_cast<int>(left.count())) < 0) continue;
      if (out_open && fds[0].revents) out_open = drain(out_, stdout_);
      if (err_open && fds[1].revents) err_open = drain(err_, stderr_);
    }
    // Without pipes (or once they closed): until the process itself ends.
    while (running()) {
      if (std::chrono::steady_clock::now() >= deadline) {
        signal(SIGKILL);
        waitpid(pid_, &status_, 0);
        ended_ = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return WIFEXITED(status_) ? WEXITSTATUS(status_) : -WTERMSIG(status_);
  }

  /// Reads stderr until it holds `text` (true) or `timeout` passes or the
  /// process closes it (false); for a long-running process such as a node.
  bool wait_for_err(const std::string& text, std::chrono::seconds timeout = std::chrono::seconds(30)) {
    if (err_ < 0) throw std::logic_error("wait_for_err: this process writes its output to a file");
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
  /// Forks; the child runs `redirect` and then tune-engine. The arguments
  /// are laid out before the fork: the child only redirects and execs.
  template <class Redirect>
  void start(const std::vector<std::string>& args, Redirect redirect) {
    std::vector<std::string> text{TUNE_CLI_PATH};
    text.insert(text.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : text) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      redirect();
      execv(argv[0], argv.data());
      _exit(127);
    }
  }

  static bool drain(int fd, std::string& into) {
    char buffer[4096];
    ssize_t n = read(fd, buffer, sizeof buffer);
    if (n <= 0) return false;
    into.append(buffer, static_cast<std::size_t>(n));
    return true;
  }

  pid_t pid_ = -1;
  int status_ = 0;
  bool ended_ = false;
  int out_ = -1, err_ = -1;
  std::string stdout_, stderr_;
};

}  // namespace tune::test
