// Program-edit evolution (GEVO-ML, docs/gevo.md): a workload's LLVM IR
// evolved by gevo on cpu devices, objectives {run time, error}; the report
// carries the Pareto front.
#include "evolve_detail.hpp"
#include "targets/target.hpp"

namespace tune::detail {
namespace {

class workload_target final : public target {
 public:
  std::string field() const override { return "workload"; }
  std::uint64_t default_budget() const override { return 300; }
  bool uses_prior() const override { return false; }
  /// Two objectives: the front is the result, not one fastest variant.
  bool remeasures() const override { return false; }
  bool keeps_variants() const override { return true; }

  backend_ptr make_backend(const session_options& o, const storage::topology& topo,
                           const std::string& backend_kind) const override {
    if (backend_kind != "cpu")
      wrong_backend(topo, backend_kind, "program-edit evolution runs its workloads on cpu devices");
    return make_evolution_backend(o.workload, evolution_backend_options(o.threads, *protocol(o, topo)), o.db_path);
  }

  /// Steadier timing than a kernel's 50 ms: each variant runs at least 5
  /// times and 0.25 s, and counts by its fastest run (docs/gevo.md).
  std::optional<measurement_protocol> protocol(const session_options& o, const storage::topology& topo) const override {
    return evolution_protocol_of(o, topo);
  }

  std::string strategy_name(const session_options& o) const override {
    if (!o.strategy.empty() && o.strategy != "gevo")
      throw input_error("strategy " + o.strategy + ": a workload is evolved by gevo; leave strategy empty");
    return "gevo";
  }

  std::unique_ptr<strategy> make_strategy(const std::string&, const backend_ptr& backend,
                                          strategy_options so) const override {
    return make_evolution_strategy(backend, so);
  }

  void record(nlohmann::json& options_json, const backend_ptr& backend) const override {
    options_json["evolution"] = evolution_record(backend);
  }

  void report(run_report& report, const session_options& o, const backend_ptr& backend,
              std::vector<trial_info> variants) const override {
    report.front = front_of(variants);
    for (const auto& t : variants)
      if (t.config.empty()) report.original = t;
    // After the search: the splits it never saw, for the front and the original.
    add_held_out_errors(backend, report.front, report.original);
    report.evolved = std::move(variants);
    // The original's one recorded measurement again, for the speed-ups to count from.
    remeasure_original(report, backend, o.confirm.rounds);
    add_search_counts(report, backend);
    if (auto record = evolution_record(backend); record.is_object() && record.contains("base")) {
      report.base_configuration = record["base"].value("configuration", "");
      report.base_origin = record["base"].value("origin", "");
    }
  }
};

}  // namespace

std::unique_ptr<target> make_workload_target() { return std::make_unique<workload_target>(); }

}  // namespace tune::detail
