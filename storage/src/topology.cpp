#include "tune/storage/topology.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

#include "tune/engine/text.hpp"

namespace tune::storage {
namespace {

// Limits that catch typos (a topology of 10^6 devices is not a plan).
constexpr long long max_compile_workers = 4096;
constexpr long long max_device_count = 1024;
constexpr long long max_prefetch = 1024;
constexpr long long max_device_id = 1 << 20;

/// Builds messages that name the source, the field path and the line.
class reader {
 public:
  explicit reader(std::string origin) : origin_(std::move(origin)) {}

  [[noreturn]] void fail(const std::string& path, const YAML::Node& node, const std::string& problem) const {
    std::ostringstream out;
    out << origin_;
    if (node.IsDefined() && node.Mark().line >= 0) out << ":" << node.Mark().line + 1;
    out << ": " << (path.empty() ? "top level" : path) << ": " << problem;
    throw std::invalid_argument(out.str());
  }

  void check_keys(const std::string& path, const YAML::Node& map, const std::vector<std::string>& known) const {
    if (!map.IsMap()) fail(path, map, "expected a mapping of key: value lines");
    std::vector<std::string> seen;
    for (const auto& entry : map) {
      std::string key = entry.first.Scalar();
      // yaml-cpp keeps both entries of a repeated key and reads the first: say so instead.
      if (std::find(seen.begin(), seen.end(), key) != seen.end())
        fail(path.empty() ? key : path + "." + key, entry.first, "key '" + key + "' is given twice; keep one");
      seen.push_back(key);
      if (std::find(known.begin(), known.end(), key) == known.end())
        fail(path.empty() ? key : path + "." + key, entry.first,
             "unknown key '" + key + "'; known keys are " + join(known));
    }
  }

  long long integer(const std::string& path, const YAML::Node& node, long long min, long long max) const {
    if (!node.IsScalar()) fail(path, node, "expected an integer, got a " + kind(node));
    long long value = 0;
    try {
      value = node.as<long long>();
    } catch (const YAML::BadConversion&) {
      fail(path, node, "expected an integer, got '" + node.Scalar() + "'");
    }
    if (value < min || value > max)
      fail(path, node,
           std::to_string(value) + " is out of range; use an integer from " + std::to_string(min) + " to " +
               std::to_string(max));
    return value;
  }

  bool flag(const std::string& path, const YAML::Node& node) const {
    if (!node.IsScalar() || (node.Scalar() != "true" && node.Scalar() != "false"))
      fail(path, node, "expected true or false");
    return node.Scalar() == "true";
  }

  double seconds(const std::string& path, const YAML::Node& node) const {
    if (!node.IsScalar()) fail(path, node, "expected a number of seconds, got a " + kind(node));
    double value = 0;
    try {
      value = node.as<double>();
    } catch (const YAML::BadConversion&) {
      fail(path, node, "expected a number of seconds, got '" + node.Scalar() + "'");
    }
    if (!std::isfinite(value) || value <= 0)
      fail(path, node, "'" + node.Scalar() + "' is not a positive number of seconds; use e.g. 10");
    return value;
  }

  std::string text(const std::string& path, const YAML::Node& node) const {
    if (!node.IsScalar() || node.Scalar().empty()) fail(path, node, "expected a non-empty string");
    // Names and hosts go into the run_started event and the database as
    // JSON, whose writer throws on bytes that are not UTF-8: refuse them here.
    try {
      (void)nlohmann::json(node.Scalar()).dump();
    } catch (const nlohmann::json::type_error&) {
      fail(path, node, "is not valid UTF-8 text; write it in UTF-8");
    }
    return node.Scalar();
  }

  static std::string kind(const YAML::Node& node) {
    switch (node.Type()) {
      case YAML::NodeType::Map:
        return "mapping";
      case YAML::NodeType::Sequence:
        return "list";
      case YAML::NodeType::Null:
        return "null value";
      default:
        return "scalar";
    }
  }

 private:
  std::string origin_;
};

std::vector<device_spec> read_device(const reader& in, const std::string& path, const YAML::Node& node) {
  in.check_keys(path, node, {"backend", "id", "name", "prefetch", "count"});
  if (!node["backend"]) in.fail(path, node, "missing 'backend'; add e.g. 'backend: replay'");
  std::string backend = in.text(path + ".backend", node["backend"]);
  const auto& known = topology_backends();
  if (std::find(known.begin(), known.end(), backend) == known.end())
    in.fail(path + ".backend", node["backend"], "unknown backend '" + backend + "'; use one of " + join(known));
  int first_id = node["id"] ? static_cast<int>(in.integer(path + ".id", node["id"], 0, max_device_id)) : 0;
  std::size_t prefetch =
      node["prefetch"] ? static_cast<std::size_t>(in.integer(path + ".prefetch", node["prefetch"], 0, max_prefetch))
                       : 2;
  long long count = node["count"] ? in.integer(path + ".count", node["count"], 1, max_device_count) : 1;
  std::string name = node["name"] ? in.text(path + ".name", node["name"]) : std::string();

  std::vector<device_spec> out;
  for (long long k = 0; k < count; ++k) {
    device_spec device;
    device.backend = backend;
    device.id = first_id + static_cast<int>(k);
    device.prefetch = prefetch;
    // With count > 1 a given name is a prefix: "gpu" → gpu0, gpu1, …
    if (name.empty())
      device.name = backend + std::to_string(device.id);
    else
      device.name = count > 1 ? name + std::to_string(device.id) : name;
    out.push_back(std::move(device));
  }
  return out;
}

/// nodes[].devices: a count (the node's first N), or a list of indices into
/// the node's devices and device names.
void read_node_devices(const reader& in, const std::string& path, const YAML::Node& devices, node_spec& node) {
  if (devices.IsScalar()) {
    node.devices = static_cast<std::size_t>(in.integer(path, devices, 1, max_device_count));
    return;
  }
  if (!devices.IsSequence() || devices.size() == 0)
    in.fail(path, devices,
            "expected a count of devices (e.g. 2) or a non-empty list of the node's device indices or names (e.g. [0, "
            "2] or [gpu1])");
  for (std::size_t j = 0; j < devices.size(); ++j) {
    std::string item = path + "[" + std::to_string(j) + "]";
    const auto& d = devices[j];
    if (!d.IsScalar() || d.Scalar().empty()) in.fail(item, d, "expected a device index (0, 1, …) or a device name");
    const auto& text = d.Scalar();
    if (std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); }) || text.front() == '-') {
      auto index = static_cast<std::size_t>(in.integer(item, d, 0, max_device_count - 1));
      if (std::find(node.device_indices.begin(), node.device_indices.end(), index) != node.device_indices.end())
        in.fail(item, d, "device " + text + " is listed twice; list each device once");
      node.device_indices.push_back(index);
    } else {
      auto name = in.text(item, d);  // goes into the run's JSON: UTF-8 only
      if (std::find(node.device_names.begin(), node.device_names.end(), name) != node.device_names.end())
        in.fail(item, d, "device '" + name + "' is listed twice; list each device once");
      node.device_names.push_back(std::move(name));
    }
  }
}

std::vector<node_spec> read_nodes(const reader& in, const YAML::Node& nodes) {
  std::vector<node_spec> out;
  if (!nodes || nodes.IsNull()) return out;
  if (!nodes.IsSequence()) in.fail("nodes", nodes, "expected a list of nodes, e.g. '- {host: 127.0.0.1, port: 7101}'");
  std::map<std::pair<std::string, int>, std::string> seen;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    std::string path = "nodes[" + std::to_string(i) + "]";
    const auto& n = nodes[i];
    in.check_keys(path, n, {"host", "port", "devices", "prefetch", "weight"});
    if (!n["host"]) in.fail(path, n, "missing 'host'; add e.g. 'host: 127.0.0.1'");
    if (!n["port"]) in.fail(path, n, "missing 'port'; add the port the node listens on, e.g. 'port: 7101'");
    node_spec node;
    node.host = in.text(path + ".host", n["host"]);
    node.port = static_cast<std::uint16_t>(in.integer(path + ".port", n["port"], 1, 65535));
    if (n["devices"]) read_node_devices(in, path + ".devices", n["devices"], node);
    if (n["weight"]) {
      const auto& w = n["weight"];
      double value = 0;
      bool number = w.IsScalar();
      if (number) {
        try {
          value = w.as<double>();
        } catch (const YAML::BadConversion&) {
          number = false;
        }
      }
      if (!number || !std::isfinite(value) || value <= 0 || value > 1e6)
        in.fail(path + ".weight", w,
                "'" + (w.IsScalar() ? w.Scalar() : reader::kind(w)) +
                    "' is not a positive number up to 1e6; use e.g. 'weight: 2' for twice the share of 'weight: 1'");
      node.weight = value;
    }
    if (n["prefetch"])
      node.prefetch = static_cast<std::size_t>(in.integer(path + ".prefetch", n["prefetch"], 0, max_prefetch));
    auto [it, fresh] = seen.emplace(std::make_pair(node.host, static_cast<int>(node.port)), path);
    if (!fresh)
      in.fail(path, n,
              node.host + ":" + std::to_string(node.port) + " is listed twice (also in " + it->second +
                  "); list each node once");
    out.push_back(std::move(node));
  }
  return out;
}

/// `measurement: {min_time_s, min_repeats, max_repeats, flush_cache, statistic}`: how each
/// configuration is timed (measurement_protocol); keys left out keep their
/// defaults.
std::optional<measurement_protocol> read_measurement(const reader& in, const YAML::Node& node) {
  if (!node) return std::nullopt;
  in.check_keys("measurement", node, {"min_time_s", "min_repeats", "max_repeats", "flush_cache", "statistic"});
  measurement_protocol out;
  if (const auto t = node["min_time_s"]) {
    if (!t.IsScalar()) in.fail("measurement.min_time_s", t, "expected a number of seconds, got a " + reader::kind(t));
    try {
      out.min_time_s = t.as<double>();
    } catch (const YAML::BadConversion&) {
      in.fail("measurement.min_time_s", t, "expected a number of seconds, got '" + t.Scalar() + "'");
    }
    if (!(out.min_time_s >= 0) || out.min_time_s > 3600)
      in.fail("measurement.min_time_s", t, "use a number of seconds from 0 to 3600, e.g. 0.05");
  }
  if (const auto r = node["min_repeats"])
    out.min_repeats = static_cast<int>(in.integer("measurement.min_repeats", r, 1, 1000000));
  if (const auto r = node["max_repeats"])
    out.max_repeats = static_cast<int>(in.integer("measurement.max_repeats", r, 1, 1000000));
  if (const auto f = node["flush_cache"]) out.flush_cache = in.flag("measurement.flush_cache", f);
  if (const auto st = node["statistic"]) {
    auto parsed = st.IsScalar() ? time_statistic_from_string(st.Scalar()) : std::nullopt;
    if (!parsed) in.fail("measurement.statistic", st, "expected median or min");
    out.statistic = *parsed;
  }
  if (out.max_repeats < out.min_repeats)
    in.fail("measurement.max_repeats", node["max_repeats"] ? node["max_repeats"] : node,
            "is below min_repeats (" + std::to_string(out.min_repeats) + "); make it at least that");
  return out;
}

network_spec read_network(const reader& in, const YAML::Node& node) {
  network_spec out;
  if (!node || node.IsNull()) return out;
  in.check_keys("network", node, {"heartbeat_s", "connection_timeout_s", "lost_timeout_s"});
  if (node["heartbeat_s"]) out.heartbeat_s = in.seconds("network.heartbeat_s", node["heartbeat_s"]);
  if (node["connection_timeout_s"])
    out.connection_timeout_s = in.seconds("network.connection_timeout_s", node["connection_timeout_s"]);
  if (node["lost_timeout_s"]) out.lost_timeout_s = in.seconds("network.lost_timeout_s", node["lost_timeout_s"]);
  if (out.connection_timeout_s <= out.heartbeat_s)
    in.fail("network.connection_timeout_s", node,
            "must be longer than network.heartbeat_s (a live peer sends a heartbeat every heartbeat_s); use e.g. 4 "
            "heartbeats");
  return out;
}

tls_spec read_tls(const reader& in, const YAML::Node& node, const std::string& origin) {
  tls_spec out;
  if (!node || node.IsNull()) return out;
  in.check_keys("tls", node, {"certificate", "key", "cafile"});
  auto base = std::filesystem::path(origin).parent_path();
  for (const char* key : {"certificate", "key", "cafile"})
    if (!node[key])
      in.fail(std::string("tls.") + key, node,
              std::string("missing '") + key +
                  "'; TLS needs certificate, key and cafile (scripts/make_certs.sh makes them)");
  for (const char* key : {"certificate", "key", "cafile"}) {
    auto path = std::filesystem::path(in.text(std::string("tls.") + key, node[key]));
    if (path.is_relative() && !origin.empty() && origin.front() != '<') path = base / path;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
      in.fail(std::string("tls.") + key, node[key], path.string() + " is not a readable file; check the path");
    (std::string(key) == "certificate" ? out.certificate
     : std::string(key) == "key"       ? out.key
                                       : out.cafile) = path.string();
  }
  return out;
}

}  // namespace

const std::vector<std::string>& topology_backends() {
  static const std::vector<std::string> names{"cpu", "cuda", "hip", "replay"};
  return names;
}

std::size_t default_compile_workers() { return std::max(1u, std::thread::hardware_concurrency()); }

nlohmann::json topology::summary() const {
  nlohmann::json devices_json = nlohmann::json::array();
  for (const auto& d : devices)
    devices_json.push_back({{"backend", d.backend}, {"id", d.id}, {"name", d.name}, {"prefetch", d.prefetch}});
  nlohmann::json out = {{"compile_workers", compile_workers},
                        {"background_builds", background_builds},
                        {"compile_timeout_s", timeouts.compile_s},
                        {"run_timeout_s", timeouts.run_s},
                        {"devices", devices_json}};
  if (!nodes.empty()) {
    nlohmann::json nodes_json = nlohmann::json::array();
    for (const auto& n : nodes) {
      nlohmann::json entry = {
          {"host", n.host}, {"port", n.port}, {"devices", n.devices}, {"prefetch", n.prefetch}, {"weight", n.weight}};
      if (!n.device_indices.empty()) entry["device_indices"] = n.device_indices;
      if (!n.device_names.empty()) entry["device_names"] = n.device_names;
      nodes_json.push_back(entry);
    }
    out["nodes"] = nodes_json;
  }
  return out;
}

std::size_t topology::capacity() const {
  std::size_t total = compile_workers;
  for (const auto& d : devices) total += d.prefetch + 1;
  return total;
}

topology parse_topology(std::string_view yaml_text, const std::string& origin) {
  reader in(origin);
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::ParserException& e) {
    throw std::invalid_argument(origin + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML (" + e.msg +
                                "); fix the syntax");
  }
  if (!root.IsDefined() || root.IsNull())
    throw std::invalid_argument(origin + ": the topology is empty; it needs at least a 'devices:' list");
  in.check_keys("", root,
                {"compile_workers", "background_builds", "compile_timeout_s", "run_timeout_s", "measurement", "devices",
                 "hosts", "nodes", "network", "tls"});

  topology result;
  result.origin = origin;
  result.compile_workers =
      root["compile_workers"]
          ? static_cast<std::size_t>(in.integer("compile_workers", root["compile_workers"], 1, max_compile_workers))
          : default_compile_workers();
  result.compile_workers_given = static_cast<bool>(root["compile_workers"]);
  if (root["background_builds"]) result.background_builds = in.flag("background_builds", root["background_builds"]);
  if (root["compile_timeout_s"]) result.timeouts.compile_s = in.seconds("compile_timeout_s", root["compile_timeout_s"]);
  if (root["run_timeout_s"]) result.timeouts.run_s = in.seconds("run_timeout_s", root["run_timeout_s"]);
  result.measurement = read_measurement(in, root["measurement"]);

  if (const auto hosts = root["hosts"]) {
    if (!hosts.IsNull() && !hosts.IsSequence()) in.fail("hosts", hosts, "expected a list (use 'hosts: []')");
    if (hosts.IsSequence() && hosts.size() > 0)
      in.fail("hosts", hosts, "remote workers are not supported yet; remove the entries (use 'hosts: []')");
  }

  result.nodes = read_nodes(in, root["nodes"]);
  result.network = read_network(in, root["network"]);
  result.tls = read_tls(in, root["tls"], origin);

  const auto devices = root["devices"];
  if (!devices && result.nodes.empty())
    in.fail("devices", root, "missing; list at least one device, e.g. 'devices: [{backend: cpu, id: 0}]', or nodes");
  if (devices && !devices.IsSequence())
    in.fail("devices", devices, "expected a list of devices, got a " + reader::kind(devices));
  if (devices && devices.size() == 0 && result.nodes.empty())
    in.fail("devices", devices, "no devices; list at least one device to measure on, or nodes");
  if (!devices) return result;

  std::map<std::pair<std::string, int>, std::string> seen_ids;  // (backend, id) → field path
  std::map<std::string, std::string> seen_names;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    std::string path = "devices[" + std::to_string(i) + "]";
    for (auto& device : read_device(in, path, devices[i])) {
      auto [it, fresh] = seen_ids.emplace(std::make_pair(device.backend, device.id), path);
      if (!fresh)
        in.fail(path, devices[i],
                "device " + device.backend + " " + std::to_string(device.id) + " is listed twice (also in " +
                    it->second + "); give each device of a backend its own id");
      auto [name_it, fresh_name] = seen_names.emplace(device.name, path);
      if (!fresh_name)
        in.fail(path + ".name", devices[i],
                "device name '" + device.name + "' is used twice (also in " + name_it->second +
                    "); give each device its own name");
      result.devices.push_back(std::move(device));
    }
  }
  return result;
}

topology load_topology(const std::filesystem::path& file) {
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec))
    throw std::invalid_argument(file.string() + ": is a directory, not a topology file; give the path of a .yaml file");
  std::ifstream stream(file);
  if (!stream)
    throw std::invalid_argument(file.string() + ": cannot read the topology file; check the path and permissions");
  std::ostringstream text;
  text << stream.rdbuf();
  if (stream.bad()) throw std::invalid_argument(file.string() + ": cannot read the topology file");
  return parse_topology(text.str(), file.string());
}

topology default_topology(const std::string& backend) {
  const auto& known = topology_backends();
  if (std::find(known.begin(), known.end(), backend) == known.end())
    throw std::invalid_argument("unknown backend '" + backend + "'; use one of " + join(known));
  topology result;
  result.origin = "<default " + backend + " topology>";
  result.compile_workers = default_compile_workers();
  result.devices.push_back({backend, 0, backend + "0", 2});
  return result;
}

}  // namespace tune::storage
