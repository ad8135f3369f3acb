// The dashboard's cost, printed (not a test; the machine may be shared):
// 1. events per second forwarded from a ZeroMQ publisher to 10 WebSocket
//    clients on loopback;
// 2. engine CPU per trial of a replay run (GEMM RTX 3090): CPU time of the
//    engine's actor threads (the run report's engine_cpu_us_per_trial, from
//    CLOCK_THREAD_CPUTIME_ID, the per-thread form of getrusage), not wall
//    time, in three set-ups run in turn (A B C, then C B A, …) so that the
//    machine's load drifts over all of them alike:
//      A  events published, no reader (ZeroMQ drops them at once);
//      B  the run's own dashboard subscribed, no browser connected;
//      C  the run's own dashboard with 10 connected WebSocket clients.
//    C against B is what 10 browsers add; B against A is what any reader of
//    the events adds. Medians, ranges and the median of per-round C/B ratios.
//    The engine threads do not serve the browsers (the dashboard's own
//    threads do), so each run also reports the process's CPU per trial
//    (getrusage(RUSAGE_SELF) over session::run(): engine, recorder, ZeroMQ
//    and dashboard threads) less the CPU of this benchmark's 10 client
//    threads (CLOCK_THREAD_CPUTIME_ID in each): what a run with its
//    dashboard open in 10 browsers costs on the machine that runs it.
//
//   build/bench/bench_dashboard [--events N] [--trials N] [--repeats R]
// <utility> before Asio (through the client): with -std=c++20 it needs it.
// clang-format off
#include <utility>
// clang-format on

#include <fmt/format.h>
#include <sys/resource.h>
#include <time.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench_text.hpp"
#include "dashboard/dashboard_client.hpp"
#include "tune/dashboard/server.hpp"
#include "tune/engine/median.hpp"
#include "tune/storage/event_stream.hpp"
#include "tune/tune.hpp"

using namespace tune;
using namespace std::chrono_literals;

namespace {

constexpr int client_count = 10;

double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double process_cpu_s() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
  return seconds(u.ru_utime) + seconds(u.ru_stime);
}

/// Clients that read until run_finished, counting trial events.
class client_group {
 public:
  explicit client_group(std::uint16_t port) {
    const double before = thread_cpu_s();
    for (int i = 0; i < client_count; ++i) clients_.push_back(std::make_unique<test::ws_client>(port));
    for (auto& c : clients_) c->receive();  // hello
    add_cpu(thread_cpu_s() - before);
  }
  void start() {
    for (std::size_t i = 0; i < clients_.size(); ++i)
      threads_.emplace_back([this, i] {
        // Counted without parsing: the clients should not be what is measured.
        for (;;) {
          auto text = clients_[i]->receive_text();
          if (text.find(R"("type":"trial_finished")") != std::string::npos) ++received_;
          if (text.find(R"("type":"run_finished")") != std::string::npos) break;
        }
        add_cpu(thread_cpu_s());
      });
  }
  void join() {
    for (auto& t : threads_) t.join();
  }
  std::uint64_t received() const { return received_; }
  /// CPU seconds the clients' threads used (after join()).
  double cpu_s() const { return cpu_us_ / 1e6; }

 private:
  void add_cpu(double seconds) { cpu_us_ += static_cast<std::uint64_t>(seconds * 1e6); }

  std::vector<std::unique_ptr<test::ws_client>> clients_;
  std::vector<std::thread> threads_;
  std::atomic<std::uint64_t> received_{0};
  std::atomic<std::uint64_t> cpu_us_{0};
};

void forwarding_rate(int events) {
  storage::event_publisher publisher("tcp://127.0.0.1:*");
  dashboard::server_options o;
  o.listen = "127.0.0.1:0";
  o.event_endpoints = {publisher.endpoint()};
  dashboard::server board(o);
  board.start();
  client_group clients(board.port());
  publisher.wait_for_subscribers(1, 10s);
  clients.start();
  storage::trial_finished_event t;
  t.trial.config_json =
      nlohmann::json{{"MWG", 64}, {"NWG", 64}, {"KWG", 32}, {"MDIMC", 16}, {"NDIMC", 8}, {"VWM", 4}, {"VWN", 2}}.dump();
  t.trial.state = status::ok;
  t.trial.device = "sim0";
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < events; ++i) {
    t.trial.seq = i;
    t.trial.time_ms = 1.0 + i % 7;
    t.elapsed_s = 1e-3 * i;
    publisher.publish(storage::make_event(t));
  }
  storage::run_finished_event f;
  f.trials = events;
  f.reason = end_reason::budget;
  publisher.publish(storage::make_event(f));
  clients.join();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto st = board.statistics();
  fmt::print(
      "forwarding: {} events to {} clients in {:.3f} s: {:.0f} events/s in, {:.0f} messages/s out "
      "({} delivered, {} dropped, {} events reached the server)\n",
      events, client_count, seconds, st.events / seconds, clients.received() / seconds, clients.received(), st.dropped,
      st.events);
}

struct run_cost {
  double engine_us = 0;
  double process_us = 0;  ///< process CPU per trial, the benchmark's clients excluded
  double wall_s = 0;
  std::uint64_t delivered = 0;
};

enum class setup { no_reader, dashboard, clients };

run_cost replay_run(int trials, setup how) {
  session_options o;
  o.dataset = std::string(TUNE_DATA_DIR) + "/datasets/gemm_clblast/RTX_3090.json.gz";
  o.time_scale = 0.001;
  o.budget.trials = static_cast<std::uint64_t>(trials);
  o.seed = 1;
  o.strategy = "opevo";
  o.publish_endpoint = "tcp://127.0.0.1:*";  // events published in both cases
  std::unique_ptr<client_group> clients;
  if (how != setup::no_reader) o.dashboard_listen = "127.0.0.1:0";
  if (how == setup::clients) {
    o.on_dashboard = [&](const std::string& url) {
      auto port = static_cast<std::uint16_t>(std::stoi(url.substr(url.rfind(':') + 1)));
      clients = std::make_unique<client_group>(port);
      clients->start();
    };
  }
  session run(o);
  const double cpu_before = process_cpu_s();
  auto report = run.run();
  run_cost c;
  c.engine_us = report.engine_cpu_us_per_trial;
  c.wall_s = report.wall_s;
  double client_cpu = 0;
  if (clients) {
    clients->join();
    c.delivered = clients->received();
    client_cpu = clients->cpu_s();
  }
  c.process_us = 1e6 * (process_cpu_s() - cpu_before - client_cpu) / static_cast<double>(report.trials);
  return c;
}

std::string spread(const std::vector<double>& v) {
  auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return fmt::format("median {:.1f} us (range {:.1f} to {:.1f}, n={})", tune::median(v), *lo, *hi, v.size());
}

}  // namespace

int main(int argc, char** argv) {
  int events = 20000, trials = 1000, repeats = 3;
  CLI::App app{
      "The dashboard's forwarding rate to 10 WebSocket clients, and a replay run's CPU per trial with no "
      "reader, with the dashboard alone and with 10 clients"};
  tune::bench::last_value_wins(app);
  app.add_option("--events", events, "Events published as fast as possible to 10 clients (0: skip)")
      ->check(CLI::Range(0, 100000000))
      ->capture_default_str();
  app.add_option("--trials", trials, "Trials of each replay run")->check(CLI::Range(1, 1000000))->capture_default_str();
  app.add_option("--repeats", repeats, "Rounds of the three set-ups, in alternating order")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  if (auto rc = tune::bench::parse_options(app, argc, argv)) return *rc;
  if (events > 0) forwarding_rate(events);
  const char* names[] = {"A no reader", "B dashboard, no client", "C dashboard, 10 clients"};
  std::vector<double> cpu[3], process[3];
  std::vector<double> c_over_b, b_over_a, process_c_over_a;
  for (int r = 0; r < repeats; ++r) {
    std::vector<setup> order = {setup::no_reader, setup::dashboard, setup::clients};
    if (r % 2) std::reverse(order.begin(), order.end());
    double round[3] = {0, 0, 0}, round_process[3] = {0, 0, 0};
    for (auto how : order) {
      auto c = replay_run(trials, how);
      auto k = static_cast<int>(how);
      round[k] = c.engine_us;
      cpu[k].push_back(c.engine_us);
      round_process[k] = c.process_us;
      process[k].push_back(c.process_us);
      fmt::print("round {} {}: engine CPU {:.1f} us/trial, process CPU {:.1f} us/trial, wall {:.2f} s{}\n", r + 1,
                 names[k], c.engine_us, c.process_us, c.wall_s,
                 how == setup::clients ? fmt::format(", {} trial events delivered", c.delivered) : std::string());
    }
    c_over_b.push_back(round[2] / round[1]);
    b_over_a.push_back(round[1] / round[0]);
    process_c_over_a.push_back(round_process[2] / round_process[0]);
  }
  for (int k = 0; k < 3; ++k) fmt::print("{}: engine CPU per trial {}\n", names[k], spread(cpu[k]));
  for (int k = 0; k < 3; ++k) fmt::print("{}: process CPU per trial {}\n", names[k], spread(process[k]));
  auto print_ratio = [](const char* what, const std::vector<double>& ratios) {
    auto [lo, hi] = std::minmax_element(ratios.begin(), ratios.end());
    fmt::print("{}: median {:+.1f}% (range {:+.1f}% to {:+.1f}%)\n", what, 100.0 * (tune::median(ratios) - 1.0),
               100.0 * (*lo - 1.0), 100.0 * (*hi - 1.0));
  };
  print_ratio("engine CPU: 10 clients add (C/B per round)", c_over_b);
  print_ratio("engine CPU: a reader of the events adds (B/A per round)", b_over_a);
  print_ratio("process CPU: the dashboard with 10 clients adds (C/A per round)", process_c_over_a);
}
