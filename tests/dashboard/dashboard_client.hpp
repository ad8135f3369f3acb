#pragma once
// A small Beast client for the dashboard's tests: HTTP requests, raw bytes
// for malformed requests, and WebSocket connections.

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace tune::test {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = net::ip::tcp;

struct http_reply {
  unsigned status = 0;
  std::string content_type;
  std::string body;
};

inline http_reply http_request(std::uint16_t port, const std::string& target, http::verb method = http::verb::get,
                               const std::vector<std::pair<std::string, std::string>>& headers = {}) {
  net::io_context io;
  beast::tcp_stream stream(io);
  stream.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
  http::request<http::string_body> req{method, target, 11};
  req.set(http::field::host, "127.0.0.1");
  for (const auto& [name, value] : headers) req.set(name, value);
  http::write(stream, req);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 * 1024 * 1024);
  if (method == http::verb::head) parser.skip(true);
  http::read(stream, buffer, parser);
  auto res = parser.release();
  return {res.result_int(), std::string(res[http::field::content_type]), res.body()};
}

/// Sends `raw` as is and returns the status of the reply (0 when none).
inline unsigned raw_request_status(std::uint16_t port, const std::string& raw) {
  net::io_context io;
  beast::tcp_stream stream(io);
  stream.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
  net::write(stream, net::buffer(raw));
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  beast::error_code ec;
  http::read(stream, buffer, res, ec);
  return ec ? 0 : res.result_int();
}

/// A WebSocket client; `receive_buffer` > 0 shrinks its kernel buffer (a
/// slow reader whose backlog must stay on the server's side).
class ws_client {
 public:
  explicit ws_client(std::uint16_t port, const std::string& target = "/ws", int receive_buffer = 0) : ws_(io_) {
    auto& socket = beast::get_lowest_layer(ws_).socket();
    socket.open(tcp::v4());
    if (receive_buffer > 0) socket.set_option(net::socket_base::receive_buffer_size(receive_buffer));
    beast::get_lowest_layer(ws_).connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
    ws_.handshake(response_, "127.0.0.1:" + std::to_string(port), target);
  }
  nlohmann::json receive() { return nlohmann::json::parse(receive_text()); }

  /// The next message as received: a frame holds one or more, one per line.
  std::string receive_text() {
    while (lines_.empty()) {
      buffer_.consume(buffer_.size());
      ws_.read(buffer_);
      ++frames_;
      auto frame = beast::buffers_to_string(buffer_.data());
      std::size_t begin = 0;
      for (auto end = frame.find('\n'); end != std::string::npos; begin = end + 1, end = frame.find('\n', begin))
        lines_.push_back(frame.substr(begin, end - begin));
      lines_.push_back(frame.substr(begin));
    }
    auto line = std::move(lines_.front());
    lines_.pop_front();
    return line;
  }

  /// WebSocket frames read so far.
  std::uint64_t frames() const { return frames_; }

 private:
  net::io_context io_;
  websocket::stream<beast::tcp_stream> ws_;
  websocket::response_type response_;
  beast::flat_buffer buffer_;
  std::deque<std::string> lines_;
  std::uint64_t frames_ = 0;
};

}  // namespace tune::test
