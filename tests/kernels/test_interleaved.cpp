// backend::run_interleaved's default: every entry once per round, in turn,
// measured in full; the first failure ends it with its status.
#include <catch2/catch.hpp>
#include <vector>

#include "tune/engine/parameter.hpp"
#include "tune/kernels/backend.hpp"

using namespace tune;

namespace {
class recording_backend final : public backend {
 public:
  std::vector<std::uint64_t> order;
  std::vector<double> references, margins;
  int fail_at = -1;
  std::string name() const override { return "recording"; }
  std::string task_key() const override { return "recording"; }
  std::string device_kind() const override { return "recording"; }
  search_space_ptr space() const override { return nullptr; }
  build_result build(const configuration&, double) override { return {status::ok, "", 0.0, ""}; }
  run_result run(const configuration& config, const build_result&, int, const run_limits& limits) override {
    order.push_back(config[0]);
    references.push_back(limits.reference_ms);
    margins.push_back(limits.early_stop.margin);
    run_result out;
    out.state = static_cast<int>(order.size()) - 1 == fail_at ? status::runtime_error : status::ok;
    out.time_ms = 1.0 + static_cast<double>(config[0]) + 0.01 * static_cast<double>(order.size());
    return out;
  }
};
std::pair<configuration, build_result> entry(std::uint64_t x) { return {{x}, build_result{status::ok, "", 0, ""}}; }
}  // namespace

TEST_CASE("run_interleaved: each entry once per round, in turn, in full", "[kernels]") {
  recording_backend b;
  auto times = b.run_interleaved({entry(0), entry(1), entry(2)}, 0, 3, 5.0);
  REQUIRE(times.ok());
  CHECK(b.order == std::vector<std::uint64_t>{0, 1, 2, 0, 1, 2, 0, 1, 2});
  for (double margin : b.margins) CHECK(margin == 0.0);  // no early stop
  for (double reference : b.references) CHECK(std::isnan(reference));
  REQUIRE(times.time_ms.size() == 3);
  CHECK(times.time_ms[1] == std::vector<double>{1.0 + 1 + 0.02, 1.0 + 1 + 0.05, 1.0 + 1 + 0.08});
}

TEST_CASE("run_interleaved: the first run that fails ends it, naming the entry and the round", "[kernels]") {
  recording_backend b;
  b.fail_at = 4;  // the fifth run: entry 1 of the second round
  auto times = b.run_interleaved({entry(0), entry(1), entry(2)}, 0, 3, 5.0);
  CHECK_FALSE(times.ok());
  CHECK(times.state == status::runtime_error);
  CHECK(times.message == "entry 1, round 1: runtime_error");
}
