#include "tune/storage/copy.hpp"

#include <map>
#include <utility>
#include <vector>

namespace tune::storage {

copy_report copy_runs(const results_db& from, results_db& to,
                      const std::function<void(std::size_t done, std::size_t total)>& progress) {
  copy_report report;
  auto runs = from.runs();  // by id
  report.runs = static_cast<std::int64_t>(runs.size());
  std::map<std::int64_t, std::int64_t> copied;  // run id in `from` -> in `to`
  // Trials reused from a run not copied yet: (run here, seq, run id in `from`).
  struct pending_link {
    std::int64_t run, seq, reused;
  };
  std::vector<pending_link> pending;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& run = runs[i];
    auto trials = from.trials(run.id);
    std::vector<std::pair<std::int64_t, std::int64_t>> later;  // seq, run id in `from`
    for (auto& trial : trials)
      if (trial.reused_from_run) {
        auto it = copied.find(*trial.reused_from_run);
        if (it != copied.end()) {
          trial.reused_from_run = it->second;
        } else {
          later.emplace_back(trial.seq, *trial.reused_from_run);
          trial.reused_from_run.reset();  // linked once that run is copied
        }
      }
    auto outcome = to.import_run(run, trials, from.confirmations(run.id));
    copied[run.id] = outcome.run_id;
    for (const auto& [seq, reused] : later)
      if (seq >= static_cast<std::int64_t>(trials.size()) - outcome.trials_added)  // written now
        pending.push_back({outcome.run_id, seq, reused});
    report.trials_added += outcome.trials_added;
    if (outcome.diverged)
      ++report.runs_diverged;
    else if (outcome.added)
      ++report.runs_added;
    else if (outcome.trials_added > 0)
      ++report.runs_updated;
    else
      ++report.runs_unchanged;
    if (progress) progress(i + 1, runs.size());
  }
  std::map<std::int64_t, std::vector<std::pair<std::int64_t, std::int64_t>>> links;  // run here -> (seq, run here)
  for (const auto& link : pending)
    if (auto it = copied.find(link.reused); it != copied.end()) links[link.run].emplace_back(link.seq, it->second);
  for (const auto& [run, run_links] : links) to.set_reused_from(run, run_links);
  return report;
}

}  // namespace tune::storage
