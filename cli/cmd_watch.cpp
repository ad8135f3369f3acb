// tune-engine watch: a live terminal view of a run's event stream.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "tune/storage/event_stream.hpp"

namespace tune::cli {
namespace {

volatile std::sig_atomic_t interrupted = 0;

extern "C" void on_interrupt(int) { interrupted = 1; }

/// Ctrl-C sets a flag and interrupts the wait (no SA_RESTART), so the view
/// can end with a clean line instead of dying mid-redraw.
void catch_interrupts() {
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

struct watch_options {
  std::string endpoint = storage::default_event_endpoint;
  std::string server_key;
  bool json = false;
  double timeout_s = 0;  // 0: wait for events forever
};

std::string percent(double fraction) { return fmt::format("{:.0f}%", 100.0 * fraction); }

std::string time_text(const nlohmann::json& value) {
  return value.is_number() ? fmt::format("{:.6g} ms", value.get<double>()) : std::string("-");
}

/// Whether an event ends what is watched: a run's stream ends with its
/// run_finished; a model's (every event tagged "model"), whose rounds' runs
/// finish one after another, with its last model_progress (the one with an
/// end reason).
class stream_end {
 public:
  bool ends(const nlohmann::json& event) {
    if (event.contains("model")) model_ = true;
    const auto& type = event["type"];
    return model_ ? type == "model_progress" && event["reason"].is_string() : type == "run_finished";
  }
  /// An event tagged with "model" was seen: the stream is a model run's.
  bool model() const { return model_; }

 private:
  bool model_ = false;
};

/// Turns events into lines for a person: a status line that is redrawn in
/// place on a terminal (one line per update otherwise) and a line per new
/// best configuration.
class terminal_view {
 public:
  explicit terminal_view(bool tty) : tty_(tty) {}

  /// Returns true when the run (or the model) has finished.
  bool show(const nlohmann::json& event) {
    const std::string type = event["type"];
    const bool finished = end_.ends(event);
    if (type == "run_started") {
      const auto& topology = event["topology"];
      std::string devices = topology.contains("devices") ? std::to_string(topology["devices"].size()) : "?";
      std::string budget;
      // A model's round: its run's budget is a cap no round reaches (the model's budget counts).
      if (event["budget"]["trials"].is_number() && !end_.model())
        budget += fmt::format(", {} trials", event["budget"]["trials"].dump());
      if (event["budget"]["seconds"].is_number())
        budget += fmt::format(", {:g} s", event["budget"]["seconds"].get<double>());
      print_line(fmt::format("run {}{}: task {}, strategy {}, seed {}{}, {} device(s)", event["run_id"].dump(),
                             event["resumed"].get<bool>() ? " (resumed)" : "", event["task"].get<std::string>(),
                             event["strategy"].get<std::string>(), event["seed"].dump(), budget, devices));
      trials_ = event["recorded_trials"].get<std::int64_t>();
    } else if (type == "trial_finished") {
      ++trials_;
      elapsed_s_ = event["elapsed_s"].get<double>();
      redraw_status(false);
    } else if (type == "new_best") {
      best_ = event["time_ms"];
      print_line(fmt::format("new best {} at trial {} ({:.1f} s): {}", time_text(event["time_ms"]), event["seq"].dump(),
                             event["elapsed_s"].get<double>(), event["config"].dump()));
    } else if (type == "progress") {
      trials_ = event["trials"].get<std::int64_t>();
      rate_ = event["trials_per_s"].get<double>();
      elapsed_s_ = event["elapsed_s"].get<double>();
      if (event["best_time_ms"].is_number()) best_ = event["best_time_ms"];
      busy_ = "compile " + percent(event["busy"]["compile_pool"].get<double>());
      for (const auto& [name, fraction] : event["busy"]["devices"].items())
        busy_ += " " + name + " " + percent(fraction.get<double>());
      redraw_status(true);
    } else if (type == "run_finished") {
      print_line_last(fmt::format(
          "{} ({}): {} trials in {:.1f} s, best {}{}", end_.model() ? "round finished" : "finished",
          event["reason"].get<std::string>(), event["trials"].dump(), event["wall_s"].get<double>(),
          time_text(event["best_time_ms"]), event["best_config"].is_object() ? " " + event["best_config"].dump() : ""));
    } else if (type == "model_progress") {
      show_model(event);
    }
    return finished;
  }

  /// A model's progress: its start, a line per round, its end.
  void show_model(const nlohmann::json& event) {
    const auto& tasks = event["tasks"];
    if (event["reason"].is_string()) {
      print_line_last(fmt::format("model {} finished ({}): {} trials in {:.1f} s, latency {}",
                                  event["model"].get<std::string>(), event["reason"].get<std::string>(),
                                  event["trials"].dump(), event["wall_s"].get<double>(),
                                  time_text(event["latency_ms"])));
      for (const auto& t : tasks)
        print_line(fmt::format("  {:>8g} x {:>12}  {} trials  {} ({})", t["count"].get<double>(),
                               time_text(t["best_ms"]), t["trials"].dump(), t["target"].get<std::string>(),
                               t["label"].get<std::string>()));
      return;
    }
    if (event["task"].is_null() && !model_started_) {
      model_started_ = true;
      print_line(fmt::format("model {}: {} tasks, {} trials in all, scheduler {}, seed {}",
                             event["model"].get<std::string>(), tasks.size(), event["budget_trials"].dump(),
                             event["scheduler"].get<std::string>(), event["seed"].dump()));
      if (event["trials"].get<std::int64_t>() == 0) return;
    }
    if (event["task"].is_null()) {  // every task through one pipeline: no rounds to name
      print_line(fmt::format("model {}: {}/{} trials, latency {}", event["model"].get<std::string>(),
                             event["trials"].dump(), event["budget_trials"].dump(), time_text(event["latency_ms"])));
      return;
    }
    const auto& t = tasks[event["task"].get<std::size_t>()];
    print_line(fmt::format("model {}: {}/{} trials, latency {} after a round of {} (best {})",
                           event["model"].get<std::string>(), event["trials"].dump(), event["budget_trials"].dump(),
                           time_text(event["latency_ms"]), t["label"].get<std::string>(), time_text(t["best_ms"])));
  }

  /// Ends a status line left open on the terminal.
  void close() {
    if (status_open_) std::fputc('\n', stdout);
    status_open_ = false;
    std::fflush(stdout);
  }

 private:
  std::string status_text() const {
    return fmt::format("trials {} | {:.1f}/s | best {} | {} | {:.1f} s", trials_, rate_, time_text(best_),
                       busy_.empty() ? "busy -" : busy_, elapsed_s_);
  }

  void redraw_status(bool forced) {
    // Off a terminal only progress events print, one line each, so a log
    // stays readable; on a terminal redraw at most ten times a second.
    auto now = std::chrono::steady_clock::now();
    if (!tty_ && !forced) return;
    if (tty_ && !forced && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    if (tty_) {
      fmt::print("\r\033[K{}", status_text());
      status_open_ = true;
    } else {
      fmt::print("{}\n", status_text());
    }
    std::fflush(stdout);
  }

  /// Replaces the status line by a final line.
  void print_line_last(const std::string& line) {
    if (status_open_) fmt::print("\r\033[K");
    status_open_ = false;
    print_line(line);
  }

  void print_line(const std::string& line) {
    if (status_open_) fmt::print("\r\033[K");
    fmt::print("{}\n", line);
    if (status_open_) fmt::print("{}", status_text());
    std::fflush(stdout);
  }

  bool tty_;
  stream_end end_;
  bool status_open_ = false;
  bool model_started_ = false;  ///< the model's first event was shown
  std::int64_t trials_ = 0;
  double rate_ = 0;
  double elapsed_s_ = 0;
  nlohmann::json best_;
  std::string busy_;
  std::chrono::steady_clock::time_point last_draw_{};
};

int run_watch(const watch_options& options) {
  if (options.timeout_s < 0) throw input_error("--timeout must be >= 0 seconds (0 waits forever)");
  catch_interrupts();  // before connecting: once subscribed, a publisher may count on us
  storage::event_subscriber subscriber(
      options.endpoint,
      options.server_key.empty() ? std::string() : storage::read_curve_key(options.server_key, "--server-key"));
  subscriber.on_warning([](const std::string& warning) { fmt::print(stderr, "tune-engine watch: {}\n", warning); });
  if (!options.json) fmt::print(stderr, "watching {} (Ctrl-C to stop)\n", options.endpoint);

  terminal_view view(isatty(fileno(stdout)) != 0);
  const auto poll = std::chrono::milliseconds(200);
  auto last_event = std::chrono::steady_clock::now();
  stream_end end;  // for --json; the view keeps its own
  while (!interrupted) {
    auto event = subscriber.receive(poll);
    if (!event) {
      auto quiet = std::chrono::duration<double>(std::chrono::steady_clock::now() - last_event).count();
      if (options.timeout_s > 0 && quiet >= options.timeout_s) {
        view.close();
        fmt::print(stderr, "tune-engine watch: no event from {} for {:g} s; giving up\n", options.endpoint,
                   options.timeout_s);
        return exit_failure;
      }
      continue;
    }
    last_event = std::chrono::steady_clock::now();
    bool finished = false;
    if (options.json) {
      fmt::print("{}\n", event->dump());
      std::fflush(stdout);
      finished = end.ends(*event);
    } else {
      finished = view.show(*event);
    }
    if (finished) {
      view.close();
      return exit_ok;
    }
  }
  view.close();
  return 130;  // the shell's code for a run ended by Ctrl-C
}

}  // namespace

void add_watch_command(CLI::App& app, command_list& commands) {
  auto options = std::make_shared<watch_options>();
  auto* sub = app.add_subcommand(
      "watch",
      "Show a run's live progress from its event stream (ZeroMQ); a model run's (tune --model) until the model ends");
  sub->add_option("endpoint", options->endpoint, "Event stream to subscribe to")->capture_default_str();
  sub->add_option("--server-key", options->server_key,
                  "The publisher's CURVE public key (events.pub from 'tune-engine keys', or the key) for a stream off "
                  "loopback");
  sub->add_flag("--json", options->json, "Print each event as one line of JSON instead of the live view");
  sub->add_option("--timeout", options->timeout_s, "Give up after this many seconds without an event (0: never)")
      ->capture_default_str();
  commands.emplace_back(sub, [options] { return run_watch(*options); });
}

}  // namespace tune::cli
