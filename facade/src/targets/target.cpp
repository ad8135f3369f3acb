// The targets' common parts and the choice of one (target.hpp).
#include "targets/target.hpp"

#include <stdexcept>

#include "report_detail.hpp"
#include "tune/engine/text.hpp"

namespace tune::detail {

std::string target::default_backend(const session_options& o) const {
  return o.backend_name.empty() ? "cpu" : o.backend_name;
}

storage::topology target::default_topology(const session_options& o, const std::string& backend) const {
  auto topo = storage::default_topology(backend);
  if (backend == "cpu") {
    // A CPU device measures on its own cores: compiling must not land there.
    auto cores = storage::default_compile_workers();
    auto measuring = static_cast<std::size_t>(o.threads);
    topo.compile_workers = cores > measuring ? cores - measuring : 1;
  }
  return topo;
}

std::string target::strategy_name(const session_options& o) const {
  return o.strategy.empty() ? default_strategy_name() : o.strategy;
}

std::unique_ptr<strategy> target::make_strategy(const std::string& name, const backend_ptr& backend,
                                                strategy_options so) const {
  try {
    return tune::make_strategy(name, backend->space(), std::move(so));
  } catch (const std::invalid_argument& e) {
    throw input_error(std::string("strategy: ") + e.what());
  }
}

node_job target::for_nodes(const session_options& o, const storage::topology& topo) const {
  throw input_error(topo.origin + ": nodes: nodes tune built-in tasks (" + option_name(o, "task") +
                    ") and replayed datasets (" + option_name(o, "dataset") + ") only; a " + field() +
                    " runs on this machine: remove 'nodes:'");
}

std::optional<storage::topology> given_topology(const session_options& o) {
  if (!o.topology_file.empty() && o.topology)
    throw input_error(option_name(o, "topology_file") + " " + o.topology_file +
                      " and a topology value: give one of them");
  if (o.topology_file.empty()) return o.topology;
  try {
    return storage::load_topology(o.topology_file);
  } catch (const std::invalid_argument& e) {
    throw input_error(e.what());
  }
}

measurement_protocol measurement_of(const session_options& o, const storage::topology& topo) {
  if (o.measurement) return *o.measurement;
  if (topo.measurement) return *topo.measurement;
  return {};
}

measurement_protocol measurement_on(const session_options& o, const storage::topology& topo,
                                    const std::string& backend_kind) {
  auto p = measurement_of(o, topo);
  if (p.flush_cache && backend_kind != "cpu")
    throw input_error(std::string(o.measurement ? "session_options::measurement" : topo.origin + ": measurement") +
                      ".flush_cache: only CPU kernels have their caches flushed between runs, and this run's devices "
                      "are " +
                      backend_kind + ": remove flush_cache");
  return p;
}

void wrong_backend(const storage::topology& topo, const std::string& backend_kind, const std::string& what_needs) {
  throw input_error(topo.origin + ": devices[0].backend is '" + backend_kind + "'; " + what_needs);
}

std::vector<std::unique_ptr<target>> all_targets() {
  std::vector<std::unique_ptr<target>> out;
  out.push_back(make_task_target());
  out.push_back(make_dataset_target());
  out.push_back(make_kernel_target());
  out.push_back(make_objective_target());
  out.push_back(make_custom_backend_target());
  out.push_back(make_workload_target());
  return out;
}

std::unique_ptr<target> make_target(const session_options& o) {
  std::vector<std::unique_ptr<target>> given;
  if (!o.task.empty()) given.push_back(make_task_target());
  if (!o.dataset.empty()) given.push_back(make_dataset_target());
  if (!o.kernel.empty()) given.push_back(make_kernel_target());
  if (o.objective) given.push_back(make_objective_target());
  if (o.custom_backend) given.push_back(make_custom_backend_target());
  if (!o.workload.empty()) given.push_back(make_workload_target());
  std::vector<std::string> names;
  // A front end that names its options offers only the targets it names.
  for (const auto& t : all_targets())
    if (o.option_names.empty() || o.option_names.count(t->field())) names.push_back(option_name(o, t->field()));
  if (given.empty() && !o.space_file.empty())
    throw input_error(option_name(o, "space_file") + " " + o.space_file +
                      ": a search space alone has no kernel to build and measure; tune a built-in kernel with " +
                      option_name(o, "task") + ", a user kernel with " + option_name(o, "kernel") +
                      " or replay measurements with " + option_name(o, "dataset") +
                      " (an objective over a space is tuned through the library: tune::session, the C API or the "
                      "Python module)");
  if (given.empty()) throw input_error("nothing to tune: give one of " + join(names));
  if (given.size() > 1) {
    std::vector<std::string> both;
    for (const auto& t : given) both.push_back(option_name(o, t->field()));
    throw input_error("give exactly one of " + join(names) + " (given: " + join(both) + ")");
  }
  if ((o.space || !o.space_file.empty()) && !o.objective)
    throw input_error(option_name(o, "space") + " / " + option_name(o, "space_file") +
                      ": only an objective searches a space given on its own; a " +
                      option_name(o, given.front()->field()) + " brings its own space");
  if (o.space && !o.space_file.empty())
    throw input_error(option_name(o, "space") + " and " + option_name(o, "space_file") + ": give one of them");
  return std::move(given.front());
}

}  // namespace tune::detail

namespace tune {

std::uint64_t default_budget(std::string_view name) {
  for (const auto& t : detail::all_targets())
    if (t->field() == name) return t->default_budget();
  throw std::invalid_argument("default_budget: '" + std::string(name) +
                              "' is not a target (task, dataset, kernel, objective, custom_backend, workload)");
}

}  // namespace tune
