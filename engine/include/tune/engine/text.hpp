// Small text helpers shared by the engine's and its front ends' messages.
#pragma once

#include <string>
#include <string_view>

namespace tune {

/// The items (anything a std::string can be appended from) separated by
/// `separator`: join({"a", "b"}) == "a, b"; no items give "".
template <class Range>
std::string join(const Range& items, std::string_view separator = ", ") {
  std::string out;
  bool first = true;
  for (const auto& item : items) {
    if (!first) out += separator;
    out += item;
    first = false;
  }
  return out;
}

}  // namespace tune
