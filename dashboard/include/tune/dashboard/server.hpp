#pragma once
// The live web dashboard: an HTTP + WebSocket server (Boost.Beast on one
// Boost.Asio thread) that reads runs, never takes part in them.
//
//   event_publisher ══ZeroMQ══> subscriber thread (one per endpoint) ──forward()──┐
//                                                                                  v
//   browser <══WebSocket══ client session <── outbox (bounded, progress coalesced) ┘
//   browser ──HTTP GET────> page, app.js, style.css, chart.js (embedded at build time)
//                           /api/runs, /api/runs/DB/ID  <── results_db (read-only)
//
// A slow or stalled browser never slows the run or the other browsers: the
// subscriber threads hand events over without waiting, each client has its
// own outbox of at most `client_queue` messages, a newer `progress` replaces
// one still queued, and what does not fit is dropped and counted; the client
// is told how many with a {"type":"dropped"} message once its outbox has
// room again (the page then reloads the run from the database). A client gets
// at most one frame per `flush_interval`, holding every message queued by
// then, one JSON object per line.
//
// Routes (GET/HEAD only; docs/dashboard.md):
//   /               the page            /app.js /style.css /chart.js  its assets
//   /api/status     sources, clients, forwarded and dropped counts
//   /api/live       what a WebSocket's "hello" holds: each source's latest run
//   /api/runs       every run of every database
//   /api/runs/D/I   run I of database D: options, trials, status counts
//   /ws             WebSocket: a "hello" with each source's latest run, then the events
// With a token, the page, /api/* and /ws need ?token=T (or
// "Authorization: Bearer T"); the assets do not (they hold no run data).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tune::dashboard {

struct server_options {
  /// HOST:PORT to listen on; port 0 picks a free one (see server::port()).
  std::string listen = "127.0.0.1:8080";
  /// What the person starting the server called `listen`, `token`,
  /// `event_endpoints` and `databases`: the names its messages give them
  /// (e.g. "--dashboard" for `tune --dashboard`).
  std::string listen_option = "--listen";
  std::string token_option = "--token";
  std::string events_option = "--events";
  std::string databases_option = "--db";
  /// ZeroMQ endpoints of runs' event streams, each subscribed by its own thread.
  std::vector<std::string> event_endpoints;
  /// Results databases whose runs the page lists and catches up from.
  std::vector<std::string> databases;
  /// When not empty: required on the page, /api/* and /ws.
  std::string token;
  /// Messages a client's outbox holds before events are dropped.
  std::size_t client_queue = 1024;
  /// Largest request header accepted (larger: 431).
  std::size_t max_header_bytes = 8192;
  /// Kernel send buffer of each WebSocket (bytes; 0: the system's default).
  int socket_send_buffer = 64 * 1024;
  /// A client gets at most one WebSocket frame per interval: the events that
  /// arrive in between go together, one JSON object per line, so a fast run
  /// costs a frame per interval per client instead of one per event. 0: a
  /// frame as soon as the previous one is written (still holding every event
  /// queued by then).
  std::chrono::milliseconds flush_interval{50};
  /// Largest frame (bytes of events; a single larger event goes alone).
  std::size_t max_frame_bytes = 1 << 20;
};

/// Counters since the server started.
struct server_statistics {
  std::size_t clients = 0;            ///< WebSocket clients connected now
  std::uint64_t events = 0;           ///< events handed to forward()
  std::uint64_t sent = 0;             ///< messages written to clients (all clients together)
  std::uint64_t frames = 0;           ///< WebSocket frames they went in (several messages per frame)
  std::uint64_t dropped = 0;          ///< messages dropped from outboxes (all clients together)
  std::uint64_t coalesced = 0;        ///< progress events replaced by a newer one before being sent
  std::uint64_t queued = 0;           ///< messages waiting in outboxes or being written now
  std::uint64_t runs_finished = 0;    ///< run_finished events forwarded
  std::uint64_t models_finished = 0;  ///< model_progress events with an end reason forwarded
};

class server {
 public:
  /// Checks the options and binds the listening socket (nothing is served
  /// before start()). Throws std::invalid_argument naming the option and the
  /// fix: a malformed listen address or endpoint, a port in use, a database
  /// that cannot be opened.
  explicit server(server_options options);
  /// Stops if still running.
  ~server();
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  /// The bound port (the actual one when 0 was asked for).
  std::uint16_t port() const;
  /// http://HOST:PORT/ (with ?token=… when a token is set).
  std::string url() const;
  /// Warnings about the options for the person starting it, e.g. listening
  /// off loopback without a token.
  const std::vector<std::string>& warnings() const;

  /// Before start(): subscribes to one more event stream (a run's endpoint
  /// known only once its publisher is bound). Throws std::invalid_argument
  /// for a malformed endpoint.
  void add_event_endpoint(const std::string& endpoint);
  /// Before start(): databases read on request only, not checked now (a
  /// run creates its database after the server is made).
  void add_databases(const std::vector<std::string>& databases);

  /// Starts the server thread and one subscriber thread per event endpoint.
  void start();
  /// Closes every connection and joins the threads. Idempotent.
  void stop();

  /// Hands one event to every connected client (what the subscriber threads
  /// do with each event they receive; `source` is the endpoint's index, added
  /// to the event as "source"). Thread-safe; never blocks on a client.
  void forward(const nlohmann::json& event, std::size_t source = 0);

  server_statistics statistics() const;
  /// Waits until `done(statistics())` holds or `timeout` passes; returns
  /// whether it held.
  bool wait_until(const std::function<bool(const server_statistics&)>& done, std::chrono::milliseconds timeout) const;

 private:
  friend class ws_session;
  friend class http_session;
  struct impl;
  std::shared_ptr<impl> impl_;
};

}  // namespace tune::dashboard
