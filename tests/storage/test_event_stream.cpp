#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "tune/storage/event_stream.hpp"
#include "tune/storage/loopback.hpp"

using namespace tune::storage;
using Catch::Matchers::Contains;
using namespace std::chrono_literals;

namespace {

// Only loopback, on a port the OS picks, so parallel tests never collide.
constexpr const char* loopback_any_port = "tcp://127.0.0.1:*";

/// A recorded trial as the events carry it.
trial_record recorded(std::int64_t seq, const std::string& config_json, tune::status state, double time_ms,
                      const std::string& device = "sim0") {
  trial_record t;
  t.seq = seq;
  t.config_json = config_json;
  t.state = state;
  t.time_ms = time_ms;
  t.compile_s = 0.5;
  t.run_s = 0.1;
  t.device = device;
  return t;
}

trial_finished_event finished(trial_record trial, double elapsed_s,
                              std::optional<double> wall_elapsed_s = std::nullopt) {
  return {std::move(trial), elapsed_s, wall_elapsed_s};
}

new_best_event best(std::int64_t seq, double time_ms, double elapsed_s,
                    std::optional<double> wall_elapsed_s = std::nullopt) {
  return {recorded(seq, R"({"tile":4})", tune::status::ok, time_ms), elapsed_s, wall_elapsed_s};
}

/// A model run's event after a round of its second task.
model_progress_event sample_model_progress() {
  model_progress_event e;
  e.model = "two-layer";
  e.seed = 7;
  e.scheduler = "gradient";
  e.trials = 48;
  e.budget_trials = 96;
  e.wall_s = 3.5;
  e.latency_ms = 2 * 1.5 + 1 * 4.0;
  e.task = 1;
  model_task_state a;
  a.label = "fc1, fc2";
  a.target = "matmul:64x64x64";
  a.count = 2;
  a.trials = 32;
  a.best_ms = 1.5;
  a.run_id = 1;
  model_task_state b = a;
  b.label = "conv";
  b.target = "conv2d:1x8x8x8:8x3x3:s1:p1";
  b.count = 1;
  b.trials = 16;
  b.best_ms = 4.0;
  b.run_id = 2;
  b.done = true;
  e.tasks = {a, b};
  return e;
}

std::vector<nlohmann::json> sample_run(int trials) {
  std::vector<nlohmann::json> events;
  run_started_event started;
  started.run_id = 3;
  started.task = "gemm/1024";
  started.strategy = "opevo";
  started.seed = 18446744073709551615ull;
  started.budget_trials = trials;
  started.topology = {{"compile_workers", 8}};
  events.push_back(make_event(started));
  for (int i = 0; i < trials; ++i) {
    bool ok = i % 5 != 4;
    auto t = finished(
        recorded(i, "{\"tile\":" + std::to_string(i) + "}", ok ? tune::status::ok : tune::status::compile_error,
                 ok ? 100.0 / (i + 1) : std::nan(""), "sim" + std::to_string(i % 4)),
        0.01 * i);
    if (i == 3) t.trial.reused_from_run = 2;
    events.push_back(make_event(t));
    if (ok) events.push_back(make_event(new_best_event{t.trial, t.elapsed_s, std::nullopt}));
    if (i % 10 == 9) {
      progress_event p;
      p.trials = i + 1;
      p.trials_per_s = 100;
      p.elapsed_s = t.elapsed_s;
      p.device_busy = {{"sim0", 0.9}, {"sim1", 0.8}};
      p.compile_busy = 0.75;
      p.best_time_ms = 100.0 / (i + 1);
      p.in_flight = i % 3;
      p.wall_elapsed_s = 0.001 * i;
      events.push_back(make_event(p));
    }
  }
  drift_event drifted;
  drifted.device = "sim0";
  drifted.baseline_ms = 2.0;
  drifted.band = 0.05;
  drifted.ratio = 1.2;
  drifted.flagged = {3, 4};
  events.push_back(make_event(drifted));
  events.push_back(make_event(sample_model_progress()));
  run_finished_event done;
  done.trials = trials;
  done.best_time_ms = 1.0;
  done.best_config = {{"tile", 99}};
  done.wall_s = 1.5;
  done.reason = tune::end_reason::budget;
  events.push_back(make_event(done));
  return events;
}

}  // namespace

TEST_CASE("event builders produce events that validate", "[storage]") {
  auto events = sample_run(20);
  std::vector<std::string> seen;
  for (const auto& e : events) {
    std::string problem;
    auto parsed = parse_event(e.dump(), problem);
    INFO(e.dump() << " -> " << problem);
    REQUIRE(parsed);
    CHECK(*parsed == e);
    CHECK(e["schema"] == event_schema_version);
    seen.push_back(e["type"]);
  }
  for (const auto& type : event_types()) CHECK(std::find(seen.begin(), seen.end(), type) != seen.end());

  CHECK(events.front()["seed"].get<std::uint64_t>() == 18446744073709551615ull);
  CHECK(events.front()["budget"]["seconds"].is_null());
  CHECK(events[1]["time_ms"].get<double>() == Approx(100.0));
  CHECK(events[1]["reused_from_run"].is_null());
  bool reused_seen = false;
  for (const auto& e : events)
    if (e["type"] == "trial_finished" && e["seq"] == 3) {
      CHECK(e["reused_from_run"] == 2);
      reused_seen = true;
    }
  CHECK(reused_seen);
  auto failed = make_event(finished(recorded(4, R"({"tile":4})", tune::status::compile_error, std::nan("")), 1.0));
  CHECK(failed["time_ms"].is_null());
  CHECK(failed["status"] == "compile_error");
  auto cut = recorded(5, R"({"tile":5})", tune::status::ok, 9.0);
  cut.repeats = 2;
  cut.stopped_early = true;
  cut.kernel_s = 0.02;
  auto early = make_event(finished(cut, 2.0));
  CHECK(early["repeats"] == 2);
  CHECK(early["stopped_early"] == true);
  CHECK(early["kernel_s"] == 0.02);
  std::string early_problem;
  CHECK(parse_event(early.dump(), early_problem));
  early["stopped_early"] = "yes";
  CHECK_FALSE(parse_event(early.dump(), early_problem));
  CHECK_THAT(early_problem, Contains("stopped_early"));
  auto no_best = make_event(run_finished_event{0, std::nullopt, nullptr, 0.0, tune::end_reason::exhausted});
  CHECK(no_best["best_config"].is_null());
  CHECK(no_best["best_time_ms"].is_null());
  CHECK(no_best["reason"] == "exhausted");
  // Every end reason is a reason a reader accepts, and nothing else is.
  for (auto reason : tune::all_end_reasons) {
    std::string problem;
    CHECK(parse_event(make_event(run_finished_event{0, std::nullopt, nullptr, 0.0, reason}).dump(), problem));
  }
}

TEST_CASE("malformed event messages are rejected with a reason", "[storage]") {
  auto problem_of = [](const std::string& text) {
    std::string problem;
    auto parsed = parse_event(text, problem);
    return parsed ? std::string("accepted") : problem;
  };
  auto valid = make_event(best(1, 2.0, 0.5));
  CHECK(problem_of(valid.dump()) == "accepted");
  CHECK_THAT(problem_of("not json at all"), Contains("not JSON"));
  CHECK_THAT(problem_of("[1, 2]"), Contains("not a JSON object"));
  CHECK_THAT(problem_of(R"({"schema": 1})"), Contains("type"));
  CHECK_THAT(problem_of(R"({"type": 5, "schema": 1})"), Contains("type"));
  CHECK_THAT(problem_of(R"({"type": "new_best"})"), Contains("schema"));
  auto future = valid;
  future["schema"] = event_schema_version + 1;
  CHECK_THAT(problem_of(future.dump()), Contains("schema " + std::to_string(event_schema_version + 1)));
  auto past = valid;
  past["schema"] = 1;  // "interrupted" and "cached" were words of schema 1
  CHECK_THAT(problem_of(past.dump()), Contains("schema 1"));
  CHECK_THAT(problem_of(R"({"type": "coffee_break", "schema": 2})"), Contains("unknown event type 'coffee_break'"));
  // Deep nesting is refused before it is parsed (a reader prints events).
  auto deep = valid;
  deep["config"]["tile"] = nlohmann::json::parse(std::string(100, '[') + std::string(100, ']'));
  CHECK_THAT(problem_of(deep.dump()), Contains("nested more than 100 levels deep"));
  auto missing = valid;
  missing.erase("time_ms");
  CHECK_THAT(problem_of(missing.dump()), Contains("'time_ms'"));
  auto wrong_type = valid;
  wrong_type["config"] = "tile=4";
  CHECK_THAT(problem_of(wrong_type.dump()), Contains("'config'"));
  auto trial = make_event(finished(recorded(1, R"({"tile":4})", tune::status::ok, 2.0), 1.0));
  trial["status"] = "fine";
  CHECK_THAT(problem_of(trial.dump()), Contains("not a known status"));
  trial["status"] = "ok";
  trial["time_ms"] = nullptr;
  CHECK_THAT(problem_of(trial.dump()), Contains("time_ms"));
  trial["time_ms"] = 2.0;
  trial["reused_from_run"] = "yes";
  CHECK_THAT(problem_of(trial.dump()), Contains("'reused_from_run'"));
  auto ended = make_event(run_finished_event{});
  ended["reason"] = "interrupted";  // schema 1's word for stopped
  CHECK_THAT(problem_of(ended.dump()), Contains("'reason' is not an end reason"));
  auto progress = make_event(progress_event{});
  progress["busy"]["devices"]["sim0"] = "busy";
  CHECK_THAT(problem_of(progress.dump()), Contains("busy.devices.sim0"));
  auto started = make_event(run_started_event{});
  started["budget"].erase("trials");
  CHECK_THAT(problem_of(started.dump()), Contains("budget.trials"));
  // Fields added within schema 1 are checked when present and may be absent
  // (events of an older publisher).
  auto flying = make_event(progress_event{});
  CHECK(flying["in_flight"] == 0);
  CHECK_FALSE(flying.contains("wall_elapsed_s"));
  CHECK(problem_of(flying.dump()) == "accepted");
  flying["in_flight"] = -1;
  CHECK_THAT(problem_of(flying.dump()), Contains("'in_flight'"));
  flying["in_flight"] = "3";
  CHECK_THAT(problem_of(flying.dump()), Contains("'in_flight'"));
  flying.erase("in_flight");
  CHECK(problem_of(flying.dump()) == "accepted");
  flying["wall_elapsed_s"] = "soon";
  CHECK_THAT(problem_of(flying.dump()), Contains("'wall_elapsed_s'"));
  auto walled_event = make_event(finished(recorded(1, R"({"tile":4})", tune::status::ok, 2.0), 100.0, 1.0));
  CHECK(walled_event["wall_elapsed_s"] == 1.0);
  CHECK(walled_event["elapsed_s"] == 100.0);
  CHECK(problem_of(walled_event.dump()) == "accepted");
  walled_event["wall_elapsed_s"] = nullptr;
  CHECK_THAT(problem_of(walled_event.dump()), Contains("'wall_elapsed_s'"));
  auto best_walled = make_event(best(1, 2.0, 100.0, 1.0));
  CHECK(best_walled["wall_elapsed_s"] == 1.0);
  best_walled["wall_elapsed_s"] = true;
  CHECK_THAT(problem_of(best_walled.dump()), Contains("'wall_elapsed_s'"));
  // Extra fields are allowed: later versions of a schema may add some.
  auto extra = valid;
  extra["note"] = "hi";
  CHECK(problem_of(extra.dump()) == "accepted");
}

TEST_CASE("a model's progress event says its latency and each task's state and is checked field by field",
          "[storage]") {
  auto problem_of = [](const nlohmann::json& event) {
    std::string problem;
    return parse_event(event.dump(), problem) ? std::string("accepted") : problem;
  };
  auto round = make_event(sample_model_progress());
  CHECK(round["type"] == "model_progress");
  CHECK(round["latency_ms"] == 7.0);
  CHECK(round["task"] == 1);
  CHECK(round["reason"].is_null());
  REQUIRE(round["tasks"].size() == 2);
  CHECK(round["tasks"][0] == nlohmann::json{{"label", "fc1, fc2"},
                                            {"target", "matmul:64x64x64"},
                                            {"count", 2.0},
                                            {"trials", 32},
                                            {"best_ms", 1.5},
                                            {"run_id", 1},
                                            {"done", false}});
  CHECK(round["tasks"][1]["done"] == true);
  CHECK(problem_of(round) == "accepted");

  // Its start (no round yet, no latency) and its end (a reason, no round).
  auto first = sample_model_progress();
  first.task.reset();
  first.latency_ms.reset();
  first.tasks[0].best_ms.reset();
  auto start = make_event(first);
  CHECK(start["task"].is_null());
  CHECK(start["latency_ms"].is_null());
  CHECK(start["tasks"][0]["best_ms"].is_null());
  CHECK(problem_of(start) == "accepted");
  auto last = sample_model_progress();
  last.task.reset();
  last.reason = tune::end_reason::stopped;
  CHECK(make_event(last)["reason"] == "stopped");
  CHECK(problem_of(make_event(last)) == "accepted");

  auto bad = round;
  bad["task"] = 2;  // two tasks: 0 and 1
  CHECK_THAT(problem_of(bad), Contains("'task' is not the index"));
  bad["task"] = -1;
  CHECK_THAT(problem_of(bad), Contains("'task' is not the index"));
  bad = round;
  bad["reason"] = "tired";
  CHECK_THAT(problem_of(bad), Contains("'reason' is not an end reason"));
  bad["reason"] = 3;
  CHECK_THAT(problem_of(bad), Contains("'reason'"));
  bad = round;
  bad["tasks"][1].erase("best_ms");
  CHECK_THAT(problem_of(bad), Contains("'tasks[1].best_ms'"));
  bad = round;
  bad["tasks"][0]["count"] = "2";
  CHECK_THAT(problem_of(bad), Contains("'tasks[0].count'"));
  bad = round;
  bad["tasks"][0] = 5;
  CHECK_THAT(problem_of(bad), Contains("not an object"));
  bad = round;
  bad.erase("latency_ms");
  CHECK_THAT(problem_of(bad), Contains("'latency_ms'"));
}

TEST_CASE("a publisher adds its common fields to every event, and readers check them", "[storage]") {
  event_publisher publisher("tcp://127.0.0.1:*");
  event_subscriber sub(publisher.endpoint());
  REQUIRE(publisher.wait_for_subscribers(1, 10s) == 1);
  publisher.publish(make_event(progress_event{}));
  publisher.set_common_fields({{"model", "resnet"}});
  auto started = make_event(run_started_event{});
  started["model"] = "other";  // replaced by the common field
  publisher.publish(started);
  publisher.publish(make_event(run_finished_event{}));
  auto plain = sub.receive(5s);
  REQUIRE(plain);
  CHECK_FALSE(plain->contains("model"));
  auto tagged = sub.receive(5s);
  REQUIRE(tagged);
  CHECK((*tagged)["model"] == "resnet");
  CHECK((*tagged)["type"] == "run_started");
  auto ended = sub.receive(5s);
  REQUIRE(ended);
  CHECK((*ended)["model"] == "resnet");
  CHECK_THROWS_AS(publisher.set_common_fields(nlohmann::json::array()), std::invalid_argument);

  // A reader accepts "model" on a run's events as a string only.
  for (auto event : {make_event(run_started_event{}), make_event(progress_event{}), make_event(run_finished_event{}),
                     make_event(drift_event{}), make_event(best(1, 2.0, 0.5))}) {
    std::string problem;
    event["model"] = "resnet";
    CHECK(parse_event(event.dump(), problem));
    event["model"] = 5;
    CHECK_FALSE(parse_event(event.dump(), problem));
    CHECK_THAT(problem, Contains("'model'"));
  }
}

TEST_CASE("event endpoints are checked", "[storage]") {
  CHECK_NOTHROW(check_endpoint("tcp://127.0.0.1:5556"));
  CHECK_NOTHROW(check_endpoint("tcp://127.0.0.1:*"));
  CHECK_NOTHROW(check_endpoint("tcp://localhost:80"));
  CHECK_NOTHROW(check_endpoint("ipc:///tmp/tune.sock"));
  CHECK_THROWS_WITH(check_endpoint("127.0.0.1:5556"), Contains("tcp://HOST:PORT"));
  CHECK_THROWS_WITH(check_endpoint("tcp://127.0.0.1"), Contains("not valid"));
  CHECK_THROWS_WITH(check_endpoint("tcp://127.0.0.1:70000"), Contains("1 to 65535"));
  CHECK_THROWS_WITH(check_endpoint("udp://127.0.0.1:5"), Contains("not valid"));
  CHECK_THROWS_AS(event_publisher("nonsense"), std::invalid_argument);
  CHECK_THROWS_AS(event_subscriber("nonsense"), std::invalid_argument);
}

TEST_CASE("a subscriber receives every published event in order", "[storage]") {
  event_publisher publisher(loopback_any_port);
  REQUIRE_THAT(publisher.endpoint(), Contains("tcp://127.0.0.1:"));
  CHECK(publisher.subscribers() == 0);

  event_subscriber subscriber(publisher.endpoint());
  // Slow joiner: hold the first event until the subscription has arrived.
  // Generous timeout; the loop ends as soon as it is there.
  REQUIRE(publisher.wait_for_subscribers(1, 30s) == 1);

  auto events = sample_run(300);
  for (const auto& e : events) publisher.publish(e);
  for (std::size_t i = 0; i < events.size(); ++i) {
    auto received = subscriber.receive(30s);
    INFO("event " << i);
    REQUIRE(received);
    CHECK(*received == events[i]);
  }
  CHECK(subscriber.skipped() == 0);
  CHECK_FALSE(subscriber.receive(10ms));
}

TEST_CASE("a second publisher on the same endpoint is refused clearly", "[storage]") {
  event_publisher first(loopback_any_port);
  CHECK_THROWS_WITH(event_publisher(first.endpoint()),
                    Contains("cannot bind the event stream to " + first.endpoint()) && Contains("another endpoint"));
}

TEST_CASE("malformed messages on the wire are skipped with a warning", "[storage]") {
  // A raw PUB socket stands in for a foreign or broken publisher.
  zmq::context_t context(1);
  zmq::socket_t raw(context, zmq::socket_type::xpub);
  raw.bind(loopback_any_port);
  const std::string endpoint = raw.get(zmq::sockopt::last_endpoint);

  event_subscriber subscriber(endpoint);
  std::vector<std::string> warnings;
  subscriber.on_warning([&](const std::string& w) { warnings.push_back(w); });
  zmq::message_t subscription;
  REQUIRE(raw.recv(subscription));  // the subscription: no slow joiner from here on

  const auto good = make_event(best(1, 2.0, 0.5));
  for (const std::string& text : {std::string("garbage{"), std::string(R"({"no_type": 1})"),
                                  std::string(R"({"type": "new_best", "schema": 99})"), good.dump()})
    raw.send(zmq::buffer(text));

  auto received = subscriber.receive(30s);
  REQUIRE(received);
  CHECK(*received == good);
  CHECK(subscriber.skipped() == 3);
  REQUIRE(warnings.size() == 3);
  CHECK_THAT(warnings[0], Contains("not JSON"));
  CHECK_THAT(warnings[1], Contains("type"));
  CHECK_THAT(warnings[2], Contains("schema 99"));
}

TEST_CASE("the publisher counts subscribers coming and going", "[storage]") {
  event_publisher publisher(loopback_any_port);
  {
    event_subscriber a(publisher.endpoint());
    event_subscriber b(publisher.endpoint());
    CHECK(publisher.wait_for_subscribers(2, 30s) == 2);
  }
  // Both closed: their unsubscriptions arrive; wait_for_subscribers(0) returns at once,
  // so poll until the count drops (bounded).
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (publisher.subscribers() > 0 && std::chrono::steady_clock::now() < deadline)
    publisher.wait_for_subscribers(3, 20ms);
  CHECK(publisher.subscribers() == 0);
  // With nobody listening, publishing neither blocks nor fails.
  for (int i = 0; i < 1000; ++i) publisher.publish(make_event(progress_event{}));
}

TEST_CASE("off loopback the publisher needs CURVE keys and says how to make them", "[storage]") {
  CHECK(is_loopback_endpoint("tcp://127.0.0.1:5556"));
  CHECK(is_loopback_endpoint("tcp://127.3.2.1:*"));
  CHECK(is_loopback_endpoint("tcp://localhost:80"));
  CHECK(is_loopback_endpoint("tcp://[::1]:80"));
  CHECK(is_loopback_endpoint("ipc:///tmp/tune.sock"));
  CHECK_FALSE(is_loopback_endpoint("tcp://*:5556"));
  CHECK_FALSE(is_loopback_endpoint("tcp://0.0.0.0:5556"));
  CHECK_FALSE(is_loopback_endpoint("tcp://10.0.0.5:5556"));
  CHECK_FALSE(is_loopback_endpoint("tcp://127.example.com:5556"));
  CHECK_THROWS_WITH(event_publisher("tcp://*:*"),
                    Contains("tcp://*:*") && Contains("CURVE") && Contains("tune-engine keys"));
  CHECK_THROWS_WITH(event_publisher("tcp://*:*", "not a key"), Contains("CURVE key"));
  CHECK_THROWS_WITH(read_curve_key("short", "--server-key"), Contains("--server-key") && Contains("tune-engine keys"));
}

TEST_CASE("a CURVE stream is read with the publisher's public key and not without it", "[storage]") {
  REQUIRE(curve_available());
  auto server = make_curve_keypair();
  CHECK(server.public_key.size() == 40);
  CHECK(curve_public_key(server.secret_key) == server.public_key);
  CHECK(read_curve_key(server.public_key, "key") == server.public_key);
  event_publisher publisher(loopback_any_port, server.secret_key);

  // A reader with another server key never completes the handshake.
  auto other = make_curve_keypair();
  event_subscriber stranger(publisher.endpoint(), other.public_key);
  CHECK(publisher.wait_for_subscribers(1, 1s) == 0);
  // A reader without a key neither.
  event_subscriber plain(publisher.endpoint());
  CHECK(publisher.wait_for_subscribers(1, 1s) == 0);

  event_subscriber reader(publisher.endpoint(), server.public_key);
  REQUIRE(publisher.wait_for_subscribers(1, 30s) == 1);
  auto events = sample_run(5);
  for (const auto& e : events) publisher.publish(e);
  for (const auto& e : events) {
    auto received = reader.receive(30s);
    REQUIRE(received);
    CHECK(*received == e);
  }
  CHECK_FALSE(stranger.receive(10ms));
  CHECK_FALSE(plain.receive(10ms));
}
