#pragma once
// Talking to a resident tune-kernel-worker directly (its protocol is in
// kernels/worker/resident.hpp), for the tests of what it answers where the
// backends answer before asking it (no GPU).

#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "tune/kernels/subprocess.hpp"

namespace tune::test {

/// Sends one request and reads records until the reply (a line with
/// "status"), at most `timeout_s`; null when the channel closed or time ran
/// out first.
inline nlohmann::json ask_resident(const channel_process& resident, const nlohmann::json& request,
                                   double timeout_s = 30.0) {
  std::string line = request.dump() + "\n", pending;
  if (::send(resident.channel, line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size()))
    return nullptr;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    for (auto newline = pending.find('\n'); newline != std::string::npos; newline = pending.find('\n')) {
      auto record = nlohmann::json::parse(pending.substr(0, newline), nullptr, false);
      pending.erase(0, newline + 1);
      if (record.is_object() && record.contains("status")) return record;
    }
    pollfd channel{resident.channel, POLLIN, 0};
    if (::poll(&channel, 1, 100) <= 0) continue;
    char chunk[4096];
    auto n = ::recv(resident.channel, chunk, sizeof chunk, 0);
    if (n <= 0) return nullptr;
    pending.append(chunk, static_cast<std::size_t>(n));
  }
  return nullptr;
}

/// Whether the process has exited within `timeout_s` (reaped then).
inline bool exits_soon(int pid, double timeout_s = 10.0) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid, nullptr, WNOHANG) == pid) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

}  // namespace tune::test
