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

/// The task string of one of OpEvo's CPU problems (MM1-MM3, BMM1-BMM3, C1,
/// C2 with a batch of `conv_batch`; `own_layouts`: C1 and C2 as
/// conv2d:...:own), or `name` itself (a task string).
inline std::string paper_task(const std::string& name, long conv_batch, bool own_layouts) {
  const std::string b = std::to_string(conv_batch), own = own_layouts ? ":own" : "";
  if (name == "MM1") return "matmul:512x1024x1024";
  if (name == "MM2") return "matmul:512x1024x4096";
  if (name == "MM3") return "matmul:512x4096x1024";
  if (name == "BMM1") return "bmm:960x128x128x64:nn";
  if (name == "BMM2") return "bmm:960x128x128x64:tn";
  if (name == "BMM3") return "bmm:960x128x64x128:nt";
  if (name == "C1") return "conv2d:" + b + "x3x227x227:64x11x11:s4:p0" + own;
  if (name == "C2") return "conv2d:" + b + "x64x27x27:192x5x5:s1:p2" + own;
  return name;
}

}  // namespace tune::bench
