#pragma once
// The topology file: how many compile workers, which devices measure, and the
// timeouts. YAML:
//
//   compile_workers: 8        # default: number of cores
//   compile_timeout_s: 60
//   run_timeout_s: 10
//   devices:
//     - backend: replay       # cpu | cuda | hip | replay
//       id: 0
//       name: sim0            # default "<backend><id>"
//       prefetch: 2           # compiled candidates kept ready (default 2)
//       count: 4              # expands to ids id, id+1, …
//   hosts: []                 # remote workers: not supported yet, must be empty
//
// Errors name the file, the field path (e.g. `devices[1].backend`) and the fix.

#include <cstddef>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace tune::storage {

struct device_spec {
  std::string backend;  ///< "cpu", "cuda", "hip", "replay"
  int id = 0;
  std::string name;  ///< unique within the topology
  std::size_t prefetch = 2;
};

struct topology {
  std::size_t compile_workers = 1;
  double compile_timeout_s = 60.0;
  double run_timeout_s = 10.0;
  std::vector<device_spec> devices;  ///< `count` already expanded; never empty
  std::string origin;                ///< file it came from, for messages

  /// {"compile_workers", "compile_timeout_s", "run_timeout_s",
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
