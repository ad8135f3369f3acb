// Task strings, their shapes and the search spaces derived from them.
#include <catch2/catch.hpp>
#include <stdexcept>

#include "tune/kernels/task.hpp"

using tune::operator_kind;
using tune::parse_task;

TEST_CASE("task strings give the OpEvo shapes", "[kernels]") {
  auto mm = parse_task("matmul:512x1024x1024");
  CHECK(mm.op == operator_kind::matmul);
  CHECK(mm.n == 512);
  CHECK(mm.k == 1024);
  CHECK(mm.m == 1024);
  CHECK(mm.flops() == Approx(2.0 * 512 * 1024 * 1024));

  auto bmm = parse_task("bmm:960x128x128x64:nt");
  CHECK(bmm.op == operator_kind::batch_matmul);
  CHECK(bmm.batch == 960);
  CHECK(bmm.transpose_b);
  CHECK_FALSE(bmm.transpose_a);
  CHECK(parse_task("bmm:960x128x128x64:tn").transpose_a);
  CHECK(parse_task("bmm:2x3x4x5").to_string() == "bmm:2x3x4x5:nn");

  auto conv = parse_task("conv2d:512x3x227x227:64x11x11:s4:p0");
  CHECK(conv.op == operator_kind::conv2d);
  CHECK(conv.out_height() == 55);
  CHECK(conv.out_width() == 55);
  auto c2 = parse_task("conv2d:512x64x27x27:192x5x5:s1:p2");
  CHECK(c2.out_height() == 27);
  CHECK(parse_task("conv2d:1x2x9x9:4x3x3").to_string() == "conv2d:1x2x9x9:4x3x3:s1:p0");
  for (const char* text : {"matmul:512x1024x1024", "bmm:960x128x128x64:nt", "conv2d:512x3x227x227:64x11x11:s4:p0"})
    CHECK(parse_task(text).to_string() == text);
}

TEST_CASE("bad task strings say what form is expected", "[kernels]") {
  for (const char* text : {"", "matmul", "matmul:512x1024", "matmul:512x0x4", "matmul:5x-1x4", "matmul:axbxc",
                           "bmm:1x2x3x4:tt", "conv2d:1x3x8x8", "conv2d:1x3x8x8:4x3x3:q2", "conv2d:1x3x4x4:4x9x9",
                           "gemm:1x2x3", "conv2d:1x3x8x8:4x3x3:s2:s2"}) {
    INFO(text);
    try {
      parse_task(text);
      FAIL("no exception for '" << text << "'");
    } catch (const std::invalid_argument& e) {
      std::string message = e.what();
      CHECK(message.find("expected matmul:NxKxM") != std::string::npos);
      CHECK(message.find(std::string("'") + text + "'") != std::string::npos);
    }
  }
}

TEST_CASE("the CPU MatMul spaces keep the OpEvo factorizations and Conv2D has its own knobs", "[kernels]") {
  auto mm = tune::make_task_backend("matmul:512x1024x1024", "cpu");
  auto space = mm->space();
  // The OpEvo tuples, then the panels (packed or direct) and prefetch.
  REQUIRE(space->dimension() == 7);
  CHECK(space->parameters()[0]->name() == "tile_n");
  CHECK(std::get<std::vector<std::int64_t>>(space->parameters()[0]->value(0)).size() == 4);
  CHECK(std::get<std::vector<std::int64_t>>(space->parameters()[2]->value(0)).size() == 3);
  CHECK(space->parameters()[3]->kind() == tune::parameter_kind::permutation);
  CHECK(space->parameters()[3]->cardinality() == 6);
  CHECK(mm->name() == "cpu");
  CHECK(mm->task_key() == "matmul:512x1024x1024:cpu");

  auto bmm = tune::make_task_backend("bmm:960x128x128x64:tn", "cpu");
  CHECK(bmm->space()->parameters()[0]->name() == "tile_b");
  CHECK(bmm->space()->dimension() == 8);
  CHECK(bmm->space()->parameters()[5]->name() == "a_panel");
  CHECK(bmm->space()->parameters()[6]->name() == "b_panel");
  // A transposed B is always read through packed panels.
  auto nt = tune::make_task_backend("bmm:960x128x64x128:nt", "cpu");
  CHECK(nt->space()->dimension() == 7);
  CHECK_FALSE(nt->space()->find("b_panel").has_value());

  auto conv = tune::make_task_backend("conv2d:512x3x227x227:64x11x11:s4:p0", "cpu");
  auto cs = conv->space();
  REQUIRE(cs->dimension() == 6);
  CHECK(cs->parameters()[0]->name() == "block_f");
  CHECK(cs->parameters()[0]->kind() == tune::parameter_kind::discrete);
  // Whole vectors of output channels that divide 64: 16, 32, 64 with 16
  // lanes; 8, 16, 32 with 8; 4, 8, 12, 16 with 4.
  const auto lanes = std::get<double>(cs->parameters()[0]->value(0));
  CHECK(cs->parameters()[0]->cardinality() == (lanes == 4 ? 4 : 3));
  // One to 28 pixels of the 55 output columns.
  CHECK(cs->parameters()[1]->name() == "tile_x");
  CHECK(cs->parameters()[1]->cardinality() == 28);
  CHECK(cs->parameters()[2]->name() == "input_layout");
  CHECK(cs->parameters()[2]->kind() == tune::parameter_kind::categorical);
  CHECK(cs->parameters()[5]->name() == "unroll_inner");
  // A narrow image: at most its width.
  CHECK(tune::make_task_backend("conv2d:1x3x8x8:4x3x3", "cpu")->space()->parameters()[1]->cardinality() == 6);
}

TEST_CASE("unknown backends are refused with the list this build has", "[kernels]") {
  try {
    tune::make_task_backend("matmul:4x4x4", "tpu");
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("this build has: cpu") != std::string::npos);
  }
  CHECK_THROWS_AS(tune::make_task_backend("matmul:4x4", "cpu"), std::invalid_argument);
}
