// tune::serve_dashboard: bad options are refused before it serves, each
// message naming the option as the caller's users know it.
#include <catch2/catch.hpp>
#include <string>

#include "facade/input_error_of.hpp"
#include "tune/tune.hpp"

using namespace tune;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {
std::string message_of(const dashboard_options& o) {
  return test::input_error_of([&] { serve_dashboard(o); }, "(served)");
}

dashboard_options loopback() {
  dashboard_options o;
  o.listen = "127.0.0.1:0";
  o.stop.request_stop();  // were it to serve, it would stop at once
  return o;
}
}  // namespace

TEST_CASE("serve_dashboard: each bad option is named by its field without option_names", "[facade]") {
  auto o = loopback();
  o.client_queue = 1;
  CHECK(message_of(o) == "client_queue: must be at least 2 messages");
  o = loopback();
  o.listen = "8080";
  CHECK_THAT(message_of(o), StartsWith("listen 8080: ") && Contains("HOST:PORT"));
  o = loopback();
  o.events = {"udp://nowhere"};
  CHECK_THAT(message_of(o), StartsWith("events: "));
  o = loopback();
  o.databases = {"/nonexistent/results.db"};
  CHECK_THAT(message_of(o), StartsWith("databases /nonexistent/results.db: "));
}

TEST_CASE("serve_dashboard: option_names rename the fields in messages", "[facade]") {
  auto o = loopback();
  o.option_names = {
      {"listen", "--listen"}, {"events", "--events"}, {"databases", "--db"}, {"client_queue", "--client-queue"}};
  o.client_queue = 1;
  CHECK(message_of(o) == "--client-queue: must be at least 2 messages");
  o.client_queue = 16;
  o.listen = "8080";
  CHECK_THAT(message_of(o), StartsWith("--listen 8080: "));
  o.listen = "127.0.0.1:0";
  o.events = {"udp://nowhere"};
  CHECK_THAT(message_of(o), StartsWith("--events: "));
  o.events.clear();
  o.databases = {"/nonexistent/results.db"};
  CHECK_THAT(message_of(o), StartsWith("--db /nonexistent/results.db: "));
}

TEST_CASE("serve_dashboard: good options serve until stopped", "[facade]") {
  auto o = loopback();
  std::string url;
  o.on_listening = [&](const std::string& u) { url = u; };
  CHECK(message_of(o) == "(served)");
  CHECK_THAT(url, StartsWith("http://127.0.0.1:"));
}
