#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "actors/scratch_dir.hpp"
#include "cli/cli_process.hpp"
#include "tune/storage/event_stream.hpp"

using namespace tune::storage;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;
using tune::test::cli_process;
using tune::test::scratch_dir;

namespace {

std::vector<nlohmann::json> small_run() {
  std::vector<nlohmann::json> events;
  run_started_event started;
  started.run_id = 5;
  started.task = "gemm/512";
  started.strategy = "opevo";
  started.seed = 11;
  started.budget_trials = 3;
  started.topology = {{"devices", nlohmann::json::array({{{"name", "sim0"}}, {{"name", "sim1"}}})}};
  events.push_back(make_event(started));
  auto record = [](std::int64_t seq, int tile, tune::status state, double time_ms, const std::string& device) {
    trial_record t;
    t.seq = seq;
    t.config_json = "{\"tile\":" + std::to_string(tile) + "}";
    t.state = state;
    t.time_ms = time_ms;
    t.compile_s = 0.2;
    t.run_s = state == tune::status::ok ? 0.1 : 0.0;
    t.device = device;
    return t;
  };
  auto first = record(0, 2, tune::status::ok, 3.0, "sim0");
  events.push_back(make_event(trial_finished_event{first, 0.4, std::nullopt}));
  events.push_back(make_event(new_best_event{first, 0.4, std::nullopt}));
  events.push_back(
      make_event(trial_finished_event{record(1, 4, tune::status::compile_error, std::nan(""), ""), 0.5, std::nullopt}));
  progress_event progress;
  progress.trials = 2;
  progress.trials_per_s = 4.0;
  progress.elapsed_s = 0.5;
  progress.device_busy = {{"sim0", 0.5}, {"sim1", 0.25}};
  progress.compile_busy = 0.75;
  progress.best_time_ms = 3.0;
  events.push_back(make_event(progress));
  auto third = record(2, 8, tune::status::ok, 1.25, "sim1");
  events.push_back(make_event(trial_finished_event{third, 0.7, std::nullopt}));
  events.push_back(make_event(new_best_event{third, 0.7, std::nullopt}));
  events.push_back(make_event(run_finished_event{3, 1.25, {{"tile", 8}}, 0.8, tune::end_reason::budget}));
  return events;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

/// What two watchers (a person's view and --json) printed of a model run
/// tuned with `tune_args` and published on an endpoint in `dir`.
struct watched {
  std::string view, json;
};

watched watch_model_run(const scratch_dir& dir, std::vector<std::string> tune_args) {
  const auto endpoint = "ipc://" + (dir / "events.ipc").string();
  cli_process view({"watch", endpoint, "--timeout", "60"});
  cli_process json({"watch", endpoint, "--json", "--timeout", "60"});
  tune_args.insert(tune_args.begin(),
                   {"tune", "--model", std::string(TUNE_SOURCE_DIR) + "/examples/models/replayed_gpu.yaml",
                    "--time-scale", "0.001"});
  tune_args.insert(tune_args.end(), {"--db", (dir / "r.db").string(), "--publish", endpoint, "--publish-wait", "2"});
  cli_process tune(tune_args);
  REQUIRE(tune.wait() == 0);
  REQUIRE(view.wait() == 0);
  REQUIRE(json.wait() == 0);
  return {view.out(), json.out()};
}

}  // namespace

TEST_CASE("watch --json prints every valid event and ends on run_finished", "[cli]") {
  event_publisher publisher("tcp://127.0.0.1:*");
  cli_process watch({"watch", publisher.endpoint(), "--json", "--timeout", "60"});
  REQUIRE(publisher.wait_for_subscribers(1, 60s) == 1);

  auto events = small_run();
  publisher.publish({{"type", "mystery"}, {"schema", event_schema_version}});  // skipped with a warning
  for (const auto& e : events) publisher.publish(e);
  REQUIRE(watch.wait() == 0);

  auto lines = lines_of(watch.out());
  REQUIRE(lines.size() == events.size());
  for (std::size_t i = 0; i < events.size(); ++i) CHECK(nlohmann::json::parse(lines[i]) == events[i]);
  CHECK_THAT(watch.err(), Contains("unknown event type 'mystery'"));
}

TEST_CASE("watch shows a live view for a person", "[cli]") {
  event_publisher publisher("tcp://127.0.0.1:*");
  cli_process watch({"watch", publisher.endpoint(), "--timeout", "60"});
  REQUIRE(publisher.wait_for_subscribers(1, 60s) == 1);
  for (const auto& e : small_run()) publisher.publish(e);
  REQUIRE(watch.wait() == 0);

  // Not a terminal: one line per progress event, no carriage returns.
  auto lines = lines_of(watch.out());
  REQUIRE(lines.size() == 5);
  CHECK_THAT(lines[0], Contains("run 5: task gemm/512, strategy opevo, seed 11, 3 trials, 2 device(s)"));
  CHECK_THAT(lines[1], Contains("new best 3 ms at trial 0") && Contains("{\"tile\":2}"));
  CHECK_THAT(lines[2], Contains("trials 2 | 4.0/s | best 3 ms | compile 75% sim0 50% sim1 25%"));
  CHECK_THAT(lines[3], Contains("new best 1.25 ms at trial 2") && Contains("{\"tile\":8}"));
  CHECK_THAT(lines[4], Contains("finished (budget): 3 trials in 0.8 s, best 1.25 ms {\"tile\":8}"));
  CHECK(watch.out().find('\r') == std::string::npos);
}

TEST_CASE("watch follows a model run's rounds on its one stream and ends with the model", "[cli]") {
  scratch_dir dir("watch-model");
  const auto out = watch_model_run(dir, {"--budget", "30", "--round-trials", "6", "--seed", "3"});

  std::size_t model_events = 0, rounds = 0, finished_runs = 0;
  nlohmann::json last;
  for (const auto& line : lines_of(out.json)) {
    last = nlohmann::json::parse(line);
    model_events += last["type"] == "model_progress";
    rounds += last["type"] == "model_progress" && last["task"].is_number();
    finished_runs += last["type"] == "run_finished";
  }
  CHECK(last["type"] == "model_progress");  // the stream's last event, not a round's run_finished
  CHECK(last["reason"] == "budget");
  REQUIRE(last["tasks"].size() == 5);
  std::size_t tasks_run = 0;
  for (const auto& t : last["tasks"]) tasks_run += t["run_id"] != 0;
  CHECK(rounds >= 2);
  CHECK(model_events == rounds + 2);           // its start, each round, its end
  CHECK(finished_runs == rounds + tasks_run);  // every round's run, then the end of each task that ran

  const auto& text = out.view;
  INFO(text);
  CHECK_THAT(text, Contains("model replayed-gpu-model: 5 tasks, 30 trials in all, scheduler gradient, seed 3"));
  CHECK_THAT(text, Contains("round finished (stopped)"));
  CHECK_THAT(text, Contains("model replayed-gpu-model: ") && Contains("/30 trials, latency "));
  CHECK_THAT(text, Contains("model replayed-gpu-model finished (budget): "));
  CHECK(lines_of(text).back().find("trials  ") != std::string::npos);  // the tasks' table ends it
}

TEST_CASE("watch follows a model through one pipeline: one header then progress lines and the model's end", "[cli]") {
  scratch_dir dir("watch-model-one");
  const auto out = watch_model_run(dir, {"--budget", "40", "--round-trials", "4", "--one-pipeline", "--seed", "3"});
  std::size_t progress = 0, started = 0;
  nlohmann::json last;
  for (const auto& line : lines_of(out.json)) {
    last = nlohmann::json::parse(line);
    if (last["type"] == "model_progress" && !last["reason"].is_string()) {
      ++progress;
      CHECK(last["task"].is_null());  // no rounds to name
    }
    started += last["type"] == "run_started";
  }
  CHECK(last["type"] == "model_progress");
  CHECK(last["reason"] == "budget");
  CHECK(progress >= 2);  // the start and at least the end of the search
  const auto& text = out.view;
  INFO(text);
  std::size_t headers = 0;
  for (const auto& line : lines_of(text)) headers += line.find("5 tasks, 40 trials in all") != std::string::npos;
  CHECK(headers == 1);
  CHECK_THAT(text, Contains("model replayed-gpu-model: 40/40 trials, latency "));
  CHECK_THAT(text, Contains("model replayed-gpu-model finished (budget): "));
  CHECK(started >= 5);  // every task's run started on the one stream
}

TEST_CASE("watch joining a model run mid-way does not end at a round's end", "[cli]") {
  event_publisher publisher("tcp://127.0.0.1:*");
  cli_process view({"watch", publisher.endpoint(), "--timeout", "60"});
  cli_process json({"watch", publisher.endpoint(), "--json", "--timeout", "60"});
  REQUIRE(publisher.wait_for_subscribers(2, 60s) == 2);
  publisher.set_common_fields({{"model", "m"}});  // what a model's stream tags every event with
  auto events = small_run();                      // a round's run, joined after the model's first event
  for (const auto& e : events) publisher.publish(e);
  model_progress_event end;
  end.model = "m";
  end.trials = 3;
  end.budget_trials = 3;
  end.reason = tune::end_reason::budget;
  model_task_state task;
  task.label = "gemm";
  task.target = "gemm/512";
  task.trials = 3;
  task.best_ms = 1.25;
  end.tasks = {task};
  publisher.publish(make_event(end));
  REQUIRE(view.wait() == 0);
  REQUIRE(json.wait() == 0);
  CHECK(lines_of(json.out()).size() == events.size() + 1);  // it went on past run_finished
  CHECK_THAT(view.out(), Contains("round finished (budget)") && Contains("model m finished (budget)"));
}

TEST_CASE("watch ends on Ctrl-C, on silence and on a bad endpoint", "[cli]") {
  event_publisher publisher("tcp://127.0.0.1:*");
  cli_process interrupted({"watch", publisher.endpoint()});
  REQUIRE(publisher.wait_for_subscribers(1, 60s) == 1);
  interrupted.signal(SIGINT);
  CHECK(interrupted.wait() == 130);

  cli_process silent({"watch", publisher.endpoint(), "--timeout", "0.3"});
  CHECK(silent.wait() == 1);
  CHECK_THAT(silent.err(), Contains("no event") && Contains("giving up"));

  cli_process bad({"watch", "localhost:5556"});
  CHECK(bad.wait() == 2);
  CHECK_THAT(bad.err(), Contains("tcp://HOST:PORT"));

  cli_process negative({"watch", publisher.endpoint(), "--timeout", "-1"});
  CHECK(negative.wait() == 2);
}

TEST_CASE("keys makes a CURVE pair that tune refuses to go without off loopback and watch reads with", "[cli]") {
  scratch_dir dir("tune-test-keys");
  auto keys = (dir / "keys").string();
  cli_process make({"keys", "--out", keys});
  REQUIRE(make.wait() == 0);
  std::string secret, pub;
  std::ifstream(keys + "/events.key") >> secret;
  std::ifstream(keys + "/events.pub") >> pub;
  CHECK(secret.size() == 40);
  CHECK(pub.size() == 40);
  CHECK_THAT(make.out(), Contains(pub));
  CHECK(curve_public_key(secret) == pub);
  // Not again over existing keys.
  cli_process again({"keys", "--out", keys});
  CHECK(again.wait() == 2);
  CHECK_THAT(again.err(), Contains("exists already") && Contains("--force"));

  // Off loopback without a key: one message naming the endpoint and the fix.
  cli_process open_stream(
      {"tune", "--task", "matmul:16x16x16", "--budget", "1", "--seed", "1", "--publish", "tcp://*:5599"});
  CHECK(open_stream.wait() == 2);
  CHECK_THAT(open_stream.err(), Contains("tcp://*:5599") && Contains("CURVE") && Contains("tune-engine keys"));

  // watch reads a CURVE stream with the publisher's public key file.
  event_publisher publisher("tcp://127.0.0.1:*", secret);
  cli_process watch({"watch", publisher.endpoint(), "--json", "--timeout", "60", "--server-key", keys + "/events.pub"});
  REQUIRE(publisher.wait_for_subscribers(1, 60s) == 1);
  for (const auto& e : small_run()) publisher.publish(e);
  REQUIRE(watch.wait() == 0);
  CHECK(lines_of(watch.out()).size() == small_run().size());

  cli_process bad_key({"watch", publisher.endpoint(), "--server-key", "nonsense"});
  CHECK(bad_key.wait() == 2);
  CHECK_THAT(bad_key.err(), Contains("--server-key") && Contains("tune-engine keys"));
}
