// Addresses: whether one stays on this machine, and HOST:PORT read once for
// every server (loopback.hpp).
#include "tune/storage/loopback.hpp"

#include <arpa/inet.h>

#include <stdexcept>

namespace tune::storage {

bool is_loopback_host(const std::string& host) {
  if (host == "localhost") return true;
  std::string bare =
      host.size() > 2 && host.front() == '[' && host.back() == ']' ? host.substr(1, host.size() - 2) : host;
  in_addr v4{};
  if (inet_pton(AF_INET, bare.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  return inet_pton(AF_INET6, bare.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

host_port parse_host_port(const std::string& text, const std::string& what, const std::string& example) {
  auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
    throw std::invalid_argument(what + " " + text + ": expected HOST:PORT, e.g. " + example);
  host_port out;
  out.host = text.substr(0, colon);
  if (out.host.front() == '[') {
    if (out.host.size() < 3 || out.host.back() != ']')
      throw std::invalid_argument(
          what + " " + text + ": an IPv6 host goes in brackets, e.g. [::1]:" + example.substr(example.rfind(':') + 1));
    out.host = out.host.substr(1, out.host.size() - 2);
  } else if (out.host.find(':') != std::string::npos) {
    throw std::invalid_argument(
        what + " " + text + ": an IPv6 host goes in brackets, e.g. [::1]:" + example.substr(example.rfind(':') + 1));
  }
  std::string port_text = text.substr(colon + 1);
  unsigned long port = 0;
  std::size_t used = 0;
  try {
    port = std::stoul(port_text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != port_text.size() || port_text.front() == '-' || port_text.front() == '+' || port > 65535)
    throw std::invalid_argument(what + " " + text + ": the port '" + port_text + "' is not a number from 0 to 65535");
  out.port = static_cast<std::uint16_t>(port);
  return out;
}

}  // namespace tune::storage
