#pragma once
// From the pipeline's types to the facade's (trial_info, run_report) and to
// the results database's (trial_record), and back for a resumed run; and what
// a session and a model run both need (option names, a drawn seed).

#include <string>

#include "tune/actors/interfaces.hpp"
#include "tune/kernels/machine.hpp"
#include "tune/kernels/vendor_reference.hpp"
#include "tune/storage/results_db.hpp"
#include "tune/storage/topology.hpp"
#include "tune/tune.hpp"

namespace tune::detail {

/// How messages name the options field `field`: its entry in `names` (an
/// options struct's option_names), else the field's own name.
std::string option_name(const std::map<std::string, std::string>& names, const std::string& field);
inline std::string option_name(const session_options& options, const std::string& field) {
  return option_name(options.option_names, field);
}

/// A seed for a run that was given none: 64 bits from the system's entropy.
std::uint64_t drawn_seed();

/// The topology's name of a device id ("" when none, e.g. a reused trial).
std::string device_name(const storage::topology& topo, std::int32_t device);

/// The pipeline's trial as callbacks see it (seq left at 0: the caller numbers it).
trial_info to_trial_info(const actors::measured_trial& trial, bool new_best, const search_space& space,
                         const storage::topology& topo);

/// The pipeline's trial as the results database records it (run_id, seq and
/// finished_at left for the recorder).
storage::trial_record to_record(const actors::measured_trial& trial, const search_space& space,
                                const storage::topology& topo);

/// A recorded trial of the run being resumed, for the pipeline; throws
/// input_error naming the database, the run and the trial when its
/// configuration does not fit the space.
actors::measured_trial to_measured(const storage::trial_record& row, const search_space& space,
                                   const storage::topology& topo, const std::string& db_path, std::int64_t run_id,
                                   const session_options& options);

/// The `keep` fastest trials of distinct configurations measured in full
/// (ok, not stopped early), fastest first.
class fastest_trials {
 public:
  explicit fastest_trials(std::size_t keep) : keep_(keep) {}
  void offer(const trial_info& t);
  const std::vector<trial_info>& kept() const { return kept_; }

 private:
  std::size_t keep_;
  std::vector<trial_info> kept_;
};

/// Builds the trials again (the compile cache answers) and measures them
/// against each other in `rounds` interleaved rounds on `device`
/// (backend::run_interleaved): the entries by the `statistic` of their
/// rounds, the winner first. Empty, with `note` saying why, when none could
/// be built or a round failed.
std::vector<run_report::confirmation_entry> confirm_fastest(backend& be, const std::vector<trial_info>& fastest,
                                                            int device, std::uint32_t rounds,
                                                            const tune::timeouts& limits, time_statistic statistic,
                                                            std::string& note);

/// {"governor", "boost", "max_khz"}, each null when the machine does not say.
nlohmann::json frequency_json(const cpu_frequency_state& state);

/// The note for run_report::machine_note: what changed in `now` since the
/// last run of `task_key` on `device_kind` recorded in `db_path` (its
/// options.measurement.machine); empty when nothing did, when either side is
/// unknown, or when the file cannot be read (the run's recorder says why).
std::string machine_change_note(const std::string& db_path, const std::string& task_key, const std::string& device_kind,
                                const cpu_frequency_state& now);

/// Everything but run_id, resumed, task_key, strategy, seed and throughput.
run_report make_report(const actors::run_summary& summary, const search_space& space, const storage::topology& topo);

/// {"task", "flops", "gflops"} of the best time for a built-in task, plus when
/// asked "threads", "rounds", "vendors" (vendor_json), "best_vendor",
/// "tuned_gflops" (the best configuration's median while it was timed
/// alternately with the vendors), or "vendor_note" when there is no
/// comparison (`be` is not a CPU backend, the best configuration does not
/// build); null without a best time. `be` builds the best configuration (the
/// compile cache answers at once) for compare_with_vendors.
nlohmann::json task_throughput(const std::string& task, const run_report& report, bool compare_vendor, int threads,
                               backend* be = nullptr);

/// The comparison as JSON: [{"library", "variant", "available", and "gflops"
/// (the vendor's median), "tuned_gflops", "ratio" (the median of the rounds'
/// tuned / vendor speed ratios), "ratio_min", "ratio_max", "rounds",
/// "round_ratios", "detail", or "note"}]; `best` becomes the same fields of
/// vendor_comparison::best(), or null when none is available.
nlohmann::json vendor_json(const vendor_comparison& comparison, nlohmann::json& best);

}  // namespace tune::detail
