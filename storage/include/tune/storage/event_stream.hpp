#pragma once
// The live event stream of a run: JSON objects on a ZeroMQ PUB socket, one
// per message, for `tune-engine watch`, dashboards and tests.
//
//   run_recorder ──make_event(…)──> event_publisher (XPUB, bind) ══tcp══> event_subscriber (SUB, connect)
//   (the population hands every trial and progress report to its recorder)
//
// Every event has "type" and "schema" (= event_schema_version); the fields of
// each type are documented in docs/events.md. Publishing never blocks the
// engine: a subscriber that falls more than the high-water mark behind loses
// events (ZeroMQ PUB semantics).
//
// Slow joiner: a subscriber that connects receives only what is published
// after its subscription reached the publisher. The publisher is an XPUB
// socket, so it sees subscriptions arrive: wait_for_subscribers() lets a
// caller hold the first event until n subscribers are there (or a timeout
// passes) instead of sleeping and hoping.
//
// Sockets are not thread-safe: use each publisher/subscriber from one thread
// at a time.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tune/engine/end_reason.hpp"
#include "tune/storage/results_db.hpp"

namespace tune::storage {

/// 2: run_finished.reason is an end reason (tune::to_string(end_reason): a
/// stopped run says "stopped", not "interrupted"; a broken one "failed", not
/// "error"), and trial_finished says reused_from_run (a run id or null)
/// instead of the flag "cached".
constexpr int event_schema_version = 2;
constexpr const char* default_event_endpoint = "tcp://127.0.0.1:5556";

// ---- events ---------------------------------------------------------------

struct run_started_event {
  std::int64_t run_id = 0;
  std::string task;
  std::string strategy;
  std::uint64_t seed = 0;
  std::optional<std::int64_t> budget_trials;           ///< trial budget, if any
  std::optional<double> budget_seconds;                ///< time budget, if any
  nlohmann::json topology = nlohmann::json::object();  ///< topology::summary()
  bool resumed = false;                                ///< continues an earlier run
  std::int64_t recorded_trials = 0;                    ///< trials already in the DB when resumed
};

/// A trial as the results database recorded it (its seq, configuration
/// text, status, time, compile and run seconds, device, reused_from_run).
struct trial_finished_event {
  trial_record trial;
  double elapsed_s = 0.0;  ///< backend seconds since the run started (simulated for replay)
  /// Wall-clock seconds from the run's start in its database to this trial's
  /// (trials.finished_at - runs.started_at); absent when unknown.
  std::optional<double> wall_elapsed_s;
};

/// A device's drift probe left its noise band: the trials measured since its
/// last probe in the band are suspect (the ones after are flagged as they
/// come, trial_finished.drift_flagged).
struct drift_event {
  std::string device;
  double baseline_ms = 0.0;           ///< the probe's time at the start of the run
  double band = 0.0;                  ///< relative half-width of its noise band
  double ratio = 1.0;                 ///< the furthest probe / baseline so far
  std::vector<std::int64_t> flagged;  ///< seqs of the trials found suspect now
};

/// The trial that improved the best time (after its trial_finished).
struct new_best_event {
  trial_record trial;
  double elapsed_s = 0.0;
  std::optional<double> wall_elapsed_s;  ///< as trial_finished_event's
};

struct progress_event {
  std::int64_t trials = 0;
  double trials_per_s = 0.0;
  double elapsed_s = 0.0;
  std::map<std::string, double> device_busy;  ///< device name → busy fraction in [0, 1]
  double compile_busy = 0.0;                  ///< compile pool busy fraction in [0, 1]
  std::optional<double> best_time_ms;
  /// Candidates handed to the compile workers and measurers and not answered yet.
  std::int64_t in_flight = 0;
  /// Wall-clock seconds since the run's start in its database; absent when unknown.
  std::optional<double> wall_elapsed_s;
};

/// One task of a model run as a model_progress event shows it.
struct model_task_state {
  std::string label;   ///< the model's names for it, joined
  std::string target;  ///< the built-in task or the dataset replayed
  double count = 1.0;  ///< runs per inference
  std::int64_t trials = 0;
  std::optional<double> best_ms;  ///< its best time so far; none before its first success
  std::int64_t run_id = 0;        ///< its run in the results database; 0 before its first round
  bool done = false;              ///< the scheduler gives it no more rounds
};

/// A model run (tune_model) after each round, and once at its end: the
/// model's estimated latency (the sum of count x best time over its tasks)
/// and each task's state. The rounds' own runs publish their events on the
/// same stream between these.
struct model_progress_event {
  std::string model;
  std::uint64_t seed = 0;
  std::string scheduler;
  std::int64_t trials = 0;  ///< of every task, recorded ones included
  std::int64_t budget_trials = 0;
  double wall_s = 0.0;               ///< since the model run started
  std::optional<double> latency_ms;  ///< none while a task has no best
  /// The task (an index into tasks) whose round just ended; none in the last event.
  std::optional<std::int64_t> task;
  /// Why the model run ended: set in its last event only (after the tasks'
  /// confirmation, so its latency is that of their confirmed bests).
  std::optional<end_reason> reason;
  std::vector<model_task_state> tasks;
};

struct run_finished_event {
  std::int64_t trials = 0;
  std::optional<double> best_time_ms;
  nlohmann::json best_config;  ///< null when no trial was ok
  double wall_s = 0.0;
  end_reason reason = end_reason::budget;
};

/// The JSON object of each event, with "type" and "schema".
nlohmann::json make_event(const run_started_event& e);
nlohmann::json make_event(const trial_finished_event& e);
nlohmann::json make_event(const new_best_event& e);
nlohmann::json make_event(const progress_event& e);
nlohmann::json make_event(const run_finished_event& e);
nlohmann::json make_event(const drift_event& e);
nlohmann::json make_event(const model_progress_event& e);

/// Known event types: run_started, trial_finished, new_best, progress, drift,
/// run_finished, model_progress.
const std::vector<std::string>& event_types();

/// Checks one received message: a JSON object with a known "type", "schema"
/// equal to event_schema_version and every field of that type with the right
/// JSON type. Returns the event, or nullopt with the reason in `problem`.
std::optional<nlohmann::json> parse_event(std::string_view message, std::string& problem);

/// Throws std::invalid_argument with the fix when `endpoint` is not
/// tcp://HOST:PORT or ipc://PATH (inproc:// is refused: a subscriber in
/// another process could never reach it).
void check_endpoint(const std::string& endpoint);

// ---- CURVE keys (off loopback) ---------------------------------------------

/// A CURVE key pair in Z85 text (40 characters each).
struct curve_keypair {
  std::string public_key;
  std::string secret_key;
};

/// True when this libzmq encrypts with CURVE (built with libsodium).
bool curve_available();
/// A fresh key pair. Throws std::runtime_error when CURVE is not available.
curve_keypair make_curve_keypair();
/// The public key of a Z85 secret key. Throws std::invalid_argument for a
/// text that is not a Z85 key.
std::string curve_public_key(const std::string& secret_key);
/// A key given as its Z85 text (40 characters) or as a file holding it
/// (what `tune-engine keys` writes). `what` names it in messages. Throws
/// std::invalid_argument naming the file or the text and the fix.
std::string read_curve_key(const std::string& text_or_file, const std::string& what);
/// True for ipc:// and for tcp:// on a loopback host (loopback.hpp).
bool is_loopback_endpoint(const std::string& endpoint);

// ---- sockets --------------------------------------------------------------

class event_publisher {
 public:
  /// Binds to `endpoint` (tcp://127.0.0.1:* picks a free port). Throws
  /// std::invalid_argument naming the endpoint when it is malformed or
  /// cannot be bound (e.g. the port is in use). With `curve_secret_key` (Z85)
  /// the socket is a CURVE server: only readers that know its public key
  /// connect, and the stream is encrypted. Off loopback the key is required
  /// (std::invalid_argument saying how to make one otherwise).
  explicit event_publisher(const std::string& endpoint = default_event_endpoint,
                           const std::string& curve_secret_key = {});
  ~event_publisher();
  event_publisher(event_publisher&&) noexcept;
  event_publisher& operator=(event_publisher&&) noexcept;

  /// The bound endpoint, with the actual port when a wildcard was given.
  const std::string& endpoint() const;

  /// Sends one event (compact JSON), with the common fields added. Never blocks.
  void publish(const nlohmann::json& event);
  /// Fields added to every event published from now on, replacing the
  /// event's own of the same name (a model run tags its rounds' events with
  /// {"model": NAME}, so that a reader joining mid-model knows the stream is
  /// a model's). Throws std::invalid_argument unless `fields` is an object.
  void set_common_fields(nlohmann::json fields);

  /// Subscribers currently known (subscriptions seen minus unsubscriptions).
  std::size_t subscribers();
  /// Waits until at least `count` subscribers are known or `timeout` passes;
  /// returns the number known.
  std::size_t wait_for_subscribers(std::size_t count, std::chrono::milliseconds timeout);

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

class event_subscriber {
 public:
  /// Connects to `endpoint` and subscribes to every event. Throws
  /// std::invalid_argument for a malformed endpoint. With
  /// `curve_server_key` (the publisher's Z85 public key) it connects as a
  /// CURVE client with a key pair of its own.
  explicit event_subscriber(const std::string& endpoint, const std::string& curve_server_key = {});
  ~event_subscriber();
  event_subscriber(event_subscriber&&) noexcept;
  event_subscriber& operator=(event_subscriber&&) noexcept;

  /// The next valid event, or nullopt when none arrives within `timeout`.
  /// Invalid messages are skipped: each is counted and passed to the warning
  /// handler (default: none).
  std::optional<nlohmann::json> receive(std::chrono::milliseconds timeout);

  std::size_t skipped() const;
  void on_warning(std::function<void(const std::string&)> handler);

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace tune::storage
