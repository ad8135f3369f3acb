#pragma once
// Nodes: measurers on other machines, reached over CAF's network layer
// (caf::io::middleman, optionally through caf::openssl). See docs/nodes.md.
//
// A node publishes one untyped "node" actor. Its messages use only CAF's
// built-in types so that a coordinator of another version can still be told
// why it is refused:
// - (hello, version, message set) -> JSON text: what the node offers
//   ({"ok", "version", "types", "backend", "devices", "busy", "error"}).
// - (open, task JSON, payload bytes, owner) -> (JSON text, measurers,
//   builders): opens the run's session for `owner`, a coordinator's actor the
//   node monitors (one session at a time; another coordinator gets "busy"):
//   builds the backend from the task and spawns one measurer per device (the
//   task's "devices": indices into the node's devices; all when absent) and,
//   for real kernels, the compile workers the node offers. The session ends
//   when the owner is gone (its connection lost included) or closes it.
// - (close): ends the session of the sender's coordinator.
// The measurers are the pipeline's own measurer_actor and the builders its
// build_worker_actor (interfaces.hpp). For real kernels a node's measurer
// builds what it is sent unbuilt (one build thread per device, so the next
// candidates build while one runs) and writes artifacts that arrive as bytes
// into its cache; a node's compile worker answers with the artifact's bytes.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tune/actors/interfaces.hpp"

namespace tune::actors {

/// The engine version a node announces and a coordinator checks.
std::string engine_version();
/// Names the set of message types that cross the network and their layout;
/// both sides must agree exactly.
std::string message_set_signature();

struct network_options {
  double heartbeat_s = 0.5;           ///< a heartbeat on every connection this often
  double connection_timeout_s = 2.0;  ///< a connection silent this long is closed
  double lost_timeout_s = 60.0;       ///< no measurer alive this long: the run ends resumable
  /// TLS (caf::openssl): all three, or none for plain TCP.
  std::string certificate;
  std::string key;
  std::string cafile;
  bool tls() const { return !certificate.empty(); }
};

/// Loads the middleman (and the OpenSSL module for TLS) and sets the
/// heartbeat and connection timeout. Call before creating the actor system.
void configure_network(caf::actor_system_config& config, const network_options& network);

struct node_device {
  int id = 0;
  std::string name;
};

/// Writes the bytes of an artifact built on another machine
/// (compiled.artifact_bytes, compiled.build.artifact its plain file name) into
/// this machine's compile cache (`received/` under kernel_cache_dir) and points
/// compiled.build.artifact at it; the bytes are dropped. Returns the problem
/// (a name that is not a plain file name, a failed write), empty when done.
std::string materialize_artifact(compiled_candidate& compiled);

/// Reads a built artifact's file into compiled.artifact_bytes and keeps only
/// its file name in compiled.build.artifact, so it can travel. Returns the
/// problem, empty when done (nothing to do for an empty artifact).
std::string pack_artifact(compiled_candidate& compiled);

struct node_server_options {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;  ///< 0: any free port (reported through on_listening)
  /// What the person starting the node called host:port: the name its
  /// messages give it.
  std::string listen_option = "--listen";
  std::string backend;  ///< of every device: replay, cpu, cuda, hip
  std::vector<node_device> devices;
  double run_timeout_s = 10.0;
  double compile_timeout_s = 60.0;
  /// Compile workers offered to the coordinator's compile pool (real kernels;
  /// their artifacts travel as bytes). 0: none, the node builds only what it
  /// measures.
  std::uint32_t compile_workers = 0;
  network_options network;
  /// Called once the node listens, with its port.
  std::function<void(std::uint16_t)> on_listening;
  /// Polled ten times a second; true ends serve_node.
  std::function<bool()> stop_requested;
  std::size_t scheduler_threads = 2;
};

/// Runs a node until stop_requested(). Throws std::invalid_argument for a
/// listen address or options that cannot work (off loopback without TLS,
/// port taken) and std::runtime_error when the network layer fails.
void serve_node(const node_server_options& options);

/// Builds a node's backend from the task a coordinator sent:
/// {"kind": "replay", "dataset_name", "kinds", "seed", "time_scale"} with the
/// dataset's bytes as payload, or {"kind": "task", "task", "threads"} for a
/// built-in kernel on the node's own backend (cpu, cuda, hip; its reference
/// data is computed on the node). Throws std::invalid_argument for a task
/// the node cannot build.
backend_ptr make_node_backend(const std::string& task_json, const std::string& payload,
                              const std::string& node_backend);

}  // namespace tune::actors
