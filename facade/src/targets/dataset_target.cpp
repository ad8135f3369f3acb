// A measured dataset (Kernel Tuner cache, T4 results, KTT output) replayed on
// replay devices with a simulated clock; nodes replay it too, from its bytes.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "targets/target.hpp"
#include "tune/engine/readers.hpp"
#include "tune/kernels/replay.hpp"

namespace tune::detail {
namespace {

class dataset_target final : public target {
 public:
  std::string field() const override { return "dataset"; }
  std::string default_backend(const session_options&) const override { return "replay"; }
  std::uint64_t default_budget() const override { return 500; }
  double time_scale(const session_options& o) const override { return o.time_scale; }
  /// A replay answers with the recorded numbers: nothing to confirm.
  bool remeasures() const override { return false; }

  backend_ptr make_backend(const session_options& o, const storage::topology& topo,
                           const std::string& backend_kind) const override {
    if (backend_kind != "replay")
      wrong_backend(topo, backend_kind, "a dataset replays recorded measurements and needs 'backend: replay' devices");
    kind_overrides overrides;
    if (!o.kinds_file.empty()) overrides = read_kind_overrides(o.kinds_file);
    replay_backend_options ro;
    ro.time_scale = o.time_scale;
    ro.seed = o.seed.value_or(0);
    return make_replay_backend(std::make_shared<const replay_dataset>(read_replay_dataset(o.dataset, overrides)), ro);
  }

  bool runs_on_nodes() const override { return true; }

  node_job for_nodes(const session_options& o, const storage::topology& topo) const override {
    // A node needs no file of the coordinator: the dataset travels as bytes.
    node_job job;
    std::ifstream in(o.dataset, std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    if (!in) throw input_error("dataset " + o.dataset + ": cannot read the file to send it to the nodes");
    job.payload = bytes.str();
    job.task.kind = actors::node_task::kind_t::replay;
    job.task.dataset_name = std::filesystem::path(o.dataset).filename().string();
    if (!o.kinds_file.empty())
      for (const auto& [parameter, kind] : read_kind_overrides(o.kinds_file)) job.task.kinds[parameter] = kind;
    job.task.seed = o.seed.value_or(0);
    job.task.time_scale = o.time_scale;
    job.task.timeouts = topo.timeouts;
    return job;
  }
};

}  // namespace

std::unique_ptr<target> make_dataset_target() { return std::make_unique<dataset_target>(); }

}  // namespace tune::detail
