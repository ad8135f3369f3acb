// The dashboard's cost, printed (not a test; the machine may be shared):
// 1. events per second forwarded from a ZeroMQ publisher to 10 WebSocket
//    clients on loopback;
// 2. engine CPU per trial of a replay run (GEMM RTX 3090) with no dashboard
//    and with the run's own dashboard serving 10 connected clients.
//
//   build/bench/bench_dashboard [--events N] [--trials N] [--repeats R]
// <utility> before Asio (through the client): with -std=c++20 it needs it.
// clang-format off
#include <utility>
// clang-format on

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "dashboard/dashboard_client.hpp"
#include "tune/dashboard/server.hpp"
#include "tune/storage/event_stream.hpp"
#include "tune/tune.hpp"

using namespace tune;
using namespace std::chrono_literals;

namespace {

constexpr int client_count = 10;

/// Clients that read until run_finished, counting trial events.
class client_group {
 public:
  explicit client_group(std::uint16_t port) {
    for (int i = 0; i < client_count; ++i) clients_.push_back(std::make_unique<test::ws_client>(port));
    for (auto& c : clients_) c->receive();  // hello
  }
  void start() {
    for (std::size_t i = 0; i < clients_.size(); ++i)
      threads_.emplace_back([this, i] {
        // Counted without parsing: the clients should not be what is measured.
        for (;;) {
          auto text = clients_[i]->receive_text();
          if (text.find(R"("type":"trial_finished")") != std::string::npos) ++received_;
          if (text.find(R"("type":"run_finished")") != std::string::npos) return;
        }
      });
  }
  void join() {
    for (auto& t : threads_) t.join();
  }
  std::uint64_t received() const { return received_; }

 private:
  std::vector<std::unique_ptr<test::ws_client>> clients_;
  std::vector<std::thread> threads_;
  std::atomic<std::uint64_t> received_{0};
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
  t.config = {{"MWG", 64}, {"NWG", 64}, {"KWG", 32}, {"MDIMC", 16}, {"NDIMC", 8}, {"VWM", 4}, {"VWN", 2}};
  t.status = "ok";
  t.device = "sim0";
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < events; ++i) {
    t.seq = i;
    t.time_ms = 1.0 + i % 7;
    t.elapsed_s = 1e-3 * i;
    publisher.publish(storage::make_event(t));
  }
  storage::run_finished_event f;
  f.trials = events;
  f.reason = "budget";
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
  double wall_s = 0;
  std::uint64_t delivered = 0;
};

run_cost replay_run(int trials, bool with_dashboard) {
  session_options o;
  o.dataset = std::string(TUNE_DATA_DIR) + "/datasets/gemm_clblast/RTX_3090.json.gz";
  o.time_scale = 0.001;
  o.budget = static_cast<std::uint64_t>(trials);
  o.seed = 1;
  o.strategy = "opevo";
  o.publish_endpoint = "tcp://127.0.0.1:*";  // events published in both cases
  std::unique_ptr<client_group> clients;
  if (with_dashboard) {
    o.dashboard_listen = "127.0.0.1:0";
    o.on_dashboard = [&](const std::string& url) {
      auto port = static_cast<std::uint16_t>(std::stoi(url.substr(url.rfind(':') + 1)));
      clients = std::make_unique<client_group>(port);
      clients->start();
    };
  }
  auto report = session(o).run();
  run_cost c;
  c.engine_us = report.engine_cpu_us_per_trial;
  c.wall_s = report.wall_s;
  if (clients) {
    clients->join();
    c.delivered = clients->received();
  }
  return c;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int events = 20000, trials = 1000, repeats = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--events")) events = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--trials")) trials = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--repeats")) repeats = std::atoi(argv[i + 1]);
  }
  forwarding_rate(events);
  std::vector<double> without, with;
  for (int r = 0; r < repeats; ++r) {
    auto a = replay_run(trials, false);
    auto b = replay_run(trials, true);
    without.push_back(a.engine_us);
    with.push_back(b.engine_us);
    fmt::print(
        "replay run {}: engine CPU {:.1f} us/trial without a dashboard ({:.2f} s), {:.1f} us/trial with 10 "
        "clients ({:.2f} s, {} trial events delivered)\n",
        r + 1, a.engine_us, a.wall_s, b.engine_us, b.wall_s, b.delivered);
  }
  double m0 = median(without), m1 = median(with);
  fmt::print("median engine CPU per trial: {:.1f} us without, {:.1f} us with 10 clients: {:+.1f}%\n", m0, m1,
             100.0 * (m1 / m0 - 1.0));
}
