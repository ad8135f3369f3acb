// The run's fastest trials measured again against each other (session
// confirmation, report_detail.hpp).
#include <algorithm>

#include "report_detail.hpp"
#include "tune/engine/limits.hpp"

namespace tune::detail {

void fastest_trials::offer(const trial_info& t) {
  if (!t.ok() || t.stopped_early || keep_ == 0) return;
  auto same =
      std::find_if(kept_.begin(), kept_.end(), [&](const trial_info& k) { return k.config_json == t.config_json; });
  if (same != kept_.end()) {
    if (t.time_ms >= same->time_ms) return;
    kept_.erase(same);
  }
  if (kept_.size() == keep_ && t.time_ms >= kept_.back().time_ms) return;
  auto at = std::upper_bound(kept_.begin(), kept_.end(), t.time_ms,
                             [](double time, const trial_info& k) { return time < k.time_ms; });
  kept_.insert(at, t);
  if (kept_.size() > keep_) kept_.pop_back();
}

std::vector<run_report::confirmation_entry> confirm_fastest(backend& be, const std::vector<trial_info>& fastest,
                                                            int device, std::uint32_t rounds,
                                                            const tune::timeouts& limits, time_statistic statistic,
                                                            std::string& note) {
  std::vector<std::pair<configuration, build_result>> entries;
  std::vector<const trial_info*> built;
  for (const auto& t : fastest) {
    auto b = be.build(t.config, limits.compile_s);  // built during the run: the compile cache answers
    if (b.state != status::ok) continue;
    entries.emplace_back(t.config, std::move(b));
    built.push_back(&t);
  }
  if (entries.empty() || rounds == 0) {
    note = entries.empty() ? "none of the fastest trials could be built again" : "no rounds";
    return {};
  }
  auto times = be.run_interleaved(entries, device, static_cast<int>(rounds), limits.run_s);
  if (!times.ok()) {
    note = "a confirmation round failed (" + times.message + "); the search's best is reported";
    return {};
  }
  std::vector<run_report::confirmation_entry> out;
  for (std::size_t e = 0; e < built.size(); ++e) {
    run_report::confirmation_entry entry;
    entry.seq = built[e]->seq;
    entry.search_ms = built[e]->time_ms;
    entry.rounds_ms = times.time_ms[e];
    entry.time_ms = tune::statistic_of(entry.rounds_ms, statistic);
    out.push_back(std::move(entry));
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.time_ms < b.time_ms; });
  return out;
}

}  // namespace tune::detail
