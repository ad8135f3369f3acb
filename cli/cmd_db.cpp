// tune-engine db copy: every run of one results store into another (SQLite
// file or PostgreSQL database, either way round); tune::storage::copy_runs
// does the work.
#include <fmt/format.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "tune/storage/copy.hpp"
#include "tune/storage/results_db.hpp"

namespace tune::cli {
namespace {

struct copy_options {
  std::string from;
  std::string to;
  bool json = false;
};

int run_copy(const copy_options& options) {
  storage::results_db from(options.from, storage::results_db::open_mode::read_only);
  // Named as the store names itself: a PostgreSQL target without its password.
  if (options.from == options.to)
    throw input_error("db copy: FROM and TO are the same store (" + from.path().string() + ")");
  storage::results_db to(options.to);
  auto last = std::chrono::steady_clock::now();
  auto report = storage::copy_runs(from, to, [&](std::size_t done, std::size_t total) {
    auto now = std::chrono::steady_clock::now();
    if (now - last < std::chrono::seconds(2) && done != total) return;
    last = now;
    fmt::print(stderr, "db copy: {} of {} runs\n", done, total);
  });
  const std::string source = from.path().string(), destination = to.path().string();
  if (options.json) {
    fmt::print("{}\n", nlohmann::json{{"from", source},
                                      {"to", destination},
                                      {"runs", report.runs},
                                      {"runs_added", report.runs_added},
                                      {"runs_updated", report.runs_updated},
                                      {"runs_unchanged", report.runs_unchanged},
                                      {"runs_diverged", report.runs_diverged},
                                      {"trials_added", report.trials_added}}
                           .dump(2));
  } else {
    fmt::print("copied {} runs from {} to {}: {} added, {} brought up to date, {} there already; {} trials written\n",
               report.runs, source, destination, report.runs_added, report.runs_updated, report.runs_unchanged,
               report.trials_added);
    if (report.runs_diverged > 0)
      fmt::print(
          "{} runs left as they are in {}: their copies there went on after they were copied (copy the other "
          "way to bring them here)\n",
          report.runs_diverged, destination);
  }
  return exit_ok;
}

}  // namespace

void add_db_command(CLI::App& app, command_list& commands) {
  auto* db = app.add_subcommand("db", "Work on results stores (SQLite files and PostgreSQL databases)");
  auto options = std::make_shared<copy_options>();
  auto* copy = db->add_subcommand(
      "copy",
      "Copy every run of FROM into TO, SQLite to PostgreSQL or back; copying again brings earlier copies up to date "
      "and adds nothing twice. A store is an SQLite file or a PostgreSQL URI (postgresql://user@host:port/dbname; "
      "the password from ~/.pgpass, PGPASSFILE or PGPASSWORD)");
  copy->add_option("FROM", options->from, "Store to read (opened read-only)")->required();
  copy->add_option("TO", options->to, "Store to write (created when missing)")->required();
  copy->add_flag("--json", options->json, "Print the counts as JSON");
  commands.emplace_back(copy, [options] { return run_copy(*options); });
  // `db` alone (after copy in the list: a parsed copy parses db too).
  commands.emplace_back(db, []() -> int {
    throw input_error(
        "db: give a command: 'db copy FROM TO' copies every run of one results store into another "
        "(tune-engine db copy --help)");
  });
}

}  // namespace tune::cli
