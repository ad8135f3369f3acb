#pragma once
// Subcommands of tune-engine. Each cmd_*.cpp defines one add_*_command that
// adds its CLI11 subcommand and returns the function that runs it.

#include <CLI/CLI.hpp>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tune/storage/results_db.hpp"
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

/// Refuses a negative number for an option of an unsigned type: CLI11 reads
/// "-1" into a 64-bit unsigned as its largest value (a --budget of
/// 18446744073709551615 trials, or a --seed other than the one given).
inline CLI::Validator not_negative() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        const auto first = value.find_first_not_of(" \t");
        if (first != std::string::npos && value[first] == '-') return "must not be negative: " + value;
        return {};
      },
      "", "not negative");
}

/// Whether an option's value is an unsigned count (or an optional one).
template <class T>
struct is_unsigned_count
    : std::bool_constant<std::is_integral_v<T> && std::is_unsigned_v<T> && !std::is_same_v<T, bool>> {};
template <class T>
struct is_unsigned_count<std::optional<T>> : is_unsigned_count<T> {};

/// A command's options that set fields of a library options struct
/// (session_options, …): each is declared once, through this, and the map
/// of field -> flag that the library's messages use is what was declared, so
/// a message names every option as the user typed it.
class field_options {
 public:
  explicit field_options(CLI::App* command) : command_(command) {}

  /// An option of `field`; one of an unsigned type refuses a negative number.
  template <class T>
  CLI::Option* option(const std::string& field, const std::string& flags, T& value, const std::string& help) {
    auto* added = command_->add_option(flags, value, help);
    if constexpr (is_unsigned_count<T>::value) added->check(not_negative());
    return remember(field, added);
  }
  CLI::Option* flag(const std::string& field, const std::string& flags, bool& value, const std::string& help) {
    return remember(field, command_->add_flag(flags, value, help));
  }
  /// field -> "--flag", for session_options::option_names and the like.
  const std::map<std::string, std::string>& names() const { return names_; }

 private:
  CLI::Option* remember(const std::string& field, CLI::Option* option) {
    names_[field] = "--" + option->get_lnames().front();
    return option;
  }
  CLI::App* command_;
  std::map<std::string, std::string> names_;
};

/// The device-lease options a measuring command offers (--no-lease,
/// --device-wait), and what they set in session_options.
struct lease_options {
  bool no_lease = false;
  std::string device_wait = "wait";

  void declare(field_options& f) {
    f.flag("lease_devices", "--no-lease", no_lease,
           "measure without leasing the devices (their cores, their GPU): another run on this machine may then "
           "measure on them at the same time, and each times the other's kernels too");
    f.option("device_wait", "--device-wait", device_wait,
             "when another process on this machine holds a device's lease: wait for it, saying who holds it "
             "(default), free (measure on the devices that are free) or fail (at once)")
        ->check(CLI::IsMember({"wait", "free", "fail"}));
  }
  void apply(session_options& o) const {
    o.lease_devices = !no_lease;
    o.device_wait = device_wait == "free"   ? device_wait_policy::free
                    : device_wait == "fail" ? device_wait_policy::fail
                                            : device_wait_policy::wait;
  }
};

/// A count of at least 1 ("trials", …): CLI11's own range message would print
/// the largest double.
inline CLI::Validator at_least_one(const std::string& unit) {
  return CLI::Validator(
      [unit](std::string& value) -> std::string {
        if (value.find_first_not_of("0123456789") == std::string::npos &&
            value.find_first_not_of('0') == std::string::npos)
          return "must be at least 1 " + unit;
        return {};
      },
      "", "at least 1");
}

/// The field -> flag map a command declared with field_options (empty for
/// a command that declared none); for the tests that check it is complete.
const std::map<std::string, std::string>& declared_option_names(const std::string& command);
/// Records a command's map (called by the command's add_*_command).
void declare_option_names(const std::string& command, const std::map<std::string, std::string>& names);

/// --db of a command that reads a results store: a file that exists, or a
/// PostgreSQL target (whose server answers when the store is opened).
inline CLI::Validator existing_store() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        if (storage::is_postgres_target(value)) return {};
        return CLI::ExistingFile(value);
      },
      "FILE|URI");
}

/// --summary-json's file, open to write; not open when `path` is empty.
/// Throws input_error when it cannot be written.
inline std::ofstream open_summary(const std::string& path) {
  std::ofstream out;
  if (path.empty()) return out;
  out.open(path);
  if (!out) throw input_error("--summary-json " + path + ": cannot write this file");
  return out;
}

/// A finished run's exit code: 1 when it failed, 130 when stopped, else 0.
inline int exit_code_of(end_reason reason) {
  if (reason == end_reason::failed) return exit_failure;
  return reason == end_reason::stopped ? 130 : exit_ok;
}
inline int exit_code_of(const run_report& report) { return exit_code_of(report.reason); }

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
void add_db_command(CLI::App& app, command_list& commands);

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
  add_db_command(app, commands);
}

}  // namespace tune::cli
