#pragma once
// Subcommands of tune-engine. Each cmd_*.cpp defines one add_*_command that
// adds its CLI11 subcommand and returns the function that runs it.

#include <CLI/CLI.hpp>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tune/tune.hpp"

namespace tune::cli {

constexpr int exit_ok = 0;
constexpr int exit_failure = 1;
constexpr int exit_bad_input = 2;

/// Bad user input: printed as is, exit code 2 (the library's own type, so
/// the facade's messages and the command's are handled alike).
using tune::input_error;

/// "random, ga, …": the strategy names for --help, from the registry.
std::string strategy_help();

/// Runs `body` with SIGINT and SIGTERM requesting `stop`; the default
/// handlers are back afterwards (stop_signals.cpp).
void with_stop_signals(const stop_source& stop, const std::function<void()>& body);
/// Runs the session with SIGINT and SIGTERM requesting `stop`, the stop_source
/// of the options it was made from (copies share one flag).
run_report run_until_signal(session& s, const stop_source& stop);

/// The session_options fields named as the commands' options (tune, evolve):
/// the library checks the values, and its messages name them as typed.
inline std::map<std::string, std::string> session_option_names() {
  return {{"budget", "--budget"},
          {"time_budget_s", "--time-budget"},
          {"time_scale", "--time-scale"},
          {"dataset", "--dataset"},
          {"batch", "--batch"},
          {"threads", "--threads"},
          {"resume", "--resume"},
          {"db_path", "--db"},
          {"topology_file", "--topology"},
          {"kinds_file", "--kinds"},
          {"compare_vendor", "--compare-vendor"},
          {"task", "--task"},
          {"workload", "--workload"},
          {"dashboard_listen", "--dashboard"},
          {"dashboard_token", "--dashboard-token"},
          {"publish_endpoint", "--publish"}};
}

/// A finished run's exit code: 1 when it failed, 130 when stopped, else 0.
inline int exit_code_of(const run_report& report) {
  if (report.reason == end_reason::failed) return exit_failure;
  return report.reason == end_reason::stopped ? 130 : exit_ok;
}

using command_list = std::vector<std::pair<CLI::App*, std::function<int()>>>;

// One line per subcommand; defined in cmd_<name>.cpp.
void add_space_command(CLI::App& app, command_list& commands);
void add_best_command(CLI::App& app, command_list& commands);
void add_watch_command(CLI::App& app, command_list& commands);
void add_devices_command(CLI::App& app, command_list& commands);
void add_tune_command(CLI::App& app, command_list& commands);
void add_replay_command(CLI::App& app, command_list& commands);
void add_export_command(CLI::App& app, command_list& commands);
void add_emit_command(CLI::App& app, command_list& commands);
void add_node_command(CLI::App& app, command_list& commands);
void add_evolve_command(CLI::App& app, command_list& commands);
void add_edits_command(CLI::App& app, command_list& commands);
void add_front_command(CLI::App& app, command_list& commands);
void add_dashboard_command(CLI::App& app, command_list& commands);
void add_keys_command(CLI::App& app, command_list& commands);

inline void register_commands(CLI::App& app, command_list& commands) {
  add_space_command(app, commands);
  add_best_command(app, commands);
  add_watch_command(app, commands);
  add_devices_command(app, commands);
  add_tune_command(app, commands);
  add_replay_command(app, commands);
  add_export_command(app, commands);
  add_emit_command(app, commands);
  add_node_command(app, commands);
  add_evolve_command(app, commands);
  add_edits_command(app, commands);
  add_front_command(app, commands);
  add_dashboard_command(app, commands);
  add_keys_command(app, commands);
}

}  // namespace tune::cli
