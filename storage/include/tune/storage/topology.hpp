#pragma once
// The topology file: how many compile workers, which devices measure, and the
// timeouts. YAML:
//
//   compile_workers: 8        # default: number of cores
//   background_builds: true   # CPU devices: build on the measuring cores too,
//                             # at idle priority, while they wait (default true)
//   compile_timeout_s: 60
//   run_timeout_s: 10
//   measurement:              # how each configuration is timed (default below):
//     min_time_s: 0.05        # timed runs until this much kernel time …
//     min_repeats: 3          # … and at least this many runs,
//     max_repeats: 1000       # at most this many; the time is their median
//     flush_cache: false      # CPU: evict the caches before each timed run
//   devices:
//     - backend: replay       # cpu | cuda | hip | replay
//       id: 0
//       name: sim0            # default "<backend><id>"
//       prefetch: 2           # compiled candidates kept ready (default 2)
//       count: 4              # expands to ids id, id+1, …
//   hosts: []                 # remote workers: not supported yet, must be empty
//   nodes:                    # remote nodes (`tune-engine node`), see docs/nodes.md
//     - host: 127.0.0.1
//       port: 7101
//       devices: 2            # use the node's first 2 devices (default: all),
//                             # or which: [0, 2] (indices) or [gpu1] (names)
//       prefetch: 2           # per remote device (default 2)
//       weight: 2             # its devices' share when several have room (default 1)
//   network:                  # failure detection over the network
//     heartbeat_s: 0.5        # a heartbeat on every connection this often
//     connection_timeout_s: 2 # a connection silent this long is dead
//     lost_timeout_s: 60      # with no measurer left, wait this long, then end resumable
//   tls:                      # certificates (a node off loopback needs them)
//     certificate: node.pem
//     key: node.key
//     cafile: ca.pem
//
// `devices` may be empty when `nodes` lists at least one node.
//
// Errors name the file, the field path (e.g. `devices[1].backend`) and the fix.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tune/engine/limits.hpp"

namespace tune::storage {

struct device_spec {
  std::string backend;  ///< "cpu", "cuda", "hip", "replay"
  int id = 0;
  std::string name;  ///< unique within the topology
  std::size_t prefetch = 2;
};

/// A remote node of a coordinator's topology.
struct node_spec {
  std::string host;
  std::uint16_t port = 0;
  std::size_t devices = 0;  ///< first N devices of the node; 0: all (or the list below)
  /// Which devices, when given as a list: indices into the node's devices, and names.
  std::vector<std::size_t> device_indices;
  std::vector<std::string> device_names;
  std::size_t prefetch = 2;
  double weight = 1.0;  ///< > 0; its devices' share when several measurers have room
};

struct network_spec {
  double heartbeat_s = 0.5;
  double connection_timeout_s = 2.0;
  double lost_timeout_s = 60.0;
};

/// Paths as written in the file, resolved against the file's folder.
struct tls_spec {
  std::string certificate;
  std::string key;
  std::string cafile;
  bool enabled() const { return !certificate.empty(); }
};

struct topology {
  std::size_t compile_workers = 1;
  /// compile_workers was written in the file (a node offers that many to
  /// its coordinators' compile pools; without it, none).
  bool compile_workers_given = false;
  /// One more compile worker per measuring core of a local CPU device,
  /// pinned to that core at the lowest CPU priority (SCHED_IDLE): it builds
  /// only while the device has nothing to measure and the other workers are
  /// all busy, and the device's runs take the core back at once
  /// (actors::pipeline_options::background_builders).
  bool background_builds = true;
  tune::timeouts timeouts;  ///< compile_timeout_s and run_timeout_s in the file
  /// `measurement:` in the file: how each configuration is timed; empty:
  /// the defaults (or session_options::measurement).
  std::optional<measurement_protocol> measurement;
  std::vector<device_spec> devices;  ///< `count` already expanded; empty only with nodes
  std::vector<node_spec> nodes;
  network_spec network;
  tls_spec tls;
  std::string origin;  ///< file it came from, for messages

  /// {"compile_workers", "background_builds", "compile_timeout_s", "run_timeout_s",
  ///  "devices": [{"backend","id","name","prefetch"}…]} for run_started.
  nlohmann::json summary() const;
  /// Compile workers plus each device's prefetch plus one running per
  /// device: how many candidates the pipeline can hold at once.
  std::size_t capacity() const;
};

/// Backend names a topology may use: cpu, cuda, hip, replay.
const std::vector<std::string>& topology_backends();

/// Number of cores (at least 1): the default compile_workers.
std::size_t default_compile_workers();

/// Parses YAML text; `origin` names the source in messages. Throws
/// std::invalid_argument naming origin, field path and fix.
topology parse_topology(std::string_view yaml_text, const std::string& origin = "<topology>");
/// Reads and parses a file. Throws std::invalid_argument when the file
/// cannot be read or is invalid.
topology load_topology(const std::filesystem::path& file);
/// One device of `backend` (id 0) with the default settings, for runs
/// without a topology file. Throws std::invalid_argument for an unknown backend.
topology default_topology(const std::string& backend);

}  // namespace tune::storage
