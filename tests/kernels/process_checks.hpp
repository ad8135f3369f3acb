#pragma once
// Whether a process has ended, for tests that check no process outlives
// the one that started it, and which processes a process has started.

#include <dirent.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

namespace tune::test {

/// True once the process is gone or a zombie waiting for init to reap it.
inline bool has_ended(long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
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
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
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
