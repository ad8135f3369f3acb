#pragma once
// Command-line text helpers shared by the benchmark programs.

#include <sstream>
#include <string>
#include <vector>

namespace tune::bench {

/// "a,b,,c" split at `sep` -> {"a", "b", "c"} (empty items dropped).
inline std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, sep);)
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace tune::bench
