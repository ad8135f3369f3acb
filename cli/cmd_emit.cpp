// tune-engine emit: the best configuration of a task in a results database as
// a C++ header (and a source file) to compile the tuned kernel into a program.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "commands.hpp"
#include "tune/kernels/task.hpp"
#include "tune/kernels/tuned_kernel.hpp"
#include "tune/storage/results_db.hpp"

namespace tune::cli {
namespace {

struct emit_options {
  std::string db;
  std::string task;
  std::string backend = "cpu";
  std::string name;
  std::string header;
  std::string source;
  std::string flags;
  std::string launch;
};

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out.flush()) throw input_error("cannot write " + path + "; give a writable path");
}

int run_emit(const emit_options& options) {
  const bool gpu = options.backend == "cuda" || options.backend == "hip";
  if (!gpu && options.backend != "cpu")
    throw input_error("--backend " + options.backend + ": emit writes kernels of the cpu, cuda and hip backends");
  if (gpu && (!options.header.empty() || !options.flags.empty() || options.source.empty() || options.launch.empty()))
    throw input_error("--backend " + options.backend +
                      ": a GPU kernel is emitted as its source and its launch; give --source FILE.cu and --launch "
                      "FILE.json (not --header or --flags)");
  if (!gpu && (options.header.empty() || !options.launch.empty()))
    throw input_error(
        "--backend cpu: a CPU kernel is emitted as a C++ header; give --header NAME.hpp (--launch is "
        "for GPU kernels)");
  auto task = parse_task(options.task);
  auto program = gpu ? make_gpu_task_program(task, options.backend) : make_cpu_task_program(task);
  storage::results_db db(options.db, storage::results_db::open_mode::read_only);
  auto summary = db.best(program->key);
  if (!summary) {
    std::string tasks;
    for (const auto& t : db.tasks()) tasks += "\n  " + t;
    throw input_error(fmt::format(
        "results DB {} has no runs of task '{}' (--task {} --backend {}); tune it first with 'tune-engine tune "
        "--task {} --db {}'{}{}",
        options.db, program->key, options.task, options.backend, options.task, options.db,
        tasks.empty() ? "" : ", or emit one of the tasks it holds:", tasks));
  }
  if (!summary->best)
    throw std::runtime_error(fmt::format("results DB {}: task '{}' has {} trials and none succeeded", options.db,
                                         program->key, summary->trials));
  const auto& trial = *summary->best;
  const auto& run = *summary->best_run;

  tuned_kernel_info info;
  info.name = options.name;
  info.task = options.task;
  info.config_json = trial.config_json;
  info.time_ms = summary->confirmed_ms.value_or(trial.time_ms);  // confirmed when the run was
  info.provenance = fmt::format("from {}: run {} ({}, seed {}), trial {} of {}, on {}",
                                std::filesystem::path(options.db).filename().string(), run.id, run.strategy, run.seed,
                                trial.seq, summary->trials, run.device_kind);
  std::string written;
  if (gpu) {
    auto kernel = emit_tuned_gpu_kernel(*program, info);
    write_file(options.source, kernel.source);
    write_file(options.launch, kernel.launch_json);
    written = options.source + " and " + options.launch;
  } else {
    auto files = emit_tuned_kernel(*program, info, std::filesystem::path(options.header).filename().string());
    write_file(options.header, files.header);
    if (!options.source.empty()) write_file(options.source, files.source);
    if (!options.flags.empty()) {
      std::string lines;
      for (const auto& flag : files.flags) lines += flag + "\n";
      write_file(options.flags, lines);
    }
    written = options.header;
  }
  fmt::print("{}: {} at {:.6g} ms (run {}, trial {}) written to {}\n", options.name, program->key, info.time_ms, run.id,
             trial.seq, written);
  return exit_ok;
}

}  // namespace

void add_emit_command(CLI::App& app, command_list& commands) {
  auto options = std::make_shared<emit_options>();
  auto* sub = app.add_subcommand(
      "emit",
      "Write the best configuration of a task as a C++ header (and source) that compiles the tuned kernel in; "
      "for a GPU backend, the kernel's source and its launch (grid, block, arguments) as JSON");
  sub->add_option("--db", options->db,
                  "Results store written by 'tune-engine tune': an SQLite file or postgresql://user@host:port/dbname")
      ->required();
  sub->add_option("--task", options->task, "Task as given to 'tune-engine tune', e.g. matmul:512x1024x1024")
      ->required();
  sub->add_option("--backend", options->backend, "Backend the task was tuned on: cpu, cuda or hip")
      ->capture_default_str();
  sub->add_option("--name", options->name, "C identifier: the header's namespace, e.g. mm")->required();
  sub->add_option("--header", options->header, "cpu: header to write (NAME.hpp); required");
  sub->add_option("--source", options->source,
                  "cpu: source file to write, which defines TUNE_ENGINE_IMPLEMENT_NAME and includes the header; "
                  "cuda, hip: the kernel source to write (NAME.cu); required");
  sub->add_option("--flags", options->flags, "cpu: file to write the compiler flags of the source to, one a line");
  sub->add_option("--launch", options->launch,
                  "cuda, hip: JSON file to write the launch to: entry, grid, block, arguments in order, the task's "
                  "shape, flops, the measured time; required");
  commands.emplace_back(sub, [options] { return run_emit(*options); });
}

}  // namespace tune::cli
