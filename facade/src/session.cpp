// tune::session: options checked once, then one run through the actor
// pipeline with the run recorder (database, events) and the embedder's
// callbacks behind the population.
#include <algorithm>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <utility>

#include "dashboard_detail.hpp"
#include "evolve_detail.hpp"
#include "objective_backend.hpp"
#include "report_detail.hpp"
#include "tune/actors/pipeline.hpp"
#include "tune/actors/run_recorder.hpp"
#include "tune/engine/readers.hpp"
#include "tune/engine/strategy.hpp"
#include "tune/engine/text.hpp"
#include "tune/kernels/replay.hpp"
#include "tune/kernels/task.hpp"
#include "tune/kernels/user_kernel.hpp"
#include "tune/storage/results_db.hpp"
#include "tune/tune.hpp"

namespace tune {
namespace {

/// What to tune, as given: exactly one must be set.
std::vector<std::string> given_targets(const session_options& o) {
  std::vector<std::string> given;
  if (!o.task.empty()) given.push_back("task");
  if (!o.dataset.empty()) given.push_back("dataset");
  if (!o.kernel.empty()) given.push_back("kernel");
  if (o.objective) given.push_back("objective");
  if (o.custom_backend) given.push_back("custom_backend");
  if (!o.workload.empty()) given.push_back("workload");
  return given;
}

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

/// The topology when none is given: one device, compile workers on the other
/// cores (a CPU device measures on core 0, so compiling must not land there).
storage::topology default_topology_for(const std::string& backend_name, int threads) {
  if (backend_name == "objective") {
    storage::topology topo;
    topo.origin = "<default objective topology>";
    topo.compile_workers = 1;
    topo.devices.push_back({"objective", 0, "objective0", 1});
    return topo;
  }
  auto topo = storage::default_topology(backend_name);
  if (backend_name == "cpu") {
    auto cores = storage::default_compile_workers();
    topo.compile_workers = cores > static_cast<std::size_t>(threads) ? cores - threads : 1;
  }
  return topo;
}

/// True when the file is an SQLite database (its 16-byte header).
bool is_sqlite_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char header[16] = {};
  in.read(header, sizeof header);
  return in.gcount() == 16 && std::string(header, 15) == "SQLite format 3";
}

/// The recorded trials of some runs of a results database as a dataset over
/// `space` (configurations that no longer fit it are left out).
replay_dataset runs_as_dataset(const storage::results_db& db, const std::vector<storage::run_record>& runs,
                               const search_space_ptr& space, const std::string& origin) {
  replay_dataset d;
  d.origin = origin;
  d.format = "results_db";
  d.space = space;
  for (const auto& run : runs) {
    for (const auto& row : db.trials(run.id)) {
      configuration config;
      try {
        config = space->from_json(row.config_json);
      } catch (const std::exception&) {
        continue;
      }
      replay_record rec;
      rec.state = row.state;
      if (row.time_ms) rec.time_ms = *row.time_ms;
      d.configs.push_back(std::move(config));
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

std::string launch_file(const std::string& kernel) {
  std::error_code ec;
  if (std::filesystem::is_directory(kernel, ec)) return (std::filesystem::path(kernel) / "launch.json").string();
  return kernel;
}

}  // namespace

struct session::impl {
  session_options options;
  storage::topology topo;
  std::string backend_kind;  ///< what the topology's devices must be ("" for objective/custom: any)
  backend_ptr be;
  search_space_ptr space;
  std::string strategy_name;
  std::unique_ptr<strategy> search;
  std::unique_ptr<dashboard::server> board;  ///< dashboard_listen: bound now, served during run()
  bool ran = false;

  void check_numbers() const {
    const auto& o = options;
    auto name = [&](const char* field) { return detail::option_name(o, field); };
    if (o.budget == 0) throw input_error(name("budget") + ": must be at least 1 trial");
    if (!(o.time_budget_s >= 0))
      throw input_error(name("time_budget_s") + ": must be >= 0 seconds (0: no time budget)");
    if (!(o.time_scale > 0))
      throw input_error(name("time_scale") +
                        ": must be > 0 (wall seconds per recorded second, e.g. 0.01 to replay 100x faster)");
    if (o.time_scale != 1.0 && o.dataset.empty())
      throw input_error(name("time_scale") + " applies to a replayed " + name("dataset") + " only; leave it at 1 here");
    if (o.mode == run_mode::generational && o.batch == 0)
      throw input_error(name("batch") + ": generational mode needs at least 1 candidate per generation");
    if (o.threads < 1) throw input_error(name("threads") + ": must be at least 1");
    if (o.resume && o.db_path.empty())
      throw input_error(name("resume") + " needs " + name("db_path") +
                        ", the results database holding the run to continue");
    if (!o.kinds_file.empty() && o.dataset.empty())
      throw input_error(name("kinds_file") + " " + o.kinds_file + ": applies to a replayed " + name("dataset") +
                        " only");
    if (o.compare_vendor && o.task.empty())
      throw input_error(name("compare_vendor") + " compares a built-in " + name("task") +
                        " (matmul, bmm or conv2d) with oneDNN and OpenBLAS; there is no " + name("task") + " here");
  }

  void choose_topology() {
    const auto& o = options;
    if (!o.topology_file.empty() && o.topology)
      throw input_error("topology_file " + o.topology_file + " and a topology value: give one of them");
    std::string wanted = o.backend_name;
    if (!o.dataset.empty()) wanted = "replay";
    if (o.objective || o.custom_backend) wanted = "objective";
    if (wanted.empty()) wanted = "cpu";
    if (!o.topology_file.empty())
      topo = storage::load_topology(o.topology_file);
    else if (o.topology)
      topo = *o.topology;
    else
      topo = default_topology_for(wanted, o.threads);
    if (topo.devices.empty() && topo.nodes.empty())
      throw input_error(topo.origin + ": devices: empty; list at least one device");
    if (topo.compile_workers == 0) throw input_error(topo.origin + ": compile_workers: must be at least 1");
    if (!topo.nodes.empty() && o.dataset.empty() && o.task.empty())
      throw input_error(topo.origin +
                        ": nodes: nodes tune built-in tasks (--task) and replayed datasets (--dataset) only; a user "
                        "kernel, a workload or an objective runs on this machine: remove 'nodes:'");
    backend_kind = topology_backend(topo, wanted == "objective" ? "cpu" : wanted);
  }

  void make_backend() {
    const auto& o = options;
    if (!o.dataset.empty()) {
      if (backend_kind != "replay")
        throw input_error(topo.origin + ": devices[0].backend is '" + backend_kind +
                          "'; a dataset replays recorded measurements and needs 'backend: replay' devices");
      kind_overrides overrides;
      if (!o.kinds_file.empty()) overrides = read_kind_overrides(o.kinds_file);
      replay_backend_options ro;
      ro.time_scale = o.time_scale;
      ro.seed = o.seed;
      be = make_replay_backend(std::make_shared<const replay_dataset>(read_replay_dataset(o.dataset, overrides)), ro);
    } else if (!o.task.empty() || !o.kernel.empty()) {
      const std::string what = o.task.empty() ? "kernel " + o.kernel : "task " + o.task;
      if (backend_kind == "replay")
        throw input_error(topo.origin + ": devices[0].backend is 'replay'; " + what +
                          " measures real kernels: use cpu, cuda or hip devices, or replay a dataset");
      if (backend_kind == "objective")
        throw input_error(topo.origin + ": devices[0].backend is 'objective'; " + what +
                          " needs cpu, cuda or hip devices");
      task_backend_options ko;
      ko.first_core = 0;
      ko.threads = o.threads;
      be = o.task.empty() ? make_user_kernel_backend(launch_file(o.kernel), backend_kind, ko)
                          : make_task_backend(o.task, backend_kind, ko);
    } else if (!o.workload.empty()) {
      if (backend_kind != "cpu")
        throw input_error(topo.origin + ": devices[0].backend is '" + backend_kind +
                          "'; program-edit evolution runs its workloads on cpu devices");
      task_backend_options ko;
      ko.first_core = 0;
      ko.threads = o.threads;
      // Steadier timing than a kernel's 50 ms: each variant runs at least 5
      // times and 0.25 s, and counts by its fastest run (docs/gevo.md).
      ko.min_time_s = std::max(ko.min_time_s, 0.25);
      ko.min_repeats = std::max(ko.min_repeats, 5);
      be = detail::make_evolution_backend(o.workload, ko, o.db_path);
    } else if (o.objective) {
      search_space_ptr s = o.space;
      if (!s && !o.space_file.empty()) s = std::make_shared<const search_space>(read_space_file(o.space_file));
      be = detail::make_objective_backend(o.objective, s, o.task_name);
    } else {
      be = o.custom_backend;
    }
    space = be->space();
    if (!space) throw input_error("the backend has no search space");
  }

  std::vector<std::string> prior_sources;
  std::unique_ptr<storage::results_db> start_db;  // from open_existing_db() to the end of make_search()
  std::optional<int> db_migrated_from;
  std::size_t prior_configurations = 0;

  /// Datasets and earlier runs of the same task measured elsewhere, merged
  /// into one prior over this run's space.
  std::vector<trial_result> load_prior() {
    const auto& o = options;
    std::vector<replay_dataset> sources;
    for (const auto& path : o.priors) {
      if (!std::filesystem::is_regular_file(path))
        throw input_error("prior " + path + ": no such file; give a measured dataset or a results database");
      if (!is_sqlite_file(path)) {
        sources.push_back(read_replay_dataset(path));
        prior_sources.push_back(path);
        continue;
      }
      storage::results_db db(path, storage::results_db::open_mode::read_only);
      std::vector<storage::run_record> runs;
      for (const auto& run : db.runs())
        if (run.task_key == be->task_key()) runs.push_back(run);
      if (runs.empty())
        throw input_error("prior " + path + ": the database holds no run of task " + be->task_key() +
                          "; a prior must come from the same task (see tune-engine best --db " + path + ")");
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
    if (sources.empty()) return {};
    std::vector<const replay_dataset*> pointers;
    for (const auto& d : sources) pointers.push_back(&d);
    try {
      auto prior = replay_prior(pointers, *space);
      prior_configurations = prior.size();
      return prior;
    } catch (const std::invalid_argument& e) {
      throw input_error(std::string("prior: ") + e.what());
    }
  }

  /// The run's database when it exists already, opened as the run will open
  /// it, to write: another process may have made the file and not yet its
  /// tables (two runs starting on one new file), which a read-only open
  /// refuses as "empty" and a writer completes; and a file of an older schema
  /// is migrated here, which the report tells.
  void open_existing_db() {
    const auto& o = options;
    if (o.db_path.empty() || !std::filesystem::is_regular_file(o.db_path) || !is_sqlite_file(o.db_path)) return;
    start_db = std::make_unique<storage::results_db>(o.db_path);
    db_migrated_from = start_db->migrated_from();
  }

  void make_search() {
    const auto& o = options;
    strategy_name = o.strategy.empty() ? default_strategy_name() : o.strategy;
    strategy_options so;
    so.seed = o.seed;
    so.hyper = o.hyper;
    if (!o.workload.empty()) {
      if (!o.strategy.empty() && o.strategy != "gevo")
        throw input_error("strategy " + o.strategy + ": a workload is evolved by gevo; leave strategy empty");
      strategy_name = "gevo";
      search = detail::make_evolution_strategy(be, so);
      return;
    }
    so.prior = load_prior();
    try {
      search = make_strategy(strategy_name, space, so);
    } catch (const std::invalid_argument& e) {
      throw input_error(std::string("strategy: ") + e.what());
    }
  }
};

session::session(session_options options) : impl_(std::make_unique<impl>()) {
  impl_->options = std::move(options);
  auto& o = impl_->options;
  auto given = given_targets(o);
  if (given.size() != 1)
    throw input_error(given.empty()
                          ? "nothing to tune: set one of task, dataset, kernel, objective, custom_backend or workload"
                          : "give exactly one of task, dataset, kernel, objective, custom_backend, workload (given: " +
                                join(given) + ")");
  if ((o.space || !o.space_file.empty()) && !o.objective)
    throw input_error("space / space_file: only an objective searches a space given on its own; a " + given.front() +
                      " brings its own space");
  if (o.space && !o.space_file.empty()) throw input_error("space and space_file: give one of them");
  impl_->check_numbers();
  impl_->choose_topology();
  impl_->make_backend();
  impl_->open_existing_db();
  impl_->make_search();
  impl_->start_db.reset();
  impl_->board = detail::make_session_dashboard(o);
}

session::~session() = default;

search_space_ptr session::space() const { return impl_->space; }

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
/// is told or recorded, and --resume measures them again. A
/// callback that throws stops the run; the exception is thrown again from
/// run() once the run has drained.
class session_listener final : public actors::trial_listener {
 public:
  session_listener(std::shared_ptr<actors::run_recorder> recorder, const session_options& options,
                   search_space_ptr space, const storage::topology& topo)
      : recorder_(std::move(recorder)), options_(options), space_(std::move(space)), topo_(topo) {}

  void on_trial(const actors::measured_trial& trial, bool new_best) override {
    if (record_failed_) return;
    try {
      recorder_->add(trial, new_best);
    } catch (const std::exception& e) {
      fail(e);
      return;
    }
    if (recorder_->commit_due()) commit();
    if (!record_failed_) tell(trial, new_best);
  }

  void on_progress(const actors::progress_report& report) override {
    commit();
    recorder_->on_progress(report);
    if (!options_.on_progress) return;
    progress_info p;
    p.trials = report.trials;
    p.budget = options_.budget;
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
  void first_seq(std::uint64_t seq) { next_seq_ = recorded_ = seq; }
  /// Program-edit evolution: every ok trial with two objectives.
  std::vector<trial_info> evolved() const {
    std::lock_guard lock(mutex_);
    return evolved_;
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
                    "and continue the run with --resume";
    options_.stop.request_stop();
  }

  void tell(const actors::measured_trial& trial, bool new_best) {
    if (!options_.workload.empty() && trial.ok() && trial.objectives.size() >= 2) {
      auto info = detail::to_trial_info(trial, new_best, *space_, topo_);
      info.id = next_seq_;
      std::lock_guard lock(mutex_);
      evolved_.push_back(std::move(info));
    }
    ++next_seq_;
    if (!options_.on_trial && !(new_best && options_.on_new_best)) return;
    auto info = detail::to_trial_info(trial, new_best, *space_, topo_);
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

  std::shared_ptr<actors::run_recorder> recorder_;
  const session_options& options_;
  search_space_ptr space_;
  const storage::topology& topo_;
  mutable std::mutex mutex_;
  std::exception_ptr error_;
  bool record_failed_ = false;
  std::string record_error_;
  std::uint64_t next_seq_ = 0;
  std::vector<trial_info> evolved_;
  std::uint64_t recorded_ = 0;  ///< trials committed (a resumed run's recorded ones included)
};

}  // namespace

/// What the nodes of the topology need: the task once per run, the
/// dataset's bytes (a node needs no file of the coordinator), the network
/// settings; their devices join the run's device list when they answer.
static void node_options(const session_options& o, storage::topology& topo, actors::pipeline_options& po,
                         actors::run_recorder& recorder, const std::string& backend_name) {
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
  po.network.heartbeat_s = topo.network.heartbeat_s;
  po.network.connection_timeout_s = topo.network.connection_timeout_s;
  po.network.lost_timeout_s = topo.network.lost_timeout_s;
  po.network.certificate = topo.tls.certificate;
  po.network.key = topo.tls.key;
  po.network.cafile = topo.tls.cafile;
  if (!o.task.empty()) {
    // A built-in task: each node builds its own backend (and reference data)
    // from the task string and compiles what it measures.
    po.nodes_build = true;
    po.node_task = nlohmann::json{{"kind", "task"},
                                  {"task", o.task},
                                  {"threads", o.threads},
                                  {"seed", o.seed},
                                  {"compile_timeout_s", topo.compile_timeout_s},
                                  {"run_timeout_s", topo.run_timeout_s}}
                       .dump();
    po.on_remote_devices = [&topo, &recorder,
                            backend = backend_name](const std::vector<actors::remote_device>& remote) {
      std::vector<storage::device_spec> added;
      for (const auto& d : remote) added.push_back({backend, d.id, d.name, 2});
      topo.devices.insert(topo.devices.end(), added.begin(), added.end());
      recorder.add_devices(added);
    };
    return;
  }
  std::ifstream in(o.dataset, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in) throw input_error("dataset " + o.dataset + ": cannot read the file to send it to the nodes");
  po.node_payload = bytes.str();
  nlohmann::json kinds = nlohmann::json::object();
  if (!o.kinds_file.empty())
    for (const auto& [k, v] : read_kind_overrides(o.kinds_file)) kinds[k] = v;
  po.node_task = nlohmann::json{{"kind", "replay"},
                                {"dataset_name", std::filesystem::path(o.dataset).filename().string()},
                                {"kinds", kinds},
                                {"seed", o.seed},
                                {"time_scale", o.time_scale},
                                {"run_timeout_s", topo.run_timeout_s}}
                     .dump();
  po.on_remote_devices = [&topo, &recorder](const std::vector<actors::remote_device>& remote) {
    std::vector<storage::device_spec> added;
    for (const auto& d : remote) added.push_back({"replay", d.id, d.name, 2});
    topo.devices.insert(topo.devices.end(), added.begin(), added.end());
    recorder.add_devices(added);
  };
}

run_report session::run() {
  auto& s = *impl_;
  if (s.ran) throw std::logic_error("session::run: a session runs once; make a new session for another run");
  s.ran = true;
  const auto& o = s.options;

  actors::recorder_options ro;
  ro.db_path = o.db_path.empty() ? ":memory:" : o.db_path;
  ro.spec.task_key = s.be->task_key();
  ro.spec.strategy = s.strategy_name;
  ro.spec.seed = o.seed;
  ro.spec.device_kind = s.be->device_kind();
  nlohmann::json options_json = {{"budget", o.budget},
                                 {"time_budget_s", o.time_budget_s},
                                 {"mode", o.mode == run_mode::generational ? "generational" : "steady"},
                                 {"batch", o.batch},
                                 {"hyper", o.hyper},
                                 {"topology", s.topo.summary()},
                                 {"time_scale", o.time_scale},
                                 {"prior", {{"sources", s.prior_sources}, {"configurations", s.prior_configurations}}}};
  if (!o.workload.empty()) options_json["evolution"] = detail::evolution_record(s.be);
  ro.spec.options_json = options_json.dump();
  ro.resume = o.resume;
  ro.use_cache = o.use_cache && !o.db_path.empty();
  ro.publish_endpoint = o.publish_endpoint;
  ro.publish_key = o.publish_key;
  ro.wait_for_subscribers = o.publish_wait;
  if (s.board) {
    // The dashboard reads the run's own event stream; its subscriber is
    // waited for so that it sees run_started.
    if (ro.publish_endpoint.empty()) ro.publish_endpoint = "tcp://127.0.0.1:*";
    ro.wait_for_subscribers = o.publish_wait + 1;
  }
  ro.space = s.space;
  ro.devices = s.topo.devices;
  ro.budget_trials = static_cast<std::int64_t>(o.budget);
  if (o.time_budget_s > 0) ro.budget_seconds = o.time_budget_s;
  ro.topology = s.topo.summary();
  auto recorder = std::make_shared<actors::run_recorder>(ro);
  if (s.board) detail::start_session_dashboard(*s.board, recorder->endpoint(), o);
  auto listener = std::make_shared<session_listener>(recorder, o, s.space, s.topo);

  actors::pipeline_options po;
  po.compile_workers = static_cast<std::uint32_t>(s.topo.compile_workers);
  po.devices.clear();
  for (const auto& d : s.topo.devices) po.devices.push_back({d.id, static_cast<std::uint32_t>(d.prefetch)});
  po.compile_timeout_s = s.topo.compile_timeout_s;
  po.run_timeout_s = s.topo.run_timeout_s;
  po.time_scale = o.dataset.empty() ? 1.0 : o.time_scale;
  po.budget = o.budget;
  po.time_budget_s = o.time_budget_s;
  po.mode = o.mode == run_mode::generational ? actors::pipeline_mode::generational : actors::pipeline_mode::steady;
  po.batch = o.batch;
  po.prior = recorder->prior();
  po.progress_line = o.progress_line;
  po.listener = listener;
  po.cache = recorder->cache();
  listener->first_seq(po.prior.size());
  po.stop_requested = [stop = o.stop] { return stop.stop_requested(); };

  if (!s.topo.nodes.empty()) node_options(o, s.topo, po, *recorder, s.backend_kind);

  if (o.progress_line && recorder->resumed())
    std::fprintf(stderr, "resuming run %lld: %zu trials recorded\n", static_cast<long long>(recorder->run_id()),
                 po.prior.size());
  recorder->started();
  actors::run_summary summary;
  try {
    summary = actors::run_pipeline(s.be, std::move(s.search), po);
  } catch (...) {
    listener->drain();  // what was measured stays recorded
    throw;
  }
  listener->drain();
  auto record_error = listener->record_error();
  // A run that could not record a trial stays resumable, as an interrupted one.
  bool interrupted = summary.reason == "stopped" || !record_error.empty();
  try {
    recorder->finished(summary, interrupted);
  } catch (const std::exception&) {
    if (record_error.empty()) throw;  // else the first error says it all
  }
  if (s.board) detail::finish_session_dashboard(*s.board);
  if (!record_error.empty()) throw storage::db_error(record_error);

  auto report = detail::make_report(summary, *s.space, s.topo);
  report.run_id = recorder->run_id();
  report.resumed = recorder->resumed();
  report.task_key = s.be->task_key();
  report.strategy = s.strategy_name;
  report.seed = o.seed;
  report.prior_sources = s.prior_sources;
  report.prior_configurations = s.prior_configurations;
  report.db_migrated_from = s.db_migrated_from;
  if (!o.task.empty()) report.throughput = detail::task_throughput(o.task, report, o.compare_vendor, o.threads);
  if (!o.workload.empty()) {
    auto evolved = listener->evolved();
    report.front = detail::front_of(evolved);
    report.evolved = evolved;
    for (auto& t : evolved)
      if (t.config.empty()) report.original = t;
    if (auto record = detail::evolution_record(s.be); record.is_object() && record.contains("base")) {
      report.base_configuration = record["base"].value("configuration", "");
      report.base_origin = record["base"].value("origin", "");
    }
  }
  if (auto error = listener->error()) std::rethrow_exception(error);
  return report;
}

run_report tune_once(session_options options) { return session(std::move(options)).run(); }

}  // namespace tune
