// Dataset readers of replay: Kernel Tuner caches, T4 results, KTT TuningOutput,
// and clear errors for broken files.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>

#include "replay_fixtures.hpp"
#include "tune/kernels/replay.hpp"

using namespace tune;
using tune::test::conv_slice;
using tune::test::replay_data;
using tune::test::write_scratch;

namespace {

std::map<status, int> count_states(const replay_dataset& d) {
  std::map<status, int> out;
  for (const auto& r : d.records) ++out[r.state];
  return out;
}

std::string error_of(const std::string& path) {
  try {
    read_replay_dataset(path);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no error";
}

/// A two-entry Kernel Tuner cache whose second entry's time is `time`.
std::string tiny_cache(const std::string& time) {
  return R"({"kernel_name": "k", "device_name": "d", "tune_params_keys": ["x", "y"],
    "tune_params": {"x": [1, 2, 4], "y": [0, 1]}, "objective": "time", "cache": {
    "1,0": {"x": 1, "y": 0, "time": 2.0, "times": [1.9, 2.1], "compile_time": 500.0, "benchmark_time": 20.0, "verification_time": 1.0},
    "4,1": {"x": 4, "y": 1, "time": )" +
         time + R"(, "compile_time": 400.0, "benchmark_time": 0.0, "verification_time": 0.0}}})";
}

}  // namespace

TEST_CASE("a Kernel Tuner cache gives the space, the members and their statuses", "[kernels]") {
  const auto& d = conv_slice();
  CHECK(d.format == "kernel_tuner");
  CHECK(d.configs.size() == 164);
  auto states = count_states(d);
  CHECK(states[status::ok] == 135);
  CHECK(states[status::runtime_error] == 23);
  CHECK(states[status::compile_error] == 6);
  REQUIRE(d.space->members());
  CHECK(d.space->members()->size() == 164);
  CHECK(d.space->dimension() == 10);
  auto bx = d.space->find("block_size_x");
  REQUIRE(bx);
  CHECK(d.space->parameters()[*bx]->kind() == parameter_kind::discrete);
  auto ro = d.space->find("read_only");
  REQUIRE(ro);
  CHECK(d.space->parameters()[*ro]->kind() == parameter_kind::categorical);
  for (std::size_t i = 0; i < d.configs.size(); ++i) CHECK(d.space->is_valid(d.configs[i]));
  // A configuration of the Cartesian product that the dataset lacks broke the
  // kernel's restrictions: it is not valid.
  std::size_t outside = 0;
  for (std::uint64_t flat = 0; flat < *d.space->cartesian_size(); ++flat) {
    auto c = d.space->unflatten(flat);
    if (!d.find(c)) {
      CHECK_FALSE(d.space->is_valid(c));
      ++outside;
    }
  }
  CHECK(outside == *d.space->cartesian_size() - 164);
  CHECK(std::isfinite(d.best_time_ms()));
  CHECK(d.sorted_ok_times().size() == 135);
  for (const auto& r : d.records) {
    CHECK(r.compile_s > 0);  // recorded in ms, kept in s
    CHECK(r.compile_s < 100);
    if (r.state == status::ok) CHECK(!r.times_ms.empty());
    if (r.state != status::ok) CHECK(std::isnan(r.time_ms));
  }
}

TEST_CASE("a cache lacking its final braces is repaired", "[kernels]") {
  auto d = read_replay_dataset(replay_data("replay/conv_a100_slice_truncated.json.gz"));
  CHECK(d.configs.size() == conv_slice().configs.size());
  CHECK(d.best_time_ms() == conv_slice().best_time_ms());
}

TEST_CASE("T4 results of the same data give the same configurations and times", "[kernels]") {
  auto t4 = read_replay_dataset(replay_data("replay/conv_a100_slice_T4.json.gz"));
  CHECK(t4.format == "t4");
  REQUIRE(t4.configs.size() == 164);
  const auto& kt = conv_slice();
  auto states = count_states(t4);
  CHECK(states[status::ok] == 135);
  CHECK(states[status::runtime_error] == 23);
  CHECK(states[status::compile_error] == 6);
  // The spaces are built differently (from tune_params, from the values that
  // occur), so compare by values.
  for (std::size_t i = 0; i < t4.configs.size(); ++i) {
    std::map<std::string, parameter_value> values;
    for (auto& [name, value] : t4.space->values(t4.configs[i])) values[name] = value;
    const auto* rec = kt.find(kt.space->from_values(values));
    REQUIRE(rec);
    CHECK(rec->state == t4.records[i].state);
    if (rec->state == status::ok) CHECK(t4.records[i].time_ms == Approx(rec->time_ms).epsilon(1e-6));
    CHECK(t4.records[i].compile_s == Approx(rec->compile_s).epsilon(1e-6));
  }
}

TEST_CASE("a KTT TuningOutput is read with its time unit", "[kernels]") {
  auto d = read_replay_dataset(replay_data("datasets/ktt/coulomb3d_RTX_2080_Ti_KTT_profiling.json.gz"));
  CHECK(d.format == "ktt");
  CHECK(d.configs.size() == 210);
  CHECK(count_states(d)[status::ok] == 210);
  CHECK(d.device == "NVIDIA GeForce RTX 2080 Ti");
  // The first result's TotalDuration is 3037.408 microseconds.
  CHECK(d.records[0].time_ms == Approx(3.037408));
  // Numbers with more than two values are ordered; two-valued flags are categories.
  auto wy = d.space->find("WORK_GROUP_SIZE_Y");
  REQUIRE(wy);
  CHECK(d.space->parameters()[*wy]->kind() == parameter_kind::discrete);
  auto wx = d.space->find("WORK_GROUP_SIZE_X");
  REQUIRE(wx);
  CHECK(d.space->parameters()[*wx]->kind() == parameter_kind::categorical);
}

TEST_CASE("kind overrides change the guessed kinds and reject bad names", "[kernels]") {
  auto path = replay_data("replay/conv_a100_slice_T4.json.gz");
  auto plain = read_replay_dataset(path);
  CHECK(plain.space->parameters()[*plain.space->find("read_only")]->kind() == parameter_kind::categorical);
  auto changed = read_replay_dataset(path, {{"read_only", "discrete"}, {"block_size_x", "categorical"}});
  CHECK(changed.space->parameters()[*changed.space->find("read_only")]->kind() == parameter_kind::discrete);
  CHECK(changed.space->parameters()[*changed.space->find("block_size_x")]->kind() == parameter_kind::categorical);
  CHECK_THROWS_WITH(read_replay_dataset(path, {{"no_such", "discrete"}}), Catch::Contains("no_such"));
  CHECK_THROWS_WITH(read_replay_dataset(path, {{"read_only", "ordinal"}}), Catch::Contains("'ordinal'"));
  auto file = write_scratch("kinds.json", R"({"read_only": "discrete"})");
  CHECK(read_kind_overrides(file).at("read_only") == "discrete");
  auto bad = write_scratch("kinds_bad.json", R"({"read_only": 3})");
  CHECK_THROWS_WITH(read_kind_overrides(bad), Catch::Contains("read_only"));
}

TEST_CASE("the vendored pnpoly kind file makes its method choices categorical", "[kernels]") {
  auto path = replay_data("datasets/pnpoly/RTX_3090.json.gz");
  auto kinds = read_kind_overrides(replay_data("datasets/pnpoly/kinds.json"));
  CHECK(kinds.size() == 2);
  auto guessed = read_replay_dataset(path);
  auto d = read_replay_dataset(path, kinds);
  auto kind_of = [](const replay_dataset& data, const std::string& name) {
    return data.space->parameters()[*data.space->find(name)]->kind();
  };
  for (const auto* name : {"between_method", "use_method"}) {
    CHECK(kind_of(guessed, name) == parameter_kind::discrete);
    CHECK(kind_of(d, name) == parameter_kind::categorical);
  }
  CHECK(kind_of(d, "block_size_x") == parameter_kind::discrete);
  CHECK(kind_of(d, "tile_size") == parameter_kind::discrete);
  // Method 0 is one mutation step from method 2 once the values are choices.
  auto between = d.space->parameters()[*d.space->find("between_method")];
  CHECK(between->neighbours(between->index_of(parameter_value(2.0))).size() == 3);
  CHECK(d.configs.size() == guessed.configs.size());
}

TEST_CASE("Kernel Tuner status strings map to statuses", "[kernels]") {
  auto d = read_replay_dataset(write_scratch("invalid.json", tiny_cache("\"InvalidConfig\"")));
  REQUIRE(d.configs.size() == 2);
  CHECK(d.records[0].state == status::ok);
  CHECK(d.records[0].compile_s == Approx(0.5));
  CHECK(d.records[0].benchmark_s == Approx(0.02));
  CHECK(d.records[1].state == status::instantiation_error);
  CHECK(read_replay_dataset(write_scratch("cf.json", tiny_cache("\"CompilationFailedConfig\""))).records[1].state ==
        status::compile_error);
  CHECK(read_replay_dataset(write_scratch("rf.json", tiny_cache("\"RuntimeFailedConfig\""))).records[1].state ==
        status::runtime_error);
}

TEST_CASE("broken datasets give errors naming the file and the field", "[kernels]") {
  auto unknown = write_scratch("unknown.json", tiny_cache("\"MeltedConfig\""));
  auto msg = error_of(unknown);
  CHECK_THAT(msg, Catch::Contains(unknown) && Catch::Contains("time") && Catch::Contains("MeltedConfig"));

  auto wrong_type = write_scratch("wrong_type.json", tiny_cache("true"));
  CHECK_THAT(error_of(wrong_type), Catch::Contains("cache[\"4,1\"].time"));

  auto wrong_value = write_scratch("wrong_value.json", R"({"tune_params_keys": ["x"], "tune_params": {"x": [1, 2]},
      "cache": {"8": {"x": 8, "time": 1.0}}})");
  CHECK_THAT(error_of(wrong_value), Catch::Contains("cache[\"8\"]") && Catch::Contains("x"));

  auto empty = write_scratch("empty.json", R"({"tune_params_keys": ["x"], "tune_params": {"x": [1, 2]}, "cache": {}})");
  CHECK_THAT(error_of(empty), Catch::Contains(empty) && Catch::Contains("no configuration"));

  auto not_dataset = write_scratch("other.json", R"({"hello": 1})");
  CHECK_THAT(error_of(not_dataset), Catch::Contains("not a replay dataset"));

  auto garbage = write_scratch("garbage.json", "{\"cache\": [1, 2");
  CHECK_THROWS_AS(read_replay_dataset(garbage), std::invalid_argument);

  auto t4 = write_scratch("t4.json", R"({"metadata": {}, "results": [{"configuration": {"a": 1},
      "invalidity": "exploded", "measurements": []}]})");
  CHECK_THAT(error_of(t4), Catch::Contains("results[0].invalidity") && Catch::Contains("exploded"));

  auto t4_time = write_scratch("t4_time.json", R"({"metadata": {}, "results": [{"configuration": {"a": 1},
      "invalidity": "correct", "measurements": [{"name": "time", "value": "fast"}]}]})");
  CHECK_THAT(error_of(t4_time), Catch::Contains("results[0].measurements"));

  auto ktt = write_scratch("ktt.json", R"({"Metadata": {"TimeUnit": "Microseconds"}, "Results": [{"Status": "Weird",
      "Configuration": [{"Name": "A", "Value": 1}], "TotalDuration": 3.0}]})");
  CHECK_THAT(error_of(ktt), Catch::Contains("Results[0].Status") && Catch::Contains("Weird"));

  auto ktt_unit = write_scratch("ktt_unit.json", R"({"Metadata": {"TimeUnit": "Fortnights"}, "Results": []})");
  CHECK_THAT(error_of(ktt_unit), Catch::Contains("Metadata.TimeUnit"));

  CHECK_THROWS_AS(read_replay_dataset(replay_data("replay/no_such_file.json")), std::exception);
}

TEST_CASE("evaluation returns the recorded status, time and cost", "[kernels]") {
  const auto& d = conv_slice();
  rng_type rng(7);
  bool saw_noise = false;
  for (std::size_t i = 0; i < d.configs.size(); ++i) {
    const auto& rec = d.records[i];
    auto plain = evaluate(d, d.configs[i], nullptr);
    CHECK(plain.state == rec.state);
    CHECK(plain.cost_s == Approx(rec.compile_s + rec.benchmark_s + rec.verification_s));
    if (rec.state == status::ok) {
      CHECK(plain.time_ms == rec.time_ms);
      auto noisy = evaluate(d, d.configs[i], &rng);
      CHECK(std::find(rec.times_ms.begin(), rec.times_ms.end(), noisy.time_ms) != rec.times_ms.end());
      saw_noise = saw_noise || noisy.time_ms != rec.time_ms;
    } else {
      CHECK(std::isnan(plain.time_ms));
    }
  }
  CHECK(saw_noise);
  configuration outside = d.configs[0];
  outside[0] = (outside[0] + 1) % d.space->parameters()[0]->cardinality();
  if (!d.find(outside)) CHECK_THROWS_AS(evaluate(d, outside, nullptr), std::invalid_argument);
}
