#pragma once
// Whether a process has ended, for tests that check no process outlives
// the one that started it.

#include <chrono>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

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

}  // namespace tune::test
