// tune::serve_dashboard and the dashboard a session serves during its run:
// options checked, then the dashboard library serves (tune/dashboard/server.hpp).
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <thread>

#include "dashboard_detail.hpp"
#include "report_detail.hpp"

namespace tune {
void serve_dashboard(const dashboard_options& o) {
  auto name = [&](const char* field) { return detail::option_name(o.option_names, field); };
  if (o.client_queue < 2) throw input_error(name("client_queue") + ": must be at least 2 messages");
  dashboard::server_options so;
  so.listen = o.listen;
  so.listen_option = name("listen");
  so.token_option = name("token");
  so.events_option = name("events");
  so.databases_option = name("databases");
  so.event_endpoints = o.events;
  so.databases = o.databases;
  so.token = o.token;
  so.client_queue = o.client_queue;
  std::unique_ptr<dashboard::server> board;
  try {
    board = std::make_unique<dashboard::server>(so);
  } catch (const std::invalid_argument& e) {
    throw input_error(e.what());
  }
  for (const auto& warning : board->warnings()) {
    if (o.on_warning)
      o.on_warning(warning);
    else
      std::fprintf(stderr, "dashboard: warning: %s\n", warning.c_str());
  }
  board->start();
  if (o.on_listening) o.on_listening(board->url());
  while (!o.stop.stop_requested()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  board->stop();
}

namespace detail {

std::unique_ptr<dashboard::server> make_session_dashboard(const session_options& o) {
  if (o.dashboard_listen.empty()) {
    if (!o.dashboard_token.empty())
      throw input_error(option_name(o, "dashboard_token") + ": applies with " + option_name(o, "dashboard_listen") +
                        " only");
    return nullptr;
  }
  dashboard::server_options so;
  so.listen = o.dashboard_listen;
  so.listen_option = option_name(o, "dashboard_listen");
  so.token = o.dashboard_token;
  so.token_option = option_name(o, "dashboard_token");
  so.events_option = option_name(o, "publish_endpoint");
  so.databases_option = option_name(o, "db_path");
  if (!o.db_path.empty()) so.databases.push_back(o.db_path);
  // The database is created by the run; until then there is nothing to read.
  std::unique_ptr<dashboard::server> board;
  try {
    auto databases = so.databases;
    so.databases.clear();
    board = std::make_unique<dashboard::server>(so);
    board->add_databases(databases);
  } catch (const std::invalid_argument& e) {
    throw input_error(e.what());  // names listen_option
  }
  for (const auto& warning : board->warnings()) std::fprintf(stderr, "dashboard: warning: %s\n", warning.c_str());
  return board;
}

void start_session_dashboard(dashboard::server& board, const std::string& events_endpoint, const session_options& o) {
  board.add_event_endpoint(events_endpoint);
  board.start();
  if (o.on_dashboard) o.on_dashboard(board.url());
}

void finish_session_dashboard(dashboard::server& board) {
  board.wait_until([](const dashboard::server_statistics& s) { return s.runs_finished > 0 && s.queued == 0; },
                   std::chrono::seconds(2));
  board.stop();
}

void finish_model_dashboard(dashboard::server& board) {
  board.wait_until([](const dashboard::server_statistics& s) { return s.models_finished > 0 && s.queued == 0; },
                   std::chrono::seconds(2));
  board.stop();
}

}  // namespace detail
}  // namespace tune
