#pragma once
// A tuned kernel's arguments as tune-vendor-worker builds them for its timed
// runs: the inputs tune-kernel-worker gives the kernel (a fixed hash of
// (argument, element), identical in every process; measure.cpp fills its
// buffers with hashed_input), on the same 64-byte boundaries
// (argument_storage), scalars holding their value, outputs zeroed (the
// warm-up run writes them before any timed run) and, as tune-kernel-worker's,
// on huge pages where the system allows.

#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <vector>

#include "huge_pages.hpp"
#include "measure.hpp"
#include "tune/kernels/kernel_program.hpp"

namespace tune::worker {

/// The value of element `index` of input argument `argument`, in [-1, 1):
/// the hash tune-kernel-worker fills its inputs with.
inline double hashed_input(std::size_t argument, std::size_t index) {
  std::uint64_t z = (argument + 1) * 0x9e3779b97f4a7c15ULL + index * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 31)) * 0x94d049bb133111ebULL;
  z ^= z >> 29;
  return static_cast<double>(z >> 11) / static_cast<double>(1ULL << 53) * 2.0 - 1.0;
}

/// Element i of `bytes` set to `value` as a T.
template <typename T>
void store(argument_storage& bytes, std::size_t i, T value) {
  std::memcpy(bytes.data() + i * sizeof(T), &value, sizeof value);
}

/// The bytes of argument `index` of a request's "arguments" ({"type", "size",
/// "output", "value"}, as the CPU backend sends them to tune-kernel-worker),
/// with 64 bytes of slack past the end. Throws on a malformed argument.
inline argument_storage argument_bytes(const nlohmann::json& a, std::size_t index) {
  const auto type = argument_type_from_string(a.at("type").get<std::string>());
  const std::size_t count = is_array(type) ? a.at("size").get<std::size_t>() : 1;
  const double value = a.value("value", 0.0);
  const bool input = !a.value("output", false);
  // An output on huge pages where the system allows, as tune-kernel-worker
  // gives it (huge_pages.hpp).
  auto bytes = input ? argument_storage(count * element_bytes(type) + 64, 0)
                     : huge_page_storage<argument_storage>(count * element_bytes(type) + 64);
  switch (type) {
    case argument_type::f32_array:
      for (std::size_t i = 0; input && i < count; ++i) store(bytes, i, static_cast<float>(hashed_input(index, i)));
      break;
    case argument_type::f64_array:
      for (std::size_t i = 0; input && i < count; ++i) store(bytes, i, hashed_input(index, i));
      break;
    case argument_type::i32_array:
      for (std::size_t i = 0; input && i < count; ++i)
        store(bytes, i, static_cast<std::int32_t>((hashed_input(index, i) + 1.0) * 50.0));
      break;
    case argument_type::i32:
      store(bytes, 0, static_cast<std::int32_t>(value));
      break;
    case argument_type::i64:
      store(bytes, 0, static_cast<std::int64_t>(value));
      break;
    case argument_type::f32:
      store(bytes, 0, static_cast<float>(value));
      break;
    case argument_type::f64:
      store(bytes, 0, value);
      break;
  }
  return bytes;
}

}  // namespace tune::worker
