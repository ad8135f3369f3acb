#include "tune/storage/run_recorder.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "tune/storage/export.hpp"

namespace tune::storage {
namespace {

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string run_recorder::option_name(const std::string& field) const {
  auto it = options_.option_names.find(field);
  return it == options_.option_names.end() ? field : it->second;
}

run_recorder::run_recorder(recorder_options options) : options_(std::move(options)) {
  if (!options_.space) throw std::invalid_argument("run_recorder: no search space");
  db_ = std::make_unique<results_db>(options_.db_path);
  std::optional<run_record> previous;
  if (options_.resume)
    previous = db_->latest_resumable_run(options_.spec.task_key, options_.spec.strategy, options_.spec.seed);
  if (previous) {
    run_id_ = previous->id;
    resumed_ = true;
    prior_ = db_->trials(run_id_);
  } else {
    // The space goes with the run so that `tune-engine export` can write its
    // parameter lists (tune_params) without the task or dataset at hand.
    auto spec = options_.spec;
    spec.options_json = with_space_description(spec.options_json, *options_.space);
    run_id_ = db_->create_run(spec);
  }
  if (!db_->claim_run(run_id_))
    throw std::invalid_argument("results DB " + options_.db_path + ": run " + std::to_string(run_id_) +
                                " is being continued by another tune-engine process; wait for it to end, or start a "
                                "new run without " +
                                option_name("resume") + " (or with another " + option_name("seed") + ")");
  if (previous && !previous->running()) db_->reopen_run(run_id_);  // stopped: running again
  if (auto run = db_->find_run(run_id_)) started_at_ = run->started_at;
  if (options_.use_cache) cache_ = db_->load_cache(options_.spec.task_key, options_.spec.device_kind);
  if (options_.publisher)
    publisher_ = options_.publisher;
  else if (!options_.publish_endpoint.empty())
    publisher_ = std::make_shared<event_publisher>(options_.publish_endpoint, options_.publish_key);
}

run_recorder::~run_recorder() = default;

std::string run_recorder::endpoint() const { return publisher_ ? publisher_->endpoint() : std::string(); }

const trial_record* run_recorder::cached(const std::string& config_json) const {
  auto it = cache_.find(config_json);
  if (it == cache_.end() || it->second.run_id == run_id_) return nullptr;
  return &it->second;
}

double run_recorder::wall_elapsed(double unix_seconds) const { return std::max(0.0, unix_seconds - started_at_); }

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

void run_recorder::add(trial_record trial, double elapsed_s, bool new_best) {
  if (trial.finished_at <= 0) trial.finished_at = unix_seconds();
  if (!trial.ok()) trial.time_ms = std::nan("");  // a time counts only when ok
  if (!(trial.compile_s > 0)) trial.compile_s = 0.0;
  if (!(trial.run_s > 0)) trial.run_s = 0.0;
  queue_.push_back(std::move(trial));
  if (publisher_) queued_events_.push_back({elapsed_s, new_best});  // its events come after the commit
}

bool run_recorder::commit_due() const {
  return !queue_.empty() && steady_seconds() - last_commit_ >= options_.commit_interval_s;
}

std::size_t run_recorder::commit() {
  if (queue_.empty()) return 0;
  auto trials = std::move(queue_);
  auto events = std::move(queued_events_);
  queue_.clear();
  queued_events_.clear();
  last_commit_ = steady_seconds();
  auto outcomes = db_->record_trials(run_id_, trials);
  for (std::size_t i = 0; i < events.size(); ++i) {
    const auto& outcome = outcomes[i];
    if (!outcome.inserted) continue;
    trial_finished_event e;
    e.trial = std::move(trials[i]);
    e.trial.run_id = run_id_;
    e.trial.seq = outcome.seq;
    e.trial.finished_at = outcome.finished_at;
    e.elapsed_s = events[i].elapsed_s;
    // The time stored in the database (when the trial arrived), so that a
    // reader catching up from it and one reading these events see the same
    // time for each trial.
    e.wall_elapsed_s = wall_elapsed(outcome.finished_at);
    publisher_->publish(make_event(e));
    if (events[i].new_best) {
      new_best_event b;
      b.trial = std::move(e.trial);
      b.elapsed_s = e.elapsed_s;
      b.wall_elapsed_s = e.wall_elapsed_s;
      publisher_->publish(make_event(b));
    }
  }
  return trials.size();
}

void run_recorder::confirmed(const std::vector<confirmation_row>& rows, std::int64_t winner_seq) {
  commit();
  db_->record_confirmation(run_id_, rows, winner_seq);
}

void run_recorder::flag_drift(drift_event drift) {
  commit();
  db_->flag_drift(run_id_, drift.flagged);
  if (publisher_) publisher_->publish(make_event(drift));
}

void run_recorder::on_progress(progress_event progress) {
  if (!publisher_) return;
  progress.wall_elapsed_s = wall_elapsed(unix_seconds());
  publisher_->publish(make_event(progress));
}

void run_recorder::finished(end_reason reason, std::int64_t trials, const trial_record* best, double wall_s) {
  commit();
  db_->finish_run(run_id_, reason);
  if (!publisher_) return;
  run_finished_event e;
  e.trials = trials;
  if (best && best->ok()) {
    e.best_time_ms = best->time_ms;
    e.best_config = nlohmann::json::parse(best->config_json);
  }
  e.wall_s = wall_s;
  e.reason = reason;
  publisher_->publish(make_event(e));
}

}  // namespace tune::storage
