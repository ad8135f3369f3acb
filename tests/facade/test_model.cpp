// tune::read_model and tune::tune_model: model files (merging identical
// workloads, every refusal naming the file, the field and the fix), the
// shipped example models, and whole-model runs on replayed datasets: one
// budget over the tasks, each task's run continued round after round and
// left resumable, the scheduler's weights at work, a model resumed.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <future>
#include <limits>
#include <numeric>
#include <set>

#include "actors/scratch_dir.hpp"
#include "facade/input_error_of.hpp"
#include "skip.hpp"
#include "tune/model.hpp"
#include "tune/storage/event_stream.hpp"
#include "tune/storage/results_db.hpp"

using namespace tune;
using tune::test::input_error_of;
using tune::test::scratch_dir;

namespace {

std::filesystem::path write(const scratch_dir& dir, const std::string& name, const std::string& text) {
  auto path = dir / name;
  std::ofstream(path) << text;
  return path;
}

const std::string data_dir = TUNE_DATA_DIR;

/// Two replayed spaces, the first weighted 10.
std::string two_dataset_model(int heavy_count = 10) {
  return "name: two\ntasks:\n"
         "  - name: conv\n    dataset: " +
         data_dir + "/datasets/convolution/A100.json.gz\n    count: " + std::to_string(heavy_count) +
         "\n"
         "  - name: gemm\n    dataset: " +
         data_dir + "/datasets/gemm_clblast/RTX_3090.json.gz\n    count: 1\n";
}

/// Two small CPU tasks of one family (a, b) and one of another (c).
std::string family_model() {
  return "tasks:\n"
         "  - {name: a, task: bmm:2x32x32x32}\n"
         "  - {name: b, task: bmm:4x32x32x32}\n"
         "  - {name: c, task: conv2d:1x4x8x8:4x3x3:p1}\n";
}

model_options replayed_model_options(const std::filesystem::path& db, std::uint64_t budget) {
  model_options o;
  o.session.db_path = db.string();
  o.session.seed = 5;
  o.session.strategy = "random";
  o.session.time_scale = 0.001;  // a recorded second replayed in a millisecond
  o.budget_trials = budget;
  o.round_trials = 8;
  return o;
}

}  // namespace

TEST_CASE("model: a file's identical workloads are merged, counts added, names kept", "[facade][model]") {
  scratch_dir dir("tune-model-file");
  auto path = write(dir, "m.yaml",
                    "name: tiny\n"
                    "tasks:\n"
                    "  - name: a\n    task: matmul:64x64x64\n    count: 2\n"
                    "  - name: b\n    task: conv2d:1x8x16x16:8x3x3:p1\n"
                    "  - name: c\n    task: matmul:64x64x64\n    count: 0.5\n");
  auto m = read_model(path.string());
  CHECK(m.name == "tiny");
  CHECK(m.entries == 3);
  REQUIRE(m.tasks.size() == 2);
  CHECK(m.tasks[0].task == "matmul:64x64x64");
  CHECK(m.tasks[0].count == 2.5);
  CHECK(m.tasks[0].label() == "a, c");
  CHECK(m.tasks[0].family == "matmul");
  CHECK(m.tasks[0].flops == 2.0 * 64 * 64 * 64);
  CHECK(m.tasks[1].family == "conv2d");
  CHECK(m.tasks[1].count == 1.0);
  // The canonical task string: the same convolution written with its defaults spelled out merges too.
  auto again =
      write(dir, "n.yaml", "tasks:\n  - task: conv2d:1x8x16x16:8x3x3:s1:p1\n  - task: conv2d:1x8x16x16:8x3x3:p1\n");
  auto n = read_model(again.string());
  CHECK(n.name == "n");
  REQUIRE(n.tasks.size() == 1);
  CHECK(n.tasks[0].count == 2.0);
}

TEST_CASE("model: layouts own tunes every convolution in its kernel's own layouts", "[facade][model]") {
  scratch_dir dir("tune-model-layouts");
  const std::string tasks =
      "tasks:\n"
      "  - task: conv2d:1x8x16x16:8x3x3:p1\n"
      "  - task: matmul:64x64x64\n"
      "  - task: conv2d:1x8x16x16:8x3x3:s1:p1:own\n";
  auto own = read_model(write(dir, "own.yaml", "layouts: own\n" + tasks).string());
  // The convolution written both ways is one workload in its own layouts.
  REQUIRE(own.tasks.size() == 2);
  CHECK(own.tasks[0].task == "conv2d:1x8x16x16:8x3x3:s1:p1:own");
  CHECK(own.tasks[0].count == 2.0);
  CHECK(own.tasks[1].task == "matmul:64x64x64");
  auto plain = read_model(write(dir, "plain.yaml", "layouts: plain\n" + tasks).string());
  REQUIRE(plain.tasks.size() == 3);
  CHECK(plain.tasks[0].task == "conv2d:1x8x16x16:8x3x3:s1:p1");
  CHECK(plain.tasks[2].task == "conv2d:1x8x16x16:8x3x3:s1:p1:own");
  CHECK(read_model(write(dir, "default.yaml", tasks).string()).tasks.size() == 3);
  CHECK_THAT(
      input_error_of([&] { read_model(write(dir, "bad.yaml", "layouts: blocked\n" + tasks).string()); }, "accepted"),
      Catch::Contains("bad.yaml: layouts: must be 'plain'") && Catch::Contains("not 'blocked'"));
}

TEST_CASE("model: the shipped models read, with ResNet-18's repeated convolutions merged", "[facade][model]") {
  const std::string examples = std::string(TUNE_SOURCE_DIR) + "/examples/models/";
  auto resnet = read_model(examples + "resnet18.yaml");
  CHECK(resnet.entries == 21);
  REQUIRE(resnet.tasks.size() == 12);
  double convolutions = 0;
  for (const auto& t : resnet.tasks)
    if (t.family == "conv2d") convolutions += t.count;
  CHECK(convolutions == 20);
  // layer1's four 3x3 convolutions are one task.
  CHECK(resnet.tasks[1].count == 4);
  CHECK(resnet.tasks[1].label() == "layer1.0.conv1, layer1.0.conv2, layer1.1.conv1, layer1.1.conv2");
  auto bert = read_model(examples + "bert_layer.yaml");
  REQUIRE(bert.tasks.size() == 5);
  CHECK(bert.tasks[0].count == 4);  // query, key, value, output projections
  CHECK(bert.tasks[1].task == "bmm:12x128x64x128:nt");
  auto replayed = read_model(examples + "replayed_gpu.yaml");
  REQUIRE(replayed.tasks.size() == 5);
  for (const auto& t : replayed.tasks) CHECK(std::filesystem::is_regular_file(t.dataset));
}

TEST_CASE("model: a bad model file is refused with the file, the field and the fix", "[facade][model]") {
  scratch_dir dir("tune-model-bad");
  auto refused = [&](const std::string& text) {
    auto path = write(dir, "bad.yaml", text);
    return input_error_of([&] { read_model(path.string()); }, "accepted");
  };
  CHECK_THAT(input_error_of([&] { read_model((dir / "none.yaml").string()); }, "accepted"),
             Catch::Contains("none.yaml: cannot be read"));
  CHECK_THAT(refused("tasks: [\n"), Catch::Contains("not valid YAML"));
  CHECK_THAT(refused("- a\n"), Catch::Contains("must be a mapping with 'tasks:'"));
  CHECK_THAT(refused("name: x\n"), Catch::Contains("bad.yaml: tasks: must be a non-empty list"));
  CHECK_THAT(refused("tasks: []\n"), Catch::Contains("tasks: must be a non-empty list"));
  CHECK_THAT(refused("tasks: [{task: matmul:8x8x8}]\nmodle: x\n"), Catch::Contains("modle: unknown field"));
  CHECK_THAT(refused("tasks:\n  - task: matmul:8x8x8\n  - taks: matmul:8x8x8\n"),
             Catch::Contains("tasks[1].taks: unknown field"));
  CHECK_THAT(refused("tasks:\n  - name: only\n"), Catch::Contains("tasks[0]: give exactly one of 'task:'"));
  CHECK_THAT(refused("tasks:\n  - task: matmul:8x8x8\n    dataset: x.json\n"), Catch::Contains("give exactly one of"));
  CHECK_THAT(refused("tasks:\n  - task: matmul:8x8\n"), Catch::Contains("tasks[0].task: "));
  CHECK_THAT(refused("tasks:\n  - task: matmul:8x8x8\n    count: 0\n"), Catch::Contains("tasks[0].count: must be"));
  CHECK_THAT(refused("tasks:\n  - task: matmul:8x8x8\n    count: often\n"), Catch::Contains("tasks[0].count"));
  CHECK_THAT(refused("tasks:\n  - dataset: missing.json.gz\n"),
             Catch::Contains("tasks[0].dataset: no file " + (dir / "missing.json.gz").string()));
  CHECK_THAT(refused("tasks:\n  - task: [1, 2]\n"), Catch::Contains("tasks[0].task: must be a string"));
}

TEST_CASE("model: one budget over the tasks, each task's run continued round after round", "[facade][model]") {
  scratch_dir dir("tune-model-run");
  auto m = read_model(write(dir, "m.yaml", two_dataset_model()).string());
  auto o = replayed_model_options(dir / "r.db", 96);
  std::vector<model_progress> rounds;
  o.on_round = [&](const model_progress& p) { rounds.push_back(p); };
  auto r = tune_model(m, o);

  CHECK(r.reason == end_reason::budget);
  CHECK(r.trials == 96);  // each round hands out its trials and no more
  REQUIRE(r.tasks.size() == 2);
  CHECK(r.tasks[0].trials + r.tasks[1].trials == r.trials);
  CHECK(r.trace.size() == rounds.size());
  CHECK(r.tasks[0].rounds + r.tasks[1].rounds == rounds.size());
  for (const auto& t : r.tasks) REQUIRE(t.best);
  // One family (datasets), but the convolution's configurations map nowhere
  // in the GEMM's space: no prior, and the report says so.
  CHECK(r.tasks[1].prior_from.empty());
  CHECK_THAT(r.latency_ms, Catch::WithinRel(10 * r.tasks[0].best->time_ms + 1 * r.tasks[1].best->time_ms, 1e-12));
  REQUIRE(!rounds.empty());
  CHECK(rounds[0].trials == 8);
  for (std::size_t i = 1; i < rounds.size(); ++i) {
    CHECK(rounds[i].trials == rounds[i - 1].trials + 8);
    if (std::isfinite(rounds[i - 1].latency_ms)) CHECK(rounds[i].latency_ms <= rounds[i - 1].latency_ms);
  }

  // One run per task in the database, holding every trial of its rounds,
  // finished as the model was.
  storage::results_db db((dir / "r.db").string(), storage::results_db::open_mode::read_only);
  auto runs = db.runs();
  REQUIRE(runs.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(runs[i].reason == end_reason::budget);
    CHECK(runs[i].seed == 5);
    const auto& t = r.tasks[runs[i].id == r.tasks[0].run_id ? 0 : 1];
    CHECK(db.trials(runs[i].id).size() == t.trials);
  }

  SECTION("a later model run searches anew, the earlier measurements answering from the cache") {
    auto more = replayed_model_options(dir / "r.db", 160);
    more.session.resume = true;
    auto again = tune_model(m, more);
    CHECK(again.trials >= 160);
    CHECK(again.tasks[0].run_id != r.tasks[0].run_id);
    storage::results_db after((dir / "r.db").string(), storage::results_db::open_mode::read_only);
    CHECK(after.runs().size() == 4);
    std::size_t reused = 0;
    for (const auto& trial : after.trials(again.tasks[0].run_id)) reused += trial.reused_from_run.has_value();
    CHECK(reused >= std::min(r.tasks[0].trials, again.tasks[0].trials) / 2);
  }
}

TEST_CASE("model: one event stream for the whole model, its rounds' runs and its progress after each round",
          "[facade][model]") {
  scratch_dir dir("tune-model-events");
  auto m = read_model(write(dir, "m.yaml", two_dataset_model()).string());
  auto o = replayed_model_options(dir / "r.db", 48);
  o.session.publish_endpoint = "ipc://" + (dir / "events.ipc").string();
  o.session.publish_wait = 1;  // this test's subscriber sees the model's first event
  storage::event_subscriber sub(o.session.publish_endpoint);
  auto running = std::async(std::launch::async, [&] { return tune_model(m, o); });
  std::vector<nlohmann::json> events;
  while (auto e = sub.receive(std::chrono::seconds(20))) {
    events.push_back(*e);
    if ((*e)["type"] == "model_progress" && (*e)["reason"].is_string()) break;
  }
  auto r = running.get();
  REQUIRE(!events.empty());
  std::vector<nlohmann::json> model;
  for (const auto& e : events)
    if (e["type"] == "model_progress") model.push_back(e);
  REQUIRE(model.size() == r.trace.size() + 2);  // its start, each round, its end
  CHECK(events.front() == model.front());
  CHECK(model.front()["task"].is_null());
  CHECK(model.front()["trials"] == 0);
  CHECK(model.front()["latency_ms"].is_null());
  CHECK(model.front()["model"] == "two");
  CHECK(model.front()["budget_trials"] == 48);
  CHECK(model.front()["seed"] == 5);
  for (std::size_t i = 0; i < r.trace.size(); ++i) {
    const auto& e = model[i + 1];
    INFO("round " << i);
    CHECK(e["task"] == r.trace[i].task);
    CHECK(e["trials"] == r.trace[i].trials);
    CHECK(e["reason"].is_null());
    if (std::isfinite(r.trace[i].latency_ms))
      CHECK(e["latency_ms"].get<double>() == r.trace[i].latency_ms);
    else
      CHECK(e["latency_ms"].is_null());
  }
  const auto& last = model.back();
  CHECK(last["reason"] == "budget");
  CHECK(last["task"].is_null());
  CHECK(last["trials"] == r.trials);
  CHECK(last["latency_ms"].get<double>() == r.latency_ms);
  REQUIRE(last["tasks"].size() == 2);
  for (std::size_t t = 0; t < 2; ++t) {
    CHECK(last["tasks"][t]["run_id"] == r.tasks[t].run_id);
    CHECK(last["tasks"][t]["trials"] == r.tasks[t].trials);
    CHECK(last["tasks"][t]["best_ms"].get<double>() == r.tasks[t].best->time_ms);
    CHECK(last["tasks"][t]["label"] == r.tasks[t].label);
  }
  // Between two progress events, the round's own run on the same stream:
  // started and finished, the run of the task the event names.
  std::int64_t round_run = 0;
  std::size_t rounds_seen = 0, finished_runs = 0;
  for (const auto& e : events) {
    if (e["type"] == "run_started") round_run = e["run_id"];
    if (e["type"] == "run_finished") ++finished_runs;
    if (e["type"] == "model_progress" && e["task"].is_number()) {
      ++rounds_seen;
      CHECK(round_run == r.tasks[e["task"].get<std::size_t>()].run_id);
      round_run = 0;
    }
  }
  CHECK(rounds_seen == r.trace.size());
  CHECK(finished_runs == r.trace.size() + 2);  // each round's run, then each task's end
  // Every event of the stream, the rounds' runs' too, names the model.
  for (const auto& e : events) CHECK(e.value("model", "") == "two");
}

TEST_CASE("model: an embedder's publisher carries the model's events and comes back untagged", "[facade][model]") {
  scratch_dir dir("tune-model-publisher");
  auto m = read_model(write(dir, "m.yaml", two_dataset_model()).string());
  auto o = replayed_model_options(dir / "r.db", 24);
  auto publisher = std::make_shared<storage::event_publisher>("tcp://127.0.0.1:*");
  storage::event_subscriber sub(publisher->endpoint());
  REQUIRE(publisher->wait_for_subscribers(1, std::chrono::seconds(10)) == 1);
  o.session.publisher = publisher;
  auto r = tune_model(m, o);
  publisher->publish(storage::make_event(storage::progress_event{}));  // the embedder's own, after the model
  std::size_t model_events = 0;
  std::optional<nlohmann::json> after;
  while (auto e = sub.receive(std::chrono::seconds(10))) {
    if ((*e)["type"] == "model_progress") ++model_events;
    if ((*e)["type"] == "progress" && !(*e).contains("wall_elapsed_s")) {
      after = *e;
      break;
    }
  }
  CHECK(model_events == r.trace.size() + 2);
  REQUIRE(after);
  CHECK_FALSE(after->contains("model"));
}

TEST_CASE("model: a one-task model keeps one run, which its rounds continue and its end finishes", "[facade][model]") {
  scratch_dir dir("tune-model-one");
  auto m = read_model(
      write(dir, "m.yaml", "tasks:\n  - dataset: " + data_dir + "/datasets/gemm_clblast/RTX_3090.json.gz\n").string());
  auto r = tune_model(m, replayed_model_options(dir / "r.db", 40));
  CHECK(r.tasks[0].rounds >= 4);
  storage::results_db db((dir / "r.db").string(), storage::results_db::open_mode::read_only);
  auto runs = db.runs();
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].reason == end_reason::budget);
  CHECK(db.trials(runs[0].id).size() == r.trials);
}

TEST_CASE("model: a stopped model leaves its runs resumable and a resume continues them", "[facade][model]") {
  scratch_dir dir("tune-model-stop");
  auto m = read_model(write(dir, "m.yaml", two_dataset_model()).string());
  auto o = replayed_model_options(dir / "r.db", 200);
  std::size_t rounds = 0;
  stop_source stop = o.session.stop;
  o.on_round = [&](const model_progress&) {
    if (++rounds == 3) stop.request_stop();
  };
  auto r = tune_model(m, o);
  CHECK(r.reason == end_reason::stopped);
  CHECK(r.trace.size() == 3);
  CHECK(r.trials < 200);
  {
    storage::results_db db((dir / "r.db").string(), storage::results_db::open_mode::read_only);
    for (const auto& run : db.runs()) CHECK(run.reason == end_reason::stopped);
  }
  auto more = replayed_model_options(dir / "r.db", 64);
  more.session.resume = true;
  auto again = tune_model(m, more);
  CHECK(again.reason == end_reason::budget);
  CHECK(again.tasks[0].run_id == r.tasks[0].run_id);
  CHECK(again.tasks[1].run_id == r.tasks[1].run_id);
  CHECK(again.trials >= 64);
  storage::results_db db((dir / "r.db").string(), storage::results_db::open_mode::read_only);
  CHECK(db.runs().size() == 2);
}

TEST_CASE("model: the gradient scheduler gives the heavy task more rounds than round robin does", "[facade][model]") {
  scratch_dir dir("tune-model-weights");
  auto m = read_model(write(dir, "m.yaml", two_dataset_model(50)).string());
  auto rounds_of_heavy = [&](scheduler_kind kind, const std::string& db) {
    auto o = replayed_model_options(dir / db, 96);
    o.scheduler.kind = kind;
    o.scheduler.epsilon = 0;
    return tune_model(m, o).tasks[0].rounds;
  };
  const auto robin = rounds_of_heavy(scheduler_kind::round_robin, "robin.db");
  const auto gradient = rounds_of_heavy(scheduler_kind::gradient, "gradient.db");
  CHECK(robin <= 7);  // 12 rounds of 8, every other one
  CHECK(gradient > robin);
}

TEST_CASE("model: without a database the rounds are recorded in a temporary one, removed after", "[facade][model]") {
  scratch_dir dir("tune-model-temp");
  auto m = read_model(write(dir, "m.yaml", two_dataset_model()).string());
  auto o = replayed_model_options({}, 40);
  o.session.db_path.clear();
  auto r = tune_model(m, o);
  CHECK(r.trials >= 40);
  const std::string prefix = "tune-model-" + std::to_string(::getpid()) + "-";
  int left = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::temp_directory_path()))
    left += entry.path().filename().string().rfind(prefix, 0) == 0;
  CHECK(left == 0);
}

TEST_CASE("model: bad options are refused", "[facade][model]") {
  scratch_dir dir("tune-model-options");
  auto m = read_model(write(dir, "m.yaml", two_dataset_model()).string());
  auto o = replayed_model_options(dir / "r.db", 40);
  o.session.task = "matmul:8x8x8";
  CHECK_THAT(input_error_of([&] { tune_model(m, o); }, "accepted"), Catch::Contains("the model names the tasks"));
  o = replayed_model_options(dir / "r.db", 40);
  o.round_trials = 0;
  CHECK_THAT(input_error_of([&] { tune_model(m, o); }, "accepted"), Catch::Contains("round_trials"));
  o = replayed_model_options(dir / "r.db", 40);
  o.scheduler.alpha = 2;
  CHECK_THAT(input_error_of([&] { tune_model(m, o); }, "accepted"), Catch::Contains("alpha"));
}

TEST_CASE("model: the report as text and JSON", "[facade][model]") {
  scratch_dir dir("tune-model-report");
  auto m = read_model(write(dir, "m.yaml", two_dataset_model()).string());
  auto r = tune_model(m, replayed_model_options(dir / "r.db", 32));
  auto j = r.to_json();
  CHECK(j["model"] == "two");
  CHECK(j["seed"] == "5");
  CHECK(j["scheduler"] == "gradient");
  REQUIRE(j["tasks"].size() == 2);
  CHECK(j["tasks"][0]["label"] == "conv");
  CHECK(j["tasks"][0]["names"] == nlohmann::json::array({"conv"}));
  CHECK(j["tasks"][0]["count"] == 10.0);
  CHECK(j["tasks"][0]["best_configuration"].is_object());
  CHECK(j["trace"].size() == r.trace.size());
  auto text = r.to_text();
  CHECK_THAT(text, Catch::Contains("model two: "));
  CHECK_THAT(text, Catch::Contains("(conv)"));
  CHECK_THAT(text, Catch::Contains("model latency (sum of count x best): "));
}

TEST_CASE("model: CPU tasks end confirmed and compared with the vendors, the model's ratio from their rounds",
          "[facade][model]") {
  scratch_dir dir("tune-model-cpu");
  ::setenv("TUNE_CACHE_DIR", (dir / "cache").c_str(), 1);
  auto m = read_model(write(dir, "m.yaml",
                            "name: small\ntasks:\n"
                            "  - {name: a, task: matmul:64x64x64, count: 2}\n"
                            "  - {name: b, task: matmul:32x64x32, count: 1}\n")
                          .string());
  model_options o;
  o.session.db_path = (dir / "r.db").string();
  o.session.seed = 3;
  o.session.strategy = "random";
  o.session.confirm.top = 2;
  o.session.confirm.rounds = 3;
  o.session.compare_vendor = true;
  o.budget_trials = 12;
  o.round_trials = 3;
  auto r = tune_model(m, o);
  REQUIRE(r.tasks.size() == 2);
  for (const auto& t : r.tasks) {
    REQUIRE(t.best);
    CHECK(t.confirmed);
    CHECK(t.throughput.is_object());
  }
  CHECK_THAT(r.latency_ms, Catch::WithinRel(2 * r.tasks[0].best->time_ms + r.tasks[1].best->time_ms, 1e-12));
  storage::results_db db((dir / "r.db").string(), storage::results_db::open_mode::read_only);
  for (const auto& run : db.runs()) {
    CHECK(run.reason == end_reason::budget);
    CHECK(run.confirmed_seq.has_value());
  }
  const auto& vendor = r.tasks[0].throughput["best_vendor"];
  if (!vendor.is_object()) SKIP_TEST("no vendor library (oneDNN, OpenBLAS) was found at build time");
  REQUIRE(r.vendor_latency_ms);
  REQUIRE(r.tuned_latency_interleaved_ms);
  const double flops_a = 2.0 * 64 * 64 * 64, flops_b = 2.0 * 32 * 64 * 32;
  const auto& vb = r.tasks[1].throughput["best_vendor"];
  CHECK_THAT(*r.vendor_latency_ms, Catch::WithinRel(2 * flops_a / (vendor["gflops"].get<double>() * 1e6) +
                                                        flops_b / (vb["gflops"].get<double>() * 1e6),
                                                    1e-9));
  CHECK_THAT(r.to_text(), Catch::Contains("tuned / vendor = "));
}

TEST_CASE("model: a task's search starts from the runs of its family's tasks that ran before it", "[facade][model]") {
  scratch_dir dir("tune-model-prior");
  ::setenv("TUNE_CACHE_DIR", (dir / "cache").c_str(), 1);
  auto m = read_model(write(dir, "m.yaml", family_model()).string());
  model_options o;
  o.session.db_path = (dir / "r.db").string();
  o.session.seed = 2;
  o.session.confirm.top = 0;
  o.budget_trials = 9;
  o.round_trials = 2;
  auto r = tune_model(m, o);
  CHECK(r.tasks[0].prior_from.empty());
  CHECK(r.tasks[1].prior_from == std::vector<std::string>{"a"});
  CHECK(r.tasks[2].prior_from.empty());  // another operator
  storage::results_db db((dir / "r.db").string(), storage::results_db::open_mode::read_only);
  auto run = db.find_run(r.tasks[1].run_id);
  REQUIRE(run);
  CHECK_THAT(run->options_json, Catch::Contains("of task bmm:2x32x32x32"));

  // Without auto_prior every task starts cold.
  scratch_dir cold_dir("tune-model-no-prior");
  o.session.db_path = (cold_dir / "r.db").string();
  o.session.auto_prior = false;
  auto cold = tune_model(m, o);
  for (const auto& task : cold.tasks) CHECK(task.prior_from.empty());
  storage::results_db cold_db((cold_dir / "r.db").string(), storage::results_db::open_mode::read_only);
  auto cold_run = cold_db.find_run(cold.tasks[1].run_id);
  REQUIRE(cold_run);
  CHECK_THAT(cold_run->options_json, !Catch::Contains("of task bmm:2x32x32x32"));
}

TEST_CASE("model: through one pipeline a task's first round starts from its family's trials so far",
          "[facade][model]") {
  // The tasks run together, so what a task's family has measured when its
  // first round opens depends on the pipeline's timing, except for a resumed
  // run's trials, which the run knows before its first hand-out: task a's
  // run, stopped after one round alone, is continued beside b and c.
  for (bool auto_prior : {true, false}) {
    INFO("auto_prior " << auto_prior);
    scratch_dir dir(auto_prior ? "tune-model-one-pipeline-prior" : "tune-model-one-pipeline-cold");
    ::setenv("TUNE_CACHE_DIR", (dir / "cache").c_str(), 1);
    model_options o;
    o.session.db_path = (dir / "r.db").string();
    o.session.seed = 2;
    o.session.confirm.top = 0;
    o.session.auto_prior = auto_prior;
    o.round_trials = 2;
    o.budget_trials = 4;
    stop_source stop = o.session.stop;
    o.on_round = [&](const model_progress&) { stop.request_stop(); };
    auto alone = read_model(write(dir, "a.yaml", "tasks:\n  - {name: a, task: bmm:2x32x32x32}\n").string());
    auto first = tune_model(alone, o);
    REQUIRE(first.reason == end_reason::stopped);
    REQUIRE(first.tasks[0].trials == 2);

    auto m = read_model(write(dir, "m.yaml", family_model()).string());
    model_options more;
    more.session.db_path = o.session.db_path;
    more.session.seed = 2;
    more.session.confirm.top = 0;
    more.session.auto_prior = auto_prior;
    more.session.resume = true;
    more.round_trials = 2;
    more.budget_trials = 8;
    more.one_pipeline = true;
    auto r = tune_model(m, more);
    CHECK(r.tasks[0].run_id == first.tasks[0].run_id);
    CHECK(r.tasks[1].trials > 0);
    CHECK(r.tasks[0].prior_from.empty());  // its own run's trials came first
    CHECK(r.tasks[2].prior_from.empty());  // another operator
    if (auto_prior) {
      CHECK(r.tasks[1].prior_from == std::vector<std::string>{"a"});
    } else {
      CHECK(r.tasks[1].prior_from.empty());
    }
  }
}

TEST_CASE("model: one pipeline for every task records each task's run and ends each as rounds do", "[facade][model]") {
  scratch_dir dir("tune-model-one-pipeline");
  auto m = read_model(write(dir, "m.yaml", two_dataset_model()).string());
  auto o = replayed_model_options(dir / "r.db", 96);
  o.one_pipeline = true;
  o.session.topology_file =
      write(dir, "topo.yaml", "compile_workers: 2\ndevices:\n  - {backend: replay, id: 0, prefetch: 1, count: 3}\n")
          .string();
  std::vector<model_progress> progress;
  o.on_round = [&](const model_progress& p) { progress.push_back(p); };
  auto r = tune_model(m, o);
  CHECK(r.reason == end_reason::budget);
  CHECK(r.trials == 96);
  REQUIRE(r.tasks.size() == 2);
  CHECK(r.tasks[0].trials + r.tasks[1].trials == 96);
  CHECK(r.tasks[0].trials > 0);
  CHECK(r.tasks[1].trials > 0);
  CHECK(r.tasks[0].rounds + r.tasks[1].rounds >= 96 / 8 - 3);  // the rounds still in flight at the end not counted
  REQUIRE(!progress.empty());
  CHECK(progress.back().trials == 96);
  for (std::size_t i = 1; i < progress.size(); ++i) CHECK(progress[i].trials >= progress[i - 1].trials);
  // Each task's run holds its own trials (its own space's configurations),
  // its best is the fastest of them, and the model's end finished it.
  storage::results_db db((dir / "r.db").string(), storage::results_db::open_mode::read_only);
  auto runs = db.runs();
  REQUIRE(runs.size() == 2);
  for (std::size_t t = 0; t < 2; ++t) {
    const auto& task = r.tasks[t];
    REQUIRE(task.best);
    auto it = std::find_if(runs.begin(), runs.end(), [&](const auto& run) { return run.id == task.run_id; });
    REQUIRE(it != runs.end());
    CHECK(it->reason == end_reason::budget);
    auto trials = db.trials(task.run_id);
    CHECK(trials.size() == task.trials);
    double fastest = std::numeric_limits<double>::infinity();
    std::set<std::string> configs;
    for (const auto& trial : trials) {
      configs.insert(trial.config_json);
      if (trial.ok()) fastest = std::min(fastest, trial.time_ms);
      CHECK(trial.config_json.find("\"task\"") == std::string::npos);  // untagged: the task's own space
    }
    CHECK(configs.size() == trials.size());  // nothing measured twice
    CHECK(task.best->time_ms == fastest);
  }
  CHECK_THAT(r.latency_ms, Catch::WithinRel(10 * r.tasks[0].best->time_ms + 1 * r.tasks[1].best->time_ms, 1e-12));
}

TEST_CASE("model: one pipeline stopped leaves its runs resumable and a resume continues them", "[facade][model]") {
  scratch_dir dir("tune-model-one-pipeline-stop");
  auto m = read_model(write(dir, "m.yaml", two_dataset_model()).string());
  auto o = replayed_model_options(dir / "r.db", 400);
  o.one_pipeline = true;
  o.session.time_scale = 0.01;  // slow enough that the stop comes before the budget
  stop_source stop = o.session.stop;
  o.on_round = [&](const model_progress& p) {
    if (p.trials >= 40) stop.request_stop();
  };
  auto r = tune_model(m, o);
  CHECK(r.reason == end_reason::stopped);
  CHECK(r.trials < 400);
  {
    storage::results_db db((dir / "r.db").string(), storage::results_db::open_mode::read_only);
    for (const auto& run : db.runs()) CHECK(run.reason == end_reason::stopped);
  }
  auto more = replayed_model_options(dir / "r.db", r.trials + 32);
  more.one_pipeline = true;
  more.session.resume = true;
  auto again = tune_model(m, more);
  CHECK(again.reason == end_reason::budget);
  CHECK(again.tasks[0].run_id == r.tasks[0].run_id);
  CHECK(again.tasks[1].run_id == r.tasks[1].run_id);
  CHECK(again.trials == r.trials + 32);
  storage::results_db db((dir / "r.db").string(), storage::results_db::open_mode::read_only);
  CHECK(db.runs().size() == 2);
  for (const auto& t : again.tasks) {
    std::set<std::string> configs;
    for (const auto& trial : db.trials(t.run_id)) CHECK(configs.insert(trial.config_json).second);
  }
}

TEST_CASE("model: one pipeline leaves a task the budget never reached with an empty run", "[facade][model]") {
  scratch_dir dir("tune-model-one-pipeline-short");
  auto m = read_model(write(dir, "m.yaml", two_dataset_model()).string());
  auto o = replayed_model_options(dir / "r.db", 5);
  o.one_pipeline = true;
  o.round_trials = 8;  // the first task's round takes the whole budget
  auto r = tune_model(m, o);
  CHECK(r.trials == 5);
  REQUIRE(r.tasks.size() == 2);
  CHECK(r.tasks[0].trials == 5);
  CHECK(r.tasks[1].trials == 0);  // not ended with a search of a default budget
  CHECK_FALSE(r.tasks[1].best);
  CHECK(std::isnan(r.latency_ms));
  storage::results_db db((dir / "r.db").string(), storage::results_db::open_mode::read_only);
  CHECK(db.trials(r.tasks[1].run_id).empty());
}

TEST_CASE("model: one pipeline refuses tasks of two backends and two of one task key", "[facade][model]") {
  scratch_dir dir("tune-model-one-pipeline-bad");
  auto mixed = read_model(
      write(dir, "mixed.yaml",
            "tasks:\n  - dataset: " + data_dir + "/datasets/gemm_clblast/RTX_3090.json.gz\n  - task: matmul:16x16x16\n")
          .string());
  auto o = replayed_model_options(dir / "r.db", 40);
  o.one_pipeline = true;
  o.session.time_scale = 1.0;  // the CPU task's sessions refuse another; nothing runs before the refusal
  CHECK_THAT(input_error_of([&] { tune_model(mixed, o); }, "accepted"), Catch::Contains("one backend's tasks"));
  o.session.time_scale = 0.001;
  auto same = read_model(write(dir, "same.yaml",
                               "tasks:\n  - dataset: " + data_dir + "/datasets/dedispersion/A4000.json.gz\n" +
                                   "  - dataset: " + data_dir + "/datasets/dedispersion/A6000.json.gz\n")
                             .string());
  CHECK_THAT(input_error_of([&] { tune_model(same, o); }, "accepted"),
             Catch::Contains("are one task to the results database"));
}

TEST_CASE("model: two entries that are one workload to the database are refused", "[facade][model]") {
  scratch_dir dir("tune-model-same-key");
  // The same kernel and problem measured on two GPUs: one task key.
  auto m = read_model(write(dir, "m.yaml",
                            "tasks:\n  - dataset: " + data_dir + "/datasets/dedispersion/A4000.json.gz\n" +
                                "  - dataset: " + data_dir + "/datasets/dedispersion/A6000.json.gz\n")
                          .string());
  CHECK_THAT(input_error_of([&] { tune_model(m, replayed_model_options(dir / "r.db", 40)); }, "accepted"),
             Catch::Contains("are one task to the results database"));
}

namespace {

/// examples/models/make_onnx.py's files in `dir`; empty when they cannot be
/// made here (no ONNX support in this build, no python3-onnx).
std::string onnx_examples(const scratch_dir& dir) {
  if (!onnx_supported()) return "this build reads no ONNX files (no libonnx-dev)";
  const std::string script = std::string(TUNE_SOURCE_DIR) + "/examples/models/make_onnx.py";
  const std::string command = "/usr/bin/python3 -c 'import onnx' 2>/dev/null && /usr/bin/python3 " + script + " " +
                              dir.path().string() + " 2>&1";
  if (std::system(command.c_str()) != 0) return "python3-onnx is not installed";
  return "";
}

}  // namespace

TEST_CASE("model: ONNX files read as their YAML twins, the other nodes listed", "[facade][model]") {
  scratch_dir dir("tune-model-onnx");
  if (auto why = onnx_examples(dir); !why.empty()) SKIP_TEST(why);
  auto resnet = read_model((dir / "resnet18.onnx").string());
  auto yaml = read_model(std::string(TUNE_SOURCE_DIR) + "/examples/models/resnet18.yaml");
  CHECK(resnet.name == "resnet18-b1");
  CHECK(resnet.entries == 21);
  REQUIRE(resnet.tasks.size() == 12);
  // The convolutions are the YAML's, in the same order, with the same names and counts.
  for (std::size_t i = 0; i < 11; ++i) {
    CHECK(resnet.tasks[i].task == yaml.tasks[i].task);
    CHECK(resnet.tasks[i].count == yaml.tasks[i].count);
    CHECK(resnet.tasks[i].names == yaml.tasks[i].names);
  }
  // nn.Linear as PyTorch exports it: a Gemm whose weights are stored transposed.
  CHECK(resnet.tasks[11].task == "bmm:1x1x512x1000:nt");
  CHECK(resnet.unsupported.empty());
  CHECK(resnet.not_tuned ==
        std::vector<std::string>{"Add x8", "Flatten x1", "GlobalAveragePool x1", "MaxPool x1", "Relu x17"});

  auto bert = read_model((dir / "bert_layer.onnx").string());
  REQUIRE(bert.tasks.size() == 5);
  CHECK(bert.tasks[0].task == "matmul:128x768x768");  // a 3-D by 2-D MatMul: one matmul of the 128 rows
  CHECK(bert.tasks[0].count == 4);
  CHECK(bert.tasks[1].task == "bmm:12x128x64x128:nn");  // K transposed by its own Transpose node
  CHECK(bert.tasks[2].task == "bmm:12x128x128x64:nn");
  CHECK(bert.tasks[3].task == "matmul:128x768x3072");
  CHECK(bert.tasks[4].task == "matmul:128x3072x768");
}

TEST_CASE("model: an ONNX node that maps to no task is listed, a bad file refused", "[facade][model]") {
  scratch_dir dir("tune-model-onnx-bad");
  if (auto why = onnx_examples(dir); !why.empty()) SKIP_TEST(why);
  // A grouped convolution, a symbolic batch, a broadcasting batched MatMul.
  const auto script = dir / "odd.py";
  std::ofstream(script) << R"(import onnx, sys
from onnx import TensorProto, helper as h
f = lambda n, s: h.make_tensor_value_info(n, TensorProto.FLOAT, s)
nodes = [h.make_node("Conv", ["x", "w"], ["y"], name="grouped", group=2, kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
         h.make_node("MatMul", ["a", "b"], ["c"], name="symbolic"),
         h.make_node("MatMul", ["d", "e"], ["g"], name="broadcast"),
         h.make_node("Conv", ["x", "w2"], ["z"], name="plain", kernel_shape=[1, 1])]
inputs = [f("x", [1, 8, 16, 16]), f("w", [8, 4, 3, 3]), f("a", ["batch", 64]), f("b", [64, 32]),
          f("d", [4, 1, 16, 8]), f("e", [3, 8, 16]), f("w2", [16, 8, 1, 1])]
g = h.make_graph(nodes, "odd", inputs, [f("y", None), f("c", None), f("g", None), f("z", None)])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]), sys.argv[1])
)";
  REQUIRE(std::system(("/usr/bin/python3 " + script.string() + " " + (dir / "odd.onnx").string()).c_str()) == 0);
  auto m = read_model((dir / "odd.onnx").string());
  REQUIRE(m.tasks.size() == 1);
  CHECK(m.tasks[0].task == "conv2d:1x8x16x16:16x1x1:s1:p0");
  REQUIRE(m.unsupported.size() == 3);
  CHECK_THAT(m.unsupported[0], Catch::Contains("Conv 'grouped': grouped convolution (group 2)"));
  CHECK_THAT(m.unsupported[1], Catch::Contains("MatMul 'symbolic': the shape of 'a' is not known (dimension 'batch'"));
  CHECK_THAT(m.unsupported[2], Catch::Contains("MatMul 'broadcast': a batched MatMul that broadcasts"));

  std::ofstream(dir / "junk.onnx") << "not a protobuf at all";
  CHECK_THAT(input_error_of([&] { read_model((dir / "junk.onnx").string()); }, "accepted"),
             Catch::Contains("junk.onnx: not an ONNX model"));
  CHECK_THAT(input_error_of([&] { read_model((dir / "none.onnx").string()); }, "accepted"),
             Catch::Contains("none.onnx: cannot be read"));
}
