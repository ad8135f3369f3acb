// tune::serve_node: a node's topology and listen address checked, then the
// actor layer serves (actors/nodes.hpp).
#include <stdexcept>

#include "report_detail.hpp"
#include "tune/actors/nodes.hpp"
#include "tune/storage/loopback.hpp"
#include "tune/storage/topology.hpp"
#include "tune/tune.hpp"

namespace tune {

void serve_node(const node_options& o) {
  const std::string listen_option = detail::option_name(o.option_names, "listen");
  actors::node_server_options so;
  so.listen_option = listen_option;
  try {
    auto address = storage::parse_host_port(o.listen, listen_option, "127.0.0.1:7101");
    so.host = address.host;
    so.port = address.port;
  } catch (const std::invalid_argument& e) {
    throw input_error(e.what());
  }
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
