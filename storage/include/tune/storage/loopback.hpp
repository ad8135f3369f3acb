#pragma once
// Addresses: whether one stays on this machine — the one rule that decides
// where a node, the dashboard and the event publisher may listen without TLS,
// a token or CURVE keys — and HOST:PORT as a user writes it.
#include <cstdint>
#include <string>

namespace tune::storage {

/// True for 127.0.0.0/8, ::1 (with or without brackets) and "localhost".
bool is_loopback_host(const std::string& host);

struct host_port {
  std::string host;  ///< without the brackets of an IPv6 address
  std::uint16_t port = 0;
};

/// "HOST:PORT", an IPv6 host in brackets ("[::1]:8080"), port 0 to 65535.
/// Throws std::invalid_argument "WHAT TEXT: …" with the fix (`example`:
/// an address that would do, e.g. "127.0.0.1:8080").
host_port parse_host_port(const std::string& text, const std::string& what, const std::string& example);

}  // namespace tune::storage
