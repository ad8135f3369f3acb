// tune-engine best: the fastest configuration of a task in a results database.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "tune/storage/results_db.hpp"

namespace tune::cli {
namespace {

struct best_options {
  std::string db;
  std::string task;
  std::string device_kind;
  bool json = false;
};

std::string task_list(const std::vector<std::string>& tasks) {
  std::string out;
  for (const auto& t : tasks) out += "\n  " + t;
  return out;
}

/// The task to report: the one asked for, or the only one in the file.
std::string choose_task(const storage::results_db& db, const best_options& options) {
  auto tasks = db.tasks();
  if (tasks.empty()) throw input_error("results DB " + options.db + " holds no runs yet; run 'tune-engine tune' first");
  if (options.task.empty()) {
    if (tasks.size() == 1) return tasks.front();
    throw input_error(fmt::format("results DB {} holds {} tasks; choose one with --task:{}", options.db, tasks.size(),
                                  task_list(tasks)));
  }
  if (std::find(tasks.begin(), tasks.end(), options.task) == tasks.end())
    throw input_error(fmt::format("results DB {} has no runs of task '{}'; its tasks are:{}", options.db, options.task,
                                  task_list(tasks)));
  return options.task;
}

nlohmann::json summary_json(const storage::task_summary& summary) {
  nlohmann::json out{{"task", summary.task_key},
                     {"runs", summary.runs},
                     {"trials", summary.trials},
                     {"ok_trials", summary.ok_trials},
                     {"best", nullptr}};
  if (summary.best && summary.best_run) {
    const auto& trial = *summary.best;
    const auto& run = *summary.best_run;
    out["best"] = {{"config", nlohmann::json::parse(trial.config_json)},
                   {"time_ms", summary.confirmed_ms.value_or(trial.time_ms)},
                   {"search_time_ms", trial.time_ms},
                   {"confirmed", summary.confirmed_ms ? nlohmann::json{{"rounds", summary.confirmed_rounds},
                                                                       {"min_ms", summary.confirmed_min_ms},
                                                                       {"max_ms", summary.confirmed_max_ms}}
                                                      : nlohmann::json(nullptr)},
                   {"run_id", trial.run_id},
                   {"seq", trial.seq},
                   {"device", trial.device},
                   {"device_kind", run.device_kind},
                   {"strategy", run.strategy},
                   {"seed", run.seed},
                   {"compile_s", trial.compile_s},
                   {"run_s", trial.run_s}};
  }
  return out;
}

int run_best(const best_options& options) {
  storage::results_db db(options.db, storage::results_db::open_mode::read_only);
  std::string task = choose_task(db, options);
  std::optional<std::string> kind;
  if (!options.device_kind.empty()) kind = options.device_kind;
  auto summary = db.best(task, kind);
  if (!summary)
    throw input_error(fmt::format("results DB {} has no runs of task '{}' on device kind '{}'", options.db, task,
                                  options.device_kind));

  if (options.json) {
    fmt::print("{}\n", summary_json(*summary).dump(2));
  } else {
    fmt::print("task     {}\n", summary->task_key);
    if (summary->best && summary->best_run) {
      const auto& trial = *summary->best;
      const auto& run = *summary->best_run;
      if (summary->confirmed_ms)
        fmt::print("best     {:.6g} ms, confirmed over {} rounds ({:.6g}–{:.6g} ms); {:.6g} ms when found\n",
                   *summary->confirmed_ms, summary->confirmed_rounds, summary->confirmed_min_ms,
                   summary->confirmed_max_ms, trial.time_ms);
      else
        fmt::print("best     {:.6g} ms\n", trial.time_ms);
      fmt::print("config   {}\n", trial.config_json);
      fmt::print("found    run {} (strategy {}, seed {}), trial {}, device {} ({})\n", run.id, run.strategy, run.seed,
                 trial.seq, trial.device, run.device_kind);
    }
    fmt::print("trials   {} in {} run{} ({} ok)\n", summary->trials, summary->runs, summary->runs == 1 ? "" : "s",
               summary->ok_trials);
  }
  if (!summary->best) {
    fmt::print(stderr, "tune-engine: task '{}' has no successful trial yet\n", task);
    return exit_failure;
  }
  return exit_ok;
}

}  // namespace

void add_best_command(CLI::App& app, command_list& commands) {
  auto options = std::make_shared<best_options>();
  auto* sub = app.add_subcommand("best", "Print the best configuration of a task found so far in a results database");
  sub->add_option("--db", options->db,
                  "Results store written by 'tune-engine tune': an SQLite file or postgresql://user@host:port/dbname")
      ->required();
  sub->add_option("--task", options->task, "Task key (needed when the database holds several tasks)");
  sub->add_option("--device-kind", options->device_kind, "Only runs on this device kind");
  sub->add_flag("--json", options->json, "Print JSON instead of text");
  commands.emplace_back(sub, [options] { return run_best(*options); });
}

}  // namespace tune::cli
