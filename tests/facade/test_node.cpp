// tune::serve_node: the listen address and topology are checked before the
// node serves, and messages name the options as the caller's users know them.
#include <catch2/catch.hpp>
#include <string>

#include "facade/input_error_of.hpp"
#include "tune/tune.hpp"

using namespace tune;
using Catch::Matchers::StartsWith;

namespace {
const std::string node_topology = std::string(TUNE_SOURCE_DIR) + "/examples/node-replay.yaml";

std::string message_of(const node_options& o) {
  return test::input_error_of([&] { serve_node(o); }, "(served)");
}
}  // namespace

TEST_CASE("serve_node: a bad listen address is refused naming the field", "[facade]") {
  node_options o;
  o.topology_file = node_topology;
  o.listen = "7101";
  CHECK(message_of(o) == "listen 7101: expected HOST:PORT, e.g. 127.0.0.1:7101");
  o.option_names = {{"listen", "--listen"}};
  CHECK(message_of(o) == "--listen 7101: expected HOST:PORT, e.g. 127.0.0.1:7101");
  o.listen = "127.0.0.1:http";
  CHECK(message_of(o) == "--listen 127.0.0.1:http: the port 'http' is not a number from 0 to 65535");
  o.listen = "127.0.0.1:70000";
  CHECK(message_of(o) == "--listen 127.0.0.1:70000: the port '70000' is not a number from 0 to 65535");
}

TEST_CASE("serve_node: off loopback without TLS is refused with the caller's name of the address", "[facade]") {
  node_options o;
  o.topology_file = node_topology;
  o.listen = "0.0.0.0:0";
  o.option_names = {{"listen", "node.listen"}};
  auto message = message_of(o);
  CHECK_THAT(message, Catch::Matchers::Contains("node.listen 0.0.0.0: a node off loopback needs TLS"));
  CHECK_THAT(message, !Catch::Matchers::Contains("--listen"));
}

TEST_CASE("serve_node: a node needs its topology", "[facade]") {
  node_options o;
  o.listen = "127.0.0.1:0";
  CHECK_THAT(message_of(o), StartsWith("topology_file: a node needs its topology file"));
  o.option_names = {{"topology_file", "--topology"}};
  CHECK_THAT(message_of(o), StartsWith("--topology: a node needs its topology file"));
}
