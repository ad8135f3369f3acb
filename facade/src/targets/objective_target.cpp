// A callable over a space (objective + space or space_file), and a
// user-written backend (custom_backend): both run on "objective" devices, in
// this process, one trial at a time.
#include "objective_backend.hpp"
#include "targets/target.hpp"
#include "tune/engine/readers.hpp"

namespace tune::detail {
namespace {

/// What both have in common: any device kind runs them (the default topology
/// has one "objective" device and one compile worker).
class in_process_target : public target {
 public:
  std::string default_backend(const session_options&) const override { return "objective"; }
  std::uint64_t default_budget() const override { return 100; }

  storage::topology default_topology(const session_options&, const std::string&) const override {
    storage::topology topo;
    topo.origin = "<default objective topology>";
    topo.compile_workers = 1;
    topo.devices.push_back({"objective", 0, "objective0", 1});
    return topo;
  }
};

class objective_target final : public in_process_target {
 public:
  std::string field() const override { return "objective"; }
  /// The function's value is the user's number, not necessarily a time, and
  /// every call is theirs to count: `budget` trials are `budget` calls. A
  /// function that times something repeats inside itself.
  bool remeasures() const override { return false; }

  backend_ptr make_backend(const session_options& o, const storage::topology&, const std::string&) const override {
    search_space_ptr space = o.space;
    if (!space && !o.space_file.empty()) space = std::make_shared<const search_space>(read_space_file(o.space_file));
    return make_objective_backend(o.objective, space, o.task_name);
  }
};

class custom_backend_target final : public in_process_target {
 public:
  std::string field() const override { return "custom_backend"; }

  backend_ptr make_backend(const session_options& o, const storage::topology&, const std::string&) const override {
    return o.custom_backend;
  }
};

}  // namespace

std::unique_ptr<target> make_objective_target() { return std::make_unique<objective_target>(); }
std::unique_ptr<target> make_custom_backend_target() { return std::make_unique<custom_backend_target>(); }

}  // namespace tune::detail
