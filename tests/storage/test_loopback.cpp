// Addresses: the loopback rule and HOST:PORT as a user writes it.
#include <catch2/catch.hpp>

#include "tune/storage/loopback.hpp"

using namespace tune::storage;
using Catch::Matchers::Contains;

TEST_CASE("loopback hosts are 127.0.0.0/8 and ::1 and localhost", "[storage]") {
  // The one rule for the node, the dashboard and the event publisher.
  CHECK(is_loopback_host("127.0.0.1"));
  CHECK(is_loopback_host("127.3.2.1"));
  CHECK(is_loopback_host("::1"));
  CHECK(is_loopback_host("localhost"));
  CHECK_FALSE(is_loopback_host("0.0.0.0"));
  CHECK_FALSE(is_loopback_host("10.1.2.3"));
}

TEST_CASE("HOST:PORT is read once for every server, IPv6 hosts in brackets", "[storage]") {
  auto a = parse_host_port("127.0.0.1:8080", "--listen", "127.0.0.1:8080");
  CHECK(a.host == "127.0.0.1");
  CHECK(a.port == 8080);
  auto v6 = parse_host_port("[::1]:0", "--listen", "127.0.0.1:8080");
  CHECK(v6.host == "::1");
  CHECK(v6.port == 0);
  CHECK(parse_host_port("node-3.example.org:65535", "listen", "h:1").host == "node-3.example.org");
  auto error_of = [](const std::string& text) {
    try {
      parse_host_port(text, "--listen", "127.0.0.1:7101");
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  CHECK(error_of("8080") == "--listen 8080: expected HOST:PORT, e.g. 127.0.0.1:7101");
  CHECK(error_of(":8080") == "--listen :8080: expected HOST:PORT, e.g. 127.0.0.1:7101");
  CHECK(error_of("host:") == "--listen host:: expected HOST:PORT, e.g. 127.0.0.1:7101");
  CHECK(error_of("::1:80") == "--listen ::1:80: an IPv6 host goes in brackets, e.g. [::1]:7101");
  CHECK(error_of("[::1:80") == "--listen [::1:80: an IPv6 host goes in brackets, e.g. [::1]:7101");
  for (const char* port : {"70000", "-1", "+5", "80x", "http"})
    CHECK_THAT(error_of(std::string("127.0.0.1:") + port),
               Contains("the port '" + std::string(port) + "' is not a number from 0 to 65535"));
}
