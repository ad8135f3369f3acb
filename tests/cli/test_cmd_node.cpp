// tune-engine node with coordinators on loopback: node processes are started,
// killed and stopped by the tests; results are checked in the database.
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <tuple>

#include "actors/scratch_dir.hpp"
#include "cli/cli_process.hpp"
#include "tune/kernels/device_lease.hpp"

using namespace std::chrono_literals;
using Catch::Matchers::Contains;
using tune::test::cli_process;
using tune::test::scratch_dir;

namespace {

const std::string dataset = std::string(TUNE_DATA_DIR) + "/datasets/ktt/coulomb3d_RTX_2080_Ti_KTT_profiling.json.gz";
const std::string node_topology = std::string(TUNE_SOURCE_DIR) + "/examples/node-replay.yaml";

struct node_process {
  std::unique_ptr<cli_process> process;
  int port = 0;
};

/// Starts a node on `port` (0: any free one) and waits until it listens.
node_process start_node(int port = 0, const std::string& topology = node_topology) {
  node_process node;
  node.process = std::make_unique<cli_process>(
      std::vector<std::string>{"node", "--listen", "127.0.0.1:" + std::to_string(port), "--topology", topology});
  REQUIRE(node.process->wait_for_err("listening on"));
  std::smatch match;
  std::string err = node.process->err();
  REQUIRE(std::regex_search(err, match, std::regex("\\(port ([0-9]+)\\)")));
  node.port = std::stoi(match[1]);
  return node;
}

/// A coordinator topology over the given node ports.
std::string write_node_topology(const scratch_dir& dir, const std::vector<int>& ports, double lost_timeout_s = 30) {
  auto file = (dir / "topology.yaml").string();
  std::ofstream out(file);
  out << "compile_workers: 2\nrun_timeout_s: 10\nnetwork:\n  heartbeat_s: 0.25\n  connection_timeout_s: 1\n"
      << "  lost_timeout_s: " << lost_timeout_s << "\nnodes:\n";
  for (int port : ports) out << "  - {host: 127.0.0.1, port: " << port << ", prefetch: 1}\n";
  return file;
}

std::vector<std::string> node_tune_args(const std::string& topology, const std::string& db, int budget, double scale) {
  return {"tune",   "--topology", topology, "--dataset", dataset,   "--budget",     std::to_string(budget),
          "--seed", "3",          "--db",   db,          "--quiet", "--time-scale", std::to_string(scale)};
}

/// One number from the database; -1 while it cannot be read yet.
long long query(const std::string& db, const std::string& sql) {
  sqlite3* raw = nullptr;
  if (sqlite3_open_v2(db.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(raw);
    return -1;
  }
  sqlite3_busy_timeout(raw, 2000);
  sqlite3_stmt* stmt = nullptr;
  long long value = -1;
  if (sqlite3_prepare_v2(raw, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK && sqlite3_step(stmt) == SQLITE_ROW)
    value = sqlite3_column_int64(stmt, 0);
  sqlite3_finalize(stmt);
  sqlite3_close(raw);
  return value;
}

long long trials_on(const std::string& db, int port) {
  return query(db, "SELECT COUNT(*) FROM trials WHERE device LIKE '127.0.0.1:" + std::to_string(port) + "/%'");
}

/// Waits until the run recorded at least n trials.
void wait_for_trials(const std::string& db, long long n) {
  auto deadline = std::chrono::steady_clock::now() + 60s;
  while (query(db, "SELECT COUNT(*) FROM trials") < n) {
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(50ms);
  }
}

void check_exactly_once(const std::string& db, int budget) {
  CHECK(query(db, "SELECT COUNT(*) FROM trials") == budget);
  CHECK(query(db, "SELECT COUNT(DISTINCT config) FROM trials") == budget);
}

/// A model of two tasks run through one pipeline: each task has trials in a
/// run of its own, `budget` in all, each configuration once in its run.
void check_each_task_once(const std::string& db, int budget) {
  CHECK(query(db, "SELECT COUNT(DISTINCT run_id) FROM trials") == 2);
  CHECK(query(db, "SELECT COUNT(*) FROM trials") == budget);
  CHECK(query(db, "SELECT COUNT(*) FROM (SELECT DISTINCT run_id, config FROM trials)") == budget);
}

/// Two nodes and a coordinator replaying `budget` trials slowly enough to
/// act on a node mid-run (recorded runs of about 1 ms slowed 50 times: a few
/// seconds); returned once 20 trials are recorded.
struct two_node_run {
  scratch_dir dir;
  node_process a = start_node();
  node_process b = start_node();
  std::string db = (dir / "results.db").string();
  int budget;
  cli_process tune;

  two_node_run(const std::string& name, int budget_)
      : dir(name), budget(budget_), tune(node_tune_args(write_node_topology(dir, {a.port, b.port}), db, budget, 50.0)) {
    wait_for_trials(db, 20);
  }
};

}  // namespace

TEST_CASE("node: a coordinator replays a dataset over two nodes with every trial recorded once", "[cli][node]") {
  scratch_dir dir("tune-test-node-two");
  auto a = start_node();
  auto b = start_node();
  auto db = (dir / "results.db").string();
  cli_process tune(node_tune_args(write_node_topology(dir, {a.port, b.port}), db, 60, 0.05));
  REQUIRE(tune.wait() == 0);
  INFO(tune.err());
  CHECK_THAT(tune.out(), Contains("ended by budget"));
  check_exactly_once(db, 60);
  CHECK(trials_on(db, a.port) > 0);
  CHECK(trials_on(db, b.port) > 0);
  CHECK(trials_on(db, a.port) + trials_on(db, b.port) == 60);
  // Both devices of each node measured.
  CHECK(query(db, "SELECT COUNT(DISTINCT device) FROM trials") == 4);
  CHECK(a.process->wait_for_err("session ended"));
}

TEST_CASE("node: a model's tasks run through one pipeline over two nodes, each trial recorded once in its task's run",
          "[cli][node]") {
  scratch_dir dir("tune-test-node-model");
  auto a = start_node();
  auto b = start_node();
  auto db = (dir / "results.db").string();
  auto model = (dir / "model.yaml").string();
  std::ofstream(model) << "name: two-datasets\ntasks:\n  - {name: coulomb, count: 3, dataset: " << dataset
                       << "}\n  - {name: conv, count: 1, dataset: " << TUNE_DATA_DIR
                       << "/datasets/convolution_v1_rtx/RTX_2080_Ti.json.gz}\n";
  cli_process tune({"tune", "--model", model, "--one-pipeline", "--topology",
                    write_node_topology(dir, {a.port, b.port}), "--budget", "64", "--seed", "3", "--db", db, "--quiet",
                    "--time-scale", "0.05"});
  REQUIRE(tune.wait() == 0);
  INFO(tune.err());
  // Each task has its run, its trials untagged (a configuration of its own
  // space) and each measured once; all of them on the nodes' devices.
  CHECK(query(db, "SELECT COUNT(*) FROM runs") == 2);
  check_each_task_once(db, 64);
  CHECK(query(db, "SELECT COUNT(*) FROM trials WHERE config LIKE '%\"task\"%'") == 0);
  CHECK(trials_on(db, a.port) > 0);
  CHECK(trials_on(db, b.port) > 0);
  // What was measured was measured on a node; the rest failed to build (the
  // convolution dataset records such configurations) and never reached one.
  CHECK(query(db, "SELECT COUNT(*) FROM trials WHERE status = 'ok' AND device NOT LIKE '127.0.0.1:%'") == 0);
  CHECK(trials_on(db, a.port) + trials_on(db, b.port) == query(db, "SELECT COUNT(*) FROM trials WHERE device != ''"));
  CHECK(a.process->wait_for_err("session ended"));
}

TEST_CASE("node: a killed node's candidates are measured elsewhere and the restarted node rejoins", "[cli][node]") {
  two_node_run run("tune-test-node-kill", 150);
  auto [a, tune, db, budget] = std::tie(run.a, run.tune, run.db, run.budget);
  int port_a = a.port;
  a.process->signal(SIGKILL);
  REQUIRE(a.process->wait(10s) == -SIGKILL);
  REQUIRE(tune.wait_for_err("lost node 127.0.0.1:" + std::to_string(port_a)));
  auto restarted = start_node(port_a);
  long long before = trials_on(db, port_a);
  REQUIRE(tune.wait() == 0);
  INFO(tune.err());
  CHECK_THAT(tune.err(), Contains("go back to the queue"));
  CHECK_THAT(tune.err(), Contains("node 127.0.0.1:" + std::to_string(port_a) + " is back"));
  check_exactly_once(db, budget);
  CHECK(trials_on(db, port_a) > before);
}

TEST_CASE("node: a node stopped with SIGTERM mid-run exits and the run finishes on the other", "[cli][node]") {
  two_node_run run("tune-test-node-term", 100);
  auto [a, tune, db, budget] = std::tie(run.a, run.tune, run.db, run.budget);
  a.process->signal(SIGTERM);
  CHECK(a.process->wait(10s) == 0);
  // It ended its session at once, not when the run was over.
  CHECK(query(db, "SELECT COUNT(*) FROM trials") < budget);
  REQUIRE(tune.wait() == 0);
  INFO(tune.err());
  CHECK_THAT(tune.err(), Contains("lost node 127.0.0.1:" + std::to_string(a.port)));
  check_exactly_once(db, budget);
}

TEST_CASE("node: a node that hangs is detected by heartbeat and the run finishes", "[cli][node]") {
  two_node_run run("tune-test-node-stop", 100);
  auto [a, tune, db, budget] = std::tie(run.a, run.tune, run.db, run.budget);
  a.process->signal(SIGSTOP);
  CHECK(tune.wait_for_err("lost node 127.0.0.1:" + std::to_string(a.port)));
  int rc = tune.wait();
  a.process->signal(SIGCONT);
  INFO(tune.err());
  REQUIRE(rc == 0);
  check_exactly_once(db, budget);
}

TEST_CASE("node: a run that loses every node waits then ends resumable", "[cli][node]") {
  scratch_dir dir("tune-test-node-lost");
  auto a = start_node();
  int port = a.port;
  auto topology = write_node_topology(dir, {port}, 2.0);
  auto db = (dir / "results.db").string();
  const int budget = 100;
  cli_process tune(node_tune_args(topology, db, budget, 50.0));
  wait_for_trials(db, 10);
  a.process->signal(SIGKILL);
  a.process->wait(10s);
  CHECK(tune.wait() == 130);  // ended like an interrupted run
  INFO(tune.err());
  CHECK_THAT(tune.err(), Contains("no measurer left; waiting") && Contains("can be resumed"));
  long long recorded = query(db, "SELECT COUNT(*) FROM trials");
  CHECK(recorded < budget);
  CHECK(recorded == query(db, "SELECT COUNT(DISTINCT config) FROM trials"));

  auto back = start_node(port);
  auto args = node_tune_args(topology, db, budget, 0.5);
  args.push_back("--resume");
  cli_process resumed(args);
  int resumed_exit = resumed.wait();
  INFO(resumed.err());
  REQUIRE(resumed_exit == 0);
  CHECK_THAT(resumed.out(), Contains("run 1 (resumed)"));
  check_exactly_once(db, budget);
}

/// Runs scripts/make_certs.sh DIR (openssl) and waits for it.
void make_certs(const std::string& dir) {
  std::string script = std::string(TUNE_SOURCE_DIR) + "/scripts/make_certs.sh";
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    execl("/bin/bash", "bash", script.c_str(), dir.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
}

TEST_CASE("node: TLS admits a coordinator of the node's CA and refuses others", "[cli][node]") {
  scratch_dir dir("tune-test-node-tls");
  auto ca = (dir / "ca").string();
  auto other = (dir / "other").string();
  make_certs(ca);
  make_certs(other);
  auto node_file = ca + "/node.yaml";
  std::ofstream(node_file) << "devices:\n  - {backend: replay, id: 0, name: sim, count: 2}\n"
                           << "tls: {certificate: node.pem, key: node.key, cafile: ca.pem}\n";
  auto a = start_node(0, node_file);
  auto coordinator = [&](const std::string& certs, const std::string& name) {
    auto file = (dir / name).string();
    std::ofstream out(file);
    out << "compile_workers: 2\nnodes:\n  - {host: 127.0.0.1, port: " << a.port << "}\n";
    if (!certs.empty())
      out << "tls: {certificate: " << certs << "/coordinator.pem, key: " << certs
          << "/coordinator.key, cafile: " << certs << "/ca.pem}\n";
    return file;
  };
  cli_process same(node_tune_args(coordinator(ca, "same.yaml"), (dir / "same.db").string(), 20, 0.01));
  CHECK(same.wait() == 0);
  INFO(same.err());
  CHECK(trials_on((dir / "same.db").string(), a.port) == 20);

  cli_process plain(node_tune_args(coordinator("", "plain.yaml"), (dir / "plain.db").string(), 20, 0.01));
  CHECK(plain.wait() == 2);
  CHECK_THAT(plain.err(), Contains("cannot connect") && Contains("TLS"));

  cli_process foreign(node_tune_args(coordinator(other, "other.yaml"), (dir / "other.db").string(), 20, 0.01));
  CHECK(foreign.wait() == 2);
  CHECK_THAT(foreign.err(), Contains("cannot connect"));
}

TEST_CASE("node: a node of another version is refused naming both versions", "[cli][node]") {
  scratch_dir dir("tune-test-node-version");
  setenv("TUNE_ENGINE_VERSION_OVERRIDE", "9.9.9", 1);
  auto a = start_node();
  unsetenv("TUNE_ENGINE_VERSION_OVERRIDE");
  cli_process tune(node_tune_args(write_node_topology(dir, {a.port}), (dir / "results.db").string(), 10, 0.01));
  CHECK(tune.wait() == 2);
  CHECK_THAT(tune.err(),
             Contains("version mismatch") && Contains("tune-engine 9.9.9") && Contains("the coordinator 0.1.0"));
}

TEST_CASE("node: a second coordinator is refused while a run is on", "[cli][node]") {
  scratch_dir dir("tune-test-node-busy");
  auto a = start_node();
  auto topology = write_node_topology(dir, {a.port});
  auto db = (dir / "first.db").string();
  cli_process first(node_tune_args(topology, db, 200, 50.0));
  wait_for_trials(db, 3);
  cli_process second(node_tune_args(topology, (dir / "second.db").string(), 10, 0.01));
  CHECK(second.wait() == 2);
  CHECK_THAT(second.err(), Contains("busy") && Contains("one run at a time"));
  // Once the first coordinator is gone, the node serves the next one.
  first.signal(SIGKILL);
  first.wait();
  REQUIRE(a.process->wait_for_err("session ended"));
  cli_process third(node_tune_args(topology, (dir / "third.db").string(), 10, 0.01));
  CHECK(third.wait() == 0);
}

TEST_CASE("node: bad node topologies and unreachable nodes give one clear error and exit 2", "[cli][node]") {
  scratch_dir dir("tune-test-node-bad");
  auto bad = (dir / "bad-node.yaml").string();
  std::ofstream(bad) << "devices:\n  - backend: quantum\n";
  cli_process bad_node({"node", "--listen", "127.0.0.1:0", "--topology", bad});
  CHECK(bad_node.wait() == 2);
  CHECK_THAT(bad_node.err(), Contains(bad) && Contains("devices[0].backend") && Contains("quantum"));

  cli_process open_node({"node", "--listen", "0.0.0.0:0", "--topology", node_topology});
  CHECK(open_node.wait() == 2);
  CHECK_THAT(open_node.err(), Contains("needs TLS") && Contains("scripts/make_certs.sh"));

  cli_process bad_listen({"node", "--listen", "127.0.0.1", "--topology", node_topology});
  CHECK(bad_listen.wait() == 2);
  CHECK_THAT(bad_listen.err(), Contains("HOST:PORT"));

  auto bad_coordinator = (dir / "bad-coordinator.yaml").string();
  std::ofstream(bad_coordinator) << "nodes:\n  - {host: 127.0.0.1}\n";
  cli_process missing_port(node_tune_args(bad_coordinator, (dir / "r.db").string(), 10, 0.01));
  CHECK(missing_port.wait() == 2);
  CHECK_THAT(missing_port.err(), Contains(bad_coordinator) && Contains("nodes[0]") && Contains("port"));

  // A port nobody listens on: a node that listened there and is gone.
  int closed_port = 0;
  {
    auto gone = start_node();
    closed_port = gone.port;
  }
  cli_process unreachable(node_tune_args(write_node_topology(dir, {closed_port}), (dir / "r2.db").string(), 10, 0.01));
  CHECK(unreachable.wait() == 2);
  CHECK_THAT(unreachable.err(),
             Contains("node 127.0.0.1:" + std::to_string(closed_port)) && Contains("cannot connect"));
}

namespace {

const std::string cpu_node_topology = std::string(TUNE_SOURCE_DIR) + "/examples/node-cpu.yaml";

/// Starts a CPU node whose compile cache is `cache` (so the test sees what it built).
node_process start_cpu_node(const std::string& cache, const std::string& topology = cpu_node_topology);

/// Files under `dir` (recursively) whose name ends with `suffix`, and their bytes.
std::pair<long long, long long> files_ending(const std::filesystem::path& dir, const std::string& suffix) {
  long long count = 0, bytes = 0;
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) return {0, 0};
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir, ec)) {
    auto name = entry.path().filename().string();
    if (!entry.is_regular_file() || name.size() < suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    ++count;
    bytes += static_cast<long long>(entry.file_size());
  }
  return {count, bytes};
}

/// TUNE_CACHE_DIR for the processes started while it lives.
struct cache_env {
  explicit cache_env(const std::string& cache) { setenv("TUNE_CACHE_DIR", cache.c_str(), 1); }
  ~cache_env() { unsetenv("TUNE_CACHE_DIR"); }
};

node_process start_cpu_node(const std::string& cache, const std::string& topology) {
  cache_env env(cache);
  return start_node(0, topology);
}

/// `tune --task` over nodes, with the coordinator's own compile cache.
cli_process tune_task(const std::string& topology, const std::string& db, int budget, const std::string& cache) {
  cache_env env(cache);
  return cli_process({"tune", "--topology", topology, "--task", "matmul:32x32x32", "--budget", std::to_string(budget),
                      "--seed", "5", "--strategy", "random", "--db", db, "--quiet"});
}

}  // namespace

TEST_CASE("node: a CPU task is tuned on two nodes that compile what they measure", "[cli][node]") {
  scratch_dir dir("tune-test-node-cpu");
  auto a = start_cpu_node((dir / "cache-a").string());
  auto b = start_cpu_node((dir / "cache-b").string());
  auto topology = (dir / "topology.yaml").string();
  // Generous run timeout: a node's first run also computes its reference data.
  std::ofstream(topology) << "compile_workers: 1\nrun_timeout_s: 120\nnodes:\n"
                          << "  - {host: 127.0.0.1, port: " << a.port << ", devices: [0], prefetch: 1}\n"
                          << "  - {host: 127.0.0.1, port: " << b.port << ", devices: [core1], prefetch: 1}\n";
  auto db = (dir / "results.db").string();
  const int budget = 6;
  auto tune = tune_task(topology, db, budget, (dir / "cache-coordinator").string());
  REQUIRE(tune.wait() == 0);
  INFO(tune.err());
  check_exactly_once(db, budget);
  CHECK(trials_on(db, a.port) > 0);
  CHECK(trials_on(db, b.port) > 0);
  // The chosen devices: node a's first, node b's second.
  CHECK(query(db, "SELECT COUNT(*) FROM trials WHERE device = '127.0.0.1:" + std::to_string(a.port) + "/core0'") ==
        trials_on(db, a.port));
  CHECK(query(db, "SELECT COUNT(*) FROM trials WHERE device = '127.0.0.1:" + std::to_string(b.port) + "/core1'") ==
        trials_on(db, b.port));
  // Real kernels, checked against the reference on the node, with the build's time.
  CHECK(query(db, "SELECT COUNT(*) FROM trials WHERE status = 'ok' AND time_ms > 0 AND compile_s > 0") > 0);
  // Each node built the kernels it measured (and its reference); the coordinator built none.
  CHECK(files_ending(dir / "cache-a", ".so").first >= 2);
  CHECK(files_ending(dir / "cache-b", ".so").first >= 2);
  CHECK(files_ending(dir / "cache-coordinator", ".so").first == 0);
}

TEST_CASE("node: a model's CPU tasks run through one pipeline on two nodes that compile what they measure",
          "[cli][node]") {
  scratch_dir dir("tune-test-node-cpu-model");
  auto a = start_cpu_node((dir / "cache-a").string());
  auto b = start_cpu_node((dir / "cache-b").string());
  auto topology = (dir / "topology.yaml").string();
  std::ofstream(topology) << "compile_workers: 1\nrun_timeout_s: 120\nnodes:\n"
                          << "  - {host: 127.0.0.1, port: " << a.port << ", devices: [0], prefetch: 1}\n"
                          << "  - {host: 127.0.0.1, port: " << b.port << ", devices: [core1], prefetch: 1}\n";
  auto model = (dir / "model.yaml").string();
  std::ofstream(model) << "name: two-matmuls\ntasks:\n  - {task: \"matmul:32x32x32\", count: 2}\n"
                       << "  - {task: \"matmul:32x48x32\", count: 1}\n";
  auto db = (dir / "results.db").string();
  cache_env env((dir / "cache-coordinator").string());
  // Rounds of 4: the warm-up gives each task one, so both are measured.
  cli_process tune({"tune", "--model", model, "--one-pipeline", "--round-trials", "4", "--topology", topology,
                    "--budget", "12", "--seed", "5", "--strategy", "random", "--db", db, "--quiet"});
  REQUIRE(tune.wait() == 0);
  INFO(tune.err());
  // Each task's run holds real kernels of its own shape, each configuration
  // once, measured on the nodes (checked against each task's reference there).
  check_each_task_once(db, 12);
  CHECK(query(db, "SELECT COUNT(DISTINCT run_id) FROM trials WHERE status = 'ok' AND time_ms > 0") == 2);
  CHECK(trials_on(db, a.port) + trials_on(db, b.port) == 12);
  CHECK(files_ending(dir / "cache-coordinator", ".so").first == 0);
}

TEST_CASE("node: a node's compile workers build for the coordinator's pool and send the artifact's bytes",
          "[cli][node]") {
  scratch_dir dir("tune-test-node-builders");
  auto node_file = (dir / "node.yaml").string();
  std::ofstream(node_file) << "compile_workers: 2\ndevices:\n  - {backend: cpu, id: 0, name: core}\n";
  auto a = start_cpu_node((dir / "cache-a").string(), node_file);
  auto topology = (dir / "topology.yaml").string();
  std::ofstream(topology) << "compile_workers: 1\nrun_timeout_s: 120\nnodes:\n  - {host: 127.0.0.1, port: " << a.port
                          << ", prefetch: 1}\n";
  auto db = (dir / "results.db").string();
  const int budget = 4;
  auto tune = tune_task(topology, db, budget, (dir / "cache-coordinator").string());
  REQUIRE(tune.wait() == 0);
  INFO(tune.err());
  check_exactly_once(db, budget);
  CHECK(query(db, "SELECT COUNT(*) FROM trials WHERE status = 'ok'") > 0);
  // Artifacts that travelled as bytes were written back into the measuring
  // side's cache under received/ and run from there.
  auto [received, bytes] = files_ending(dir / "cache-a" / "received", ".so");
  CHECK(received > 0);
  CHECK(bytes > 0);
  CHECK(a.process->wait_for_err("2 compile workers"));
}

TEST_CASE("node: a device the node does not offer is refused naming the node and the field", "[cli][node]") {
  scratch_dir dir("tune-test-node-devices");
  auto a = start_cpu_node((dir / "cache-a").string());
  auto topology = (dir / "topology.yaml").string();
  std::ofstream(topology) << "compile_workers: 1\nnodes:\n  - {host: 127.0.0.1, port: " << a.port
                          << ", devices: [gpu7]}\n";
  auto tune = tune_task(topology, (dir / "r.db").string(), 2, (dir / "cache-c").string());
  CHECK(tune.wait() == 2);
  CHECK_THAT(tune.err(), Contains("node 127.0.0.1:" + std::to_string(a.port)) && Contains("no device named 'gpu7'") &&
                             Contains("core0") && Contains("nodes[].devices"));

  std::ofstream(topology) << "compile_workers: 1\nnodes:\n  - {host: 127.0.0.1, port: " << a.port << ", weight: 0}\n";
  auto bad = tune_task(topology, (dir / "r2.db").string(), 2, (dir / "cache-c").string());
  CHECK(bad.wait() == 2);
  CHECK_THAT(bad.err(), Contains(topology) && Contains("nodes[0].weight"));
}

TEST_CASE("node: a device another run on the node's machine has leased is refused naming the holder", "[cli][node]") {
  scratch_dir dir("tune-test-node-lease");
  auto a = start_cpu_node((dir / "cache-a").string());
  auto topology = (dir / "topology.yaml").string();
  std::ofstream(topology) << "compile_workers: 1\nrun_timeout_s: 120\nnodes:\n"
                          << "  - {host: 127.0.0.1, port: " << a.port << ", devices: [0], prefetch: 1}\n";
  // This process holds core 0 of the node's machine, as a run there would.
  auto held = tune::try_lease({"cpu-core-0"});
  REQUIRE(held);
  auto refused = tune_task(topology, (dir / "refused.db").string(), 2, (dir / "cache-coordinator").string());
  CHECK(refused.wait() == 2);
  CHECK_THAT(refused.err(),
             Contains("node 127.0.0.1:" + std::to_string(a.port) +
                      " refused the run: busy: cpu-core-0 is leased by pid " + std::to_string(::getpid())));
  held->release();
  auto served = tune_task(topology, (dir / "served.db").string(), 2, (dir / "cache-coordinator").string());
  CHECK(served.wait() == 0);
  // The node gave its lease back when the session ended.
  REQUIRE(a.process->wait_for_err("session ended"));
  CHECK(tune::try_lease({"cpu-core-0"}));
}
