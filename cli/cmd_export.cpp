// tune-engine export: writes a recorded run as T4 results or as a Kernel Tuner
// cache (tune::storage::export_run does the work).
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "commands.hpp"
#include "tune/storage/export.hpp"
#include "tune/storage/results_db.hpp"

namespace tune::cli {
namespace {

struct export_options {
  std::string db;
  std::int64_t run = 0;
  bool run_given = false;
  std::string format;
  std::string out;
};

std::string run_list(const std::vector<storage::run_record>& runs) {
  std::string out;
  for (const auto& run : runs)
    out += fmt::format("\n  {}  {} ({}, seed {}, {})", run.id, run.task_key, run.strategy, run.seed,
                       storage::run_status_text(run));
  return out;
}

int run_export(const export_options& options) {
  storage::results_db db(options.db, storage::results_db::open_mode::read_only);
  auto runs = db.runs();
  if (runs.empty()) throw input_error("results DB " + options.db + " holds no runs yet; run 'tune-engine tune' first");
  auto latest = std::max_element(runs.begin(), runs.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  std::int64_t run_id = options.run_given ? options.run : latest->id;
  if (!db.find_run(run_id))
    throw input_error(
        fmt::format("--run {}: results DB {} has no such run; give one of its runs (or leave --run out "
                    "to export the latest, {}):{}",
                    run_id, options.db, latest->id, run_list(runs)));
  auto format = storage::export_format_from_string(options.format);
  if (!format)
    throw input_error(fmt::format("--format {}: expected one of {}", options.format,
                                  fmt::join(storage::export_format_names(), ", ")));

  auto document = storage::export_run(db, run_id, *format);
  if (options.out.empty()) {
    fmt::print("{}\n", document.dump(1));
  } else {
    storage::write_export(document, options.out);
    fmt::print(stderr, "exported run {} ({} trials) as {} to {}\n", run_id, db.trial_count(run_id), options.format,
               options.out);
  }
  return exit_ok;
}

}  // namespace

void add_export_command(CLI::App& app, command_list& commands) {
  auto options = std::make_shared<export_options>();
  auto* sub = app.add_subcommand(
      "export", "Write a recorded run as T4 results or a Kernel Tuner cache (replayable with --dataset)");
  sub->add_option("--db", options->db,
                  "Results store written by 'tune-engine tune': an SQLite file or postgresql://user@host:port/dbname")
      ->required();
  auto* run = sub->add_option("--run", options->run, "Run id (default: the latest run in the database)");
  sub->add_option("--format", options->format, fmt::format("{}", fmt::join(storage::export_format_names(), " or ")))
      ->required()
      ->check(CLI::IsMember(storage::export_format_names()));
  sub->add_option("--out", options->out, "File to write (default: standard output)");
  commands.emplace_back(sub, [options, run] {
    options->run_given = run->count() > 0;
    return run_export(*options);
  });
}

}  // namespace tune::cli
