// A node's task: what crosses the network reads back as it was written, and
// a task that is missing a field or has a wrong one is refused naming it; a
// model's tasks (kind multi) become one backend on the node, each task's
// dataset its share of the payload.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "tune/actors/nodes.hpp"
#include "tune/engine/multi_task.hpp"
#include "tune/kernels/replay.hpp"

using namespace tune::actors;
using Catch::Matchers::Contains;

namespace {

/// What from_json says of `text`: its message, or "(accepted)".
std::string node_task_refusal(const std::string& text) {
  try {
    node_task::from_json(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

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
  CHECK_THAT(node_task_refusal("[1]"), Contains("not a JSON object"));
  CHECK_THAT(node_task_refusal(R"({"kind": "model"})"),
             Contains("'kind'") && Contains("'task'") && Contains("'replay'"));
  CHECK_THAT(node_task_refusal(R"({"kind": 3})"), Contains("'kind' is not a string"));
  CHECK_THAT(node_task_refusal(R"({"kind": "task"})"), Contains("'task' is missing"));
  CHECK_THAT(node_task_refusal(R"({"kind": "task", "task": "matmul:8x8x8", "measurement": 1})"),
             Contains("'measurement' is not an object"));
  CHECK_THAT(node_task_refusal(
                 R"({"kind": "task", "task": "matmul:8x8x8", "measurement": {"min_repeats": 4, "max_repeats": 2}})"),
             Contains("'measurement'") && Contains("max_repeats must be from min_repeats"));
  CHECK_THAT(node_task_refusal(R"({"kind": "task", "task": "matmul:8x8x8", "measurement": {"min_time_s": "long"}})"),
             Contains("'min_time_s' is not a number"));
  CHECK_THAT(node_task_refusal(R"({"kind": "task", "task": "matmul:8x8x8", "measurement": {"statistic": "mean"}})"),
             Contains("'measurement.statistic' is 'mean', not median or min"));
  CHECK_THAT(node_task_refusal(R"({"kind": "task", "task": "matmul:8x8x8", "threads": 0})"), Contains("'threads'"));
  CHECK_THAT(node_task_refusal(R"({"kind": "task", "task": "matmul:8x8x8", "seed": -1})"), Contains("'seed'"));
  CHECK_THAT(node_task_refusal(R"({"kind": "replay", "dataset_name": "../etc/passwd"})"),
             Contains("'dataset_name'") && Contains("not a plain file name"));
  CHECK_THAT(node_task_refusal(R"({"kind": "replay", "kinds": {"a": 1}})"), Contains("'kinds'"));
  CHECK_THAT(node_task_refusal(R"({"kind": "replay", "time_scale": -1})"), Contains("'time_scale'"));
  CHECK_THAT(node_task_refusal(R"({"kind": "replay", "run_timeout_s": 0})"), Contains("must be > 0"));
  CHECK_THAT(node_task_refusal(R"({"kind": "replay", "devices": [0, "one"]})"), Contains("'devices'"));
  CHECK_THAT(node_task_refusal(R"({"kind": "replay", "early_stop": {"margin": -1}})"), Contains("'early_stop'"));
  CHECK_THAT(node_task_refusal(R"({"kind": "replay", "early_stop": 3})"), Contains("'early_stop' is not an object"));
  CHECK(node_task_refusal(R"({"kind": "replay"})") == "(accepted)");
}

namespace {

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

node_task replay_part(const std::string& name) {
  node_task part;
  part.kind = node_task::kind_t::replay;
  part.dataset_name = name;
  return part;
}

}  // namespace

TEST_CASE("node task: a model's tasks read back as written and refuse parts that do not fit", "[actors]") {
  node_task multi;
  multi.kind = node_task::kind_t::multi;
  multi.seed = 5;
  multi.time_scale = 0.25;
  multi.devices = {0};
  multi.parts = {replay_part("a.json.gz"), replay_part("b.json")};
  multi.parts[1].kinds = {{"x", "categorical"}};
  multi.part_bytes = {10, 20};
  auto back = node_task::from_json(multi.to_json());
  CHECK(back.kind == node_task::kind_t::multi);
  CHECK(back.seed == 5);
  CHECK(back.time_scale == 0.25);
  CHECK(back.devices == std::vector<std::uint32_t>{0});
  REQUIRE(back.parts.size() == 2);
  CHECK(back.parts[0].dataset_name == "a.json.gz");
  CHECK(back.parts[1].kinds == multi.parts[1].kinds);
  CHECK(back.part_bytes == std::vector<std::uint64_t>{10, 20});
  CHECK_FALSE(back.builds_kernels());

  CHECK_THAT(node_task_refusal(R"({"kind": "multi"})"), Contains("'parts'"));
  CHECK_THAT(node_task_refusal(R"({"kind": "multi", "parts": [{"kind": "replay"}]})"), Contains("'part_bytes'"));
  CHECK_THAT(node_task_refusal(R"({"kind": "multi", "parts": [{"kind": "replay"}], "part_bytes": [-1]})"),
             Contains("'part_bytes'") && Contains("not a byte count"));
  CHECK_THAT(
      node_task_refusal(R"({"kind": "multi", "parts": [{"kind": "replay", "time_scale": -1}], "part_bytes": [1]})"),
      Contains("'parts[0]'") && Contains("'time_scale'"));
  CHECK_THAT(node_task_refusal(R"({"kind": "multi", "parts": [{"kind": "multi"}], "part_bytes": [1]})"),
             Contains("'parts[0]'"));
  CHECK_THAT(
      node_task_refusal(R"({"kind": "multi", "parts": [{"kind": "replay"}, {"kind": "task", "task": "matmul:8x8x8"}],
                          "part_bytes": [1, 1]})"),
      Contains("'parts[1]'") && Contains("another kind"));
}

TEST_CASE("node task: a node builds a model's replayed tasks from their datasets one after the other", "[actors]") {
  const std::string dir = std::string(TUNE_DATA_DIR) + "/datasets/";
  const std::string coulomb = dir + "ktt/coulomb3d_RTX_2080_Ti_KTT_profiling.json.gz";
  const std::string pnpoly = dir + "convolution_v1_rtx/RTX_2080_Ti.json.gz";
  node_task multi;
  multi.kind = node_task::kind_t::multi;
  multi.time_scale = 0.0;
  multi.parts = {replay_part("coulomb.json.gz"), replay_part("RTX_2080_Ti.json.gz")};
  const auto a = file_bytes(coulomb), b = file_bytes(pnpoly);
  REQUIRE((!a.empty() && !b.empty()));
  multi.part_bytes = {a.size(), b.size()};
  auto backend = make_node_backend(node_task::from_json(multi.to_json()), a + b, "replay");
  // Each task's configurations run with that task's recorded times.
  const auto datasets = {tune::read_replay_dataset(coulomb), tune::read_replay_dataset(pnpoly)};
  std::uint32_t task = 0;
  for (const auto& dataset : datasets) {
    for (std::size_t i = 0; i < dataset.configs.size(); i += dataset.configs.size() / 7) {
      const auto& record = dataset.records[i];
      const auto config = tune::tagged(task, dataset.configs[i]);
      auto built = backend->build(config, 10.0);
      if (record.state != tune::status::ok) continue;
      REQUIRE(built.state == tune::status::ok);
      auto run = backend->run(config, built, 0, {});
      REQUIRE(run.state == tune::status::ok);
      CHECK(run.time_ms == Approx(record.time_ms));
    }
    ++task;
  }
  // Byte counts that do not add up to the payload are refused.
  CHECK_THROWS_WITH(make_node_backend(multi, a + b + "x", "replay"), Contains("add up to"));
  CHECK_THROWS_AS(make_node_backend(multi, a + b, "cpu"), std::invalid_argument);
}
