#include <catch2/catch.hpp>
#include <cmath>

#include "evolve_detail.hpp"
#include "evolved_variant.hpp"
#include "tune/engine/program_edit.hpp"
#include "tune/tune.hpp"

using namespace tune;
using tune::test::evolved_variant;

TEST_CASE("the front keeps non-dominated variants once per program and fastest first", "[facade][gevo]") {
  std::vector<trial_info> trials = {evolved_variant(0, 10, 0.05, 0), evolved_variant(1, 8, 0.06, 3),
                                    evolved_variant(2, 9, 0.07, 2), evolved_variant(3, 8, 0.06, 1),
                                    evolved_variant(4, 12, 0.04, 4)};
  auto front = detail::front_of(trials);
  REQUIRE(front.size() == 3);
  CHECK(front[0].seq == 3);  // (8, 0.06) twice: the one with one edit
  CHECK(front[1].seq == 0);
  CHECK(front[2].seq == 4);
  CHECK(detail::front_of({}).empty());
  CHECK(choose_variant(front, 0.05)->seq == 0);
  CHECK(choose_variant(front, 0.06)->seq == 3);
  CHECK(choose_variant(front, 0.01) == nullptr);
}

TEST_CASE("a workload is evolved by gevo and needs LLVM 14", "[facade][gevo]") {
  session_options o;
  o.workload = "2fcnet:nothing";
  o.budget.trials = 2;
  CHECK_THROWS_AS(session(o), input_error);
  o.task = "matmul:64x64x64";
  CHECK_THROWS_WITH(session(o), Catch::Contains("give exactly one of"));
#ifdef TUNE_WITH_LLVM
  CHECK(evolution_workloads() == std::vector<std::string>{"2fcnet:predict", "2fcnet:train", "matmul:NxKxM"});
  session_options bad_shape;
  bad_shape.workload = "matmul:64x64";
  bad_shape.budget.trials = 2;
  CHECK_THROWS_WITH(session(bad_shape), Catch::Contains("workload: ") && Catch::Contains("matmul:NxKxM"));
  session_options g;
  g.workload = "2fcnet:train";
  g.strategy = "nsga2";
  CHECK_THROWS_WITH(session(g), Catch::Contains("evolved by gevo"));
#else
  CHECK(evolution_workloads().empty());
#endif
}
