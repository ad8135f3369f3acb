#pragma once
// Whether an address stays on this machine: the one rule that decides where a
// node, the dashboard and the event publisher may listen without TLS, a token
// or CURVE keys.
#include <string>

namespace tune::storage {

/// True for 127.0.0.0/8, ::1 (with or without brackets) and "localhost".
bool is_loopback_host(const std::string& host);

}  // namespace tune::storage
