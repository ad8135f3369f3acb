// tune::serve_node: a node's topology and listen address checked, then the
// actor layer serves (actors/nodes.hpp).
#include <stdexcept>

#include "report_detail.hpp"
#include "tune/actors/nodes.hpp"
#include "tune/storage/topology.hpp"
#include "tune/tune.hpp"

namespace tune {

void serve_node(const node_options& o) {
  const std::string listen_option = detail::option_name(o.option_names, "listen");
  const std::string listen = listen_option + " " + o.listen;
  auto colon = o.listen.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == o.listen.size())
    throw input_error(listen + ": expected HOST:PORT, e.g. 127.0.0.1:7101");
  actors::node_server_options so;
  so.listen_option = listen_option;
  so.host = o.listen.substr(0, colon);
  std::string port_text = o.listen.substr(colon + 1);
  unsigned long port = 0;
  try {
    std::size_t used = 0;
    port = std::stoul(port_text, &used);
    if (used != port_text.size()) throw std::invalid_argument("trailing text");
  } catch (const std::exception&) {
    throw input_error(listen + ": the port '" + port_text + "' is not a number from 0 to 65535");
  }
  if (port > 65535) throw input_error(listen + ": the port must be from 0 to 65535");
  so.port = static_cast<std::uint16_t>(port);
  if (o.topology_file.empty())
    throw input_error(detail::option_name(o.option_names, "topology_file") +
                      ": a node needs its topology file (its devices)");
  storage::topology topo;
  try {
    topo = storage::load_topology(o.topology_file);
  } catch (const std::invalid_argument& e) {
    throw input_error(e.what());
  }
  if (!topo.nodes.empty())
    throw input_error(topo.origin + ": nodes: a node does not use other nodes; remove 'nodes:' from its topology");
  if (topo.devices.empty()) throw input_error(topo.origin + ": devices: a node needs at least one device");
  so.backend = topo.devices.front().backend;
  for (std::size_t d = 0; d < topo.devices.size(); ++d) {
    if (topo.devices[d].backend != so.backend)
      throw input_error(topo.origin + ": devices[" + std::to_string(d) + "].backend is '" + topo.devices[d].backend +
                        "' but devices[0].backend is '" + so.backend + "'; a node offers one backend");
    so.devices.push_back({topo.devices[d].id, topo.devices[d].name});
  }
  so.timeouts = topo.timeouts;
  so.compile_workers = topo.compile_workers_given ? static_cast<std::uint32_t>(topo.compile_workers) : 0;
  static_cast<storage::network_spec&>(so.network) = topo.network;
  so.network.certificate = topo.tls.certificate;
  so.network.key = topo.tls.key;
  so.network.cafile = topo.tls.cafile;
  so.on_listening = o.on_listening;
  so.stop_requested = [stop = o.stop] { return stop.stop_requested(); };
  try {
    actors::serve_node(so);
  } catch (const std::invalid_argument& e) {
    throw input_error(std::string(topo.origin) + ": " + e.what());
  }
}

}  // namespace tune
