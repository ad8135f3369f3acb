#pragma once
// The coordinator's side of nodes (node_link.cpp): connecting at the start
// and keeping the nodes connected during the run.
#include <caf/actor.hpp>
#include <caf/fwd.hpp>
#include <memory>
#include <string>
#include <vector>

#include "tune/actors/pipeline.hpp"

namespace tune::actors::detail {

struct node_link {
  remote_node spec;
  caf::actor handle;  ///< the node actor; invalid while lost
  std::vector<caf::actor> measurers;
  std::vector<caf::actor> builders;  ///< the node's compile workers (real kernels)
  std::vector<std::int32_t> device_ids;
  std::vector<std::string> device_names;
  std::string task;  ///< the run's node_task as JSON, with this node's devices (indices)
};

/// What the keeper starts with, filled in after it was spawned (the nodes'
/// sessions are owned by the keeper, so it exists before they are opened).
struct keeper_setup {
  std::vector<node_link> links;
  compile_pool_actor pool;
  std::string payload;
  bool tls = false;
};

/// Connects to every node, checks its version and opens the run's session
/// for `owner`. Throws std::invalid_argument naming the node and the problem.
std::vector<node_link> connect_nodes(caf::actor_system& system, const std::vector<remote_node>& nodes, bool tls,
                                     const node_task& task, const std::string& payload, std::int32_t first_id,
                                     const caf::actor& owner);

/// Monitors the nodes and reconnects a lost one with backoff (0.5 s doubling
/// to 8 s); the measurers of a node that is back join the pool. (start)
/// reads `setup`; (close) sends close to every connected node and replies
/// true.
caf::actor spawn_node_keeper(caf::actor_system& system, std::shared_ptr<keeper_setup> setup);

}  // namespace tune::actors::detail
