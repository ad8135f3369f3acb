// tune_options_* and tune_session_*: a tuning session through the actor
// pipeline (tune::session) with a C objective and a C trial callback, or a
// model's tasks under one budget (tune::tune_model, the "model" key).
#include <charconv>
#include <cmath>
#include <random>

#include "boundary.hpp"

using tune::c_api::boundary_error;
using tune::c_api::guarded;
using tune::c_api::require;

namespace {

const char* const option_keys =
    "strategy, hyper, budget, time_budget_s, seed, db, resume, topology, space_file, task, dataset, kinds, "
    "time_scale, task_name, mode, batch, lease, auto_prior, device_wait, model, scheduler, round_trials, one_pipeline, "
    "publish, "
    "publish_key, publish_wait";

std::uint64_t parse_unsigned(const std::string& key, const std::string& text) {
  std::uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size())
    throw std::invalid_argument(key + ": '" + text + "' is not an unsigned integer; e.g. \"100\"");
  return value;
}

/// A switch: "0" or "1".
bool parse_flag(const std::string& key, const std::string& text) {
  auto flag = parse_unsigned(key, text);
  if (flag > 1) throw std::invalid_argument(key + ": '" + text + "' is neither 0 nor 1");
  return flag == 1;
}

double parse_non_negative(const std::string& key, const std::string& text) {
  std::size_t used = 0;
  double value = -1;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || !std::isfinite(value) || value < 0)
    throw std::invalid_argument(key + ": '" + text + "' is not a non-negative number; e.g. \"1.5\"");
  return value;
}

void set_option(tune_options& o, const std::string& key, const std::string& value) {
  auto& s = o.options;
  if (key == "strategy")
    s.strategy = value;
  else if (key == "hyper")
    o.hyper_items.push_back(value);
  else if (key == "budget") {
    auto trials = parse_unsigned(key, value);
    if (trials == 0)
      throw std::invalid_argument(
          "budget: '0' is not a budget; give at least 1 trial, or leave budget unset for "
          "the target's default");
    s.budget.trials = trials;
  } else if (key == "time_budget_s")
    s.budget.seconds = parse_non_negative(key, value);
  else if (key == "seed")
    s.seed = parse_unsigned(key, value);
  else if (key == "db")
    s.db_path = value;
  else if (key == "publish")
    s.publish_endpoint = value;
  else if (key == "publish_key")
    s.publish_key = value;
  else if (key == "publish_wait")
    s.publish_wait = static_cast<std::size_t>(parse_unsigned(key, value));
  else if (key == "resume")
    s.resume = parse_flag(key, value);
  else if (key == "topology")
    s.topology_file = value;
  else if (key == "space_file")
    s.space_file = value;
  else if (key == "task")
    s.task = value;
  else if (key == "dataset")
    s.dataset = value;
  else if (key == "kinds")
    s.kinds_file = value;
  else if (key == "time_scale")
    s.time_scale = parse_non_negative(key, value);
  else if (key == "task_name")
    s.task_name = value;
  else if (key == "mode") {
    if (value == "steady")
      s.mode = tune::run_mode::steady;
    else if (value == "generational")
      s.mode = tune::run_mode::generational;
    else
      throw std::invalid_argument("mode: '" + value + "' is neither \"steady\" nor \"generational\"");
  } else if (key == "batch") {
    auto batch = parse_unsigned(key, value);
    if (batch == 0 || batch > 1'000'000) throw std::invalid_argument("batch: '" + value + "' must lie in 1 .. 1000000");
    s.batch = static_cast<std::uint32_t>(batch);
  } else if (key == "lease") {
    s.lease_devices = parse_flag(key, value);
  } else if (key == "auto_prior") {
    s.auto_prior = parse_flag(key, value);
  } else if (key == "device_wait") {
    if (value == "wait")
      s.device_wait = tune::device_wait_policy::wait;
    else if (value == "free")
      s.device_wait = tune::device_wait_policy::free;
    else if (value == "fail")
      s.device_wait = tune::device_wait_policy::fail;
    else
      throw std::invalid_argument("device_wait: '" + value + "' is none of \"wait\", \"free\" and \"fail\"");
  } else if (key == "model") {
    o.model_file = value;
  } else if (key == "scheduler") {
    auto kind = tune::scheduler_kind_from_string(value);
    if (!kind) throw std::invalid_argument("scheduler: '" + value + "' is neither \"gradient\" nor \"round_robin\"");
    o.scheduler = *kind;
  } else if (key == "round_trials") {
    auto trials = parse_unsigned(key, value);
    if (trials == 0 || trials > 1'000'000)
      throw std::invalid_argument("round_trials: '" + value + "' must lie in 1 .. 1000000");
    o.round_trials = static_cast<std::uint32_t>(trials);
  } else if (key == "one_pipeline") {
    o.one_pipeline = parse_flag(key, value);
  } else {
    throw std::invalid_argument("unknown key '" + key + "' (accepted: " + option_keys + ")");
  }
}

tune::objective_fn wrap_objective(tune_objective_fn objective, void* user,
                                  std::shared_ptr<tune::search_space_ptr> space) {
  return [objective, user, space](const tune::configuration& config) {
    std::string json = (*space)->to_json(config);
    int failed = 0;
    double cost = objective(json.c_str(), user, &failed);
    if (failed) throw std::runtime_error("the objective set *failed for " + json);
    return cost;
  };
}

std::function<void(const tune::trial_info&)> wrap_trial_callback(tune_trial_fn callback, void* user,
                                                                 tune::stop_source stop) {
  return [callback, user, stop](const tune::trial_info& info) {
    tune_trial trial{};
    trial.seq = info.seq;
    trial.config_json = info.config_json.c_str();
    trial.status = static_cast<tune_trial_status>(info.state);
    trial.time_ms = info.time_ms;
    trial.message = info.message.c_str();
    trial.finished_s = info.finished_s;
    trial.new_best = info.new_best ? 1 : 0;
    if (callback(&trial, user) != 0) stop.request_stop();
  };
}

void require_finished(const tune_session* session) {
  require(session, "session");
  if (!session->report && !session->model_report)
    throw boundary_error(TUNE_ERROR_STATE, "the session has not run; call tune_session_run first");
}

}  // namespace

extern "C" {

tune_status tune_options_create(tune_options** out) {
  return guarded(__func__, [&] {
    require(out, "out");
    *out = new tune_options();
  });
}

void tune_options_free(tune_options* options) { delete options; }

tune_status tune_options_set(tune_options* options, const char* key, const char* value) {
  return guarded(__func__, [&] {
    require(options, "options");
    require(key, "key");
    require(value, "value");
    set_option(*options, key, value);
  });
}

tune_status tune_options_set_space(tune_options* options, const tune_space* space) {
  return guarded(__func__, [&] {
    require(options, "options");
    require(space, "space");
    options->options.space = space->space;
  });
}

tune_status tune_options_set_objective(tune_options* options, tune_objective_fn objective, void* user_data) {
  return guarded(__func__, [&] {
    require(options, "options");
    require(reinterpret_cast<const void*>(objective), "objective");
    options->objective = objective;
    options->objective_user = user_data;
  });
}

tune_status tune_options_set_trial_callback(tune_options* options, tune_trial_fn callback, void* user_data) {
  return guarded(__func__, [&] {
    require(options, "options");
    require(reinterpret_cast<const void*>(callback), "callback");
    options->on_trial = callback;
    options->trial_user = user_data;
  });
}

tune_status tune_session_create(const tune_options* options, tune_session** out) {
  return guarded(__func__, [&] {
    require(options, "options");
    require(out, "out");
    *out = nullptr;
    tune::session_options o = options->options;
    o.hyper = tune::parse_hyper(options->hyper_items, "tune_options_set(\"hyper\")");
    // The facade calls budget.seconds "time_budget"; this API's key is time_budget_s.
    o.option_names.emplace("time_budget", "time_budget_s");
    o.option_names.emplace("publish_endpoint", "publish");
    // The objective sees the space the session reads (space or space_file),
    // known only once the session is built and before it runs.
    auto space = std::make_shared<tune::search_space_ptr>();
    if (options->objective) o.objective = wrap_objective(options->objective, options->objective_user, space);
    if (options->on_trial) o.on_trial = wrap_trial_callback(options->on_trial, options->trial_user, o.stop);
    auto handle = std::make_unique<tune_session>();
    if (!options->model_file.empty()) {
      handle->model = tune::read_model(options->model_file);
      auto& mo = handle->model_options;
      mo.budget_trials = o.budget.trials;
      mo.scheduler.kind = options->scheduler;
      mo.round_trials = options->round_trials;
      mo.one_pipeline = options->one_pipeline;
      // Drawn here (all 64 bits, as a session draws its own), so that
      // tune_session_seed tells it before the run.
      if (!o.seed) {
        std::random_device entropy;
        o.seed = (std::uint64_t{entropy()} << 32) ^ entropy();
      }
      mo.session = std::move(o);
      *out = handle.release();
      return;
    }
    handle->session = std::make_unique<tune::session>(std::move(o));
    *space = handle->session->space();
    *out = handle.release();
  });
}

void tune_session_free(tune_session* session) { delete session; }

tune_status tune_session_run(tune_session* session) {
  return guarded(__func__, [&] {
    require(session, "session");
    if (session->started) throw boundary_error(TUNE_ERROR_STATE, "the session has run already; create another");
    session->started = true;
    if (session->model) {
      session->model_report = tune::tune_model(*session->model, session->model_options);
      session->report_json = session->model_report->to_json().dump();
      return;
    }
    session->report = session->session->run();
    session->report_json = session->report->to_json().dump();
    if (session->report->best) session->best_json = session->report->best->config_json;
  });
}

tune_status tune_session_request_stop(tune_session* session) {
  return guarded(__func__, [&] {
    require(session, "session");
    if (session->model)
      session->model_options.session.stop.request_stop();
    else
      session->session->request_stop();
  });
}

tune_status tune_session_seed(const tune_session* session, uint64_t* out) {
  return guarded(__func__, [&] {
    require(session, "session");
    require(out, "out");
    *out = session->model ? *session->model_options.session.seed : session->session->seed();
  });
}

tune_status tune_session_end_reason(const tune_session* session, tune_end_reason* out) {
  return guarded(__func__, [&] {
    require(out, "out");
    require_finished(session);
    *out =
        static_cast<tune_end_reason>(session->model_report ? session->model_report->reason : session->report->reason);
  });
}

tune_status tune_session_trial_count(const tune_session* session, uint64_t* out) {
  return guarded(__func__, [&] {
    require(out, "out");
    require_finished(session);
    *out = session->model_report ? session->model_report->trials : session->report->trials;
  });
}

tune_status tune_session_best(const tune_session* session, const char** config_json, double* time_ms) {
  return guarded(__func__, [&] {
    require_finished(session);
    if (session->model_report)
      throw boundary_error(TUNE_ERROR_STATE,
                           "a model has a best configuration per task: read \"tasks\" in tune_session_report_json");
    const auto& report = *session->report;
    if (!report.best) throw boundary_error(TUNE_ERROR_STATE, "no trial succeeded, so there is no best configuration");
    if (config_json) *config_json = session->best_json.c_str();
    if (time_ms) *time_ms = report.best->time_ms;
  });
}

tune_status tune_session_report_json(const tune_session* session, const char** json) {
  return guarded(__func__, [&] {
    require(json, "json");
    require_finished(session);
    *json = session->report_json.c_str();
  });
}

}  // extern "C"
