// The commands name each library option once: the field -> flag map the
// library's messages use is the one the command declared, and it covers
// every field of session_options a command offers.
#include <catch2/catch.hpp>
#include <set>

#include "commands.hpp"

using namespace tune;

namespace {

/// The commands, registered once in this process (their maps are recorded then).
CLI::App& app() {
  static CLI::App instance{"test"};
  static cli::command_list commands;
  static bool registered = false;
  if (!registered) {
    cli::register_commands(instance, commands);
    registered = true;
  }
  return instance;
}

}  // namespace

TEST_CASE("option names: tune names every session option a user sets, each as a flag it has", "[cli]") {
  auto* tune_command = app().get_subcommand("tune");
  const auto& names = cli::declared_option_names("tune");
  // Fields that belong to other front ends: program-edit evolution has its
  // own command, and a task name only names an objective (library only).
  const std::set<std::string> elsewhere = {"workload", "task_name"};
  for (const auto& field : session_option_fields()) {
    INFO(field);
    if (elsewhere.count(field)) {
      CHECK_FALSE(names.count(field));
      continue;
    }
    REQUIRE(names.count(field));
    CHECK(tune_command->get_option(names.at(field)) != nullptr);
  }
  for (const auto& [field, flag] : names) {
    INFO(field);
    auto known = session_option_fields();
    CHECK(std::find(known.begin(), known.end(), field) != known.end());
  }
  CHECK(names.at("budget") == "--budget");
  CHECK(names.at("db_path") == "--db");
  CHECK(names.at("time_budget") == "--time-budget");
}

TEST_CASE("option names: evolve, replay, node and dashboard declare theirs", "[cli]") {
  app();
  for (const auto& [command, field, flag] :
       std::vector<std::tuple<std::string, std::string, std::string>>{{"evolve", "workload", "--workload"},
                                                                      {"evolve", "budget", "--budget"},
                                                                      {"evolve", "device_wait", "--device-wait"},
                                                                      {"evolve", "lease_devices", "--no-lease"},
                                                                      {"replay", "priors", "--prior"},
                                                                      {"replay", "trajectories_file", "--trajectories"},
                                                                      {"node", "topology_file", "--topology"},
                                                                      {"dashboard", "databases", "--db"}}) {
    INFO(command << " " << field);
    const auto& names = cli::declared_option_names(command);
    REQUIRE(names.count(field));
    CHECK(names.at(field) == flag);
    CHECK(app().get_subcommand(command)->get_option(flag) != nullptr);
  }
  CHECK(cli::declared_option_names("no-such-command").empty());
}
