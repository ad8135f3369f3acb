#pragma once
// Command-line text helpers shared by the benchmark programs.

#include <CLI/CLI.hpp>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
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

/// "strategy:name=value" (--hyper) added to hyper[strategy][name].
inline void add_hyper(const std::string& h, std::map<std::string, std::map<std::string, double>>& hyper) {
  auto colon = h.find(':'), eq = h.find('=');
  if (colon == std::string::npos || eq == std::string::npos || eq < colon)
    throw std::invalid_argument("--hyper " + h + ": expected strategy:name=value, e.g. opevo:lambda=8");
  const std::string text = h.substr(eq + 1);
  double value = 0;
  if (!CLI::detail::lexical_cast(text, value))
    throw std::invalid_argument("--hyper " + h + ": the value '" + text + "' is not a number");
  hyper[h.substr(0, colon)][h.substr(colon + 1, eq - colon - 1)] = value;
}

/// An option's check that its number is more than 0, with a plain message
/// (CLI::PositiveNumber's names the range up to the largest double).
inline CLI::Validator more_than_zero() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value) || !(value > 0)) return "must be a number more than 0, not " + text;
        return {};
      },
      "> 0");
}

/// The benchmarks' option parsing: an option given again replaces the
/// earlier value, as the scripts that pass their defaults first and the
/// user's options after rely on.
inline void last_value_wins(CLI::App& app) {
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

/// Parses the options as the tune-engine command does: --help prints them
/// and gives 0 to return from main, a bad option prints one message and
/// gives 2 (CLI11's own codes are 100 and up); nothing when the options are
/// good and the benchmark should run.
inline std::optional<int> parse_options(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return std::nullopt;
}

/// A comma-separated list option (--strategies a,b), its default shown.
template <class T>
CLI::Option* add_list(CLI::App& app, const std::string& name, std::vector<T>& values, const std::string& description) {
  return app.add_option(name, values, description + ", comma-separated")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->capture_default_str();
}

/// An option that may be given several times, one value each (--hyper).
inline CLI::Option* add_repeatable(CLI::App& app, const std::string& name, std::vector<std::string>& values,
                                   const std::string& description) {
  return app.add_option(name, values, description + " (repeatable)")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

}  // namespace tune::bench
