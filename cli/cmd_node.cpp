// tune-engine node: serves coordinators' runs with this machine's devices
// (tune::serve_node); SIGINT and SIGTERM end it.
#include <cstdio>
#include <memory>
#include <string>

#include "commands.hpp"

namespace tune::cli {

void add_node_command(CLI::App& app, command_list& commands) {
  auto options = std::make_shared<node_options>();
  auto* sub = app.add_subcommand(
      "node",
      "Serve runs of a coordinator with this machine's devices (one measurer per device), one run at a time.\n"
      "The coordinator's topology lists the node under 'nodes:'. See docs/nodes.md.");
  field_options f(sub);
  f.option("listen", "--listen", options->listen, "HOST:PORT (default 127.0.0.1:7101; off loopback only with TLS)");
  f.option("topology_file", "--topology", options->topology_file,
           "node topology YAML: devices, run_timeout_s, network, tls")
      ->required()
      ->check(CLI::ExistingFile);
  options->option_names = f.names();
  declare_option_names("node", f.names());
  commands.emplace_back(sub, [options] {
    options->on_listening = [listen = options->listen](std::uint16_t port) {
      std::fprintf(stderr, "node: listening on %s (port %u), tune-engine %s\n", listen.c_str(),
                   static_cast<unsigned>(port), std::string(version()).c_str());
    };
    with_stop_signals(options->stop, [&] { serve_node(*options); });
    return exit_ok;
  });
}

}  // namespace tune::cli
