#include "tune/storage/event_stream.hpp"

#include <arpa/inet.h>

#include <cctype>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <regex>
#include <stdexcept>
#include <utility>
#include <zmq.hpp>

#include "tune/engine/readers.hpp"
#include "tune/engine/result.hpp"
#include "tune/storage/loopback.hpp"

namespace tune::storage {
namespace {

// Enough for a long burst of trial events while a subscriber redraws; a
// subscriber further behind than this loses events rather than slowing the run.
constexpr int high_water_mark = 100000;
// How long closing the publisher may wait to flush the last events (run_finished).
constexpr int linger_ms = 2000;

nlohmann::json optional_number(const std::optional<double>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

nlohmann::json header(const char* type) { return {{"type", type}, {"schema", event_schema_version}}; }

/// JSON kinds a field may have.
enum class kind {
  integer,
  integer_or_null,
  unsigned_integer,
  number,
  number_or_null,
  string,
  string_or_null,
  boolean,
  object,
  object_or_null,
  array
};

struct field {
  const char* name;
  kind expected;
};

bool has_kind(const nlohmann::json& value, kind expected) {
  switch (expected) {
    case kind::integer:
      return value.is_number_integer();
    case kind::integer_or_null:
      return value.is_number_integer() || value.is_null();
    case kind::unsigned_integer:
      return value.is_number_unsigned() || (value.is_number_integer() && value.get<std::int64_t>() >= 0);
    case kind::number:
      return value.is_number();
    case kind::number_or_null:
      return value.is_number() || value.is_null();
    case kind::string:
      return value.is_string();
    case kind::string_or_null:
      return value.is_string() || value.is_null();
    case kind::boolean:
      return value.is_boolean();
    case kind::object:
      return value.is_object();
    case kind::object_or_null:
      return value.is_object() || value.is_null();
    case kind::array:
      return value.is_array();
  }
  return false;
}

/// Fields that may be absent (a publisher that does not know them): checked
/// when present.
const std::map<std::string, std::vector<field>>& optional_event_fields() {
  static const std::map<std::string, std::vector<field>> fields{
      {"trial_finished",
       {{"wall_elapsed_s", kind::number},
        {"duel_ms", kind::number},
        {"duel_best_ms", kind::number},
        {"model", kind::string}}},
      {"new_best",
       {{"wall_elapsed_s", kind::number},
        {"duel_ms", kind::number},
        {"duel_best_ms", kind::number},
        {"model", kind::string}}},
      {"progress", {{"in_flight", kind::unsigned_integer}, {"wall_elapsed_s", kind::number}, {"model", kind::string}}},
      {"run_started", {{"model", kind::string}}},
      {"drift", {{"model", kind::string}}},
      {"run_finished", {{"model", kind::string}}},
  };
  return fields;
}

const std::map<std::string, std::vector<field>>& event_fields() {
  static const std::map<std::string, std::vector<field>> fields{
      {"run_started",
       {{"run_id", kind::integer},
        {"task", kind::string},
        {"strategy", kind::string},
        {"seed", kind::unsigned_integer},
        {"budget", kind::object},
        {"topology", kind::object},
        {"resumed", kind::boolean},
        {"recorded_trials", kind::integer}}},
      {"trial_finished",
       {{"seq", kind::integer},
        {"config", kind::object},
        {"status", kind::string},
        {"time_ms", kind::number_or_null},
        {"compile_s", kind::number},
        {"run_s", kind::number},
        {"device", kind::string},
        {"elapsed_s", kind::number},
        {"reused_from_run", kind::integer_or_null},
        {"repeats", kind::unsigned_integer},
        {"stopped_early", kind::boolean},
        {"kernel_s", kind::number},
        {"drift_flagged", kind::boolean}}},
      {"drift",
       {{"device", kind::string},
        {"baseline_ms", kind::number},
        {"band", kind::number},
        {"ratio", kind::number},
        {"flagged", kind::array}}},
      {"new_best",
       {{"seq", kind::integer}, {"config", kind::object}, {"time_ms", kind::number}, {"elapsed_s", kind::number}}},
      {"progress",
       {{"trials", kind::integer},
        {"trials_per_s", kind::number},
        {"elapsed_s", kind::number},
        {"busy", kind::object},
        {"best_time_ms", kind::number_or_null}}},
      {"model_progress",
       {{"model", kind::string},
        {"seed", kind::unsigned_integer},
        {"scheduler", kind::string},
        {"trials", kind::integer},
        {"budget_trials", kind::integer},
        {"wall_s", kind::number},
        {"latency_ms", kind::number_or_null},
        {"task", kind::integer_or_null},
        {"reason", kind::string_or_null},
        {"tasks", kind::array}}},
      {"run_finished",
       {{"trials", kind::integer},
        {"best_time_ms", kind::number_or_null},
        {"best_config", kind::object_or_null},
        {"wall_s", kind::number},
        {"reason", kind::string}}},
  };
  return fields;
}

/// Checks the nested parts that the flat field table cannot describe.
std::string check_nested(const std::string& type, const nlohmann::json& event) {
  if (type == "trial_finished") {
    auto state = status_from_string(event["status"].get<std::string>());
    if (!state) return "field 'status' is not a known status";
    if ((*state == status::ok) != event["time_ms"].is_number())
      return "field 'time_ms' must be a number exactly when status is ok";
  }
  if ((type == "trial_finished" || type == "new_best") && event.contains("duel_ms") != event.contains("duel_best_ms"))
    return "fields 'duel_ms' and 'duel_best_ms' come together";
  if (type == "drift")
    for (const auto& seq : event["flagged"])
      if (!seq.is_number_integer()) return "field 'flagged' holds a value that is not a trial number";
  if (type == "run_finished" && !end_reason_from_string(event["reason"].get<std::string>()))
    return "field 'reason' is not an end reason (" + std::string(end_reason_names()) + ")";
  if (type == "progress") {
    const auto& busy = event["busy"];
    if (!busy.contains("compile_pool") || !busy["compile_pool"].is_number())
      return "field 'busy.compile_pool' is missing or not a number";
    if (!busy.contains("devices") || !busy["devices"].is_object()) return "field 'busy.devices' is missing";
    for (const auto& [name, value] : busy["devices"].items())
      if (!value.is_number()) return "field 'busy.devices." + name + "' is not a number";
  }
  if (type == "model_progress") {
    if (event["reason"].is_string() && !end_reason_from_string(event["reason"].get<std::string>()))
      return "field 'reason' is not an end reason (" + std::string(end_reason_names()) + ")";
    const auto& tasks = event["tasks"];
    if (event["task"].is_number_integer() &&
        (event["task"].get<std::int64_t>() < 0 || event["task"].get<std::int64_t>() >= std::int64_t(tasks.size())))
      return "field 'task' is not the index of one of its tasks";
    static const std::vector<field> task_fields{
        {"label", kind::string},   {"target", kind::string},          {"count", kind::number},
        {"trials", kind::integer}, {"best_ms", kind::number_or_null}, {"run_id", kind::integer},
        {"done", kind::boolean}};
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      if (!tasks[i].is_object()) return "field 'tasks' holds a value that is not an object";
      for (const auto& f : task_fields)
        if (!tasks[i].contains(f.name) || !has_kind(tasks[i][f.name], f.expected))
          return "field 'tasks[" + std::to_string(i) + "]." + f.name + "' is missing or has the wrong type";
    }
  }
  if (type == "run_started") {
    const auto& budget = event["budget"];
    for (const char* key : {"trials", "seconds"})
      if (!budget.contains(key) || !(budget[key].is_number() || budget[key].is_null()))
        return std::string("field 'budget.") + key + "' is missing or not a number or null";
  }
  return {};
}

}  // namespace

nlohmann::json make_event(const run_started_event& e) {
  auto event = header("run_started");
  event["run_id"] = e.run_id;
  event["task"] = e.task;
  event["strategy"] = e.strategy;
  event["seed"] = e.seed;
  event["budget"] = {{"trials", e.budget_trials ? nlohmann::json(*e.budget_trials) : nlohmann::json(nullptr)},
                     {"seconds", optional_number(e.budget_seconds)}};
  event["topology"] = e.topology.is_object() ? e.topology : nlohmann::json::object();
  event["resumed"] = e.resumed;
  event["recorded_trials"] = e.recorded_trials;
  return event;
}

namespace {
/// A trial's duel against the best before it, when it had one.
void add_duel(nlohmann::json& event, const trial& t) {
  if (!std::isfinite(t.duel_ms) || !std::isfinite(t.duel_best_ms)) return;
  event["duel_ms"] = t.duel_ms;
  event["duel_best_ms"] = t.duel_best_ms;
}
}  // namespace

nlohmann::json make_event(const trial_finished_event& e) {
  const auto& t = e.trial;
  auto event = header("trial_finished");
  event["seq"] = t.seq;
  event["config"] = nlohmann::json::parse(t.config_json);
  event["status"] = std::string(to_string(t.state));
  event["time_ms"] = t.ok() ? nlohmann::json(t.time_ms) : nlohmann::json(nullptr);
  event["compile_s"] = t.compile_s;
  event["run_s"] = t.run_s;
  event["device"] = t.device;
  event["elapsed_s"] = e.elapsed_s;
  event["reused_from_run"] = t.reused() ? nlohmann::json(*t.reused_from_run) : nlohmann::json(nullptr);
  event["repeats"] = t.repeats;
  event["stopped_early"] = t.stopped_early;
  event["kernel_s"] = t.kernel_s;
  event["drift_flagged"] = t.drift_flagged;
  add_duel(event, t);
  if (e.wall_elapsed_s) event["wall_elapsed_s"] = *e.wall_elapsed_s;
  return event;
}

nlohmann::json make_event(const new_best_event& e) {
  auto event = header("new_best");
  event["seq"] = e.trial.seq;
  event["config"] = nlohmann::json::parse(e.trial.config_json);
  event["time_ms"] = e.trial.time_ms;
  add_duel(event, e.trial);
  event["elapsed_s"] = e.elapsed_s;
  if (e.wall_elapsed_s) event["wall_elapsed_s"] = *e.wall_elapsed_s;
  return event;
}

nlohmann::json make_event(const progress_event& e) {
  auto event = header("progress");
  event["trials"] = e.trials;
  event["trials_per_s"] = e.trials_per_s;
  event["elapsed_s"] = e.elapsed_s;
  event["busy"] = {{"devices", nlohmann::json(e.device_busy)}, {"compile_pool", e.compile_busy}};
  event["best_time_ms"] = optional_number(e.best_time_ms);
  event["in_flight"] = e.in_flight;
  if (e.wall_elapsed_s) event["wall_elapsed_s"] = *e.wall_elapsed_s;
  return event;
}

nlohmann::json make_event(const drift_event& e) {
  auto event = header("drift");
  event["device"] = e.device;
  event["baseline_ms"] = e.baseline_ms;
  event["band"] = e.band;
  event["ratio"] = e.ratio;
  event["flagged"] = e.flagged;
  return event;
}

nlohmann::json make_event(const run_finished_event& e) {
  auto event = header("run_finished");
  event["trials"] = e.trials;
  event["best_time_ms"] = optional_number(e.best_time_ms);
  event["best_config"] = e.best_config.is_object() ? e.best_config : nlohmann::json(nullptr);
  event["wall_s"] = e.wall_s;
  event["reason"] = std::string(to_string(e.reason));
  return event;
}

nlohmann::json make_event(const model_progress_event& e) {
  auto event = header("model_progress");
  event["model"] = e.model;
  event["seed"] = e.seed;
  event["scheduler"] = e.scheduler;
  event["trials"] = e.trials;
  event["budget_trials"] = e.budget_trials;
  event["wall_s"] = e.wall_s;
  event["latency_ms"] = optional_number(e.latency_ms);
  event["task"] = e.task ? nlohmann::json(*e.task) : nlohmann::json(nullptr);
  event["reason"] = e.reason ? nlohmann::json(std::string(to_string(*e.reason))) : nlohmann::json(nullptr);
  event["tasks"] = nlohmann::json::array();
  for (const auto& t : e.tasks)
    event["tasks"].push_back({{"label", t.label},
                              {"target", t.target},
                              {"count", t.count},
                              {"trials", t.trials},
                              {"best_ms", optional_number(t.best_ms)},
                              {"run_id", t.run_id},
                              {"done", t.done}});
  return event;
}

const std::vector<std::string>& event_types() {
  static const std::vector<std::string> types = [] {
    std::vector<std::string> out;
    for (const auto& [type, fields] : event_fields()) out.push_back(type);
    return out;
  }();
  return types;
}

std::optional<nlohmann::json> parse_event(std::string_view message, std::string& problem) {
  // A reader prints what it receives: deep nesting would cost deep recursion.
  if (json_nesting_depth(message) > max_json_depth) {
    problem = "arrays and objects nested more than " + std::to_string(max_json_depth) + " levels deep";
    return std::nullopt;
  }
  auto event = nlohmann::json::parse(message.begin(), message.end(), nullptr, false);
  if (event.is_discarded()) {
    problem = "not JSON";
    return std::nullopt;
  }
  if (!event.is_object()) {
    problem = "not a JSON object";
    return std::nullopt;
  }
  if (!event.contains("type") || !event["type"].is_string()) {
    problem = "no \"type\" string";
    return std::nullopt;
  }
  std::string type = event["type"].get<std::string>();
  if (!event.contains("schema") || !event["schema"].is_number_integer()) {
    problem = "event '" + type + "' has no integer \"schema\"";
    return std::nullopt;
  }
  if (event["schema"].get<std::int64_t>() != event_schema_version) {
    problem = "event '" + type + "' has schema " + event["schema"].dump() + ", this program reads schema " +
              std::to_string(event_schema_version);
    return std::nullopt;
  }
  auto found = event_fields().find(type);
  if (found == event_fields().end()) {
    problem = "unknown event type '" + type + "'";
    return std::nullopt;
  }
  for (const auto& f : found->second) {
    if (!event.contains(f.name) || !has_kind(event[f.name], f.expected)) {
      problem = "event '" + type + "': field '" + f.name + "' is missing or has the wrong type";
      return std::nullopt;
    }
  }
  if (auto optional = optional_event_fields().find(type); optional != optional_event_fields().end())
    for (const auto& f : optional->second)
      if (event.contains(f.name) && !has_kind(event[f.name], f.expected)) {
        problem = "event '" + type + "': field '" + f.name + "' has the wrong type";
        return std::nullopt;
      }
  if (auto nested = check_nested(type, event); !nested.empty()) {
    problem = "event '" + type + "': " + nested;
    return std::nullopt;
  }
  problem.clear();
  return event;
}

void check_endpoint(const std::string& endpoint) {
  static const std::regex tcp(R"(tcp://(\*|\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):(\*|[0-9]{1,5}))");
  std::smatch match;
  if (std::regex_match(endpoint, match, tcp)) {
    if (match[2] != "*" && (std::stoi(match[2]) < 1 || std::stoi(match[2]) > 65535))
      throw std::invalid_argument("event endpoint '" + endpoint + "': the port must be 1 to 65535 (or *)");
    return;
  }
  if (endpoint.rfind("ipc://", 0) == 0 && endpoint.size() > 6) return;
  throw std::invalid_argument("event endpoint '" + endpoint +
                              "' is not valid; use tcp://HOST:PORT (e.g. tcp://127.0.0.1:5556) or ipc://PATH");
}

// ---- CURVE keys -------------------------------------------------------------

bool curve_available() { return zmq_has("curve") == 1; }

curve_keypair make_curve_keypair() {
  if (!curve_available())
    throw std::runtime_error(
        "this libzmq has no CURVE support (it was built without libsodium); install libzmq5 "
        "from Debian, which has it");
  char public_key[41] = {};
  char secret_key[41] = {};
  if (zmq_curve_keypair(public_key, secret_key) != 0)
    throw std::runtime_error(std::string("cannot make a CURVE key pair: ") + zmq_strerror(zmq_errno()));
  return {public_key, secret_key};
}

namespace {

bool is_z85_key(const std::string& text) {
  if (text.size() != 40) return false;
  std::uint8_t decoded[32];
  return zmq_z85_decode(decoded, text.c_str()) != nullptr;
}

}  // namespace

std::string curve_public_key(const std::string& secret_key) {
  if (!is_z85_key(secret_key)) throw std::invalid_argument("not a CURVE key (40 characters of Z85 text)");
  char public_key[41] = {};
  if (zmq_curve_public(public_key, secret_key.c_str()) != 0)
    throw std::invalid_argument(std::string("cannot derive the public key: ") + zmq_strerror(zmq_errno()));
  return public_key;
}

std::string read_curve_key(const std::string& text_or_file, const std::string& what) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(text_or_file, ec)) {
    if (is_z85_key(text_or_file)) return text_or_file;
    throw std::invalid_argument(
        what + " '" + text_or_file +
        "' is neither a key file nor a CURVE key (40 characters of Z85 text); make a key pair with "
        "make_curve_keypair() (the command: tune-engine keys)");
  }
  std::ifstream in(text_or_file);
  std::string text;
  std::getline(in, text);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  if (!is_z85_key(text))
    throw std::invalid_argument(
        what + " " + text_or_file +
        ": the first line is not a CURVE key (40 characters of Z85 text); use a file of a key pair made "
        "by make_curve_keypair() (the command: tune-engine keys)");
  return text;
}

bool is_loopback_endpoint(const std::string& endpoint) {
  if (endpoint.rfind("ipc://", 0) == 0) return true;
  if (endpoint.rfind("tcp://", 0) != 0) return false;
  auto colon = endpoint.rfind(':');
  return colon > 6 && is_loopback_host(endpoint.substr(6, colon - 6));
}

// ---- publisher ---------------------------------------------------------------

struct event_publisher::impl {
  zmq::context_t context{1};
  zmq::socket_t socket{context, zmq::socket_type::xpub};
  std::string endpoint;
  std::size_t subscribers = 0;
  nlohmann::json common = nlohmann::json::object();  ///< set_common_fields

  /// Reads the (un)subscription messages the XPUB socket has queued.
  void drain_subscriptions(std::chrono::milliseconds wait) {
    zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    while (zmq::poll(&item, 1, wait) > 0 && (item.revents & ZMQ_POLLIN)) {
      zmq::message_t message;
      if (!socket.recv(message, zmq::recv_flags::dontwait)) break;
      if (message.size() < 1) continue;
      auto first = static_cast<const unsigned char*>(message.data())[0];
      if (first == 1) ++subscribers;
      if (first == 0 && subscribers > 0) --subscribers;
      wait = std::chrono::milliseconds(0);
    }
  }
};

event_publisher::event_publisher(const std::string& endpoint, const std::string& curve_secret_key)
    : impl_(std::make_unique<impl>()) {
  check_endpoint(endpoint);
  if (curve_secret_key.empty() && !is_loopback_endpoint(endpoint))
    throw std::invalid_argument("event endpoint " + endpoint +
                                " is not on loopback: off loopback the stream needs CURVE keys; make a key pair with "
                                "make_curve_keypair() (the command: tune-engine keys), publish with its secret key "
                                "and give readers its public key");
  if (!curve_secret_key.empty()) {
    if (!curve_available())
      throw std::invalid_argument("event endpoint " + endpoint +
                                  ": CURVE keys were given but this libzmq has no CURVE support (built without "
                                  "libsodium)");
    curve_public_key(curve_secret_key);  // throws for a text that is not a key
    impl_->socket.set(zmq::sockopt::curve_server, 1);
    impl_->socket.set(zmq::sockopt::curve_secretkey, curve_secret_key);
  }
  try {
    // Verbose (un)subscriptions: count every subscriber, not only new topics.
    impl_->socket.set(zmq::sockopt::xpub_verboser, 1);
    impl_->socket.set(zmq::sockopt::sndhwm, high_water_mark);
    impl_->socket.set(zmq::sockopt::linger, linger_ms);
    impl_->socket.bind(endpoint);
    impl_->endpoint = impl_->socket.get(zmq::sockopt::last_endpoint);
  } catch (const zmq::error_t& e) {
    throw std::invalid_argument("cannot bind the event stream to " + endpoint + ": " + e.what() +
                                "; choose another endpoint (e.g. tcp://127.0.0.1:5557)");
  }
}

event_publisher::~event_publisher() = default;
event_publisher::event_publisher(event_publisher&&) noexcept = default;
event_publisher& event_publisher::operator=(event_publisher&&) noexcept = default;

const std::string& event_publisher::endpoint() const { return impl_->endpoint; }

void event_publisher::publish(const nlohmann::json& event) {
  impl_->drain_subscriptions(std::chrono::milliseconds(0));
  std::string text;
  if (impl_->common.empty() || !event.is_object()) {
    text = event.dump();
  } else {
    auto tagged = event;
    for (const auto& [key, value] : impl_->common.items()) tagged[key] = value;
    text = tagged.dump();
  }
  // dontwait: at the high-water mark PUB drops instead of blocking.
  (void)impl_->socket.send(zmq::buffer(text), zmq::send_flags::dontwait);
}

void event_publisher::set_common_fields(nlohmann::json fields) {
  if (!fields.is_object()) throw std::invalid_argument("event_publisher: common fields must be a JSON object");
  impl_->common = std::move(fields);
}

std::size_t event_publisher::subscribers() {
  impl_->drain_subscriptions(std::chrono::milliseconds(0));
  return impl_->subscribers;
}

std::size_t event_publisher::wait_for_subscribers(std::size_t count, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  impl_->drain_subscriptions(std::chrono::milliseconds(0));
  while (impl_->subscribers < count) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    impl_->drain_subscriptions(left);
  }
  return impl_->subscribers;
}

// ---- subscriber --------------------------------------------------------------

struct event_subscriber::impl {
  zmq::context_t context{1};
  zmq::socket_t socket{context, zmq::socket_type::sub};
  std::size_t skipped = 0;
  std::function<void(const std::string&)> warn;
};

event_subscriber::event_subscriber(const std::string& endpoint, const std::string& curve_server_key)
    : impl_(std::make_unique<impl>()) {
  check_endpoint(endpoint);
  if (!curve_server_key.empty()) {
    auto server = read_curve_key(curve_server_key, "server key");
    auto mine = make_curve_keypair();
    impl_->socket.set(zmq::sockopt::curve_serverkey, server);
    impl_->socket.set(zmq::sockopt::curve_publickey, mine.public_key);
    impl_->socket.set(zmq::sockopt::curve_secretkey, mine.secret_key);
  }
  try {
    impl_->socket.set(zmq::sockopt::rcvhwm, high_water_mark);
    impl_->socket.set(zmq::sockopt::linger, 0);
    impl_->socket.set(zmq::sockopt::subscribe, "");
    impl_->socket.connect(endpoint);
  } catch (const zmq::error_t& e) {
    throw std::invalid_argument("cannot connect to the event stream at " + endpoint + ": " + e.what());
  }
}

event_subscriber::~event_subscriber() = default;
event_subscriber::event_subscriber(event_subscriber&&) noexcept = default;
event_subscriber& event_subscriber::operator=(event_subscriber&&) noexcept = default;

std::optional<nlohmann::json> event_subscriber::receive(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    zmq::pollitem_t item{impl_->socket.handle(), 0, ZMQ_POLLIN, 0};
    int ready = 0;
    try {
      ready = zmq::poll(&item, 1, std::max(left, std::chrono::milliseconds(0)));
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) return std::nullopt;  // a signal (Ctrl-C): let the caller decide
      throw;
    }
    if (ready <= 0) return std::nullopt;
    zmq::message_t message;
    if (!impl_->socket.recv(message, zmq::recv_flags::dontwait)) continue;
    std::string problem;
    auto event = parse_event(message.to_string_view(), problem);
    if (event) return event;
    ++impl_->skipped;
    if (impl_->warn) impl_->warn("skipped an event message: " + problem);
  }
}

std::size_t event_subscriber::skipped() const { return impl_->skipped; }

void event_subscriber::on_warning(std::function<void(const std::string&)> handler) { impl_->warn = std::move(handler); }

}  // namespace tune::storage
