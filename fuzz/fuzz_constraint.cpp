// Fuzzes constraint expressions (Kernel Tuner / T1 Python syntax) over a fixed
// space, then evaluates them on a few configurations.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "tune/engine/constraint.hpp"
#include "tune/engine/space.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tune;
  static const search_space space(
      {make_discrete_parameter("x", {1, 2, 4, 8, 16, 32}), make_discrete_parameter("y", {0, 1, 3}),
       make_categorical_parameter("z", {parameter_value(std::string("a")), parameter_value(std::string("b"))}),
       make_factorization_parameter("t", 64, 3)});
  try {
    auto set = make_constraint_set(space, {std::string(reinterpret_cast<const char*>(data), size)});
    rng_type rng(1);
    for (int i = 0; i < 8; ++i) (void)set->satisfied(space.draw(rng));
  } catch (const std::exception&) {
  }
  return 0;
}
