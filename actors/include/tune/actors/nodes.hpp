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
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tune/actors/interfaces.hpp"
#include "tune/storage/topology.hpp"

namespace tune::actors {

/// The engine version a node announces and a coordinator checks.
std::string engine_version();
/// Names the set of message types that cross the network and their layout;
/// both sides must agree exactly.
std::string message_set_signature();

/// The topology's network section (heartbeat_s: a heartbeat on every
/// connection this often; connection_timeout_s: a connection silent this long
/// is closed; lost_timeout_s: no measurer alive this long ends the run
/// resumable) and the TLS files.
struct network_options : storage::network_spec {
  /// TLS (caf::openssl): all three, or none for plain TCP.
  std::string certificate;
  std::string key;
  std::string cafile;
  bool tls() const { return !certificate.empty(); }
};

/// Loads the middleman (and the OpenSSL module for TLS) and sets the
/// heartbeat and connection timeout. Call before creating the actor system.
void configure_network(caf::actor_system_config& config, const network_options& network);

/// What a coordinator asks a node to build and measure, sent once per run
/// (as JSON text: to_json/from_json) with a payload of bytes: a replayed
/// dataset's file.
struct node_task {
  enum class kind_t {
    task,    ///< a built-in kernel, built and measured on the node's own backend
    replay,  ///< a measured dataset (its file is the payload) on replay devices
    /// A model's tasks through one pipeline (tune/engine/multi_task.hpp):
    /// `parts` are the tasks, in order, all of one kind (task or replay);
    /// the payload is their payloads one after the other, `part_bytes` long
    /// each. The node's measurers keep a best per task. The fields below that
    /// apply to the whole run (seed, time_scale, timeouts, early_stop,
    /// measurement, devices) are this task's, not its parts'.
    multi,
  };
  kind_t kind = kind_t::task;
  std::vector<node_task> parts;              ///< multi: the tasks
  std::vector<std::uint64_t> part_bytes;     ///< multi: each part's share of the payload, in order
  std::string task;                          ///< task: e.g. "matmul:64x64x64"
  int threads = 1;                           ///< task: CPU threads of one kernel (1 to 1024)
  std::string dataset_name;                  ///< replay: the dataset file's plain name
  std::map<std::string, std::string> kinds;  ///< replay: parameter kind overrides
  /// replay: wall seconds per recorded second (0: no waiting at all)
  double time_scale = 1.0;
  std::uint64_t seed = 0;  ///< the run's seed
  /// Of a build and of a run; empty: the node's own (node_server_options).
  std::optional<tune::timeouts> timeouts;
  /// How the node's measurers cut runs short against the run's best time.
  early_stop_policy early_stop;
  /// task: how each configuration is timed; empty: the defaults.
  std::optional<tune::measurement_protocol> measurement;
  /// Indices into the node's devices (one measurer each); empty: all of them.
  std::vector<std::uint32_t> devices;

  /// Whether the node builds and measures real kernels (a task, or a multi
  /// of tasks) rather than replaying datasets.
  bool builds_kernels() const {
    return kind == kind_t::multi ? parts.front().kind == kind_t::task : kind == kind_t::task;
  }

  std::string to_json() const;
  /// Throws std::invalid_argument naming the field that is missing or wrong.
  static node_task from_json(const std::string& text);
};

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
  std::string listen_option = "listen";
  std::string backend;  ///< of every device: replay, cpu, cuda, hip
  std::vector<node_device> devices;
  /// Used for what a coordinator's node_task leaves at its default.
  tune::timeouts timeouts;
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

/// Builds a node's backend from the task a coordinator sent: a replayed
/// dataset (its bytes are the payload), a built-in kernel on the node's own
/// backend (cpu, cuda, hip; its reference data is computed on the node), or a
/// multi_task_backend of several such (kind multi: the payload split by
/// part_bytes). Throws std::invalid_argument for a task the node cannot build.
backend_ptr make_node_backend(const node_task& task, const std::string& payload, const std::string& node_backend);

}  // namespace tune::actors
