#pragma once
// tune-engine db copy: every run of one results store written into another,
// SQLite to PostgreSQL and back (a laptop's runs to the team's store, the
// team's to a laptop). Copying again brings earlier copies up to date and
// adds nothing twice (results_db::import_run).

#include <cstddef>
#include <cstdint>
#include <functional>

#include "tune/storage/results_db.hpp"

namespace tune::storage {

struct copy_report {
  std::int64_t runs = 0;            ///< runs of the source
  std::int64_t runs_added = 0;      ///< new in the destination
  std::int64_t runs_updated = 0;    ///< an earlier copy given the trials it lacked
  std::int64_t runs_unchanged = 0;  ///< an earlier copy that lacked no trial
  std::int64_t runs_diverged = 0;   ///< an earlier copy that went on in the destination: left as it is
  std::int64_t trials_added = 0;
};

/// Copies every run of `from` into `to`, each in its own transaction, in the
/// order of their ids; then links each trial reused from another run to that
/// run's copy (a resumed run may reuse a measurement of a run started after
/// it). `progress(done, total)` is called after each run.
copy_report copy_runs(const results_db& from, results_db& to,
                      const std::function<void(std::size_t done, std::size_t total)>& progress = {});

}  // namespace tune::storage
