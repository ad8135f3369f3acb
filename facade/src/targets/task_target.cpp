// A built-in kernel ("matmul:…", "bmm:…", "conv2d:…") on cpu, cuda or hip
// devices; nodes build and measure it too.
#include "report_detail.hpp"
#include "targets/target.hpp"
#include "tune/kernels/task.hpp"

namespace tune::detail {
namespace {

class task_target final : public target {
 public:
  std::string field() const override { return "task"; }
  std::uint64_t default_budget() const override { return 150; }

  backend_ptr make_backend(const session_options& o, const storage::topology& topo,
                           const std::string& backend_kind) const override {
    if (backend_kind == "replay" || backend_kind == "objective")
      wrong_backend(topo, backend_kind,
                    "task " + o.task + " measures real kernels: use cpu, cuda or hip devices, or replay a dataset");
    task_backend_options ko;
    ko.first_core = 0;
    ko.threads = o.threads;
    ko.measurement = measurement_on(o, topo, backend_kind);
    return make_task_backend(o.task, backend_kind, ko);
  }

  std::optional<measurement_protocol> protocol(const session_options& o, const storage::topology& topo) const override {
    return measurement_of(o, topo);
  }

  bool runs_on_nodes() const override { return true; }

  node_job for_nodes(const session_options& o, const storage::topology& topo) const override {
    // Each node builds its own backend (and reference data) from the task
    // string and compiles what it measures.
    node_job job;
    job.task.kind = actors::node_task::kind_t::task;
    job.task.task = o.task;
    job.task.threads = o.threads;
    job.task.seed = o.seed.value_or(0);
    job.task.timeouts = topo.timeouts;
    job.task.measurement = measurement_of(o, topo);
    job.nodes_build = true;
    return job;
  }

  void report(run_report& report, const session_options& o, const backend_ptr& be,
              std::vector<trial_info>) const override {
    report.throughput = task_throughput(o.task, report, o.compare_vendor, o.threads, be.get());
  }
};

}  // namespace

std::unique_ptr<target> make_task_target() { return std::make_unique<task_target>(); }

}  // namespace tune::detail
