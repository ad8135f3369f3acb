#pragma once
// Whole-model tuning: the tasks of a model (its operators, each with how often
// it runs per inference), one trial budget, and a task scheduler that gives
// the next round of trials to the task where the model's weighted latency,
// sum of count x best time, is expected to fall most (tune/engine/task_scheduler.hpp).
//
//   tune::model m = tune::read_model("examples/models/resnet18.yaml");
//   tune::model_options o;
//   o.session.db_path = "resnet18.db";     // every task's run is recorded here
//   o.budget_trials = 400;                 // for the whole model
//   tune::model_report r = tune::tune_model(m, o);
//
// A task's first round takes as prior the runs of the tasks of its family (its
// operator) that ran before it (session_options::prior_tasks): `bo` starts from
// the configurations that were fast on the other shapes. With
// model_options::one_pipeline, a task whose first round opens with no result
// of its own also takes its family's trials so far in the run (neither with
// session_options::auto_prior off).
//
// A model file (YAML):
//
//   name: resnet18-b1
//   tasks:
//     - name: layer1.0.conv1
//       task: conv2d:1x64x56x56:64x3x3:s1:p1   # a built-in task, or
//       count: 1                               # runs per inference (default 1)
//     - name: gemm
//       dataset: ../../data/datasets/gemm_clblast/RTX_3090.json.gz   # a measured dataset to replay
//
// Identical workloads (the same canonical task, or the same dataset file) are
// merged: one task, the counts added, every name kept.
//
// Each round is a run of one task's session, continued from where its last
// round stopped (its run is left stopped, hence resumable, between rounds), so
// the strategy of each task keeps its whole history; every task's run is
// recorded in the one results database under the task's own key and `best`,
// `emit` and the dashboard read it as any run. At the end each task's run is
// continued once more with nothing left to hand out: it ends as a session
// does (its fastest trials confirmed, the vendors compared when asked) and is
// recorded as finished. A stopped model (session_options::stop) leaves its
// runs resumable: a model run with session_options::resume continues them; a
// finished model's tasks are searched anew by a later run, whose trials the
// database's measurement cache answers as far as the earlier search went.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tune/engine/task_scheduler.hpp"
#include "tune/tune.hpp"

namespace tune {

struct model_task {
  /// The names of the model's entries merged into this task, in file order.
  std::vector<std::string> names;
  std::string task;     ///< canonical built-in task; or empty
  std::string dataset;  ///< a measured dataset (absolute path); or empty
  double count = 1.0;   ///< runs per inference, merged entries' counts added
  /// "conv2d", "matmul", "bmm" for built-in tasks, "dataset" otherwise.
  std::string family;
  double flops = 0.0;  ///< of one run; 0 for a dataset

  /// The names joined with ", ".
  std::string label() const;
};

struct model {
  std::string origin;  ///< the file read
  std::string name;
  std::vector<model_task> tasks;
  /// Entries of the file, merged or not.
  std::size_t entries = 0;
  /// ONNX: Conv, MatMul and Gemm nodes that map to no built-in task, each as
  /// "OP 'node': why" (grouped convolution, symbolic shapes, …).
  std::vector<std::string> unsupported;
  /// ONNX: the other nodes, not tuned, as "OP xCOUNT" (Relu x17, Add x8, …).
  std::vector<std::string> not_tuned;
};

/// Reads a model file: YAML, or ONNX (a ".onnx" path, when built with
/// Debian's libonnx-dev): shapes inferred by ONNX's shape inference; Conv
/// (2-D, group 1, equal strides and pads), MatMul (2-D, or batched with equal
/// batch dimensions; a 3-D by 2-D one is one matmul of the rows) and Gemm
/// nodes become conv2d, matmul and bmm tasks, identical ones merged; the rest
/// is listed (unsupported, not_tuned), never dropped silently. Throws
/// input_error naming the file, the field or node, and the fix.
model read_model(const std::string& path);

/// True when read_model reads ONNX files in this build.
bool onnx_supported();

/// One point of the model's progress: after a round.
struct model_progress {
  std::uint64_t trials = 0;  ///< of every task, recorded ones included
  double wall_s = 0.0;
  /// sum of count x best time (ms); NaN while a task has none.
  double latency_ms = 0.0;
  std::size_t task = 0;  ///< the round's task
};

struct model_options {
  /// What every task's session shares: the topology, the strategy and its
  /// hyperparameters, the results database, the seed (the model's: every
  /// task's run and the scheduler draw from it), the measurement. Its target
  /// fields (task, dataset, …) must be empty: the model names the targets.
  /// Its budget is unused (budget_trials is the model's); stop ends the model
  /// after the round in progress; confirm and compare_vendor apply to each
  /// task at the end; publish_endpoint and dashboard_listen serve the whole
  /// model: one event stream, on which every round's run publishes and the
  /// model a model_progress event before its first round, after each round
  /// and at its end (storage::model_progress_event), and one dashboard.
  session_options session;
  task_scheduler_options scheduler;
  /// Trials of one task per round (a round may take a few more: the trials
  /// already handed out when it is stopped are measured and kept). > 0.
  std::uint32_t round_trials = 16;
  /// Trials of every task in all, recorded ones included on resume; 0: 64 per task.
  std::uint64_t budget_trials = 0;
  /// Every task through one pipeline (its compile pool and measurers shared,
  /// in steady state): the scheduler gives out rounds of round_trials
  /// hand-outs as the pipeline asks for candidates, passing over tasks with a
  /// round still in flight while another has none, so the devices stay busy
  /// while any task has work. Tasks of one backend; the topology's nodes are
  /// sent every task (a node task of kind multi). false: one round at a
  /// time, each a session of its own (its pipeline started and drained with
  /// it).
  bool one_pipeline = false;
  /// Called after each round; with one_pipeline, when the model's latency
  /// fell, else at most once a second while its trials grow, and at the end
  /// of the search (model_progress::task is then 0).
  std::function<void(const model_progress&)> on_round;
};

struct model_task_report {
  std::string label;               ///< model_task::label()
  std::vector<std::string> names;  ///< model_task::names
  std::string target;              ///< the task or dataset
  double count = 1.0;
  std::uint64_t trials = 0;  ///< recorded ones included
  std::uint32_t rounds = 0;
  std::int64_t run_id = 0;
  /// The task's best trial: the winner of its run's confirmation when the
  /// model ran to its end (run_report::best); empty when nothing succeeded.
  std::optional<trial_info> best;
  bool confirmed = false;  ///< best won the end-of-run confirmation rounds
  /// The task's run_report::throughput (with compare_vendor, the vendor
  /// kernels timed alternately with the best); null for a dataset.
  nlohmann::json throughput;
  bool done = false;  ///< the scheduler ended it (nothing left to propose, or patience)
  /// The tasks of its family that had run before its first round and whose
  /// runs gave its search's prior configurations (run_report::
  /// prior_tasks_used), by label: a task none of whose configurations maps
  /// onto this one's space (another kernel's replayed dataset) is not listed.
  std::vector<std::string> prior_from;
};

struct model_report {
  std::string name;
  std::vector<std::string> unsupported, not_tuned;  ///< the model's (ONNX)
  std::uint64_t seed = 0;
  scheduler_kind scheduler = scheduler_kind::gradient;
  std::vector<model_task_report> tasks;  ///< in the model's order
  std::vector<model_progress> trace;     ///< after every round
  std::uint64_t trials = 0;
  double wall_s = 0.0;
  /// Wall seconds of the search, before each task's end (its confirmation
  /// and vendor comparison).
  double search_s = 0.0;
  bool one_pipeline = false;  ///< model_options::one_pipeline
  /// With one_pipeline: each device's busy share and the compile workers'
  /// from the end of the warm-up (the first trial) to the last hand-out, as a
  /// single run reports them; empty and 0 in rounds.
  std::vector<double> device_busy;
  double compile_busy = 0.0;
  double latency_ms = 0.0;  ///< sum of count x best time; NaN when a task has no best
  /// With compare_vendor, when every task is a built-in one with a vendor
  /// kernel: sum of count x the best vendor kernel's time, and of count x the
  /// tuned kernel's time measured alternately with it (their ratio is the
  /// model's tuned / vendor speed); nullopt otherwise.
  std::optional<double> vendor_latency_ms;
  std::optional<double> tuned_latency_interleaved_ms;
  end_reason reason = end_reason::budget;

  nlohmann::json to_json() const;
  std::string to_text() const;
};

/// Tunes a model's tasks in rounds, one task per round as the scheduler
/// picks. Throws input_error for bad options (a target set in
/// options.session, round_trials 0, bad scheduler settings) and what a
/// task's session throws.
model_report tune_model(const model& m, model_options options);

}  // namespace tune
