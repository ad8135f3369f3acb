// The strategies as --help lists them, from the registry and each one's
// defaults (strategy_defaults).
#include <fmt/format.h>

#include "commands.hpp"
#include "tune/engine/strategy.hpp"
#include "tune/engine/text.hpp"

// Each strategy on a line of its own with its hyperparameters' defaults
// (strategy_defaults), wrapped at about 80 columns of description.
std::string tune::cli::strategy_help() {
  std::string text = "search strategy, one of " + join(strategy_names()) +
                     ".\nTheir hyperparameters' defaults (--hyper name=value sets one; docs/strategies.md\n"
                     "says what each does):";
  const std::string indent(13, ' ');
  for (const auto& name : strategy_names()) {
    std::string line = fmt::format("  {:<11}", name);
    if (name == default_strategy_name()) line += "(default) ";
    auto defaults = strategy_defaults(name);
    if (defaults.empty()) line += "no hyperparameters";
    bool first = true;
    for (const auto& [key, value] : defaults) {
      auto item = fmt::format("{}={}", key, value);
      if (!first && line.size() + 1 + item.size() > 80) {
        text += "\n" + line;
        line = indent + item;
      } else {
        line += (first ? "" : " ") + item;
      }
      first = false;
    }
    text += "\n" + line;
  }
  return text;
}
