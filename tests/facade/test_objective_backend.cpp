// The objective backend: a callable measured as a kernel would be.
#include <catch2/catch.hpp>
#include <cmath>
#include <stdexcept>

#include "objective_backend.hpp"

using namespace tune;

namespace {
search_space_ptr objective_line_space() {
  std::vector<parameter_ptr> p;
  p.push_back(make_discrete_parameter("x", {1, 2, 3}));
  return std::make_shared<const search_space>(std::move(p));
}
}  // namespace

TEST_CASE("objective backend: the return value is the time and failures are statuses", "[facade]") {
  auto be = detail::make_objective_backend(
      [](const configuration& c) -> double {
        // c holds value indices: 0, 1, 2 for x = 1, 2, 3.
        if (c[0] == 0) throw std::runtime_error("too small");
        if (c[0] == 1) return INFINITY;
        return 4.5;
      },
      objective_line_space(), "line");
  CHECK(be->task_key() == "line");
  CHECK(be->device_kind() == "callable");
  auto built = be->build({0}, 1.0);
  CHECK(built.state == status::ok);
  auto thrown = be->run({0}, built, 0, 1.0);
  CHECK(thrown.state == status::runtime_error);
  CHECK(thrown.message == "too small");
  auto inf = be->run({1}, built, 0, 1.0);
  CHECK(inf.state == status::runtime_error);
  CHECK_THAT(inf.message, Catch::Matchers::Contains("infinite"));
  auto ok = be->run({2}, built, 0, 1.0);
  CHECK(ok.state == status::ok);
  CHECK(ok.time_ms == 4.5);
  CHECK(ok.run_s >= 0);
}

TEST_CASE("objective backend: needs a callable and a space and a task name", "[facade]") {
  CHECK_THROWS_AS(detail::make_objective_backend({}, objective_line_space(), "x"), input_error);
  CHECK_THROWS_AS(detail::make_objective_backend([](const configuration&) { return 1.0; }, nullptr, "x"), input_error);
  CHECK_THROWS_AS(detail::make_objective_backend([](const configuration&) { return 1.0; }, objective_line_space(), ""),
                  input_error);
}
