// The replay backend answers build() and run() from the dataset.
#include <catch2/catch.hpp>

#include "replay_fixtures.hpp"
#include "tune/kernels/replay.hpp"

using namespace tune;

namespace {
/// Answers at once: these tests check what is answered, not the pace.
const replay_backend_options no_sleeping{0.0, false, 0};
}  // namespace

TEST_CASE("the replay backend returns recorded statuses, times and durations", "[kernels]") {
  auto dataset = std::make_shared<const replay_dataset>(test::conv_slice());
  auto backend = make_replay_backend(dataset, no_sleeping);
  CHECK(backend->name() == "replay");
  CHECK(backend->space() == dataset->space);
  for (std::size_t i = 0; i < dataset->configs.size(); ++i) {
    const auto& rec = dataset->records[i];
    auto b = backend->build(dataset->configs[i], 60.0);
    CHECK(b.compile_s == Approx(rec.compile_s));
    if (rec.state == status::compile_error) {
      CHECK(b.state == status::compile_error);
      continue;
    }
    REQUIRE(b.state == status::ok);
    auto r = backend->run(dataset->configs[i], b, 0, 60.0);
    CHECK(r.state == rec.state);
    CHECK(r.run_s == Approx(rec.benchmark_s + rec.verification_s));
    if (rec.state == status::ok) CHECK(r.time_ms == rec.time_ms);
  }
}

TEST_CASE("the replay backend rejects configurations outside the dataset and honours timeouts", "[kernels]") {
  auto dataset = std::make_shared<const replay_dataset>(test::conv_slice());
  auto backend = make_replay_backend(dataset, no_sleeping);
  configuration outside;
  for (std::uint64_t flat = 0;; ++flat) {
    outside = dataset->space->unflatten(flat);
    if (!dataset->find(outside)) break;
  }
  CHECK(backend->build(outside, 60.0).state == status::instantiation_error);
  const auto& c = dataset->configs[0];
  auto slow = backend->build(c, dataset->records[0].compile_s / 2);
  CHECK(slow.state == status::build_timeout);
}
