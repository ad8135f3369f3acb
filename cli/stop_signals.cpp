// SIGINT and SIGTERM for the long-running commands (tune, evolve, node): the
// handler requests a stop_source, one atomic store, and the run drains and
// ends resumable.
#include <csignal>

#include "commands.hpp"

namespace tune::cli {
namespace {

const stop_source* active_stop = nullptr;

extern "C" void on_stop_signal(int) {
  if (active_stop) active_stop->request_stop();
}

}  // namespace

void with_stop_signals(const stop_source& stop, const std::function<void()>& body) {
  active_stop = &stop;
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  struct restore {
    ~restore() {
      std::signal(SIGINT, SIG_DFL);
      std::signal(SIGTERM, SIG_DFL);
      active_stop = nullptr;
    }
  } guard;
  body();
}

run_report run_until_signal(session& s, const stop_source& stop) {
  run_report report;
  with_stop_signals(stop, [&] { report = s.run(); });
  return report;
}

}  // namespace tune::cli
