// A node's task: what crosses the network reads back as it was written, and
// a task that is missing a field or has a wrong one is refused naming it.
#include <catch2/catch.hpp>

#include "tune/actors/nodes.hpp"

using namespace tune::actors;
using Catch::Matchers::Contains;

TEST_CASE("node task: a built-in task and a replayed dataset read back as written", "[actors]") {
  node_task task;
  task.kind = node_task::kind_t::task;
  task.task = "matmul:64x64x64";
  task.threads = 2;
  task.seed = 18446744073709551615ull;
  task.timeouts = tune::timeouts{30.0, 4.0};
  task.devices = {1, 3};
  task.early_stop = {20.0, 2.0, 0.5, 250.0};
  auto back = node_task::from_json(task.to_json());
  CHECK(back.early_stop.slow_factor == 20.0);
  CHECK(back.early_stop.min_slow_ms == 2.0);
  CHECK(back.early_stop.margin == 0.5);
  CHECK(back.early_stop.first_limit_ms == 250.0);
  CHECK(back.kind == node_task::kind_t::task);
  CHECK(back.task == "matmul:64x64x64");
  CHECK(back.threads == 2);
  CHECK(back.seed == task.seed);
  REQUIRE(back.timeouts);
  CHECK(back.timeouts->compile_s == 30.0);
  CHECK(back.timeouts->run_s == 4.0);
  CHECK(back.devices == std::vector<std::uint32_t>{1, 3});
  CHECK_FALSE(back.measurement);  // the node's defaults
  task.measurement = tune::measurement_protocol{0.25, 5, 50};
  auto timed = node_task::from_json(task.to_json());
  REQUIRE(timed.measurement);
  CHECK(timed.measurement->min_time_s == 0.25);
  CHECK(timed.measurement->min_repeats == 5);
  CHECK(timed.measurement->max_repeats == 50);
  CHECK(timed.measurement->statistic == tune::time_statistic::median);
  task.measurement->statistic = tune::time_statistic::min;
  CHECK(node_task::from_json(task.to_json()).measurement->statistic == tune::time_statistic::min);

  node_task replay;
  replay.kind = node_task::kind_t::replay;
  replay.dataset_name = "A100.json.gz";
  replay.kinds = {{"block", "categorical"}};
  replay.time_scale = 0.0;  // no waiting at all
  auto again = node_task::from_json(replay.to_json());
  CHECK(again.kind == node_task::kind_t::replay);
  CHECK(again.dataset_name == "A100.json.gz");
  CHECK(again.kinds == replay.kinds);
  CHECK(again.time_scale == 0.0);
  CHECK_FALSE(again.timeouts);   // the node's own
  CHECK(again.devices.empty());  // all of the node's devices
}

TEST_CASE("node task: bad tasks are refused naming the field", "[actors]") {
  auto error_of = [](const std::string& text) {
    try {
      node_task::from_json(text);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  CHECK_THAT(error_of("[1]"), Contains("not a JSON object"));
  CHECK_THAT(error_of(R"({"kind": "model"})"), Contains("'kind'") && Contains("'task'") && Contains("'replay'"));
  CHECK_THAT(error_of(R"({"kind": 3})"), Contains("'kind' is not a string"));
  CHECK_THAT(error_of(R"({"kind": "task"})"), Contains("'task' is missing"));
  CHECK_THAT(error_of(R"({"kind": "task", "task": "matmul:8x8x8", "measurement": 1})"),
             Contains("'measurement' is not an object"));
  CHECK_THAT(
      error_of(R"({"kind": "task", "task": "matmul:8x8x8", "measurement": {"min_repeats": 4, "max_repeats": 2}})"),
      Contains("'measurement'") && Contains("max_repeats must be from min_repeats"));
  CHECK_THAT(error_of(R"({"kind": "task", "task": "matmul:8x8x8", "measurement": {"min_time_s": "long"}})"),
             Contains("'min_time_s' is not a number"));
  CHECK_THAT(error_of(R"({"kind": "task", "task": "matmul:8x8x8", "measurement": {"statistic": "mean"}})"),
             Contains("'measurement.statistic' is 'mean', not median or min"));
  CHECK_THAT(error_of(R"({"kind": "task", "task": "matmul:8x8x8", "threads": 0})"), Contains("'threads'"));
  CHECK_THAT(error_of(R"({"kind": "task", "task": "matmul:8x8x8", "seed": -1})"), Contains("'seed'"));
  CHECK_THAT(error_of(R"({"kind": "replay", "dataset_name": "../etc/passwd"})"),
             Contains("'dataset_name'") && Contains("not a plain file name"));
  CHECK_THAT(error_of(R"({"kind": "replay", "kinds": {"a": 1}})"), Contains("'kinds'"));
  CHECK_THAT(error_of(R"({"kind": "replay", "time_scale": -1})"), Contains("'time_scale'"));
  CHECK_THAT(error_of(R"({"kind": "replay", "run_timeout_s": 0})"), Contains("must be > 0"));
  CHECK_THAT(error_of(R"({"kind": "replay", "devices": [0, "one"]})"), Contains("'devices'"));
  CHECK_THAT(error_of(R"({"kind": "replay", "early_stop": {"margin": -1}})"), Contains("'early_stop'"));
  CHECK_THAT(error_of(R"({"kind": "replay", "early_stop": 3})"), Contains("'early_stop' is not an object"));
  CHECK(error_of(R"({"kind": "replay"})") == "(accepted)");
}
