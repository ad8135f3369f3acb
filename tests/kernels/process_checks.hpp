#pragma once
// Whether a process has ended, for tests that check no process outlives
// the one that started it, and which processes a process has started.

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace tune::test {

/// A process's /proc/<pid>/stat, empty when it cannot be read: the process
/// may end between the open and the read, which then fails with ESRCH (an
/// std::ifstream throws std::ios_failure there, from whatever thread reads).
inline std::string proc_stat(long pid) {
  std::string text;
  int fd = ::open(("/proc/" + std::to_string(pid) + "/stat").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char chunk[4096];
  for (ssize_t got; (got = ::read(fd, chunk, sizeof chunk)) != 0;) {
    if (got < 0) {
      if (errno == EINTR) continue;
      text.clear();
      break;
    }
    text.append(chunk, static_cast<std::size_t>(got));
  }
  ::close(fd);
  return text;
}

/// True once the process is gone or a zombie waiting for init to reap it.
inline bool has_ended(long pid) {
  std::string text = proc_stat(pid);
  if (text.empty()) return true;
  auto close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] == 'Z';
}

/// Waits (up to 10 s, for the kernel to deliver the signal) until the process has ended.
inline bool ends_soon(long pid) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!has_ended(pid)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

/// The living processes whose parent is `parent` and whose name (comm, at
/// most 15 characters) is `name`, or any name when empty.
inline std::vector<long> children_of(long parent, const std::string& name = {}) {
  std::vector<long> found;
  DIR* proc = ::opendir("/proc");
  if (!proc) return found;
  while (auto* entry = ::readdir(proc)) {
    long pid = std::atol(entry->d_name);
    if (pid <= 0) continue;
    std::string text = proc_stat(pid);
    auto open = text.find('('), close = text.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close + 4 >= text.size()) continue;
    std::string comm = text.substr(open + 1, close - open - 1);
    char state = text[close + 2];
    long ppid = std::atol(text.c_str() + close + 4);
    if (ppid == parent && state != 'Z' && (name.empty() || comm == name)) found.push_back(pid);
  }
  ::closedir(proc);
  return found;
}

/// Waits (up to 10 s) until `parent` has a living child named `name`; 0 if none came.
inline long child_soon(long parent, const std::string& name = {}) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    auto children = children_of(parent, name);
    if (!children.empty()) return children.front();
    if (std::chrono::steady_clock::now() > deadline) return 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace tune::test
