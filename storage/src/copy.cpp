#include "tune/storage/copy.hpp"

#include <map>

namespace tune::storage {

copy_report copy_runs(const results_db& from, results_db& to,
                      const std::function<void(std::size_t done, std::size_t total)>& progress) {
  copy_report report;
  auto runs = from.runs();  // by id
  report.runs = static_cast<std::int64_t>(runs.size());
  std::map<std::int64_t, std::int64_t> copied;  // run id in `from` -> in `to`
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& run = runs[i];
    auto trials = from.trials(run.id);
    for (auto& trial : trials)
      if (trial.reused_from_run) {
        auto it = copied.find(*trial.reused_from_run);
        if (it != copied.end())
          trial.reused_from_run = it->second;
        else
          trial.reused_from_run.reset();  // a run the source no longer holds
      }
    auto outcome = to.import_run(run, trials, from.confirmations(run.id));
    copied[run.id] = outcome.run_id;
    report.trials_added += outcome.trials_added;
    if (outcome.added)
      ++report.runs_added;
    else if (outcome.trials_added > 0)
      ++report.runs_updated;
    else
      ++report.runs_unchanged;
    if (progress) progress(i + 1, runs.size());
  }
  return report;
}

}  // namespace tune::storage
