#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "actors/scratch_dir.hpp"
#include "tune/storage/topology.hpp"

using tune::storage::load_topology;
using tune::storage::parse_topology;

namespace {

// The message parse_topology gives for `yaml`, or "" when it parses.
std::string error_of(const std::string& yaml) {
  try {
    parse_topology(yaml, "bad.yaml");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

const std::string good_devices = "devices:\n  - backend: replay\n    id: 0\n";

}  // namespace

TEST_CASE("every example topology file parses", "[storage]") {
  const std::filesystem::path examples = std::filesystem::path(TUNE_SOURCE_DIR) / "examples";

  auto cpu = load_topology(examples / "topology-cpu.yaml");
  REQUIRE(cpu.devices.size() == 1);
  CHECK(cpu.devices[0].backend == "cpu");
  CHECK(cpu.devices[0].name == "cpu0");

  auto gpus = load_topology(examples / "topology-4gpu.yaml");
  REQUIRE(gpus.devices.size() == 4);
  for (int i = 0; i < 4; ++i) {
    CHECK(gpus.devices[i].backend == "cuda");
    CHECK(gpus.devices[i].id == i);
    CHECK(gpus.devices[i].name == "gpu" + std::to_string(i));
  }

  auto replay = load_topology(examples / "topology-replay.yaml");
  CHECK(replay.compile_workers == 8);
  REQUIRE(replay.devices.size() == 4);
  CHECK(replay.devices[0].name == "sim0");
  CHECK(replay.devices[3].name == "sim3");
  CHECK(replay.devices[2].prefetch == 2);
  CHECK(replay.timeouts.compile_s == 60.0);
  CHECK(replay.timeouts.run_s == 10.0);
  CHECK(replay.origin == (examples / "topology-replay.yaml").string());
  // 8 workers + 4 devices × (2 prefetched + 1 running)
  CHECK(replay.capacity() == 20);
  auto summary = replay.summary();
  CHECK(summary["compile_workers"] == 8);
  CHECK(summary["devices"].size() == 4);
  CHECK(summary["devices"][1]["name"] == "sim1");
}

TEST_CASE("topology defaults", "[storage]") {
  auto t = parse_topology(good_devices);
  CHECK(t.compile_workers == tune::storage::default_compile_workers());
  CHECK(t.compile_workers >= 1);
  CHECK(t.timeouts.compile_s == 60.0);
  CHECK(t.timeouts.run_s == 10.0);
  REQUIRE(t.devices.size() == 1);
  CHECK(t.devices[0].name == "replay0");
  CHECK(t.devices[0].prefetch == 2);

  auto d = tune::storage::default_topology("cpu");
  REQUIRE(d.devices.size() == 1);
  CHECK(d.devices[0].name == "cpu0");
  CHECK_THROWS_AS(tune::storage::default_topology("tpu"), std::invalid_argument);

  // A mixed topology: two backends may share ids; names default per backend.
  auto mixed = parse_topology(
      "devices:\n  - {backend: cpu, id: 0}\n  - {backend: cuda, id: 0, prefetch: 0}\n  - {backend: cuda, id: 1}\n");
  REQUIRE(mixed.devices.size() == 3);
  CHECK(mixed.devices[1].name == "cuda0");
  CHECK(mixed.devices[1].prefetch == 0);
  CHECK(mixed.devices[2].name == "cuda1");
}

TEST_CASE("each malformed topology gives its specific message", "[storage]") {
  using Catch::Matchers::Contains;

  CHECK_THAT(error_of(""), Contains("bad.yaml") && Contains("empty"));
  CHECK_THAT(error_of("devices: [\n"), Contains("bad.yaml") && Contains("not valid YAML"));
  CHECK_THAT(error_of("- 1\n- 2\n"), Contains("top level") && Contains("mapping"));
  CHECK_THAT(error_of(good_devices + "compile_worker: 3\n"),
             Contains("compile_worker") && Contains("unknown key") && Contains("compile_workers"));
  CHECK_THAT(error_of(good_devices + "compile_workers: -2\n"),
             Contains("compile_workers") && Contains("-2") && Contains("out of range"));
  CHECK_THAT(error_of(good_devices + "compile_workers: 0\n"), Contains("compile_workers") && Contains("out of range"));
  CHECK_THAT(error_of(good_devices + "compile_workers: many\n"),
             Contains("compile_workers") && Contains("expected an integer") && Contains("many"));
  CHECK_THAT(error_of(good_devices + "compile_workers: 2.5\n"), Contains("expected an integer"));
  CHECK_THAT(error_of(good_devices + "compile_workers: [1]\n"), Contains("expected an integer, got a list"));
  CHECK_THAT(error_of(good_devices + "run_timeout_s: -1\n"),
             Contains("run_timeout_s") && Contains("positive number of seconds"));
  CHECK_THAT(error_of(good_devices + "compile_timeout_s: soon\n"), Contains("compile_timeout_s") && Contains("soon"));
  CHECK_THAT(error_of(good_devices + "run_timeout_s: .nan\n"), Contains("run_timeout_s"));
  CHECK_THAT(error_of("compile_workers: 2\n"), Contains("devices") && Contains("missing"));
  CHECK_THAT(error_of("devices: []\n"), Contains("devices") && Contains("no devices"));
  CHECK_THAT(error_of("devices: cpu\n"), Contains("devices") && Contains("expected a list"));
  CHECK_THAT(error_of("devices:\n  - backend: replay\n  - backend: gpu\n"),
             Contains("devices[1].backend") && Contains("unknown backend 'gpu'") && Contains("cpu, cuda, hip, replay"));
  CHECK_THAT(error_of("devices:\n  - id: 0\n"), Contains("devices[0]") && Contains("missing 'backend'"));
  CHECK_THAT(error_of("devices:\n  - backend: cpu\n    colour: red\n"),
             Contains("devices[0].colour") && Contains("unknown key"));
  CHECK_THAT(error_of("devices:\n  - backend: cpu\n    id: -1\n"),
             Contains("devices[0].id") && Contains("out of range"));
  CHECK_THAT(error_of("devices:\n  - backend: cpu\n    prefetch: -3\n"),
             Contains("devices[0].prefetch") && Contains("out of range"));
  CHECK_THAT(error_of("devices:\n  - backend: cpu\n    count: 0\n"),
             Contains("devices[0].count") && Contains("out of range"));
  CHECK_THAT(error_of("devices:\n  - backend: cpu\n    name: [a]\n"),
             Contains("devices[0].name") && Contains("non-empty string"));
  CHECK_THAT(error_of("devices:\n  - {backend: cuda, id: 0, count: 2}\n  - {backend: cuda, id: 1}\n"),
             Contains("devices[1]") && Contains("cuda 1 is listed twice") && Contains("devices[0]"));
  CHECK_THAT(error_of("devices:\n  - {backend: cuda, id: 0, name: x}\n  - {backend: cpu, id: 0, name: x}\n"),
             Contains("devices[1].name") && Contains("'x' is used twice"));
  CHECK_THAT(error_of(good_devices + "hosts: [{address: 10.0.0.2}]\n"),
             Contains("hosts") && Contains("not supported yet"));
  CHECK_THAT(error_of(good_devices + "hosts: nobody\n"), Contains("hosts") && Contains("expected a list"));
  CHECK_THAT(error_of(good_devices + "run_timeout_s: 5\nrun_timeout_s: 6\n"),
             Contains("bad.yaml:5") && Contains("run_timeout_s") && Contains("given twice"));
  CHECK_THAT(error_of("devices:\n  - {backend: cpu, id: 0, id: 1}\n"), Contains("devices[0].id") && Contains("twice"));
  // Messages carry the line of the offending field.
  CHECK_THAT(error_of("devices:\n  - backend: replay\n  - backend: tpu\n"), Contains("bad.yaml:3"));
}

TEST_CASE("topology: background_builds is on unless the file turns it off, and only true or false is taken",
          "[storage]") {
  CHECK(parse_topology(good_devices).background_builds);
  CHECK(parse_topology(good_devices).summary()["background_builds"] == true);
  auto off = parse_topology("background_builds: false\n" + good_devices);
  CHECK_FALSE(off.background_builds);
  CHECK(off.summary()["background_builds"] == false);
  CHECK(parse_topology("background_builds: true\n" + good_devices).background_builds);
  CHECK_THAT(error_of("background_builds: sometimes\n" + good_devices),
             Catch::Matchers::Contains("bad.yaml:1: background_builds: expected true or false"));
  CHECK_THAT(error_of("background_builds: [true]\n" + good_devices),
             Catch::Matchers::Contains("background_builds: expected true or false"));
}

TEST_CASE("topology: measurement sets how each configuration is timed, and bad values are named", "[storage]") {
  CHECK_FALSE(parse_topology(good_devices).measurement);  // the defaults
  auto t = parse_topology("measurement:\n  min_time_s: 0.2\n  min_repeats: 5\n" + good_devices);
  REQUIRE(t.measurement);
  CHECK(t.measurement->min_time_s == 0.2);
  CHECK(t.measurement->min_repeats == 5);
  CHECK(t.measurement->max_repeats == tune::measurement_protocol{}.max_repeats);  // left out: the default
  CHECK_THAT(error_of("measurement:\n  min_time: 1\n" + good_devices),
             Catch::Matchers::Contains("bad.yaml:2: measurement.min_time: unknown key 'min_time'"));
  CHECK_THAT(error_of("measurement:\n  min_time_s: -1\n" + good_devices),
             Catch::Matchers::Contains("measurement.min_time_s") && Catch::Matchers::Contains("from 0 to 3600"));
  CHECK_THAT(error_of("measurement:\n  min_time_s: fast\n" + good_devices),
             Catch::Matchers::Contains("measurement.min_time_s: expected a number of seconds, got 'fast'"));
  CHECK_THAT(error_of("measurement:\n  min_repeats: 0\n" + good_devices),
             Catch::Matchers::Contains("measurement.min_repeats") && Catch::Matchers::Contains("from 1"));
  CHECK_THAT(error_of("measurement:\n  min_repeats: 9\n  max_repeats: 4\n" + good_devices),
             Catch::Matchers::Contains("measurement.max_repeats: is below min_repeats (9)"));
  CHECK_THAT(error_of("measurement: 3\n" + good_devices), Catch::Matchers::Contains("measurement: expected a mapping"));
  CHECK_FALSE(t.measurement->flush_cache);
  auto flushed = parse_topology("measurement:\n  flush_cache: true\n" + good_devices);
  REQUIRE(flushed.measurement);
  CHECK(flushed.measurement->flush_cache);
  CHECK_THAT(error_of("measurement:\n  flush_cache: yes please\n" + good_devices),
             Catch::Matchers::Contains("measurement.flush_cache: expected true or false"));
  CHECK(t.measurement->statistic == tune::time_statistic::median);
  auto least = parse_topology("measurement:\n  statistic: min\n" + good_devices);
  REQUIRE(least.measurement);
  CHECK(least.measurement->statistic == tune::time_statistic::min);
  CHECK_THAT(error_of("measurement:\n  statistic: mean\n" + good_devices),
             Catch::Matchers::Contains("measurement.statistic: expected median or min"));
  CHECK_THAT(error_of("measurement:\n  statistic: [min]\n" + good_devices),
             Catch::Matchers::Contains("measurement.statistic: expected median or min"));
}

TEST_CASE("topology files that cannot be read are named", "[storage]") {
  using Catch::Matchers::Contains;
  tune::test::scratch_dir scratch("tune-test-topology");
  const auto& dir = scratch.path();
  CHECK_THROWS_WITH(load_topology(dir / "missing.yaml"), Contains("missing.yaml") && Contains("cannot read"));
  CHECK_THROWS_WITH(load_topology(dir), Contains("is a directory"));
  std::ofstream(dir / "bad.yaml") << "devices:\n  - backend: quantum\n";
  CHECK_THROWS_WITH(load_topology(dir / "bad.yaml"),
                    Contains((dir / "bad.yaml").string()) && Contains("devices[0].backend"));
}

TEST_CASE("the node examples parse: nodes network and tls", "[storage]") {
  const std::filesystem::path examples = std::filesystem::path(TUNE_SOURCE_DIR) / "examples";
  auto coordinator = load_topology(examples / "topology-nodes.yaml");
  CHECK(coordinator.devices.empty());
  REQUIRE(coordinator.nodes.size() == 2);
  CHECK(coordinator.nodes[0].host == "127.0.0.1");
  CHECK(coordinator.nodes[0].port == 7101);
  CHECK(coordinator.nodes[1].port == 7102);
  CHECK(coordinator.nodes[1].devices == 0);  // all the node offers
  CHECK(coordinator.nodes[1].prefetch == 2);
  CHECK(coordinator.network.connection_timeout_s == 2.0);
  CHECK(coordinator.network.lost_timeout_s == 60.0);
  CHECK_FALSE(coordinator.tls.enabled());
  CHECK(coordinator.summary()["nodes"].size() == 2);

  auto node = load_topology(examples / "node-replay.yaml");
  REQUIRE(node.devices.size() == 2);
  CHECK(node.nodes.empty());
  CHECK(node.network.heartbeat_s == 0.5);
}

TEST_CASE("each malformed node network or tls entry gives its specific message", "[storage]") {
  using Catch::Matchers::Contains;
  CHECK_THAT(error_of("nodes: 127.0.0.1\n"), Contains("nodes") && Contains("expected a list"));
  CHECK_THAT(error_of("nodes:\n  - {host: a}\n"), Contains("nodes[0]") && Contains("missing 'port'"));
  CHECK_THAT(error_of("nodes:\n  - {port: 7101}\n"), Contains("nodes[0]") && Contains("missing 'host'"));
  CHECK_THAT(error_of("nodes:\n  - {host: a, port: 70000}\n"), Contains("nodes[0].port") && Contains("out of range"));
  CHECK_THAT(error_of("nodes:\n  - {host: a, port: 1, devices: 0}\n"),
             Contains("nodes[0].devices") && Contains("out of range"));
  CHECK_THAT(error_of("nodes:\n  - {host: a, port: 1, gpus: 2}\n"),
             Contains("nodes[0].gpus") && Contains("unknown key"));
  CHECK_THAT(error_of("nodes:\n  - {host: a, port: 1}\n  - {host: a, port: 1}\n"),
             Contains("nodes[1]") && Contains("listed twice") && Contains("nodes[0]"));
  CHECK_THAT(error_of("devices: []\nnodes: []\n"), Contains("devices") && Contains("no devices"));
  const std::string one_node = "nodes:\n  - {host: a, port: 1}\n";
  CHECK(error_of(one_node).empty());
  CHECK_THAT(error_of(one_node + "network: {heartbeat_s: 2, connection_timeout_s: 1}\n"),
             Contains("network.connection_timeout_s") && Contains("longer than network.heartbeat_s"));
  CHECK_THAT(error_of(one_node + "network: {heartbeat_s: 0}\n"), Contains("network.heartbeat_s"));
  CHECK_THAT(error_of(one_node + "network: {retries: 3}\n"), Contains("network.retries") && Contains("unknown key"));
  CHECK_THAT(error_of(one_node + "tls: {certificate: a.pem}\n"),
             Contains("tls.key") && Contains("missing") && Contains("make_certs.sh"));
  CHECK_THAT(error_of(one_node + "tls: {certificate: /nonexistent/a.pem, key: k, cafile: c}\n"),
             Contains("tls.certificate") && Contains("/nonexistent/a.pem") && Contains("not a readable file"));
}

TEST_CASE("nodes entries take a weight and which devices to use", "[storage]") {
  auto topo = parse_topology(
      "nodes:\n"
      "  - {host: a, port: 1, devices: [0, 2], weight: 2.5}\n"
      "  - {host: b, port: 1, devices: [gpu1, core0]}\n"
      "  - {host: c, port: 1, devices: 3}\n",
      "t.yaml");
  REQUIRE(topo.nodes.size() == 3);
  CHECK(topo.nodes[0].device_indices == std::vector<std::size_t>{0, 2});
  CHECK(topo.nodes[0].device_names.empty());
  CHECK(topo.nodes[0].weight == 2.5);
  CHECK(topo.nodes[1].device_names == std::vector<std::string>{"gpu1", "core0"});
  CHECK(topo.nodes[1].weight == 1.0);
  CHECK(topo.nodes[2].devices == 3);
  CHECK(topo.nodes[2].device_indices.empty());
  auto summary = topo.summary()["nodes"];
  CHECK(summary[0]["weight"] == 2.5);
  CHECK(summary[0]["device_indices"].size() == 2);
  CHECK(summary[1]["device_names"][0] == "gpu1");

  auto example = load_topology(std::filesystem::path(TUNE_SOURCE_DIR) / "examples" / "topology-nodes-cpu.yaml");
  REQUIRE(example.nodes.size() == 2);
  CHECK(example.nodes[0].device_indices == std::vector<std::size_t>{0});
  CHECK(example.nodes[1].device_names == std::vector<std::string>{"core1"});
  auto node = load_topology(std::filesystem::path(TUNE_SOURCE_DIR) / "examples" / "node-cpu.yaml");
  CHECK_FALSE(node.compile_workers_given);
  CHECK(parse_topology("compile_workers: 3\ndevices: [{backend: cpu, id: 0}]\n").compile_workers_given);
}

TEST_CASE("bad node weights and device lists name the field", "[storage]") {
  using Catch::Matchers::Contains;
  const std::string node = "nodes:\n  - {host: a, port: 1, ";
  CHECK_THAT(error_of(node + "weight: 0}\n"), Contains("nodes[0].weight") && Contains("positive number"));
  CHECK_THAT(error_of(node + "weight: -1}\n"), Contains("nodes[0].weight") && Contains("positive number"));
  CHECK_THAT(error_of(node + "weight: heavy}\n"), Contains("nodes[0].weight") && Contains("'heavy'"));
  CHECK_THAT(error_of(node + "weight: .nan}\n"), Contains("nodes[0].weight"));
  CHECK_THAT(error_of(node + "weight: [1]}\n"), Contains("nodes[0].weight") && Contains("list"));
  CHECK_THAT(error_of(node + "devices: []}\n"), Contains("nodes[0].devices") && Contains("non-empty list"));
  CHECK_THAT(error_of(node + "devices: [0, 0]}\n"), Contains("nodes[0].devices[1]") && Contains("listed twice"));
  CHECK_THAT(error_of(node + "devices: [-1]}\n"), Contains("nodes[0].devices[0]") && Contains("out of range"));
  CHECK_THAT(error_of(node + "devices: [gpu, gpu]}\n"), Contains("nodes[0].devices[1]") && Contains("listed twice"));
  CHECK_THAT(error_of(node + "devices: [{a: 1}]}\n"), Contains("nodes[0].devices[0]") && Contains("device index"));
  CHECK_THAT(error_of(node + "devices: {a: 1}}\n"), Contains("nodes[0].devices") && Contains("count of devices"));
}

TEST_CASE("names and hosts that are not UTF-8 are refused", "[storage]") {
  using Catch::Matchers::Contains;
  // Found by fuzzing: a device name with a byte that is not UTF-8 was read,
  // and writing the run_started event (topology::summary()) then threw.
  CHECK_THAT(error_of("devices:\n  - backend: replay\n    id: 0\n    name: sim\xff\n"),
             Contains("bad.yaml:4: devices[0].name: is not valid UTF-8 text"));
  CHECK_THAT(error_of("nodes:\n  - host: \"a\xc3\"\n    port: 7101\n"), Contains("nodes[0].host: is not valid UTF-8"));
  // Found by fuzzing too: a device name in a node's devices list (kept input
  // of fuzz_topology, reduced).
  CHECK_THAT(error_of("nodes:\n  - {host: b, port: 1, devices: [gpu1, \"c;\xff\x65\x30\"]}\n"),
             Contains("nodes[0].devices[1]: is not valid UTF-8"));
  auto listed = parse_topology("nodes:\n  - {host: b, port: 1, devices: [gpu1, r\xc3\xa9plique]}\n");
  CHECK(listed.nodes[0].device_names == std::vector<std::string>{"gpu1", "r\xc3\xa9plique"});
  CHECK(listed.summary().dump().find("r\xc3\xa9plique") != std::string::npos);
  // Text in UTF-8 stays as written.
  auto named = parse_topology("devices:\n  - backend: replay\n    id: 0\n    name: r\xc3\xa9plique\n");
  CHECK(named.devices[0].name == "r\xc3\xa9plique");
  CHECK(named.summary().dump().find("r\xc3\xa9plique") != std::string::npos);
}
