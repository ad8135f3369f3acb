// tune-engine: the command-line front end. Each subcommand is defined in its
// own cmd_*.cpp file and registered here.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <exception>

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

int main(int argc, char** argv) {
  // A file-size limit (ulimit -f) reached by the results database makes the
  // write fail, which the run reports, instead of ending the process.
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App app{
      "tune-engine: finds the fastest configuration of a tensor-operator kernel.\n"
      "Run 'tune-engine COMMAND --help' for the options of one command."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tune-engine 0.1.0");

  tune::cli::command_list commands;
  tune::cli::register_commands(app, commands);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : tune::cli::exit_bad_input;
  }
  for (auto& [sub, run] : commands) {
    if (sub->parsed()) {
      try {
        return run();
      } catch (const tune::cli::input_error& e) {
        std::fprintf(stderr, "tune-engine: %s\n", e.what());
        return tune::cli::exit_bad_input;
      } catch (const std::invalid_argument& e) {
        std::fprintf(stderr, "tune-engine: %s\n", e.what());
        return tune::cli::exit_bad_input;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "tune-engine: error: %s\n", e.what());
        return tune::cli::exit_failure;
      }
    }
  }
  return tune::cli::exit_failure;
}
