#include "tune/dashboard/server.hpp"

// <utility> before Asio: with -std=c++20 its coroutine support needs it.
#include <fcntl.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>

#include "assets.hpp"
#include "outbox.hpp"
#include "runs_json.hpp"
#include "tune/storage/event_stream.hpp"
#include "tune/storage/loopback.hpp"
#include "tune/storage/results_db.hpp"

namespace tune::dashboard {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = net::ip::tcp;

namespace {

constexpr const char* server_name = "tune-engine dashboard";

/// Compares without stopping at the first difference, so the time taken
/// does not tell how much of a guess was right.
bool same_secret(std::string_view given, std::string_view expected) {
  unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (std::size_t i = 0; i < given.size(); ++i)
    diff |= static_cast<unsigned char>(given[i] ^ expected[i % std::max<std::size_t>(expected.size(), 1)]);
  return diff == 0;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// The value of `name` in the target's query string, percent-decoded.
std::optional<std::string> query_value(std::string_view target, std::string_view name) {
  auto q = target.find('?');
  if (q == std::string_view::npos) return std::nullopt;
  std::string_view query = target.substr(q + 1);
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view item = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    auto eq = item.find('=');
    if (item.substr(0, eq) != name) continue;
    std::string value;
    std::string_view raw = eq == std::string_view::npos ? std::string_view() : item.substr(eq + 1);
    for (std::size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '%' && i + 2 < raw.size() + 0 && hex_digit(raw[i + 1]) >= 0 && hex_digit(raw[i + 2]) >= 0) {
        value.push_back(static_cast<char>(hex_digit(raw[i + 1]) * 16 + hex_digit(raw[i + 2])));
        i += 2;
      } else {
        value.push_back(raw[i] == '+' ? ' ' : raw[i]);
      }
    }
    return value;
  }
  return std::nullopt;
}

/// A compiler or kernel worker started by the run in this process must not
/// inherit the server's sockets (it would keep the port and connections open).
void close_on_exec(int fd) { ::fcntl(fd, F_SETFD, ::fcntl(fd, F_GETFD) | FD_CLOEXEC); }

std::string_view as_std(beast::string_view text) { return {text.data(), text.size()}; }

std::string_view path_of(beast::string_view target) { return as_std(target).substr(0, as_std(target).find('?')); }

using response = http::response<http::string_body>;

response make_response(unsigned version, bool keep_alive, http::status status, std::string_view content_type,
                       std::string body) {
  response res{status, version};
  res.set(http::field::server, server_name);
  res.set(http::field::content_type, beast::string_view(content_type.data(), content_type.size()));
  res.set("X-Content-Type-Options", "nosniff");
  res.set(http::field::cache_control, "no-store");
  res.keep_alive(keep_alive);
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

response text_response(unsigned version, http::status status, std::string body) {
  return make_response(version, false, status, "text/plain; charset=utf-8", std::move(body) + "\n");
}

}  // namespace

class ws_session;

struct server::impl {
  server_options options;
  storage::host_port address;
  std::vector<std::string> warnings;
  // Both are destroyed when the server stops: the handlers still held by
  // the io_context own the connections, so every socket closes then.
  std::optional<net::io_context> io{std::in_place, 1};
  std::optional<tcp::acceptor> acceptor{std::in_place, *io};
  std::thread io_thread;
  std::vector<std::thread> subscriber_threads;
  std::uint16_t port = 0;
  std::atomic<bool> stopping{false};
  std::mutex lifecycle;
  bool started = false;
  bool stopped = false;

  // Touched on the server thread only.
  std::set<std::shared_ptr<ws_session>> clients;
  struct source_state {
    std::string endpoint;
    nlohmann::json run_started, progress, run_finished;
    std::optional<std::size_t> db;
    /// The model run on this stream: its model_progress events so far, the
    /// first one dropped past max_model_events (a page that connects late
    /// draws the model's latency from them).
    std::deque<nlohmann::json> model;
  };
  static constexpr std::size_t max_model_events = 4096;
  std::vector<source_state> sources;

  std::atomic<std::size_t> client_count{0};
  std::atomic<std::uint64_t> events{0}, sent{0}, frames{0}, dropped{0}, coalesced{0}, queued{0}, runs_finished{0},
      models_finished{0};

  bool authorized(const http::request<http::string_body>& req) const {
    if (options.token.empty()) return true;
    if (auto given = query_value(as_std(req.target()), "token"); given && same_secret(*given, options.token))
      return true;
    auto header = req[http::field::authorization];
    constexpr std::string_view bearer = "Bearer ";
    return header.size() > bearer.size() && as_std(header).substr(0, bearer.size()) == bearer &&
           same_secret(as_std(header).substr(bearer.size()), options.token);
  }

  void accept();
  void on_event(const shared_text& text, const std::string& type, const nlohmann::json& event, std::size_t source);
  nlohmann::json hello() const;
  nlohmann::json status() const;
  response handle(const http::request<http::string_body>& req);
  void forward(const nlohmann::json& event, std::size_t source);
  void subscribe(std::size_t source);
};

// ---- one WebSocket client ---------------------------------------------------

class ws_session : public std::enable_shared_from_this<ws_session> {
 public:
  ws_session(tcp::socket&& socket, server::impl* server)
      : ws_(std::move(socket)),
        server_(server),
        outbox_(server->options.client_queue),
        flush_timer_(ws_.get_executor()) {}

  void run(http::request<http::string_body> req) {
    if (server_->options.socket_send_buffer > 0) {
      boost::system::error_code ignored;
      beast::get_lowest_layer(ws_).socket().set_option(
          net::socket_base::send_buffer_size(server_->options.socket_send_buffer), ignored);
    }
    ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
    ws_.set_option(websocket::stream_base::decorator(
        [](websocket::response_type& res) { res.set(http::field::server, server_name); }));
    ws_.async_accept(req, [self = shared_from_this()](beast::error_code ec) { self->on_accept(ec); });
  }

  void deliver(const shared_text& text, message_kind kind) {
    if (closed_) return;
    auto before = pending();
    auto dropped_before = outbox_.dropped();
    auto coalesced_before = outbox_.coalesced();
    outbox_.push(text, kind);
    server_->dropped += outbox_.dropped() - dropped_before;
    server_->coalesced += outbox_.coalesced() - coalesced_before;
    account(before);
    schedule_write();
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    flush_timer_.cancel();
    server_->queued -= pending();
    boost::system::error_code ignored;
    beast::get_lowest_layer(ws_).socket().close(ignored);
    if (server_->clients.erase(shared_from_this()) > 0) --server_->client_count;
  }

 private:
  std::uint64_t pending() const { return outbox_.size() + writing_.size(); }
  void account(std::uint64_t before) {
    auto after = pending();
    if (after >= before)
      server_->queued += after - before;
    else
      server_->queued -= before - after;
  }

  void on_accept(beast::error_code ec) {
    if (ec) return;  // Beast has answered the bad handshake (400 or 426)
    if (server_->stopping) return;
    server_->clients.insert(shared_from_this());
    ++server_->client_count;
    deliver(std::make_shared<const std::string>(server_->hello().dump()), message_kind::other);
    read();
  }

  /// Reads (and ignores) what the browser sends, so pings and the closing
  /// handshake are answered and a gone client is noticed.
  void read() {
    ws_.async_read(input_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) return self->close();
      self->input_.consume(self->input_.size());
      self->read();
    });
  }

  /// Writes now when the last frame started at least flush_interval ago,
  /// else once it has (a timer, armed once for whatever arrives meanwhile).
  void schedule_write() {
    if (!writing_.empty() || timer_armed_ || closed_ || !outbox_.ready()) return;
    auto due = last_frame_ + server_->options.flush_interval;
    if (std::chrono::steady_clock::now() >= due) return write_next();
    timer_armed_ = true;
    flush_timer_.expires_at(due);
    flush_timer_.async_wait([self = shared_from_this()](beast::error_code) {
      self->timer_armed_ = false;
      self->write_next();
    });
  }

  /// One frame of every queued message (up to max_frame_bytes), one per line.
  void write_next() {
    if (!writing_.empty() || closed_) return;
    auto before = pending();
    std::size_t bytes = 0;
    const auto limit = server_->options.max_frame_bytes;
    while (writing_.empty() || bytes + outbox_.front_size() + 1 <= limit) {
      auto text = outbox_.next();
      if (!text) break;
      bytes += text->size() + 1;
      writing_.push_back(std::move(text));
    }
    account(before);
    if (writing_.empty()) return;
    frame_.clear();
    for (std::size_t i = 0; i < writing_.size(); ++i) {
      if (i > 0) frame_.push_back(net::buffer(newline, 1));
      frame_.push_back(net::buffer(*writing_[i]));
    }
    last_frame_ = std::chrono::steady_clock::now();
    ws_.text(true);
    ws_.async_write(frame_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (self->closed_) return self->writing_.clear();  // close() has taken them off the count
      auto before = self->pending();
      auto messages = self->writing_.size();
      self->writing_.clear();
      self->account(before);
      if (ec) return self->close();
      ++self->server_->frames;  // before sent: a reader that sees the messages sees their frame
      self->server_->sent += messages;
      self->schedule_write();
    });
  }

  static constexpr char newline[] = "\n";

  websocket::stream<beast::tcp_stream> ws_;
  server::impl* server_;
  outbox outbox_;
  std::vector<shared_text> writing_;  ///< the messages of the frame being written
  std::vector<net::const_buffer> frame_;
  net::steady_timer flush_timer_;
  bool timer_armed_ = false;
  std::chrono::steady_clock::time_point last_frame_{};
  beast::flat_buffer input_;
  bool closed_ = false;
};

// ---- one HTTP connection ------------------------------------------------------

class http_session : public std::enable_shared_from_this<http_session> {
 public:
  http_session(tcp::socket&& socket, server::impl* server) : stream_(std::move(socket)), server_(server) {}

  void read() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(server_->options.max_header_bytes));
    parser_->body_limit(64 * 1024);
    stream_.expires_after(std::chrono::seconds(30));
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
  }

 private:
  void on_read(beast::error_code ec) {
    if (ec == http::error::header_limit)
      return send(
          text_response(11, http::status::request_header_fields_too_large,
                        "request header larger than " + std::to_string(server_->options.max_header_bytes) + " bytes"));
    if (ec == http::error::body_limit)
      return send(text_response(11, http::status::payload_too_large, "request body too large"));
    if (ec && ec.category() == http::make_error_code(http::error::bad_target).category() &&
        ec != http::error::end_of_stream && ec != http::error::partial_message)
      return send(text_response(11, http::status::bad_request, "malformed HTTP request: " + ec.message()));
    if (ec) return shutdown();

    auto req = parser_->release();
    if (path_of(req.target()) == "/ws") {
      if (!server_->authorized(req))
        return send(
            text_response(req.version(), http::status::unauthorized, "this dashboard needs its token: ?token=T"));
      if (!websocket::is_upgrade(req)) {
        auto res = text_response(req.version(), http::status::upgrade_required, "/ws is a WebSocket");
        res.set(http::field::upgrade, "websocket");
        return send(std::move(res));
      }
      stream_.expires_never();
      std::make_shared<ws_session>(stream_.release_socket(), server_)->run(std::move(req));
      return;
    }
    send(server_->handle(req));
  }

  void send(response res) {
    auto shared = std::make_shared<response>(std::move(res));
    bool close = !shared->keep_alive();
    http::async_write(stream_, *shared, [self = shared_from_this(), shared, close](beast::error_code ec, std::size_t) {
      if (ec || close) return self->shutdown();
      self->read();
    });
  }

  void shutdown() {
    boost::system::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    // Read what the client still sends (an oversized header's rest) until it
    // closes: closing with unread bytes would reset the connection and could
    // discard the answer before the client reads it.
    stream_.expires_after(std::chrono::seconds(5));
    discard();
  }

  void discard() {
    buffer_.consume(buffer_.size());
    stream_.async_read_some(buffer_.prepare(4096), [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (!ec) self->discard();
    });
  }

  beast::tcp_stream stream_;
  server::impl* server_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
};

// ---- the server ----------------------------------------------------------------

void server::impl::accept() {
  acceptor->async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (ec) {
      if (ec == net::error::operation_aborted || !acceptor->is_open()) return;
    } else {
      close_on_exec(socket.native_handle());
      std::make_shared<http_session>(std::move(socket), this)->read();
    }
    accept();
  });
}

nlohmann::json server::impl::hello() const {
  nlohmann::json list = nlohmann::json::array();
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const auto& s = sources[i];
    list.push_back({{"source", i},
                    {"endpoint", s.endpoint},
                    {"run_started", s.run_started},
                    {"progress", s.progress},
                    {"run_finished", s.run_finished},
                    {"model", nlohmann::json(s.model)},
                    {"db", s.db ? nlohmann::json(*s.db) : nlohmann::json(nullptr)}});
  }
  return {{"type", "hello"},
          {"schema", storage::event_schema_version},
          {"sources", std::move(list)},
          {"databases", options.databases},
          {"client_queue", options.client_queue}};
}

nlohmann::json server::impl::status() const {
  nlohmann::json endpoints = nlohmann::json::array();
  for (const auto& s : sources) endpoints.push_back(s.endpoint);
  return {{"sources", endpoints},
          {"databases", options.databases},
          {"clients", client_count.load()},
          {"events", events.load()},
          {"sent", sent.load()},
          {"frames", frames.load()},
          {"dropped", dropped.load()},
          {"coalesced", coalesced.load()}};
}

void server::impl::on_event(const shared_text& text, const std::string& type, const nlohmann::json& event,
                            std::size_t source) {
  if (source >= sources.size()) sources.resize(source + 1);
  auto& s = sources[source];
  if (type == "run_started") {
    s.run_started = event;
    s.progress = nullptr;
    s.run_finished = nullptr;
    s.db.reset();
    if (event.contains("db") && event["db"].is_number_unsigned()) s.db = event["db"].get<std::size_t>();
  } else if (type == "progress") {
    s.progress = event;
  } else if (type == "run_finished") {
    s.run_finished = event;
    ++runs_finished;
  } else if (type == "model_progress") {
    // A model's last event has its end reason: what comes after it is another model run's.
    if (!s.model.empty() && !s.model.back()["reason"].is_null()) s.model.clear();
    s.model.push_back(event);
    if (s.model.size() > max_model_events) s.model.pop_front();
    if (!event["reason"].is_null()) ++models_finished;
  }
  auto kind = kind_of(type);
  for (const auto& client : std::vector<std::shared_ptr<ws_session>>(clients.begin(), clients.end()))
    client->deliver(text, kind);
}

void server::impl::forward(const nlohmann::json& event, std::size_t source) {
  if (stopping) return;
  auto type = event.contains("type") && event["type"].is_string() ? event["type"].get<std::string>() : std::string();
  auto enriched = event;
  enriched["source"] = source;
  if (type == "run_started") {
    // Which database holds the run, so the page can catch up from it.
    std::optional<std::size_t> db;
    try {
      db = find_database(options.databases, event.value("run_id", std::int64_t{0}), event.value("task", ""));
    } catch (const std::exception&) {
      // A database that cannot be read now is one the page cannot catch up from.
    }
    enriched["db"] = db ? nlohmann::json(*db) : nlohmann::json(nullptr);
  }
  auto text = std::make_shared<const std::string>(enriched.dump());
  // Only the events the hello message repeats are kept whole.
  nlohmann::json kept = kind_of(type) == message_kind::trial ? nlohmann::json() : std::move(enriched);
  ++events;
  net::post(*io, [this, text, type = std::move(type), kept = std::move(kept), source] {
    on_event(text, type, kept, source);
  });
}

void server::impl::subscribe(std::size_t source) {
  try {
    storage::event_subscriber subscriber(options.event_endpoints[source]);
    while (!stopping) {
      if (auto event = subscriber.receive(std::chrono::milliseconds(100))) forward(*event, source);
    }
  } catch (const std::exception&) {
    // The endpoint was checked when the server was made; a ZeroMQ failure
    // later leaves this source silent rather than ending the server.
  }
}

response server::impl::handle(const http::request<http::string_body>& req) {
  const auto version = req.version();
  const bool keep_alive = req.keep_alive();
  if (req.method() != http::verb::get && req.method() != http::verb::head) {
    auto res = text_response(version, http::status::method_not_allowed, "only GET and HEAD");
    res.set(http::field::allow, "GET, HEAD");
    return res;
  }
  auto path = path_of(req.target());
  auto reply = [&](http::status status, std::string_view type, std::string body) {
    auto res = make_response(version, keep_alive, status, type, std::move(body));
    if (req.method() == http::verb::head) {
      auto length = res.body().size();
      res.body().clear();
      res.content_length(length);
    }
    return res;
  };
  auto json_reply = [&](const nlohmann::json& value) {
    return reply(http::status::ok, "application/json", value.dump());
  };
  auto unauthorized = [&] {
    return text_response(version, http::status::unauthorized,
                         "this dashboard needs its token: open the address it printed when it started (…?token=T)");
  };

  if (path == "/" || path == "/index.html") {
    if (!authorized(req)) return unauthorized();
    auto page = reply(http::status::ok, "text/html; charset=utf-8", std::string(find_asset("/index.html")->body));
    // Run data is only ever put on the page as text; this forbids any
    // script but the page's own should that ever fail.
    page.set("Content-Security-Policy",
             "default-src 'self'; script-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:; "
             "style-src 'self' 'unsafe-inline'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'");
    return page;
  }
  if (path != "/index.html")
    if (const auto* a = find_asset(path)) return reply(http::status::ok, a->content_type, std::string(a->body));
  if (path.substr(0, 5) == "/api/") {
    if (!authorized(req)) return unauthorized();
    try {
      if (path == "/api/status") return json_reply(status());
      if (path == "/api/live") return json_reply(hello());
      if (path == "/api/runs") return json_reply(list_runs(options.databases));
      constexpr std::string_view prefix = "/api/runs/";
      if (path.substr(0, prefix.size()) == prefix) {
        auto rest = std::string(path.substr(prefix.size()));
        auto slash = rest.find('/');
        std::size_t db = 0;
        long long id = 0;
        std::size_t used_db = 0, used_id = 0;
        try {
          db = std::stoul(rest.substr(0, slash), &used_db);
          id = slash == std::string::npos ? 0 : std::stoll(rest.substr(slash + 1), &used_id);
        } catch (const std::exception&) {
          used_db = 0;
        }
        if (slash == std::string::npos || used_db != slash || used_id != rest.size() - slash - 1)
          return text_response(version, http::status::bad_request, "expected /api/runs/DATABASE/RUN (two numbers)");
        if (auto details = run_details(options.databases, db, id)) return json_reply(*details);
        return text_response(version, http::status::not_found,
                             "no run " + std::to_string(id) + " in database " + std::to_string(db));
      }
    } catch (const std::exception& e) {
      return text_response(version, http::status::internal_server_error, std::string("cannot read: ") + e.what());
    }
  }
  return text_response(version, http::status::not_found, "no such page: " + std::string(path));
}

server::server(server_options options) : impl_(std::make_shared<impl>()) {
  auto& s = *impl_;
  s.options = std::move(options);
  const auto& option = s.options.listen_option;
  s.address = storage::parse_host_port(s.options.listen, option, "127.0.0.1:8080");
  if (s.options.client_queue < 2) throw std::invalid_argument("client_queue must be at least 2 messages");
  if (s.options.flush_interval.count() < 0) throw std::invalid_argument("flush_interval must be >= 0 ms");
  if (s.options.max_frame_bytes == 0) throw std::invalid_argument("max_frame_bytes must be at least 1");
  for (const auto& endpoint : s.options.event_endpoints) {
    try {
      storage::check_endpoint(endpoint);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(s.options.events_option + ": " + e.what());
    }
    s.sources.push_back({endpoint, nullptr, nullptr, nullptr, std::nullopt});
  }
  for (const auto& db : s.options.databases) {
    try {
      storage::results_db check(db, storage::results_db::open_mode::read_only);
    } catch (const std::exception& e) {
      throw std::invalid_argument(s.options.databases_option + " " + db + ": " + e.what());
    }
  }
  boost::system::error_code ec;
  auto address = net::ip::make_address(s.address.host == "localhost" ? "127.0.0.1" : s.address.host, ec);
  if (ec)
    throw std::invalid_argument(option + " " + s.options.listen + ": '" + s.address.host +
                                "' is not an IP address (use 127.0.0.1, ::1, 0.0.0.0 or this machine's address)");
  tcp::endpoint endpoint(address, s.address.port);
  s.acceptor->open(endpoint.protocol(), ec);
  if (!ec) s.acceptor->set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) s.acceptor->bind(endpoint, ec);
  if (!ec) s.acceptor->listen(net::socket_base::max_listen_connections, ec);
  if (ec) throw std::invalid_argument(option + " " + s.options.listen + ": cannot listen there: " + ec.message());
  close_on_exec(s.acceptor->native_handle());
  s.port = s.acceptor->local_endpoint().port();
  if (!storage::is_loopback_host(s.address.host) && s.options.token.empty())
    s.warnings.push_back("listening on " + s.options.listen +
                         ", off loopback, with no authentication: anyone who reaches this address sees the runs; "
                         "set a token (" +
                         s.options.token_option + ") or listen on 127.0.0.1");
}

server::~server() { stop(); }

std::uint16_t server::port() const { return impl_->port; }

std::string server::url() const {
  auto host = impl_->address.host;
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  std::string url = "http://" + host + ":" + std::to_string(port()) + "/";
  if (!impl_->options.token.empty()) url += "?token=" + impl_->options.token;
  return url;
}

const std::vector<std::string>& server::warnings() const { return impl_->warnings; }

void server::add_event_endpoint(const std::string& endpoint) {
  std::lock_guard lock(impl_->lifecycle);
  if (impl_->started) throw std::logic_error("dashboard::server::add_event_endpoint: call it before start()");
  try {
    storage::check_endpoint(endpoint);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(impl_->options.events_option + ": " + e.what());
  }
  impl_->options.event_endpoints.push_back(endpoint);
  impl_->sources.push_back({endpoint, nullptr, nullptr, nullptr, std::nullopt});
}

void server::add_databases(const std::vector<std::string>& databases) {
  std::lock_guard lock(impl_->lifecycle);
  if (impl_->started) throw std::logic_error("dashboard::server::add_databases: call it before start()");
  impl_->options.databases.insert(impl_->options.databases.end(), databases.begin(), databases.end());
}

void server::start() {
  std::lock_guard lock(impl_->lifecycle);
  if (impl_->started) return;
  impl_->started = true;
  auto* s = impl_.get();
  s->accept();
  s->io_thread = std::thread([s] { s->io->run(); });
  for (std::size_t i = 0; i < s->options.event_endpoints.size(); ++i)
    s->subscriber_threads.emplace_back([s, i] { s->subscribe(i); });
}

void server::stop() {
  std::lock_guard lock(impl_->lifecycle);
  if (impl_->stopped) return;
  impl_->stopped = true;
  auto* s = impl_.get();
  s->stopping = true;
  for (auto& t : s->subscriber_threads) t.join();
  if (s->io_thread.joinable()) {
    net::post(*s->io, [s] {
      for (const auto& client : std::vector<std::shared_ptr<ws_session>>(s->clients.begin(), s->clients.end()))
        client->close();
      s->io->stop();
    });
    s->io_thread.join();
  }
  s->clients.clear();
  s->acceptor.reset();
  s->io.reset();
}

void server::forward(const nlohmann::json& event, std::size_t source) { impl_->forward(event, source); }

server_statistics server::statistics() const {
  const auto& s = *impl_;
  server_statistics st;
  st.clients = s.client_count;
  st.events = s.events;
  st.sent = s.sent;
  st.frames = s.frames;
  st.dropped = s.dropped;
  st.coalesced = s.coalesced;
  st.queued = s.queued;
  st.runs_finished = s.runs_finished;
  st.models_finished = s.models_finished;
  return st;
}

bool server::wait_until(const std::function<bool(const server_statistics&)>& done,
                        std::chrono::milliseconds timeout) const {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done(statistics())) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace tune::dashboard
