// multi_task_backend: tagged configurations built and run by their task's
// backend, interleaved runs of one task through its backend and of several
// in turn, a configuration of no task a failed build or run, bad tasks refused.
#include <catch2/catch.hpp>

#include "replay_fixtures.hpp"
#include "tune/engine/multi_task.hpp"
#include "tune/kernels/multi_task_backend.hpp"
#include "tune/kernels/replay.hpp"

using namespace tune;
using Catch::Matchers::Contains;

namespace {
const replay_backend_options answer_at_once{0.0, false, 0};

std::shared_ptr<const replay_dataset> read_dataset(const std::string& name) {
  return std::make_shared<const replay_dataset>(read_replay_dataset(test::replay_data(name)));
}

/// The first configuration of the dataset that ran ok.
std::size_t first_ok_record(const replay_dataset& d) {
  for (std::size_t i = 0; i < d.records.size(); ++i)
    if (d.records[i].state == status::ok) return i;
  FAIL("no ok configuration");
  return 0;
}
}  // namespace

TEST_CASE("a multi-task backend builds and runs each tagged configuration with its task's backend", "[kernels]") {
  auto a100 = read_dataset("replay/conv_a100_slice.json.gz");
  auto t4 = read_dataset("replay/conv_a100_slice_T4.json.gz");
  multi_task_backend both({make_replay_backend(a100, answer_at_once), make_replay_backend(t4, answer_at_once)});
  CHECK(both.name() == "replay");
  CHECK(both.size() == 2);
  CHECK_THAT(both.task_key(), Contains(" | "));
  for (std::uint32_t task : {0u, 1u}) {
    const auto& d = task == 0 ? *a100 : *t4;
    const std::size_t i = first_ok_record(d);
    const auto config = tagged(task, d.configs[i]);
    CHECK(both.space()->is_valid(config));
    auto b = both.build(config, 60.0);
    REQUIRE(b.state == status::ok);
    CHECK(b.compile_s == Approx(d.records[i].compile_s));
    auto r = both.run(config, b, 0, 60.0);
    REQUIRE(r.state == status::ok);
    CHECK(r.time_ms == d.records[i].time_ms);
  }
}

TEST_CASE("a multi-task backend answers a configuration of no task with a failed build and run", "[kernels]") {
  auto a100 = read_dataset("replay/conv_a100_slice.json.gz");
  multi_task_backend one({make_replay_backend(a100, answer_at_once)});
  auto config = tagged(3, a100->configs[0]);
  auto b = one.build(config, 60.0);
  CHECK(b.state == status::unknown);
  CHECK_THAT(b.message, Contains("no task of this run (1 tasks)"));
  CHECK(one.run(config, b, 0, 60.0).state == status::unknown);
  CHECK(one.build({}, 60.0).state == status::unknown);
}

TEST_CASE("a multi-task backend measures one task's entries in turn and several tasks' too", "[kernels]") {
  auto a100 = read_dataset("replay/conv_a100_slice.json.gz");
  auto t4 = read_dataset("replay/conv_a100_slice_T4.json.gz");
  multi_task_backend both({make_replay_backend(a100, answer_at_once), make_replay_backend(t4, answer_at_once)});
  const std::size_t i = first_ok_record(*a100), j = first_ok_record(*t4);
  std::vector<std::pair<configuration, build_result>> same, mixed;
  for (std::uint32_t k = 0; k < 2; ++k) {
    auto c = tagged(0, a100->configs[i]);
    same.emplace_back(c, both.build(c, 60.0));
  }
  mixed.emplace_back(same.front());
  auto other = tagged(1, t4->configs[j]);
  mixed.emplace_back(other, both.build(other, 60.0));
  auto s = both.run_interleaved(same, 0, 3, 60.0);
  REQUIRE(s.ok());
  REQUIRE(s.time_ms.size() == 2);
  CHECK(s.time_ms[0] == std::vector<double>(3, a100->records[i].time_ms));
  auto m = both.run_interleaved(mixed, 0, 2, 60.0);
  REQUIRE(m.ok());
  CHECK(m.time_ms[0] == std::vector<double>(2, a100->records[i].time_ms));
  CHECK(m.time_ms[1] == std::vector<double>(2, t4->records[j].time_ms));
}

TEST_CASE("a multi-task backend refuses no task a missing one and tasks of different backends", "[kernels]") {
  CHECK_THROWS_WITH(multi_task_backend({}), Contains("no task"));
  auto a100 = read_dataset("replay/conv_a100_slice.json.gz");
  CHECK_THROWS_WITH(multi_task_backend({make_replay_backend(a100, answer_at_once), nullptr}),
                    Contains("task 1 has no backend"));
}
