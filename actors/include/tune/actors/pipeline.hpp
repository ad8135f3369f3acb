#pragma once
// Runs one tuning session through the actor pipeline (see interfaces.hpp):
// a generator over the strategy, a compile pool of N workers, one measurer
// per device and a population that keeps them busy until the budget is spent.

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "tune/actors/interfaces.hpp"
#include "tune/actors/nodes.hpp"

namespace tune::actors {

struct device_slot {
  int device = 0;
  /// Compiled candidates queued at the device besides the one running.
  std::uint32_t prefetch = 2;
};

/// A node of the run (`tune-engine node`), see nodes.hpp.
struct remote_node {
  std::string host;
  std::uint16_t port = 0;
  std::uint32_t devices = 0;  ///< the node's first N devices; 0: all it offers
  /// Which of the node's devices (indices into what it offers, or names);
  /// empty: `devices` decides.
  std::vector<std::string> device_names;
  std::vector<std::uint32_t> device_indices;
  std::uint32_t prefetch = 2;
  /// Share of the node's devices when several measurers have room (1: equal).
  double weight = 1.0;
};

/// A device of a node as the run records it.
struct remote_device {
  std::int32_t id = 0;  ///< after the local devices' ids
  std::string name;     ///< "host:port/name on the node"
};

struct pipeline_options {
  std::uint32_t compile_workers = 1;
  /// Local devices measuring on CPU cores (backend::measuring_cores): the
  /// compile workers build on the other cores of the process's CPU set (when
  /// there are any), and with this one more background worker per measuring
  /// core builds on that core at idle priority while its device waits
  /// (compile_pool_options::background_cores).
  bool background_builds = true;
  std::vector<device_slot> devices{device_slot{}};
  stage_timing timing;
  tune::budget budget;
  /// How each device's runs are cut short against the best time of the run
  /// (the measurers', and the nodes' through node_task).
  early_stop_policy early_stop;
  /// When each local device probes its own drift (nodes' devices do not).
  drift_policy drift;
  /// When a would-be new best of a local device is measured against the
  /// device's best before it becomes the best (nodes' devices do not).
  duel_policy duel;
  pipeline_mode mode = pipeline_mode::steady;
  std::uint32_t batch = 8;            ///< generational mode: candidates per generation
  std::vector<measured_trial> prior;  ///< recorded trials to resume from, in recorded order
  bool progress_line = false;
  std::shared_ptr<trial_listener> listener;
  trial_cache cache;  ///< measurements of earlier runs to reuse; empty: none
  /// Asked after every trial and polled ten times a second; once it returns
  /// true nothing more is handed out and the run ends when the work in flight
  /// has drained.
  std::function<bool()> stop_requested;
  /// population_options::hand_out_limit: a run that is one round of a
  /// longer search hands out exactly its round, then ends stopped.
  std::uint64_t hand_out_limit = 0;
  /// CAF scheduler threads. One: the actors' handlers are short and the
  /// blocking work runs on detached workers and runners; a second thread
  /// made most messages wake a sleeping one (docs/pipeline.md).
  std::size_t scheduler_threads = 1;
  /// Wall seconds after which a generator that has not answered is reported
  /// on stderr; the run waits for it (population_options::demand_notice_s).
  double demand_notice_s = 30.0;
  /// Nodes whose measurers join the run; `devices` may then be empty. All
  /// must answer at the start (std::invalid_argument naming the node
  /// otherwise); one lost later is reconnected with backoff.
  std::vector<remote_node> nodes;
  network_options network;
  /// What a node builds its backend from (make_node_backend) and the bytes
  /// it needs (a replayed dataset's file): sent once per run; each node's
  /// devices are filled in for it.
  actors::node_task node_task;
  std::string node_payload;
  /// The nodes build what they measure (real kernels); false: the compile
  /// pool builds for them (replayed datasets).
  bool nodes_build = false;
  /// Called once the nodes answered, before the first candidate.
  std::function<void(const std::vector<remote_device>&)> on_remote_devices;
  /// Many tasks through this pipeline (tune/engine/multi_task.hpp): the
  /// backend a multi_task_backend, the strategy a multi_task_strategy, every
  /// configuration tagged with its task; each task has its own best
  /// (population_options::multi_task, measurer_options::multi_task). Nodes
  /// are sent a node_task of kind multi (std::invalid_argument otherwise).
  bool multi_task = false;
};

/// Candidates kept in flight in steady mode: every compile worker busy and
/// every device running one with its prefetch queue full (the same count as
/// topology::capacity()). The run adds one per background worker, which
/// depends on the backend's measuring cores.
std::uint32_t pipeline_capacity(const pipeline_options& options);

/// Runs the session to its end and returns its summary. Throws
/// std::invalid_argument for options that cannot work (no device, no worker)
/// and std::runtime_error when the pipeline itself breaks down.
run_summary run_pipeline(backend_ptr backend, std::unique_ptr<strategy> search, const pipeline_options& options);

}  // namespace tune::actors
