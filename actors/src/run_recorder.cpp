#include "tune/actors/run_recorder.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <stdexcept>

#include "stage_clock.hpp"
#include "tune/storage/export.hpp"

namespace tune::actors {

using storage::event_publisher;
using storage::make_event;
using storage::new_best_event;
using storage::progress_event;
using storage::results_db;
using storage::run_finished_event;
using storage::run_record;
using storage::run_started_event;
using storage::run_state;
using storage::trial_finished_event;
using storage::trial_input;
using storage::trial_record;

run_recorder::run_recorder(recorder_options options) : options_(std::move(options)) {
  if (!options_.space) throw std::invalid_argument("run_recorder: no search space");
  db_ = std::make_unique<results_db>(options_.db_path);
  std::optional<run_record> previous;
  if (options_.resume)
    previous = db_->latest_unfinished_run(options_.spec.task_key, options_.spec.strategy, options_.spec.seed);
  if (previous) {
    run_id_ = previous->id;
    resumed_ = true;
    for (const auto& row : db_->trials(run_id_)) {
      measured_trial trial;
      trial.id = static_cast<std::uint64_t>(row.seq);
      try {
        trial.config = options_.space->from_json(row.config_json);
      } catch (const std::exception& e) {
        throw std::invalid_argument(options_.db_path + ": run " + std::to_string(run_id_) + ", trial " +
                                    std::to_string(row.seq) + " does not fit the search space (" + e.what() +
                                    "); resume with the same task or dataset, or start a new run without --resume");
      }
      trial.state = row.state;
      trial.time_ms = row.time_ms ? *row.time_ms : std::nan("");
      trial.compile_s = row.compile_s;
      trial.run_s = row.run_s;
      trial.objectives = row.objectives;
      trial.reused_from_run = row.reused_from_run ? *row.reused_from_run : -1;
      for (const auto& device : options_.devices)
        if (device.name == row.device) trial.device = device.id;
      prior_.push_back(std::move(trial));
    }
  } else {
    // The space goes with the run so that `tune-engine export` can write its
    // parameter lists (tune_params) without the task or dataset at hand.
    auto spec = options_.spec;
    spec.options_json = storage::with_space_description(spec.options_json, *options_.space);
    run_id_ = db_->create_run(spec);
  }
  if (auto run = db_->find_run(run_id_)) started_at_ = run->started_at;
  if (!db_->claim_run(run_id_))
    throw std::invalid_argument("results DB " + options_.db_path + ": run " + std::to_string(run_id_) +
                                " is being continued by another tune-engine process; wait for it to end, or start a "
                                "new run without --resume (or with another --seed)");
  if (options_.use_cache)
    cache_ = std::make_shared<std::unordered_map<std::string, trial_record>>(
        db_->load_cache(options_.spec.task_key, options_.spec.device_kind));
  if (!options_.publish_endpoint.empty())
    publisher_ = std::make_unique<event_publisher>(options_.publish_endpoint, options_.publish_key);
}

run_recorder::~run_recorder() = default;

std::string run_recorder::endpoint() const { return publisher_ ? publisher_->endpoint() : std::string(); }

trial_cache run_recorder::cache() const {
  if (!cache_ || cache_->empty()) return {};
  auto cache = cache_;
  auto space = options_.space;
  auto own_run = run_id_;
  return [cache, space, own_run](const configuration& config) -> std::optional<measured_trial> {
    auto it = cache->find(space->to_json(config));
    if (it == cache->end() || it->second.run_id == own_run) return std::nullopt;
    measured_trial trial;
    trial.state = it->second.state;
    trial.time_ms = it->second.time_ms ? *it->second.time_ms : std::nan("");
    trial.objectives = it->second.objectives;
    trial.reused_from_run = it->second.run_id;
    trial.message = "reused from run " + std::to_string(it->second.run_id);
    return trial;
  };
}

double run_recorder::wall_elapsed(double unix_seconds) const { return std::max(0.0, unix_seconds - started_at_); }

std::string run_recorder::device_name(std::int32_t device) const {
  for (const auto& spec : options_.devices)
    if (spec.id == device) return spec.name;
  return device < 0 ? std::string() : "device" + std::to_string(device);
}

nlohmann::json run_recorder::config_json(const configuration& config) const {
  return nlohmann::json::parse(options_.space->to_json(config));
}

void run_recorder::add_devices(const std::vector<storage::device_spec>& devices) {
  options_.devices.insert(options_.devices.end(), devices.begin(), devices.end());
}

void run_recorder::started() {
  if (!publisher_) return;
  if (options_.wait_for_subscribers > 0)
    publisher_->wait_for_subscribers(options_.wait_for_subscribers, std::chrono::seconds(10));
  run_started_event e;
  e.run_id = run_id_;
  e.task = options_.spec.task_key;
  e.strategy = options_.spec.strategy;
  e.seed = options_.spec.seed;
  e.budget_trials = options_.budget_trials;
  e.budget_seconds = options_.budget_seconds;
  e.topology = options_.topology;
  e.resumed = resumed_;
  e.recorded_trials = static_cast<std::int64_t>(prior_.size());
  publisher_->publish(make_event(e));
}

namespace {
double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}
}  // namespace

void run_recorder::add(const measured_trial& trial, bool new_best) {
  trial_input input;
  input.config_json = options_.space->to_json(trial.config);
  input.state = trial.state;
  if (trial.ok()) input.time_ms = trial.time_ms;
  input.compile_s = trial.compile_s > 0 ? trial.compile_s : 0.0;
  input.run_s = trial.run_s > 0 ? trial.run_s : 0.0;
  input.device = device_name(trial.device);
  input.objectives = trial.objectives;
  if (trial.reused_from_run >= 0) input.reused_from_run = trial.reused_from_run;
  input.finished_at = unix_seconds();
  queue_.push_back(std::move(input));
  if (publisher_) queued_events_.emplace_back(trial, new_best);  // its events come after the commit
}

bool run_recorder::commit_due() const {
  return !queue_.empty() && detail::steady_seconds() - last_commit_ >= options_.commit_interval_s;
}

std::size_t run_recorder::commit() {
  if (queue_.empty()) return 0;
  auto inputs = std::move(queue_);
  auto events = std::move(queued_events_);
  queue_.clear();
  queued_events_.clear();
  last_commit_ = detail::steady_seconds();
  auto outcomes = db_->record_trials(run_id_, inputs);
  for (std::size_t i = 0; i < events.size(); ++i) {
    const auto& outcome = outcomes[i];
    if (!outcome.inserted) continue;
    const auto& [trial, new_best] = events[i];
    const auto& input = inputs[i];
    trial_finished_event e;
    e.seq = outcome.seq;
    e.config = nlohmann::json::parse(input.config_json);
    e.status = std::string(to_string(trial.state));
    if (trial.ok()) e.time_ms = trial.time_ms;
    e.compile_s = input.compile_s;
    e.run_s = input.run_s;
    e.device = input.device;
    e.elapsed_s = trial.finished_s;
    e.cached = trial.reused_from_run >= 0;
    // The time stored in the database (when the trial arrived), so that a
    // reader catching up from it and one reading these events see the same
    // time for each trial.
    e.wall_elapsed_s = wall_elapsed(outcome.finished_at);
    publisher_->publish(make_event(e));
    if (new_best) {
      new_best_event b;
      b.seq = outcome.seq;
      b.config = e.config;
      b.time_ms = trial.time_ms;
      b.elapsed_s = trial.finished_s;
      b.wall_elapsed_s = e.wall_elapsed_s;
      publisher_->publish(make_event(b));
    }
  }
  return inputs.size();
}

void run_recorder::on_progress(const progress_report& report) {
  if (!publisher_) return;
  progress_event e;
  e.trials = static_cast<std::int64_t>(report.trials);
  e.trials_per_s = report.rate;
  e.elapsed_s = report.at_s;
  for (std::size_t d = 0; d < report.device_busy.size() && d < options_.devices.size(); ++d)
    e.device_busy[options_.devices[d].name] = report.device_busy[d];
  e.compile_busy = report.compile_busy;
  e.best_time_ms = report.best_time_ms;
  e.in_flight = static_cast<std::int64_t>(report.in_flight);
  e.wall_elapsed_s = wall_elapsed(unix_seconds());
  publisher_->publish(make_event(e));
}

void run_recorder::finished(const run_summary& summary, bool interrupted) {
  commit();
  if (!interrupted) db_->finish_run(run_id_, summary.reason == "failed" ? run_state::failed : run_state::finished);
  if (!publisher_) return;
  run_finished_event e;
  e.trials = static_cast<std::int64_t>(summary.prior_trials + summary.trials);
  if (summary.best.ok()) {
    e.best_time_ms = summary.best.time_ms;
    e.best_config = config_json(summary.best.config);
  }
  e.wall_s = summary.wall_s;
  e.reason = interrupted ? "interrupted" : summary.reason == "failed" ? "error" : summary.reason;
  publisher_->publish(make_event(e));
}

}  // namespace tune::actors
