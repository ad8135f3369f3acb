#pragma once
// From the pipeline's types to the facade's: trial_info and run_report.

#include <string>

#include "tune/actors/interfaces.hpp"
#include "tune/storage/topology.hpp"
#include "tune/tune.hpp"

namespace tune::detail {

/// The topology's name of a device id ("" when none, e.g. a reused trial).
std::string device_name(const storage::topology& topo, std::int32_t device);

trial_info to_trial_info(const actors::measured_trial& trial, bool new_best, const search_space& space,
                         const storage::topology& topo);

/// Everything but run_id, resumed, task_key, strategy, seed and throughput.
run_report make_report(const actors::run_summary& summary, const search_space& space, const storage::topology& topo);

/// {"flops", "gflops"} of the best time for a built-in task, plus
/// {"blas": {"library", "gflops", "threads", "ratio"}} when asked and possible
/// (a "note" says why not otherwise); null without a best time.
nlohmann::json task_throughput(const std::string& task, const run_report& report, bool compare_blas, int threads);

}  // namespace tune::detail
