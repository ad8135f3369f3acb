// tune-engine: the command-line front end. Each subcommand is defined in its
// own cmd_*.cpp file and registered here.
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <exception>

#include "commands.hpp"

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
