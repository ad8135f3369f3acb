#pragma once
// The facade's side of program-edit evolution: the backend and strategy of a
// workload (absent without LLVM 14: input_error) and the front of a run.

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tune/engine/strategy.hpp"
#include "tune/kernels/task.hpp"
#include "tune/storage/topology.hpp"
#include "tune/tune.hpp"

namespace tune::detail {

/// Throws input_error for an unknown workload or a build without LLVM 14. A
/// matmul workload starts from the best configuration of its task (the CPU
/// template's task key, any device) in the results database `db_path` when
/// that file exists and holds one, else from the built-in default.
backend_ptr make_evolution_backend(const std::string& workload, const task_backend_options& options,
                                   const std::string& db_path = {});

/// The protocol evolution measures variants by: `p` with at least 5 runs and
/// 0.25 s, counted by the fastest run (a program's run is noisier than a
/// kernel's 50 ms). Throws input_error for flush_cache, naming `field`.
measurement_protocol evolution_protocol(measurement_protocol p, const std::string& field);

/// evolution_protocol() of what a run of `o` on `topo` measures by:
/// session_options::measurement, else the topology's `measurement:`, else
/// the defaults; a refusal names where the protocol came from.
measurement_protocol evolution_protocol_of(const session_options& o, const storage::topology& topo);

/// What evolution's program backend is made with: core 0, `threads`, `protocol`.
task_backend_options evolution_backend_options(int threads, const measurement_protocol& protocol);

/// What a run records of its workload beyond the task key: {"workload",
/// "base": {"configuration", "origin"}} (base only for matmul); null when the
/// backend is not a program backend.
nlohmann::json evolution_record(const backend_ptr& backend);

/// gevo over the backend's program (made by make_evolution_backend).
std::unique_ptr<strategy> make_evolution_strategy(const backend_ptr& backend, const strategy_options& options);

/// Runs each front member and the original once on the validation and test
/// splits (program_backend::held_out) and fills in their errors there; NaN
/// where the workload has no splits (matmul) or the variant fails there.
void add_held_out_errors(const backend_ptr& backend, std::vector<trial_info>& front,
                         std::optional<trial_info>& original);

/// Measures the report's original again, `rounds` times in full on the
/// first device, into report.original_remeasured_ms (the median; NaN when
/// rounds is 0, there is no original or backend, or it does not build or a
/// round fails).
void remeasure_original(run_report& report, const backend_ptr& backend, std::uint32_t rounds);

/// Fills in the report's edit-list checks (the program backend's counts) and
/// its time to solution (from report.evolved against
/// report.original_reference_ms(), so after remeasure_original).
void add_search_counts(run_report& report, const backend_ptr& backend);

/// The trials no other dominates on their objectives, fastest first; of
/// trials with equal objectives (one program) the one with the fewest edits.
std::vector<trial_info> front_of(const std::vector<trial_info>& trials);

}  // namespace tune::detail
