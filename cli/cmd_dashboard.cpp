// tune-engine dashboard: serves the live web dashboard (tune::serve_dashboard);
// SIGINT and SIGTERM end it.
#include <cstdio>
#include <memory>
#include <string>

#include "commands.hpp"
#include "tune/storage/event_stream.hpp"

namespace tune::cli {

void add_dashboard_command(CLI::App& app, command_list& commands) {
  auto options = std::make_shared<dashboard_options>();
  auto* sub = app.add_subcommand(
      "dashboard",
      "Serve a web page showing runs live (from their --publish event streams) and finished runs (from\n"
      "results databases): open the address it prints in a browser. See docs/dashboard.md.");
  field_options f(sub);
  f.option("listen", "--listen", options->listen, "HOST:PORT to serve on (127.0.0.1 unless told otherwise)")
      ->capture_default_str();
  f.option("events", "--events", options->events,
           std::string("ZeroMQ endpoints of runs' event streams (repeatable; default ") +
               storage::default_event_endpoint + ")");
  f.option("databases", "--db", options->databases,
           "results databases to list runs from and catch up from (repeatable)")
      ->check(existing_store());
  f.option("token", "--token", options->token, "required on the page, /api and /ws (?token=T); set it off loopback");
  f.option("client_queue", "--client-queue", options->client_queue,
           "messages one browser may have queued before its events are dropped")
      ->capture_default_str()
      ->check(CLI::Range(2, 1 << 20));
  options->option_names = f.names();
  declare_option_names("dashboard", f.names());
  commands.emplace_back(sub, [options] {
    if (options->events.empty()) options->events.push_back(storage::default_event_endpoint);
    options->on_warning = [](const std::string& warning) {
      std::fprintf(stderr, "dashboard: warning: %s\n", warning.c_str());
    };
    options->on_listening = [](const std::string& url) {
      std::fprintf(stderr, "dashboard: serving %s (Ctrl-C to stop)\n", url.c_str());
    };
    with_stop_signals(options->stop, [&] { serve_dashboard(*options); });
    return exit_ok;
  });
}

}  // namespace tune::cli
