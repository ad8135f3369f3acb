// Fuzzes the YAML topology reader: bad input must end in
// std::invalid_argument naming the field, never a crash or a hang.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string_view>

#include "tune/storage/topology.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    auto topology =
        tune::storage::parse_topology(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.yaml");
    (void)topology.summary().dump();
    (void)topology.capacity();
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
