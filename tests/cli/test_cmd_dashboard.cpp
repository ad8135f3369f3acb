// tune-engine dashboard and tune --dashboard as a user runs them: the address
// printed, bad options refused with exit code 2, SIGINT ends the server.
#include <signal.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "actors/scratch_dir.hpp"
#include "cli/cli_process.hpp"

using namespace std::chrono_literals;
using Catch::Matchers::Contains;
using tune::test::cli_process;
using tune::test::scratch_dir;

TEST_CASE("dashboard: serves until SIGINT and prints its address", "[cli]") {
  cli_process dashboard({"dashboard", "--listen", "127.0.0.1:0", "--events", "tcp://127.0.0.1:5599"});
  REQUIRE(dashboard.wait_for_err("dashboard: serving http://127.0.0.1:"));
  dashboard.signal(SIGINT);
  CHECK(dashboard.wait(30s) == 0);
  CHECK_THAT(dashboard.err(), !Contains("warning"));
}

TEST_CASE("dashboard: bad options exit 2 naming the option and off loopback it warns", "[cli]") {
  cli_process bad_listen({"dashboard", "--listen", "8080"});
  CHECK(bad_listen.wait(30s) == 2);
  CHECK_THAT(bad_listen.err(), Contains("--listen 8080") && Contains("HOST:PORT") && !Contains("--dashboard"));
  cli_process bad_events({"dashboard", "--listen", "127.0.0.1:0", "--events", "udp://x"});
  CHECK(bad_events.wait(30s) == 2);
  CHECK_THAT(bad_events.err(), Contains("--events"));

  cli_process open({"dashboard", "--listen", "0.0.0.0:0"});
  REQUIRE(open.wait_for_err("dashboard: serving"));
  CHECK_THAT(open.err(), Contains("no authentication"));
  open.signal(SIGINT);
  CHECK(open.wait(30s) == 0);
}

TEST_CASE("tune: --dashboard serves the run's dashboard", "[cli]") {
  scratch_dir dir("cli-dashboard");
  cli_process tune({"tune", "--dataset", std::string(TUNE_DATA_DIR) + "/replay/conv_a100_slice.json.gz", "--budget",
                    "20", "--seed", "1", "--strategy", "random", "--time-scale", "0.01", "--db",
                    (dir / "runs.db").string(), "--quiet", "--dashboard", "127.0.0.1:0"});
  CHECK(tune.wait(120s) == 0);
  CHECK_THAT(tune.err(), Contains("dashboard: serving http://127.0.0.1:"));
}

TEST_CASE("tune: a bad --dashboard address exits 2 naming --dashboard", "[cli]") {
  const std::string dataset = std::string(TUNE_DATA_DIR) + "/replay/conv_a100_slice.json.gz";
  auto tune_with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"tune", "--dataset", dataset, "--budget", "20", "--seed", "1", "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  // The messages name tune's own options, not the library's fields or the
  // dashboard command's --listen and --token.
  auto names_only_tune_options = [](const std::string& err) {
    for (const char* other : {"--listen", "dashboard_listen", "--token "})
      if (err.find(other) != std::string::npos) return false;
    return true;
  };
  cli_process bad(tune_with({"--dashboard", "nowhere"}));
  CHECK(bad.wait(60s) == 2);
  CHECK_THAT(bad.err(), Contains("--dashboard nowhere: expected HOST:PORT"));
  CHECK(names_only_tune_options(bad.err()));
  cli_process bad_port(tune_with({"--dashboard", "127.0.0.1:99999"}));
  CHECK(bad_port.wait(60s) == 2);
  CHECK_THAT(bad_port.err(), Contains("--dashboard 127.0.0.1:99999: the port"));
  CHECK(names_only_tune_options(bad_port.err()));
  cli_process token_alone(tune_with({"--dashboard-token", "t"}));
  CHECK(token_alone.wait(60s) == 2);
  CHECK_THAT(token_alone.err(), Contains("--dashboard-token: applies with --dashboard only"));

  // A port in use: the one a dashboard command is serving on.
  cli_process serving({"dashboard", "--listen", "127.0.0.1:0", "--events", "tcp://127.0.0.1:5599"});
  REQUIRE(serving.wait_for_err("dashboard: serving http://127.0.0.1:"));
  auto url = serving.err().substr(serving.err().find("http://127.0.0.1:"));
  auto address = url.substr(7, url.find('/', 7) - 7);
  cli_process taken(tune_with({"--dashboard", address}));
  CHECK(taken.wait(60s) == 2);
  CHECK_THAT(taken.err(), Contains("--dashboard " + address + ": cannot listen there"));
  CHECK(names_only_tune_options(taken.err()));
  serving.signal(SIGINT);
  CHECK(serving.wait(30s) == 0);
}
