// Measures runs over nodes on loopback: 4 `tune-engine node` processes with
// 2 simulated replay devices each, a coordinator (this process) with 8
// compile workers, GEMM on an RTX 3090 replayed (measurement-bound). Prints
// device busy fractions, throughput against min(W / compile, G / measure),
// coordinator CPU per trial and each node's CPU per trial; the same with one
// node SIGKILLed at half time (throughput after the kill against the bound of
// the remaining devices); and the wall time per trial of one device with no
// simulated latency, remote against local (a hand-out's round trip).
//
//   bench_nodes [--time-scale X] [--trials N] [--data DIR]
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench_latency.hpp"
#include "bench_node_child.hpp"
#include "bench_text.hpp"
#include "tune/actors/pipeline.hpp"
#include "tune/engine/strategy.hpp"
#include "tune/kernels/replay.hpp"

using namespace tune;
using namespace tune::actors;

namespace {

double steady_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double process_cpu_s() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec);
}

/// CPU seconds (user + system) a process used so far, from /proc.
double child_cpu_s(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = text.rfind(')');
  if (close == std::string::npos) return 0.0;
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; fields >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::stod(field);
    if (i == 15) break;
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

/// Wall-clock arrival time of every trial.
struct arrivals : trial_listener {
  std::mutex mutex;
  std::vector<double> at;
  std::vector<pid_t> nodes;
  std::vector<double> node_cpu_at_first;  ///< after the nodes read the dataset
  void on_trial(const measured_trial&, bool) override {
    std::lock_guard lock(mutex);
    if (at.empty())
      for (pid_t pid : nodes) node_cpu_at_first.push_back(child_cpu_s(pid));
    at.push_back(steady_now());
  }
};

struct setup {
  std::string dataset_path;
  std::string payload;
  std::shared_ptr<const replay_dataset> data;
  double scale = 0.1;
};

pipeline_options node_run(const setup& s, const std::vector<node_child>& nodes, std::uint64_t trials) {
  pipeline_options o;
  o.compile_workers = 8;
  o.devices.clear();
  o.timing.timeouts.compile_s = 600;
  o.timing.timeouts.run_s = 600;
  o.timing.time_scale = s.scale > 0 ? s.scale : 1.0;
  o.budget.trials = trials;
  o.network.heartbeat_s = 0.25;
  o.network.connection_timeout_s = 1.0;
  for (const auto& n : nodes) {
    actors::remote_node r;
    r.host = "127.0.0.1";
    r.port = n.port;
    r.prefetch = 2;
    o.nodes.push_back(std::move(r));
  }
  o.node_task.kind = actors::node_task::kind_t::replay;
  o.node_task.dataset_name = "RTX_3090.json.gz";
  o.node_task.seed = 1;
  o.node_task.time_scale = s.scale;
  tune::timeouts node_timeouts;  // compile_s keeps its default, 60 s: the nodes' own
  node_timeouts.run_s = 600;
  o.node_task.timeouts = node_timeouts;
  o.node_payload = s.payload;
  return o;
}

backend_ptr replay(const setup& s, double scale) {
  replay_backend_options ro;
  ro.time_scale = scale;
  ro.seed = 1;
  return make_replay_backend(s.data, ro);
}

void throughput(const setup& s, std::vector<node_child>& nodes, std::uint64_t trials, bool kill_one) {
  auto [mc, mm] = bench::dataset_latencies(*s.data);
  double devices = 2.0 * static_cast<double>(nodes.size());
  double bound = std::min(8.0 / mc, devices / mm);
  auto options = node_run(s, nodes, trials);
  auto listener = std::make_shared<arrivals>();
  options.listener = listener;
  strategy_options so;
  so.seed = 1;
  for (const auto& n : nodes) listener->nodes.push_back(n.pid);
  double cpu0 = process_cpu_s();
  double killed_at = -1;
  std::thread killer;
  if (kill_one) {
    // Half the run's expected length at the bound.
    double half_s = 0.5 * static_cast<double>(trials) / bound * s.scale;
    killer = std::thread([&nodes, half_s, &killed_at, listener] {
      // From the first trial on: the nodes read the dataset before.
      for (;;) {
        {
          std::lock_guard lock(listener->mutex);
          if (!listener->at.empty()) break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      std::this_thread::sleep_for(std::chrono::duration<double>(half_s));
      killed_at = steady_now();
      kill(nodes.back().pid, SIGKILL);
    });
  }
  auto summary = run_pipeline(replay(s, s.scale), make_strategy("random", s.data->space, so), options);
  double cpu = process_cpu_s() - cpu0;
  if (killer.joinable()) killer.join();
  std::printf("%s: %zu nodes x 2 devices, 8 compile workers, prefetch 2, time scale %g\n",
              kill_one ? "one node SIGKILLed at half time" : "all nodes up", nodes.size(), s.scale);
  std::printf("  trials %llu in %.2f s wall = %.1f s simulated; ended by %s\n",
              static_cast<unsigned long long>(summary.trials), summary.wall_s, summary.sim_s,
              std::string(to_string(summary.reason)).c_str());
  for (std::size_t d = 0; d < summary.devices.size(); ++d)
    std::printf("  device %zu (node %zu) busy %6.1f%%\n", d, d / 2, 100.0 * summary.devices[d].busy_fraction());
  std::printf("  compile pool busy      %6.1f%%\n", 100.0 * summary.compile.busy_fraction());
  std::printf("  trials / sim s         %7.3f   bound min(W/c, G/m) %7.3f   ratio %5.1f%%\n", summary.steady_rate,
              bound, 100.0 * summary.steady_rate / bound);
  if (kill_one && killed_at > 0) {
    // After the kill (and its detection): the rate against the remaining devices' bound.
    std::vector<double> after;
    for (double t : listener->at)
      if (t > killed_at + 1.0) after.push_back(t);
    double bound_after = std::min(8.0 / mc, (devices - 2.0) / mm);
    if (after.size() > 10) {
      // Up to the last hand-out's drain: leave out the final in-flight tail.
      std::size_t tail = std::min<std::size_t>(after.size() / 4, 20);
      double span = (after[after.size() - 1 - tail] - after.front()) / s.scale;
      double rate = static_cast<double>(after.size() - 1 - tail) / span;
      std::printf("  after the kill: %zu trials, %.3f / sim s   bound of %g devices %.3f   ratio %5.1f%%\n",
                  after.size(), rate, devices - 2.0, bound_after, 100.0 * rate / bound_after);
    }
  }
  std::printf("  coordinator CPU / trial %7.1f us (process)   actors' handlers %7.1f us\n",
              1e6 * cpu / static_cast<double>(summary.trials),
              1e6 * summary.engine_cpu_s / static_cast<double>(summary.trials));
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    if (kill_one && n + 1 == nodes.size()) continue;
    std::printf(
        "  node %zu CPU / trial    %7.1f us (process, from the first trial on, per trial of the run)\n", n,
        1e6 * (child_cpu_s(nodes[n].pid) - listener->node_cpu_at_first[n]) / static_cast<double>(summary.trials));
  }
  std::printf("\n");
}

/// Wall microseconds per trial of one device with no simulated latency and
/// no prefetch: a trial's trip through the pipeline, local or remote.
double round_trip_us(const setup& s, const std::vector<node_child>& nodes, std::uint64_t trials) {
  pipeline_options o;
  if (nodes.empty()) {
    o.devices = {device_slot{0, 0}};
  } else {
    o = node_run(s, nodes, trials);
    o.devices.clear();
    o.nodes.front().devices = 1;
    o.nodes.front().prefetch = 0;
    o.node_task.time_scale = 0.0;
  }
  o.compile_workers = 1;
  o.budget.trials = trials;
  o.timing.time_scale = 1.0;
  strategy_options so;
  so.seed = 2;
  auto summary = run_pipeline(replay(s, 0.0), make_strategy("random", s.data->space, so), o);
  return 1e6 * summary.wall_s / static_cast<double>(summary.trials);
}

}  // namespace

int main(int argc, char** argv) {
  setup s;
  std::uint64_t trials = 600;
  std::string data_dir = TUNE_DATA_DIR;
  CLI::App app{
      "Runs over 4 tune-engine node processes on loopback (GEMM on an RTX 3090 replayed): busy shares, "
      "throughput against its bound, CPU per trial, a node killed at half time, a hand-out's round trip"};
  bench::last_value_wins(app);
  app.add_option("--time-scale", s.scale, "Wall seconds per simulated second")
      ->capture_default_str()
      ->check(bench::more_than_zero());
  app.add_option("--trials", trials, "Trials of each throughput run")
      ->capture_default_str()
      ->check(bench::more_than_zero());
  app.add_option("--data", data_dir, "The data folder (datasets/gemm_clblast/RTX_3090.json.gz inside)")
      ->capture_default_str();
  if (auto rc = tune::bench::parse_options(app, argc, argv)) return *rc;
  s.dataset_path = data_dir + "/datasets/gemm_clblast/RTX_3090.json.gz";
  std::ifstream in(s.dataset_path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  s.payload = bytes.str();
  s.data = std::make_shared<const replay_dataset>(read_replay_dataset(s.dataset_path));
  auto [mc, mm] = bench::dataset_latencies(*s.data);
  std::printf("bench_nodes: GEMM RTX 3090 replayed (mean compile %.3f s, measure %.3f s), %zu bytes sent per node\n\n",
              mc, mm, s.payload.size());

  char dir_template[] = "/tmp/bench-nodes-XXXXXX";
  std::string dir = mkdtemp(dir_template);
  std::string topology = dir + "/node.yaml";
  std::ofstream(topology) << "run_timeout_s: 600\ndevices:\n  - {backend: replay, id: 0, name: sim, count: 2}\n"
                          << "network: {heartbeat_s: 0.25, connection_timeout_s: 1}\n";
  for (bool kill_one : {false, true}) {
    std::vector<node_child> nodes;
    for (int n = 0; n < 4; ++n) nodes.push_back(start_node(topology));
    throughput(s, nodes, trials, kill_one);
    for (auto& n : nodes) stop_node(n);
  }
  std::vector<node_child> one{start_node(topology)};
  const std::uint64_t hand_outs = 400;
  double local = round_trip_us(s, {}, hand_outs);
  double remote = round_trip_us(s, one, hand_outs);
  stop_node(one.front());
  std::printf("one trial's trip, no simulated latency, 1 device, no prefetch, %llu trials:\n",
              static_cast<unsigned long long>(hand_outs));
  std::printf("  local  %8.1f us per trial\n  remote %8.1f us per trial (loopback)   remote / local %.2f\n", local,
              remote, remote / local);
  std::remove(topology.c_str());
  std::remove(dir.c_str());
  return 0;
}
