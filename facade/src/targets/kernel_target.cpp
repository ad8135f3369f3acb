// A user kernel: its launch description (launch.json, or the folder holding
// it), source and space, on cpu, cuda or hip devices (docs/kernels.md).
#include <filesystem>

#include "targets/target.hpp"
#include "tune/kernels/user_kernel.hpp"

namespace tune::detail {
namespace {

std::string launch_file(const std::string& kernel) {
  std::error_code ec;
  if (std::filesystem::is_directory(kernel, ec)) return (std::filesystem::path(kernel) / "launch.json").string();
  return kernel;
}

class kernel_target final : public target {
 public:
  std::string field() const override { return "kernel"; }
  std::uint64_t default_budget() const override { return 150; }

  backend_ptr make_backend(const session_options& o, const storage::topology& topo,
                           const std::string& backend_kind) const override {
    if (backend_kind == "replay" || backend_kind == "objective")
      wrong_backend(topo, backend_kind, "kernel " + o.kernel + " measures real kernels: use cpu, cuda or hip devices");
    task_backend_options ko;
    ko.first_core = 0;
    ko.threads = o.threads;
    ko.measurement = measurement_on(o, topo, backend_kind);
    return make_user_kernel_backend(launch_file(o.kernel), backend_kind, ko);
  }

  std::optional<measurement_protocol> protocol(const session_options& o, const storage::topology& topo) const override {
    return measurement_of(o, topo);
  }
};

}  // namespace

std::unique_ptr<target> make_kernel_target() { return std::make_unique<kernel_target>(); }

}  // namespace tune::detail
