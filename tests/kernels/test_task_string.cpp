// Task strings: their shapes, the canonical form, and the strings refused.
#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>

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
  auto own = parse_task("conv2d:8x64x27x27:192x5x5:own:p2");
  CHECK(own.own_layouts);
  CHECK(own.pad == 2);
  CHECK(own.to_string() == "conv2d:8x64x27x27:192x5x5:s1:p2:own");
  CHECK(own.flops() == parse_task("conv2d:8x64x27x27:192x5x5:p2").flops());
  CHECK_FALSE(c2.own_layouts);
  for (const char* text : {"matmul:512x1024x1024", "bmm:960x128x128x64:nt", "conv2d:512x3x227x227:64x11x11:s4:p0",
                           "conv2d:512x3x227x227:64x11x11:s4:p0:own"})
    CHECK(parse_task(text).to_string() == text);
}

TEST_CASE("bad task strings say what form is expected", "[kernels]") {
  for (const char* text :
       {"", "matmul", "matmul:512x1024", "matmul:512x0x4", "matmul:5x-1x4", "matmul:axbxc", "bmm:1x2x3x4:tt",
        "conv2d:1x3x8x8", "conv2d:1x3x8x8:4x3x3:q2", "conv2d:1x3x4x4:4x9x9", "gemm:1x2x3", "conv2d:1x3x8x8:4x3x3:s2:s2",
        "conv2d:1x3x8x8:4x3x3:own:own", "matmul:4x4x4:own", "bmm:1x2x3x4:own"}) {
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

TEST_CASE("task sizes that would overflow 64-bit arithmetic are refused", "[kernels]") {
  // Found while fuzzing task strings: a padding of 2^63 - 1 overflowed
  // height + 2 * pad (undefined behaviour) before the size check.
  auto refused = [](const std::string& text) {
    try {
      parse_task(text);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK_THAT(refused("conv2d:1x1x9223372036854775807x1:1x1x1:p9223372036854775807"),
             Catch::Matchers::Contains("is larger than 2147483647"));
  CHECK_THAT(refused("matmul:99999999999999999999x2x2"), Catch::Matchers::Contains("is larger than 2147483647"));
  CHECK_THAT(refused("conv2d:1x1x8x8:1x3x3:s2147483648"), Catch::Matchers::Contains("stride '2147483648'"));
  // Each size fits, but a tensor would hold 2^62 elements.
  CHECK_THAT(refused("matmul:2147483647x2147483647x1"),
             Catch::Matchers::Contains("elements is larger than the 2^40 a task may have"));
  CHECK_THAT(refused("conv2d:65536x65536x65536x1:1x1x1"), Catch::Matchers::Contains("2^40"));
  // The largest sizes still give a task when the tensors stay small enough.
  auto tall = parse_task("matmul:2147483647x1x1");
  CHECK(tall.n == 2147483647);
  CHECK(parse_task(tall.to_string()).n == tall.n);
  CHECK(parse_task("conv2d:1x1x2147483647x1:1x1x1:p1").out_height() == 2147483649);
}
