#include "tune/engine/result.hpp"

#include <array>

namespace tune {

namespace {
constexpr std::array<std::string_view, 10> status_names = {"ok",
                                                           "instantiation_error",
                                                           "compile_error",
                                                           "compile_error_device",
                                                           "runtime_error",
                                                           "wrong_answer",
                                                           "build_timeout",
                                                           "run_timeout",
                                                           "unknown",
                                                           "too_slow"};
}

std::string_view to_string(status s) {
  auto i = static_cast<std::size_t>(s);
  return i < status_names.size() ? status_names[i] : "unknown";
}

std::optional<status> status_from_string(std::string_view text) {
  for (std::size_t i = 0; i < status_names.size(); ++i) {
    if (status_names[i] == text) return static_cast<status>(i);
  }
  return std::nullopt;
}

}  // namespace tune
