// Fuzzes the Python list expressions of T1 specs ("[2**i for i in range(6)]").
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "list_expr.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    (void)tune::evaluate_list_expression(std::string(reinterpret_cast<const char*>(data), size));
  } catch (const std::exception&) {
  }
  return 0;
}
