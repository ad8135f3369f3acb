// tune::session: options checked once, then one run through the actor
// pipeline with the run recorder (database, events) and the embedder's
// callbacks behind the population. What is tuned is a target (targets/):
// the session assembles the target's backend, topology and strategy with the
// options every target shares.
#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <utility>

#include "dashboard_detail.hpp"
#include "report_detail.hpp"
#include "sessions_together.hpp"
#include "targets/target.hpp"
#include "tune/actors/pipeline.hpp"
#include "tune/engine/multi_task.hpp"
#include "tune/engine/nearest_configuration.hpp"
#include "tune/engine/readers.hpp"
#include "tune/engine/strategy.hpp"
#include "tune/kernels/device_lease.hpp"
#include "tune/kernels/machine.hpp"
#include "tune/kernels/multi_task_backend.hpp"
#include "tune/kernels/replay.hpp"
#include "tune/storage/results_db.hpp"
#include "tune/storage/run_recorder.hpp"
#include "tune/tune.hpp"

namespace tune {
namespace {

/// All devices of one run share a backend; returns its name.
std::string topology_backend(const storage::topology& topo, const std::string& wanted) {
  if (topo.devices.empty()) return wanted;  // nodes only: they say what they offer
  const std::string& name = topo.devices.front().backend;
  for (std::size_t d = 1; d < topo.devices.size(); ++d)
    if (topo.devices[d].backend != name)
      throw input_error(topo.origin + ": devices[" + std::to_string(d) + "].backend is '" + topo.devices[d].backend +
                        "' but devices[0].backend is '" + name + "'; all devices of a run must use one backend");
  return name;
}

/// True when the file is an SQLite database (its 16-byte header).
bool is_sqlite_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char header[16] = {};
  in.read(header, sizeof header);
  return in.gcount() == 16 && std::string(header, 15) == "SQLite format 3";
}

/// A recorded configuration in `space`: as it is, or with `nearest` carried
/// to the nearest configuration there; nullopt when it does not fit.
std::optional<configuration> configuration_of(const std::string& config_json, const search_space& space, bool nearest) {
  try {
    return space.from_json(config_json);
  } catch (const std::exception&) {
  }
  if (!nearest) return std::nullopt;
  try {
    return nearest_configuration(space, values_from_json(config_json));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

/// The recorded trials of some runs of a results database as a dataset over
/// `space`: configurations that do not fit it are left out, or with
/// `nearest` (runs of another shape) carried to the nearest configuration
/// that does (nearest_configuration).
replay_dataset runs_as_dataset(const storage::results_db& db, const std::vector<storage::run_record>& runs,
                               const search_space_ptr& space, const std::string& origin, bool nearest = false) {
  replay_dataset d;
  d.origin = origin;
  d.format = "results_db";
  d.space = space;
  for (const auto& run : runs) {
    for (const auto& row : db.trials(run.id)) {
      auto config = configuration_of(row.config_json, *space, nearest);
      if (!config) continue;
      replay_record rec;
      rec.state = row.state;
      rec.time_ms = row.time_ms;
      d.configs.push_back(std::move(*config));
      d.records.push_back(std::move(rec));
    }
  }
  return d;
}

std::string describe_runs(const std::string& path, const std::vector<storage::run_record>& runs) {
  std::string out = path + ":";
  for (std::size_t i = 0; i < runs.size(); ++i)
    out += (i ? ", run " : " run ") + std::to_string(runs[i].id) + " (" + runs[i].device_kind + ")";
  return out;
}

}  // namespace

std::uint64_t detail::drawn_seed() {
  std::random_device device;
  return (static_cast<std::uint64_t>(device()) << 32) ^ device();
}

const std::vector<std::string>& session_option_fields() {
  static const std::vector<std::string> fields = {"topology_file",
                                                  "backend_name",
                                                  "lease_devices",
                                                  "device_wait",
                                                  "task",
                                                  "workload",
                                                  "dataset",
                                                  "kinds_file",
                                                  "time_scale",
                                                  "kernel",
                                                  "space_file",
                                                  "task_name",
                                                  "strategy",
                                                  "hyper",
                                                  "budget",
                                                  "time_budget",
                                                  "seed",
                                                  "priors",
                                                  "auto_prior",
                                                  "prior_tasks",
                                                  "start",
                                                  "mode",
                                                  "batch",
                                                  "db_path",
                                                  "resume",
                                                  "use_cache",
                                                  "publish_endpoint",
                                                  "publish_key",
                                                  "publish_wait",
                                                  "progress_line",
                                                  "dashboard_listen",
                                                  "dashboard_token",
                                                  "threads",
                                                  "compare_vendor",
                                                  "early_stop",
                                                  "confirm_top",
                                                  "confirm_rounds",
                                                  "duel_rounds",
                                                  "drift"};
  return fields;
}

struct session::impl {
  session_options options;
  std::unique_ptr<detail::target> what;
  bool seed_drawn = false;
  storage::topology topo;
  std::string backend_kind;  ///< the topology's devices' backend
  backend_ptr be;
  search_space_ptr space;
  std::string strategy_name;
  std::unique_ptr<strategy> search;
  strategy_options search_options;           ///< what `search` was made with (its prior included)
  std::unique_ptr<dashboard::server> board;  ///< dashboard_listen: bound now, served during run()
  bool ran = false;

  std::string name(const std::string& field) const { return detail::option_name(options, field); }

  void choose_seed_and_budget() {
    auto& o = options;
    if (!o.seed) {
      o.seed = detail::drawn_seed();
      seed_drawn = true;
    }
    if (o.budget.trials == 0) o.budget.trials = what->default_budget();
  }

  void check_numbers() const {
    const auto& o = options;
    if (!(o.budget.seconds >= 0)) throw input_error(name("time_budget") + ": must be >= 0 seconds (0: no time budget)");
    if (!(o.time_scale > 0))
      throw input_error(name("time_scale") +
                        ": must be > 0 (wall seconds per recorded second, e.g. 0.01 to replay 100x faster)");
    if (o.time_scale != 1.0 && what->field() != "dataset")
      throw input_error(name("time_scale") + " applies to a replayed " + name("dataset") + " only; leave it at 1 here");
    if (o.mode == run_mode::generational && o.batch == 0)
      throw input_error(name("batch") + ": generational mode needs at least 1 candidate per generation");
    if (o.threads < 1) throw input_error(name("threads") + ": must be at least 1");
    if (o.resume && o.db_path.empty())
      throw input_error(name("resume") + " needs " + name("db_path") +
                        ", the results database holding the run to continue");
    if (!o.kinds_file.empty() && what->field() != "dataset")
      throw input_error(name("kinds_file") + " " + o.kinds_file + ": applies to a replayed " + name("dataset") +
                        " only");
    if (!o.prior_tasks.empty() && o.db_path.empty())
      throw input_error(name("prior_tasks") + " reads the runs of other tasks in " + name("db_path") +
                        "; give the results database");
    if (o.compare_vendor && what->field() != "task")
      throw input_error(name("compare_vendor") + " compares a built-in " + name("task") +
                        " (matmul, bmm or conv2d) with oneDNN and OpenBLAS; there is no " + name("task") + " here");
  }

  void choose_topology() {
    const auto& o = options;
    std::string wanted = what->default_backend(o);
    if (auto given = detail::given_topology(o))
      topo = std::move(*given);
    else
      topo = what->default_topology(o, wanted);
    if (topo.devices.empty() && topo.nodes.empty())
      throw input_error(topo.origin + ": devices: empty; list at least one device");
    if (topo.compile_workers == 0) throw input_error(topo.origin + ": compile_workers: must be at least 1");
    if (!topo.nodes.empty() && !what->runs_on_nodes()) what->for_nodes(o, topo);  // throws why not
    // A callable runs on any device: its kind is only checked to be one kind.
    backend_kind = topology_backend(topo, wanted == "objective" ? "cpu" : wanted);
  }

  void make_backend() {
    be = what->make_backend(options, topo, backend_kind);
    space = be->space();
    if (!space) throw input_error("the backend has no search space");
  }

  std::vector<std::string> prior_sources;
  std::vector<std::string> prior_tasks_used;      // run_report::prior_tasks_used
  std::unique_ptr<storage::results_db> start_db;  // from open_existing_db() to the end of make_search()
  std::optional<int> db_migrated_from;
  std::size_t prior_configurations = 0;

  /// Datasets and earlier runs of the same task measured elsewhere, merged
  /// into one prior over this run's space.
  std::vector<trial_result> load_prior() {
    const auto& o = options;
    std::vector<replay_dataset> sources;
    for (const auto& path : o.priors) {
      const bool server = storage::is_postgres_target(path);
      if (!server && !std::filesystem::is_regular_file(path))
        throw input_error(name("priors") + " " + path +
                          ": no such file; give a measured dataset or a results database");
      if (!server && !is_sqlite_file(path)) {
        sources.push_back(read_replay_dataset(path));
        prior_sources.push_back(path);
        continue;
      }
      storage::results_db db(path, storage::results_db::open_mode::read_only);
      std::vector<storage::run_record> runs;
      for (const auto& run : db.runs())
        if (run.task_key == be->task_key()) runs.push_back(run);
      if (runs.empty())
        throw input_error(name("priors") + " " + path + ": the database holds no run of task " + be->task_key() +
                          "; a prior must come from the same task");
      sources.push_back(runs_as_dataset(db, runs, space, path));
      prior_sources.push_back(describe_runs(path, runs));
    }
    if (o.auto_prior && start_db) {
      auto& db = *start_db;
      std::vector<storage::run_record> runs;
      for (const auto& run : db.runs())
        if (run.task_key == be->task_key() && run.device_kind != be->device_kind()) runs.push_back(run);
      if (!runs.empty()) {
        auto d = runs_as_dataset(db, runs, space, o.db_path);
        if (!d.configs.empty()) {
          sources.push_back(std::move(d));
          prior_sources.push_back(describe_runs(o.db_path, runs));
        }
      }
    }
    for (const auto& key : o.prior_tasks) {
      if (!start_db || key == be->task_key()) continue;
      std::vector<storage::run_record> runs;
      for (const auto& run : start_db->runs())
        if (run.task_key == key && run.device_kind == be->device_kind()) runs.push_back(run);
      if (runs.empty()) continue;
      auto d = runs_as_dataset(*start_db, runs, space, o.db_path, true);
      if (d.configs.empty()) continue;  // none of its configurations maps onto this space
      sources.push_back(std::move(d));
      prior_sources.push_back(describe_runs(o.db_path, runs) + " of task " + key);
      prior_tasks_used.push_back(key);
    }
    if (sources.empty()) return {};
    std::vector<const replay_dataset*> pointers;
    for (const auto& d : sources) pointers.push_back(&d);
    try {
      auto prior = replay_prior(pointers, *space);
      prior_configurations = prior.size();
      return prior;
    } catch (const std::invalid_argument& e) {
      throw input_error(name("priors") + ": " + e.what());
    }
  }

  /// The run's database when it exists already, opened as the run will open
  /// it, to write: another process may have made the file and not yet its
  /// tables (two runs starting on one new file), which a read-only open
  /// refuses as "empty" and a writer completes; and a file of an older schema
  /// is migrated here, which the report tells.
  void open_existing_db() {
    const auto& o = options;
    if (o.db_path.empty()) return;
    if (!storage::is_postgres_target(o.db_path) &&
        (!std::filesystem::is_regular_file(o.db_path) || !is_sqlite_file(o.db_path)))
      return;
    start_db = std::make_unique<storage::results_db>(o.db_path);
    db_migrated_from = start_db->migrated_from();
  }

  void make_search() {
    const auto& o = options;
    strategy_name = what->strategy_name(o);
    strategy_options so;
    so.seed = *o.seed;
    so.hyper = o.hyper;
    if (what->uses_prior()) so.prior = load_prior();
    if (!o.start.empty() && strategy_name == "gevo")
      throw input_error(name("start") + ": gevo evolves programs and starts from the original; leave it out");
    for (const auto& text : o.start) {
      try {
        so.start.push_back(space->from_json(text));
      } catch (const std::invalid_argument& e) {
        throw input_error(name("start") + ": " + e.what());
      }
      if (!space->is_valid(so.start.back()))
        throw input_error(name("start") + " " + text +
                          ": the search space's constraints exclude it; give a configuration the space holds");
    }
    search_options = std::move(so);
    search = what->make_strategy(strategy_name, be, search_options);
  }
};

session::session(session_options options) : impl_(std::make_unique<impl>()) {
  auto& s = *impl_;
  s.options = std::move(options);
  s.what = detail::make_target(s.options);
  s.choose_seed_and_budget();
  s.check_numbers();
  s.choose_topology();
  s.make_backend();
  s.open_existing_db();
  s.make_search();
  s.start_db.reset();
  s.board = detail::make_session_dashboard(s.options);
}

session::~session() = default;

search_space_ptr session::space() const { return impl_->space; }

std::uint64_t session::seed() const { return *impl_->options.seed; }

std::uint64_t session::budget_trials() const { return impl_->options.budget.trials; }

void session::request_stop() noexcept { impl_->options.stop.request_stop(); }

namespace {

/// Behind the population: the recorder first, then the embedder's callbacks.
/// The recorder commits trials in groups (run_recorder::commit_due: at once
/// while trials come slower than its interval, else with the next trial after
/// it or on the progress tick, and what is left when the run has drained);
/// the callbacks hear of each trial as it arrives, so that one of them can
/// stop a fast run at once. Other processes see only committed trials (the
/// database, the event stream). A group that cannot be committed (disk full,
/// file no longer writable) stops the run: its trials (told already, but for
/// the one whose arrival made the commit) are not recorded, nothing after them
/// is told or recorded, and a resume measures them again. A callback that
/// throws stops the run; the exception is thrown again from run() once the
/// run has drained.
class session_listener final : public actors::trial_listener {
 public:
  session_listener(std::shared_ptr<storage::run_recorder> recorder, const session_options& options,
                   search_space_ptr space, const storage::topology& topo, bool keeps_variants, std::size_t fastest)
      : recorder_(std::move(recorder)),
        options_(options),
        space_(std::move(space)),
        topo_(topo),
        keeps_variants_(keeps_variants),
        fastest_(fastest),
        keep_fastest_(fastest) {}

  void on_trial(const actors::measured_trial& trial, bool new_best) override {
    if (record_failed_) return;
    try {
      recorder_->add(detail::to_record(trial, *space_, topo_), trial.finished_s, new_best);
    } catch (const std::exception& e) {
      fail(e);
      return;
    }
    if (recorder_->commit_due()) commit();
    if (!record_failed_) tell(trial, new_best);
    if (!record_failed_ && !trial.drift_suspects.empty()) flag_drift(trial);
  }

  void on_progress(const actors::progress_report& report) override {
    commit();
    storage::progress_event e;
    e.trials = static_cast<std::int64_t>(report.trials);
    e.trials_per_s = report.rate;
    e.elapsed_s = report.at_s;
    for (std::size_t d = 0; d < report.device_busy.size() && d < topo_.devices.size(); ++d)
      e.device_busy[topo_.devices[d].name] = report.device_busy[d];
    e.compile_busy = report.compile_busy;
    e.best_time_ms = report.best_time_ms;
    e.in_flight = static_cast<std::int64_t>(report.in_flight);
    recorder_->on_progress(std::move(e));
    if (!options_.on_progress) return;
    progress_info p;
    p.trials = report.trials;
    p.budget = options_.budget.trials;
    p.at_s = report.at_s;
    p.trials_per_s = report.rate;
    p.compile_busy = report.compile_busy;
    p.device_busy = report.device_busy;
    p.best_time_ms = report.best_time_ms;
    guarded([&] { options_.on_progress(p); });
  }

  /// Commits what waits; after the run has ended.
  void drain() { commit(); }

  std::exception_ptr error() const {
    std::lock_guard lock(mutex_);
    return error_;
  }

  /// Why a trial could not be recorded; empty when every trial was.
  std::string record_error() const {
    std::lock_guard lock(mutex_);
    return record_error_;
  }

  /// The trial number the next trial gets (the recorded trials of a resumed run come first).
  void first_seq(std::uint64_t seq) { next_seq_ = recorded_ = best_seq_ = seq; }
  /// The number of the trial that last improved the best time.
  std::uint64_t best_seq() const { return best_seq_; }
  /// The kept ok trials with two objectives (keeps_variants).
  std::vector<trial_info> variants() const {
    std::lock_guard lock(mutex_);
    return variants_;
  }
  /// The run's recorded trials (a resume) among the fastest.
  void offer_recorded(const std::vector<actors::measured_trial>& prior) {
    std::lock_guard lock(mutex_);
    for (const auto& t : prior) {
      auto info = detail::to_trial_info(t, false, *space_, topo_);
      info.seq = t.candidate_id;
      fastest_.offer(info);
    }
  }
  /// What the end-of-run confirmation measures: the fastest trials measured
  /// in full, fastest first; then the trials a drift probe flagged that would
  /// have been among them had their device not slowed down (their time over
  /// the device's largest drift ratio below the slowest of those kept), at
  /// most as many again, fastest (so corrected) first: measured again now,
  /// at the device's own pace, one of them may win.
  std::vector<trial_info> fastest() const {
    std::lock_guard lock(mutex_);
    auto out = fastest_.kept();
    double cutoff = out.size() < keep_fastest_ ? std::numeric_limits<double>::infinity() : out.back().time_ms;
    std::vector<std::pair<double, const trial_info*>> again;
    for (const auto& [corrected, info] : slowed_)
      if (corrected < cutoff) again.emplace_back(corrected, &info);
    std::sort(again.begin(), again.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    const std::size_t limit = out.size() + keep_fastest_;
    for (const auto& [corrected, info] : again)
      if (out.size() < limit &&
          std::none_of(out.begin(), out.end(), [&](const trial_info& k) { return k.config_json == info->config_json; }))
        out.push_back(*info);
    return out;
  }

 private:
  void commit() {
    if (record_failed_) return;
    try {
      recorded_ += recorder_->commit();
    } catch (const std::exception& e) {
      fail(e);
    }
  }

  void fail(const std::exception& e) {
    std::lock_guard lock(mutex_);
    record_failed_ = true;
    record_error_ = "results DB " + options_.db_path + ": could not record trial " + std::to_string(recorded_) + " (" +
                    e.what() + "); the run stopped and the " + std::to_string(recorded_) +
                    " trials recorded before are kept. Free space on its disk (or make the file writable again) "
                    "and continue the run with " +
                    detail::option_name(options_, "resume");
    options_.stop.request_stop();
  }

  /// The trials a drift probe found suspect: flagged in the database, told in a
  /// drift event and kept for the report.
  void flag_drift(const actors::measured_trial& trial) {
    storage::drift_event e;
    e.device = detail::device_name(topo_, trial.device_id);
    e.baseline_ms = trial.drift.baseline_ms;
    e.band = trial.drift.band;
    e.ratio = std::fabs(trial.drift.max_ratio - 1) > std::fabs(trial.drift.min_ratio - 1) ? trial.drift.max_ratio
                                                                                          : trial.drift.min_ratio;
    {
      std::lock_guard lock(mutex_);
      // A device that slowed down made its suspects look slower than they are.
      const double slowed = std::max(1.0, trial.drift.max_ratio);
      for (auto id : trial.drift_suspects)
        if (auto it = seq_of_.find(id); it != seq_of_.end()) {
          e.flagged.push_back(static_cast<std::int64_t>(it->second));
          drift_flagged_.push_back(it->second);
          if (auto recent = recent_.find(it->second); recent != recent_.end())
            slowed_.emplace_back(recent->second.time_ms / slowed, recent->second);
        }
      // Only the fastest of them can join the confirmation: the rest go.
      if (const std::size_t keep = 2 * keep_fastest_ + 8; slowed_.size() > 2 * keep) {
        std::nth_element(slowed_.begin(), slowed_.begin() + static_cast<std::ptrdiff_t>(keep), slowed_.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
        slowed_.resize(keep);
      }
    }
    try {
      recorder_->flag_drift(std::move(e));
    } catch (const std::exception& error) {
      fail(error);
    }
  }

 public:
  /// The would-be new bests measured against the best before them.
  run_report::duel_count duels() const {
    std::lock_guard lock(mutex_);
    return duels_;
  }
  /// The trials flagged as measured while their device had drifted, by seq.
  std::vector<std::uint64_t> drift_flagged() const {
    std::lock_guard lock(mutex_);
    auto out = drift_flagged_;
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  void tell(const actors::measured_trial& trial, bool new_best) {
    auto seq = next_seq_++;
    if (std::isfinite(trial.duel_ms) || trial.duel_skipped) {
      std::lock_guard lock(mutex_);
      if (trial.duel_skipped) {
        ++duels_.skipped;
      } else {
        ++duels_.count;
        if (trial.duel_lost()) ++duels_.lost;
      }
    }
    if (trial.drift.probes > 0 || trial.drift_flagged) {
      std::lock_guard lock(mutex_);
      seq_of_[trial.candidate_id] = seq;
      if (trial.drift_flagged) drift_flagged_.push_back(seq);
    }
    if (new_best) best_seq_ = seq;
    bool keep = keeps_variants_ && trial.ok() && trial.objectives.size() >= 2;
    bool callback = options_.on_trial || (new_best && options_.on_new_best);
    bool fast = trial.ok() && !trial.stopped_early && options_.confirm.top > 0;
    if (!keep && !callback && !fast) return;
    auto info = detail::to_trial_info(trial, new_best, *space_, topo_);
    info.seq = seq;
    {
      std::lock_guard lock(mutex_);
      if (keep) variants_.push_back(info);
      if (fast) {
        fastest_.offer(info);
        // Kept a while, for a drift probe that may flag it later.
        if (keep_fastest_ > 0) recent_.emplace(seq, info);
        if (recent_.size() > max_recent) recent_.erase(recent_.begin());
      }
    }
    if (!callback) return;
    guarded([&] {
      if (options_.on_trial) options_.on_trial(info);
      if (new_best && options_.on_new_best) options_.on_new_best(info);
    });
  }

  template <class F>
  void guarded(F&& f) {
    try {
      f();
    } catch (...) {
      std::lock_guard lock(mutex_);
      if (!error_) error_ = std::current_exception();
      options_.stop.request_stop();
    }
  }

  std::shared_ptr<storage::run_recorder> recorder_;
  const session_options& options_;
  search_space_ptr space_;
  const storage::topology& topo_;
  bool keeps_variants_ = false;
  mutable std::mutex mutex_;
  std::exception_ptr error_;
  bool record_failed_ = false;
  std::string record_error_;
  std::uint64_t next_seq_ = 0;
  std::uint64_t best_seq_ = 0;
  std::vector<trial_info> variants_;
  detail::fastest_trials fastest_;
  std::size_t keep_fastest_ = 0;
  static constexpr std::size_t max_recent = 4096;
  std::map<std::uint64_t, trial_info> recent_;               ///< by seq: the latest trials measured in full
  std::vector<std::pair<double, trial_info>> slowed_;        ///< flagged ones: time over the drift ratio, the trial
  std::unordered_map<std::uint64_t, std::uint64_t> seq_of_;  ///< candidate id -> seq, once a device probes
  std::vector<std::uint64_t> drift_flagged_;
  run_report::duel_count duels_;
  std::uint64_t recorded_ = 0;  ///< trials committed (a resumed run's recorded ones included)
};

const char* device_wait_name(device_wait_policy p) {
  return p == device_wait_policy::wait ? "wait" : p == device_wait_policy::free ? "free" : "fail";
}

/// Leases the resources of the topology's local devices as o.device_wait
/// says: all of them, waiting for those another process holds (wait); those
/// of the devices that are free, the others dropped from the topology, waiting
/// while none is (free); all of them or a std::runtime_error naming the holder
/// (fail). Nothing when leases are off or no device occupies anything real.
device_lease lease_local_devices(const session_options& o, const backend& be, storage::topology& topo) {
  if (!o.lease_devices || topo.devices.empty()) return {};
  std::vector<std::vector<std::string>> per_device;
  std::vector<std::string> all;
  for (const auto& d : topo.devices) {
    per_device.push_back(be.device_resources(d.id));
    all.insert(all.end(), per_device.back().begin(), per_device.back().end());
  }
  if (all.empty()) return {};
  auto device_of = [&](const std::string& resource) {
    for (std::size_t i = 0; i < per_device.size(); ++i)
      if (std::find(per_device[i].begin(), per_device[i].end(), resource) != per_device[i].end())
        return topo.devices[i].name;
    return std::string("?");
  };
  auto wait_flag = detail::option_name(o, "device_wait");
  auto say_waiting = [&](const std::string& resource, const lease_holder& holder) {
    if (!o.progress_line) return;
    std::fprintf(stderr,
                 "waiting for %s (%s), leased by %s (%s fail: fail at once; free: measure on the free devices)\n",
                 device_of(resource).c_str(), resource.c_str(), holder.describe().c_str(), wait_flag.c_str());
  };
  auto stop = [&] { return o.stop.stop_requested(); };
  switch (o.device_wait) {
    case device_wait_policy::fail: {
      std::string taken;
      lease_holder holder;
      if (auto lease = try_lease(all, &taken, &holder)) return std::move(*lease);
      throw std::runtime_error(device_of(taken) + " (" + taken + ") is leased by " + holder.describe() + "; " +
                               wait_flag + " wait waits for it, " + wait_flag + " free measures on the free devices, " +
                               detail::option_name(o, "lease_devices") + " measures without a lease");
    }
    case device_wait_policy::wait: {
      auto lease = lease_devices(all, say_waiting, stop);
      return lease ? std::move(*lease) : device_lease{};  // stopped while waiting: the run stops at once
    }
    case device_wait_policy::free:
      break;
  }
  bool said = false;
  for (;;) {
    device_lease held;
    std::vector<storage::device_spec> kept;
    std::string taken;
    lease_holder holder;
    for (std::size_t i = 0; i < topo.devices.size(); ++i) {
      std::string device_taken;
      lease_holder device_holder;
      if (auto lease = try_lease(per_device[i], &device_taken, &device_holder)) {
        held.merge(std::move(*lease));
        kept.push_back(topo.devices[i]);
      } else if (taken.empty()) {
        taken = device_taken;
        holder = device_holder;
      }
    }
    if (!kept.empty()) {
      if (kept.size() < topo.devices.size() && o.progress_line)
        std::fprintf(stderr, "measuring on %zu of %zu devices: the others are leased by other processes\n", kept.size(),
                     topo.devices.size());
      topo.devices = std::move(kept);
      return held;
    }
    if (!said) say_waiting(taken, holder);
    said = true;
    if (stop()) return {};
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

/// What the nodes of the topology need (the target's node_job) and the
/// network settings; their devices join the run's device list when they answer.
void add_nodes(const detail::target& what, const session_options& o, storage::topology& topo,
               actors::pipeline_options& po, const std::string& backend_name) {
  for (const auto& n : topo.nodes) {
    actors::remote_node node;
    node.host = n.host;
    node.port = n.port;
    node.devices = static_cast<std::uint32_t>(n.devices);
    node.device_names = n.device_names;
    for (auto index : n.device_indices) node.device_indices.push_back(static_cast<std::uint32_t>(index));
    node.prefetch = static_cast<std::uint32_t>(n.prefetch);
    node.weight = n.weight;
    po.nodes.push_back(std::move(node));
  }
  static_cast<storage::network_spec&>(po.network) = topo.network;
  po.network.certificate = topo.tls.certificate;
  po.network.key = topo.tls.key;
  po.network.cafile = topo.tls.cafile;
  auto job = what.for_nodes(o, topo);
  job.task.early_stop = o.early_stop;
  po.node_task = std::move(job.task);
  po.node_payload = std::move(job.payload);
  po.nodes_build = job.nodes_build;
  po.on_remote_devices = [&topo, backend = job.nodes_build ? backend_name : std::string("replay")](
                             const std::vector<actors::remote_device>& remote) {
    for (const auto& d : remote) topo.devices.push_back({backend, d.id, d.name, 2});
  };
}

}  // namespace

namespace {

/// A run of a session up to its pipeline: the devices leased, the run
/// recorded (created or resumed), the listener and the pipeline's options.
struct prepared_run {
  device_lease lease;
  std::shared_ptr<storage::run_recorder> recorder;
  std::shared_ptr<session_listener> listener;
  actors::pipeline_options po;
  duel_policy duel;
  bool confirms = false;
  std::string machine_note;
};

}  // namespace

struct detail::session_access {
  static session::impl* impl_of(session& s) { return s.impl_.get(); }
  /// What run() does before its pipeline; `lease_devices` false when another
  /// session of the same pipeline holds them.
  static prepared_run prepare(session::impl& s, bool lease_devices) {
    if (s.ran) throw std::logic_error("session::run: a session runs once; make a new session for another run");
    s.ran = true;
    const auto& o = s.options;
    prepared_run p;
    // Held until run() returns: the confirmation and the vendor comparison at
    // the end measure on the devices too.
    if (lease_devices) p.lease = lease_local_devices(o, *s.be, s.topo);

    storage::recorder_options ro;
    ro.db_path = o.db_path.empty() ? ":memory:" : o.db_path;
    ro.spec.task_key = s.be->task_key();
    ro.spec.strategy = s.strategy_name;
    ro.spec.seed = *o.seed;
    ro.spec.device_kind = s.be->device_kind();
    nlohmann::json options_json = {
        {"budget", o.budget.trials},
        {"time_budget_s", o.budget.seconds},
        {"mode", o.mode == run_mode::generational ? "generational" : "steady"},
        {"batch", o.batch},
        {"hyper", o.hyper},
        {"topology", s.topo.summary()},
        {"device_lease", o.lease_devices ? device_wait_name(o.device_wait) : "off"},
        {"time_scale", o.time_scale},
        {"seed_drawn", s.seed_drawn},
        {"early_stop",
         {{"slow_factor", o.early_stop.slow_factor},
          {"min_slow_ms", o.early_stop.min_slow_ms},
          {"margin", o.early_stop.margin},
          {"first_limit_ms", o.early_stop.first_limit_ms},
          {"build_factor", o.early_stop.build_factor},
          {"min_build_s", o.early_stop.min_build_s}}},
        {"prior", {{"sources", s.prior_sources}, {"configurations", s.prior_configurations}}}};
    if (!o.start.empty()) options_json["start"] = o.start;
    s.what->record(options_json, s.be);
    // What this run measures again: drift probes during it and the fastest
    // trials against each other at its end (the first device), where the
    // target's times vary and there is a device.
    auto drift = o.drift;
    if (!s.what->remeasures()) drift.every_trials = 0;
    std::uint32_t confirm_top =
        o.confirm.rounds > 0 && s.what->remeasures() && !s.topo.devices.empty() ? o.confirm.top : 0;
    auto& duel = p.duel;
    duel.rounds = s.what->remeasures() ? o.confirm.duel_rounds : 0;
    duel.reserved_runs = static_cast<double>(confirm_top) * o.confirm.rounds;
    auto& machine_note = p.machine_note;
    if (auto protocol = s.what->protocol(o, s.topo)) {
      // How each configuration is timed, and the machine's frequency settings,
      // recorded with the run; a change since the task's last run is noted.
      int core = !s.topo.devices.empty() && s.topo.devices.front().backend == "cpu"
                     ? s.topo.devices.front().id * std::max(1, o.threads)
                     : 0;
      auto frequency = read_cpu_frequency(core);
      duel.statistic = protocol->statistic;
      options_json["measurement"] = {{"statistic", to_string(protocol->statistic)},
                                     {"warmup", "one run, checked against the reference, not timed"},
                                     {"min_time_s", protocol->min_time_s},
                                     {"min_repeats", protocol->min_repeats},
                                     {"max_repeats", protocol->max_repeats},
                                     {"flush_cache", protocol->flush_cache},
                                     {"drift",
                                      {{"every_trials", drift.every_trials},
                                       {"every_s", drift.every_s},
                                       {"baseline", drift.baseline},
                                       {"min_band", drift.min_band}}},
                                     {"confirm",
                                      {{"top", confirm_top},
                                       {"rounds", o.confirm.rounds},
                                       {"duel_rounds", duel.rounds},
                                       {"duel_margin", duel.margin},
                                       {"duel_max_share", duel.max_share}}},
                                     {"machine", detail::frequency_json(frequency)}};
      machine_note = detail::machine_change_note(o.db_path, ro.spec.task_key, ro.spec.device_kind, frequency);
      if (!machine_note.empty() && o.progress_line) std::fprintf(stderr, "note: %s\n", machine_note.c_str());
    }
    ro.spec.options_json = options_json.dump();
    ro.resume = o.resume;
    ro.use_cache = o.use_cache && !o.db_path.empty();
    ro.publish_endpoint = o.publish_endpoint;
    ro.publish_key = o.publish_key;
    ro.publisher = o.publisher;
    ro.wait_for_subscribers = o.publish_wait;
    ro.option_names = o.option_names;
    if (s.board) {
      // The dashboard reads the run's own event stream; its subscriber is
      // waited for so that it sees run_started.
      if (ro.publish_endpoint.empty()) ro.publish_endpoint = "tcp://127.0.0.1:*";
      ro.wait_for_subscribers = o.publish_wait + 1;
    }
    ro.space = s.space;
    ro.budget_trials = static_cast<std::int64_t>(o.budget.trials);
    if (o.budget.seconds > 0) ro.budget_seconds = o.budget.seconds;
    ro.topology = s.topo.summary();
    try {
      p.recorder = std::make_shared<storage::run_recorder>(ro);
    } catch (const std::invalid_argument& e) {
      throw input_error(e.what());
    }
    if (s.board) detail::start_session_dashboard(*s.board, p.recorder->endpoint(), o);
    p.confirms = confirm_top > 0;
    p.listener =
        std::make_shared<session_listener>(p.recorder, o, s.space, s.topo, s.what->keeps_variants(), confirm_top);

    auto& po = p.po;
    po.compile_workers = static_cast<std::uint32_t>(s.topo.compile_workers);
    po.background_builds = s.topo.background_builds;
    po.devices.clear();
    for (const auto& d : s.topo.devices) po.devices.push_back({d.id, static_cast<std::uint32_t>(d.prefetch)});
    po.timing.timeouts = s.topo.timeouts;
    po.timing.time_scale = s.what->time_scale(o);
    po.budget = o.budget;
    po.early_stop = o.early_stop;
    po.drift = drift;
    po.duel = duel;
    po.mode = o.mode == run_mode::generational ? actors::pipeline_mode::generational : actors::pipeline_mode::steady;
    po.batch = o.batch;
    for (const auto& row : p.recorder->prior())
      po.prior.push_back(detail::to_measured(row, *s.space, s.topo, o.db_path, p.recorder->run_id(), o));
    po.progress_line = o.progress_line;
    po.listener = p.listener;
    if (p.recorder->has_cache())
      po.cache = [recorder = p.recorder,
                  space = s.space](const configuration& config) -> std::optional<actors::measured_trial> {
        const auto* hit = recorder->cached(space->to_json(config));
        if (!hit) return std::nullopt;
        actors::measured_trial trial;
        static_cast<tune::trial&>(trial) = *hit;
        trial.reused_from_run = hit->run_id;
        trial.message = "reused from run " + std::to_string(hit->run_id);
        trial.compile_s = trial.run_s = 0.0;  // nothing was built or run for it
        return trial;
      };
    p.listener->first_seq(po.prior.size());
    if (p.confirms) p.listener->offer_recorded(po.prior);
    po.stop_requested = [stop = o.stop] { return stop.stop_requested(); };
    po.hand_out_limit = o.stop_after_trials;

    if (!s.topo.nodes.empty()) add_nodes(*s.what, o, s.topo, po, s.backend_kind);

    if (o.progress_line && p.recorder->resumed())
      std::fprintf(stderr, "resuming run %lld: %zu trials recorded\n", static_cast<long long>(p.recorder->run_id()),
                   po.prior.size());
    p.recorder->started();
    return p;
  }

  /// What run() does after its pipeline: the trials committed, the fastest
  /// confirmed, the run finished in the database, the report.
  static run_report finish(session::impl& s, prepared_run& p, actors::run_summary summary) {
    const auto& o = s.options;
    auto& listener = p.listener;
    auto& recorder = p.recorder;
    const auto& duel = p.duel;
    listener->drain();
    auto record_error = listener->record_error();
    // A run that could not record a trial stays resumable, as a stopped one.
    auto reason = record_error.empty() ? summary.reason : end_reason::stopped;
    // The run's fastest trials against each other, on the first device, unless
    // the run was stopped or broke down.
    std::vector<run_report::confirmation_entry> confirmation;
    std::string confirmation_note;
    double confirmation_s = 0.0;
    if (p.confirms && record_error.empty() &&
        (reason == end_reason::budget || reason == end_reason::time || reason == end_reason::exhausted)) {
      if (o.progress_line) std::fprintf(stderr, "confirming the fastest trials against each other…\n");
      auto confirm_start = std::chrono::steady_clock::now();
      confirmation = detail::confirm_fastest(*s.be, listener->fastest(), s.topo.devices.front().id, o.confirm.rounds,
                                             s.topo.timeouts, duel.statistic, confirmation_note);
      confirmation_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - confirm_start).count();
    }
    try {
      std::optional<storage::trial_record> best;
      if (summary.best.ok()) best = detail::to_record(summary.best, *s.space, s.topo);
      if (!confirmation.empty()) {
        std::vector<storage::confirmation_row> rows;
        for (const auto& entry : confirmation)
          for (std::size_t r = 0; r < entry.rounds_ms.size(); ++r)
            rows.push_back({static_cast<std::int64_t>(entry.seq), static_cast<std::uint32_t>(r), entry.rounds_ms[r]});
        recorder->confirmed(rows, static_cast<std::int64_t>(confirmation.front().seq));
        for (const auto& t : listener->fastest())
          if (t.seq == confirmation.front().seq) {
            best = storage::trial_record{};
            static_cast<tune::trial&>(*best) = t;
            best->config_json = t.config_json;
            best->time_ms = confirmation.front().time_ms;
          }
      }
      recorder->finished(reason, static_cast<std::int64_t>(summary.prior_trials + summary.trials),
                         best ? &*best : nullptr, summary.wall_s);
    } catch (const std::exception&) {
      if (record_error.empty()) throw;  // else the first error says it all
    }
    if (s.board) detail::finish_session_dashboard(*s.board);
    if (!record_error.empty()) throw storage::db_error(record_error);

    auto report = detail::make_report(summary, *s.space, s.topo);
    if (report.best) report.best->seq = listener->best_seq();
    if (!confirmation.empty()) {
      for (const auto& t : listener->fastest())
        if (t.seq == confirmation.front().seq) report.best = t;
      report.best->time_ms = confirmation.front().time_ms;
      report.best->new_best = true;
    }
    report.confirmation = std::move(confirmation);
    report.statistic = duel.statistic;
    report.drift_flagged = listener->drift_flagged();
    report.duels = listener->duels();
    report.confirmation_note = std::move(confirmation_note);
    report.confirmation_s = confirmation_s;
    report.machine_note = std::move(p.machine_note);
    report.run_id = recorder->run_id();
    report.resumed = recorder->resumed();
    report.task_key = s.be->task_key();
    report.strategy = s.strategy_name;
    report.seed = *o.seed;
    report.seed_drawn = s.seed_drawn;
    report.prior_sources = s.prior_sources;
    report.prior_configurations = s.prior_configurations;
    report.prior_tasks_used = s.prior_tasks_used;
    report.db_migrated_from = s.db_migrated_from;
    s.what->report(report, o, s.be, listener->variants());
    if (auto error = listener->error()) std::rethrow_exception(error);
    return report;
  }
};

run_report session::run() {
  auto& s = *impl_;
  auto p = detail::session_access::prepare(s, true);
  actors::run_summary summary;
  try {
    summary = actors::run_pipeline(s.be, std::move(s.search), p.po);
  } catch (...) {
    p.listener->drain();  // what was measured stays recorded
    throw;
  }
  return detail::session_access::finish(s, p, std::move(summary));
}

run_report tune_once(session_options options) { return session(std::move(options)).run(); }

namespace {

/// Behind the pipeline of many sessions: each trial, untagged, to its task's
/// session_listener (which numbers and records it in the task's run); counts
/// and bests per task for the progress callback and the tasks' summaries.
class routing_listener final : public actors::trial_listener {
 public:
  routing_listener(std::vector<std::shared_ptr<session_listener>> tasks, std::vector<std::uint64_t> recorded,
                   std::function<void(const std::vector<std::uint64_t>&, const std::vector<double>&, bool)> progress)
      : tasks_(std::move(tasks)),
        recorded_(recorded),
        trials_(std::move(recorded)),
        best_ms_(tasks_.size(), std::nan("")),
        device_times_(tasks_.size()),
        progress_(std::move(progress)) {}

  void on_trial(const actors::measured_trial& trial, bool new_best) override {
    const std::uint32_t t = task_of(trial.config);
    auto own = trial;
    own.config = untagged(trial.config);
    tasks_.at(t)->on_trial(own, new_best);
    ++trials_[t];
    if (new_best) best_ms_[t] = trial.best_judged_ms();
    if (trial.device_id >= 0) {
      auto& times = device_times_[t];
      auto it = std::find_if(times.begin(), times.end(), [&](const auto& e) { return e.first == trial.device_id; });
      if (it == times.end()) it = times.insert(it, {trial.device_id, device_time{}});
      it->second.add(trial);
    }
  }

  void on_progress(const actors::progress_report&) override { tell(false); }

  /// Commits what waits and tells the progress callback.
  void tell(bool final) {
    for (auto& t : tasks_) t->drain();
    if (progress_) progress_(trials_, best_ms_, final);
  }

  std::uint64_t trials(std::size_t task) const { return trials_[task] - recorded_[task]; }
  const std::vector<std::pair<std::int32_t, device_time>>& device_times(std::size_t task) const {
    return device_times_[task];
  }

 private:
  std::vector<std::shared_ptr<session_listener>> tasks_;
  std::vector<std::uint64_t> recorded_, trials_;
  std::vector<double> best_ms_;
  std::vector<std::vector<std::pair<std::int32_t, device_time>>> device_times_;
  std::function<void(const std::vector<std::uint64_t>&, const std::vector<double>&, bool)> progress_;
};

/// The pipeline owns its strategy; this one lends it a multi_task_strategy
/// whose rounds are read after the run.
class lent_strategy final : public strategy {
 public:
  explicit lent_strategy(std::shared_ptr<multi_task_strategy> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }
  std::vector<configuration> propose(std::size_t n) override { return inner_->propose(n); }
  void observe(const trial_result& result) override { inner_->observe(result); }

 private:
  std::shared_ptr<multi_task_strategy> inner_;
};

}  // namespace

input_error detail::same_task_key(const std::string& origin, const std::string& a, const std::string& b,
                                  const std::string& key) {
  return input_error("model " + origin + ": " + a + " and " + b + " are one task to the results database (" + key +
                     "), whose runs could not be told apart; keep one of them, with their counts added");
}

detail::together_result detail::run_together(const std::vector<session*>& sessions, const together_options& options) {
  if (sessions.empty() || sessions.size() != options.tasks.size())
    throw std::invalid_argument("run_together: one scheduled task per session");
  auto impl = [&](std::size_t i) -> auto& { return *session_access::impl_of(*sessions[i]); };
  for (std::size_t i = 0; i < sessions.size(); ++i) {
    if (impl(i).be->name() != impl(0).be->name())
      throw input_error("model " + options.origin + ": " + options.tasks[i].name + " is a " + impl(i).be->name() +
                        " task and " + options.tasks[0].name + " a " + impl(0).be->name() +
                        " one; one pipeline measures one backend's tasks (run the model in rounds instead)");
    for (std::size_t j = 0; j < i; ++j)
      if (impl(i).be->task_key() == impl(j).be->task_key())
        throw same_task_key(options.origin, options.tasks[j].name, options.tasks[i].name, impl(i).be->task_key());
  }

  std::vector<prepared_run> runs;
  runs.reserve(sessions.size());
  for (std::size_t i = 0; i < sessions.size(); ++i) runs.push_back(session_access::prepare(impl(i), i == 0));

  // The first session's pipeline, for every task: its topology and policies.
  actors::pipeline_options po = runs.front().po;
  po.multi_task = true;
  po.hand_out_limit = 0;
  po.budget.trials = options.budget_trials;
  po.budget.seconds = 0;
  po.prior.clear();
  std::vector<std::uint64_t> recorded;
  std::vector<std::shared_ptr<session_listener>> listeners;
  std::vector<backend_ptr> backends;
  std::vector<std::unique_ptr<strategy>> searches;
  std::vector<actors::trial_cache> caches;
  for (std::size_t i = 0; i < sessions.size(); ++i) {
    for (auto trial : runs[i].po.prior) {
      trial.config = tagged(static_cast<std::uint32_t>(i), trial.config);
      po.prior.push_back(std::move(trial));
    }
    recorded.push_back(runs[i].po.prior.size());
    listeners.push_back(runs[i].listener);
    backends.push_back(impl(i).be);
    searches.push_back(std::move(impl(i).search));
    caches.push_back(runs[i].po.cache);
  }
  if (!po.nodes.empty()) {
    // The nodes get every task, their payloads one after the other; the
    // run's settings (seed, time scale, timeouts, early stop, devices) are
    // the first task's, which every task shares.
    actors::node_task job;
    const auto& first = runs.front().po.node_task;
    job.kind = actors::node_task::kind_t::multi;
    job.seed = first.seed;
    job.time_scale = first.time_scale;
    job.timeouts = first.timeouts;
    job.early_stop = first.early_stop;
    job.devices = first.devices;
    po.node_payload.clear();
    for (const auto& run : runs) {
      job.parts.push_back(run.po.node_task);
      job.part_bytes.push_back(run.po.node_payload.size());
      po.node_payload += run.po.node_payload;
    }
    po.node_task = std::move(job);
    // Each task's session names the nodes' devices in its trials.
    std::vector<std::function<void(const std::vector<actors::remote_device>&)>> name_devices;
    for (const auto& run : runs)
      if (run.po.on_remote_devices) name_devices.push_back(run.po.on_remote_devices);
    po.on_remote_devices = [name_devices](const std::vector<actors::remote_device>& remote) {
      for (const auto& name : name_devices) name(remote);
    };
  }
  po.cache = [caches](const configuration& config) -> std::optional<actors::measured_trial> {
    const auto& cache = caches.at(task_of(config));
    if (!cache) return std::nullopt;
    auto hit = cache(untagged(config));
    if (hit) hit->config = config;
    return hit;
  };
  auto routing = std::make_shared<routing_listener>(listeners, recorded, options.on_progress);
  po.listener = routing;
  auto search = std::make_shared<multi_task_strategy>(
      std::move(searches), task_scheduler(options.tasks, options.scheduler), options.round_trials);
  if (options.transfer) {
    // A task's first round takes its family's results so far as prior, with
    // what its own prior had (earlier runs, other devices): its strategy made
    // again, as its session made it.
    multi_task_transfer transfer;
    for (std::size_t i = 0; i < sessions.size(); ++i) transfer.spaces.push_back(impl(i).space);
    transfer.remake = [&](std::size_t task, std::vector<trial_result> prior, const std::vector<std::size_t>& from) {
      auto& s = impl(task);
      std::unique_ptr<strategy> made;
      strategy_options so = s.search_options;
      so.prior.insert(so.prior.end(), std::make_move_iterator(prior.begin()), std::make_move_iterator(prior.end()));
      so.prior = merged_prior(so.prior);
      const std::size_t configurations = so.prior.size();
      try {
        made = s.what->make_strategy(s.strategy_name, s.be, std::move(so));
      } catch (const std::exception&) {
        return made;  // made once with these options but for the prior: keep that one, cold
      }
      s.prior_configurations = configurations;
      for (std::size_t other : from) {
        s.prior_tasks_used.push_back(impl(other).be->task_key());
        s.prior_sources.push_back("this run's trials of task " + impl(other).be->task_key());
      }
      return made;
    };
    search->set_transfer(std::move(transfer));
  }
  auto backend = std::make_shared<multi_task_backend>(backends);

  actors::run_summary summary;
  try {
    summary = actors::run_pipeline(backend, std::make_unique<lent_strategy>(search), po);
  } catch (...) {
    for (auto& l : listeners) l->drain();  // what was measured stays recorded
    throw;
  }
  routing->tell(true);

  together_result out;
  out.reason = summary.reason;
  for (const auto& d : summary.devices) out.device_busy.push_back(d.busy_fraction());
  out.compile_busy = summary.compile.busy_fraction();
  if (out.reason == end_reason::budget && search->scheduler().all_done()) out.reason = end_reason::exhausted;
  for (std::size_t i = 0; i < sessions.size(); ++i) {
    // The task's share of the run: its trials and best; it stays resumable
    // (stopped) unless the pipeline failed.
    actors::run_summary own = summary;
    own.best = i < summary.task_bests.size() ? summary.task_bests[i] : actors::measured_trial{};
    if (!own.best.config.empty()) own.best.config = untagged(own.best.config);
    own.task_bests.clear();
    own.trials = routing->trials(i);
    own.prior_trials = recorded[i];
    own.trace.clear();
    own.device_times = routing->device_times(i);
    own.reason = summary.reason == end_reason::failed ? end_reason::failed : end_reason::stopped;
    out.reports.push_back(session_access::finish(impl(i), runs[i], std::move(own)));
    out.rounds.push_back(search->rounds(i));
    out.done.push_back(search->scheduler().done(i));
  }
  return out;
}

}  // namespace tune
