#pragma once
// `tune-engine node` processes on loopback for the benchmarks that spread
// their devices over nodes (bench_nodes, bench_model_busy): started with a
// node topology, their port read from what they print, killed at the end,
// and by the kernel when the benchmark dies first (a signal, a crash): each
// asks for SIGKILL at its parent's death. Start them from the main thread,
// whose end is the process's.
// Needs TUNE_CLI_PATH (the tune-engine executable) defined by the target.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <regex>
#include <stdexcept>
#include <string>

namespace {

/// A `tune-engine node` child on 127.0.0.1 (any free port).
struct node_child {
  pid_t pid = -1;
  std::uint16_t port = 0;
  int err = -1;
};

node_child start_node(const std::string& topology) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) throw std::runtime_error("pipe failed");
  node_child node;
  const pid_t parent = getpid();
  node.pid = fork();
  if (node.pid < 0) throw std::runtime_error("fork failed");
  if (node.pid == 0) {
    // The parent may have died between fork and prctl: then no signal comes.
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(127);
    dup2(pipe_fds[1], STDERR_FILENO);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    execl(TUNE_CLI_PATH, TUNE_CLI_PATH, "node", "--listen", "127.0.0.1:0", "--topology", topology.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(pipe_fds[1]);
  node.err = pipe_fds[0];
  std::string seen;
  std::smatch match;
  while (!std::regex_search(seen, match, std::regex("\\(port ([0-9]+)\\)"))) {
    char buffer[256];
    auto n = read(node.err, buffer, sizeof buffer);
    if (n <= 0) throw std::runtime_error("the node did not start: " + seen);
    seen.append(buffer, static_cast<std::size_t>(n));
  }
  node.port = static_cast<std::uint16_t>(std::stoi(match[1]));
  return node;
}

void stop_node(node_child& node) {
  if (node.pid <= 0) return;
  kill(node.pid, SIGKILL);
  waitpid(node.pid, nullptr, 0);
  close(node.err);
  node.pid = -1;
}

}  // namespace
