#pragma once
// What a session tunes. Each kind of target is one type that says how it is
// built and run: the backend kind its devices need, its default topology and
// budget, its backend, its strategy, what a node needs to build it, and what
// it adds to the record and the report. The session (session.cpp) assembles
// them; a new kind of target is one new type here and one line in
// make_target().
//
//   task            built-in kernel on cpu, cuda or hip devices (nodes build it too)
//   dataset         measured dataset replayed on replay devices (nodes replay it too)
//   kernel          user kernel (launch.json) on cpu, cuda or hip devices
//   objective       a callable over a space, on an "objective" device
//   custom_backend  a user-written backend, on an "objective" device
//   workload        program-edit evolution (gevo) of a workload's LLVM IR on cpu

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tune/actors/nodes.hpp"
#include "tune/engine/strategy.hpp"
#include "tune/kernels/backend.hpp"
#include "tune/storage/topology.hpp"
#include "tune/tune.hpp"

namespace tune::detail {

/// What the nodes of a topology are sent (pipeline_options::node_task, …).
struct node_job {
  actors::node_task task;
  std::string payload;       ///< bytes a node needs (a replayed dataset's file)
  bool nodes_build = false;  ///< the nodes build what they measure (real kernels)
};

class target {
 public:
  virtual ~target() = default;

  /// The session_options field that gives it ("task", "dataset", …).
  virtual std::string field() const = 0;
  /// The backend its devices use when no topology says: "cpu", "replay",
  /// "objective" (a callable: any device is one).
  virtual std::string default_backend(const session_options& o) const;
  /// The topology when none is given: one device of `backend` and compile
  /// workers on the other cores.
  virtual storage::topology default_topology(const session_options& o, const std::string& backend) const;
  /// Trials when session_options::budget.trials is 0.
  virtual std::uint64_t default_budget() const = 0;
  /// Checks the topology's backend kind (throws input_error naming its file
  /// and the fix) and builds the backend.
  virtual backend_ptr make_backend(const session_options& o, const storage::topology& topo,
                                   const std::string& backend_kind) const = 0;
  /// The strategy's name and the strategy (default: the one asked for, or the default).
  virtual std::string strategy_name(const session_options& o) const;
  virtual std::unique_ptr<strategy> make_strategy(const std::string& name, const backend_ptr& backend,
                                                  strategy_options so) const;
  /// True when a prior (session_options::priors, auto_prior) applies.
  virtual bool uses_prior() const { return true; }
  /// True when measuring a configuration again is worth it: its measurements
  /// are times that vary, of one objective. Then the devices are probed for
  /// drift during the run (session_options::drift) and the run's fastest
  /// trials are measured again against each other at the end
  /// (session_options::confirm).
  virtual bool remeasures() const { return true; }
  /// How it times a configuration, when it times kernels itself (task,
  /// kernel, workload): recorded with the run. Empty otherwise.
  virtual std::optional<measurement_protocol> protocol(const session_options& /*o*/,
                                                       const storage::topology& /*topo*/) const {
    return std::nullopt;
  }
  /// Wall seconds per backend second of its devices.
  virtual double time_scale(const session_options&) const { return 1.0; }
  /// True when nodes (topology 'nodes:') can build or replay it.
  virtual bool runs_on_nodes() const { return false; }
  /// What nodes are sent; throws input_error (naming the topology's file and
  /// the fix) when the target runs on this machine only.
  virtual node_job for_nodes(const session_options& o, const storage::topology& topo) const;
  /// What the run records of it beyond the task key (added to the run's options).
  virtual void record(nlohmann::json& /*options_json*/, const backend_ptr& /*backend*/) const {}
  /// Keeps every ok trial with two objectives for the report (evolution).
  virtual bool keeps_variants() const { return false; }
  /// Fills what the report says of this kind of target (throughput, front…);
  /// `variants`: the kept trials (keeps_variants()).
  virtual void report(run_report& /*report*/, const session_options& /*o*/, const backend_ptr& /*backend*/,
                      std::vector<trial_info> /*variants*/) const {}
};

/// The target the options give: exactly one. Throws input_error naming them.
std::unique_ptr<target> make_target(const session_options& o);

/// One target of each kind (their field names and defaults, for
/// default_budget()).
std::vector<std::unique_ptr<target>> all_targets();

// Each kind, in its own source file.
std::unique_ptr<target> make_task_target();
std::unique_ptr<target> make_dataset_target();
std::unique_ptr<target> make_kernel_target();
std::unique_ptr<target> make_objective_target();
std::unique_ptr<target> make_custom_backend_target();
std::unique_ptr<target> make_workload_target();

/// The topology the options give: topology_file read, or the topology value;
/// none when neither is given. Throws input_error for both, or for a file
/// that cannot be read or is invalid (its message).
std::optional<storage::topology> given_topology(const session_options& o);

/// session_options::measurement, else the topology file's, else the defaults.
measurement_protocol measurement_of(const session_options& o, const storage::topology& topo);
/// measurement_of() for kernels measured on `backend_kind` devices: refuses
/// flush_cache on any but the CPU (the GPU backends do not flush their caches).
measurement_protocol measurement_on(const session_options& o, const storage::topology& topo,
                                    const std::string& backend_kind);

/// The topology's message when its devices cannot run `what`.
[[noreturn]] void wrong_backend(const storage::topology& topo, const std::string& backend_kind,
                                const std::string& what_needs);

}  // namespace tune::detail
