// kernels/worker/input_fill.hpp: the arguments tune-vendor-worker gives a
// tuned kernel: 64-byte boundaries, the measuring worker's hashed inputs,
// zeroed outputs, scalar values, a malformed argument refused.
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>

#include "../../../kernels/worker/input_fill.hpp"

using tune::worker::argument_bytes;

TEST_CASE("a tuned kernel's arguments in the vendor comparison start on 64-byte boundaries", "[kernels]") {
  // A kernel that reads its operands in place with vector loads runs up to
  // 1.6x slower when they straddle cache lines: the comparison must give it
  // the alignment the measuring worker gave it.
  for (const char* type : {"float*", "double*", "int*"})
    for (std::size_t size : {std::size_t{1}, std::size_t{3}, std::size_t{1000}, std::size_t{1} << 20}) {
      std::vector<tune::worker::argument_storage> arguments;
      for (int i = 0; i < 4; ++i)
        arguments.push_back(argument_bytes({{"type", type}, {"size", size}, {"output", i == 0}}, arguments.size()));
      for (const auto& bytes : arguments) {
        INFO(type << " x " << size);
        CHECK(reinterpret_cast<std::uintptr_t>(bytes.data()) % 64 == 0);
      }
    }
}

TEST_CASE("a tuned kernel's arguments hold the measuring worker's inputs, zeroed outputs and scalar values",
          "[kernels]") {
  auto input = argument_bytes({{"type", "float*"}, {"size", 100}}, 1);
  auto output = argument_bytes({{"type", "float*"}, {"size", 100}, {"output", true}}, 0);
  REQUIRE(input.size() == 100 * sizeof(float) + 64);
  bool any_nonzero = false;
  for (std::size_t i = 0; i < 100; ++i) {
    float x, y;
    std::memcpy(&x, input.data() + i * sizeof x, sizeof x);
    std::memcpy(&y, output.data() + i * sizeof y, sizeof y);
    CHECK(x == static_cast<float>(tune::worker::hashed_input(1, i)));
    CHECK(y == 0.0f);
    any_nonzero = any_nonzero || x != 0.0f;
  }
  CHECK(any_nonzero);
  auto n = argument_bytes({{"type", "int"}, {"value", 2048}}, 2);
  std::int32_t v;
  std::memcpy(&v, n.data(), sizeof v);
  CHECK(v == 2048);
  CHECK_THROWS(argument_bytes({{"type", "quaternion*"}, {"size", 4}}, 0));
}
