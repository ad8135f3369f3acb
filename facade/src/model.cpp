#include "tune/model.hpp"

#include <fmt/format.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>

#include "dashboard_detail.hpp"
#include "model_detail.hpp"
#include "report_detail.hpp"
#include "sessions_together.hpp"
#include "tune/storage/event_stream.hpp"

namespace tune {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void refuse(const std::string& origin, const std::string& field, const std::string& problem) {
  throw input_error("model file " + origin + ": " + field + ": " + problem);
}

std::string scalar_text(const YAML::Node& node, const std::string& origin, const std::string& field) {
  if (!node.IsScalar()) refuse(origin, field, "must be a string");
  return node.as<std::string>();
}

/// The best vendor kernel's entry of a task's run_report::throughput; null
/// when there is none (a dataset, no comparison, no vendor library).
const nlohmann::json* best_vendor(const nlohmann::json& throughput) {
  if (!throughput.is_object() || !throughput.contains("best_vendor") || !throughput["best_vendor"].is_object())
    return nullptr;
  return &throughput["best_vendor"];
}

}  // namespace

namespace detail {

model_task builtin_task(const task_spec& spec, std::string name, double count) {
  model_task t;
  t.names.push_back(std::move(name));
  t.task = spec.to_string();
  switch (spec.op) {
    case operator_kind::matmul:
      t.family = "matmul";
      break;
    case operator_kind::batch_matmul:
      t.family = "bmm";
      break;
    case operator_kind::conv2d:
      t.family = "conv2d";
      break;
  }
  t.flops = spec.flops();
  t.count = count;
  return t;
}

void model_builder::add(const std::string& key, model_task task) {
  ++model_.entries;
  auto [it, inserted] = index_of_.emplace(key, model_.tasks.size());
  if (inserted) {
    model_.tasks.push_back(std::move(task));
    return;
  }
  auto& merged = model_.tasks[it->second];
  merged.count += task.count;
  merged.names.push_back(task.names.front());
}

}  // namespace detail

std::string model_task::label() const {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

bool onnx_supported() { return detail::onnx_supported(); }

model read_model(const std::string& path) {
  if (fs::path(path).extension() == ".onnx") return detail::read_onnx_model(path);
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw input_error("model file " + path + ": cannot be read; give the path of a YAML model file");
  } catch (const YAML::ParserException& e) {
    throw input_error("model file " + path + ": not valid YAML (" + e.msg + " at line " +
                      std::to_string(e.mark.line + 1) + ")");
  }
  if (!root.IsMap()) refuse(path, "(top level)", "must be a mapping with 'tasks:' (a list of tasks)");
  for (const auto& entry : root) {
    const auto key = entry.first.as<std::string>();
    if (key != "name" && key != "tasks" && key != "layouts")
      refuse(path, key, "unknown field; a model file has 'name', 'tasks' and 'layouts'");
  }
  model m;
  m.origin = path;
  m.name = root["name"] ? scalar_text(root["name"], path, "name") : fs::path(path).stem().string();
  // layouts: own tunes every convolution in the kernel's own layouts (the
  // task strings' ':own'), as an inference engine keeps weights packed and
  // activations blocked between layers.
  const std::string layouts = root["layouts"] ? scalar_text(root["layouts"], path, "layouts") : "plain";
  if (layouts != "plain" && layouts != "own")
    refuse(path, "layouts",
           "must be 'plain' (the tasks' NCHW tensors, conversions in the time) or 'own' (every convolution in its "
           "kernel's own layouts, conversions outside the time), not '" +
               layouts + "'");
  const auto tasks = root["tasks"];
  if (!tasks || !tasks.IsSequence() || tasks.size() == 0)
    refuse(path, "tasks", "must be a non-empty list, each item with 'task:' (e.g. matmul:128x768x768) or 'dataset:'");
  const fs::path folder = fs::absolute(path).parent_path();
  detail::model_builder builder(m);
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const auto item = tasks[i];
    const std::string where = "tasks[" + std::to_string(i) + "]";
    if (!item.IsMap()) refuse(path, where, "must be a mapping with 'task:' or 'dataset:', 'name:' and 'count:'");
    for (const auto& entry : item) {
      const auto key = entry.first.as<std::string>();
      if (key != "name" && key != "task" && key != "dataset" && key != "count")
        refuse(path, where + "." + key, "unknown field; a task has 'name', 'task' or 'dataset', and 'count'");
    }
    if (static_cast<bool>(item["task"]) == static_cast<bool>(item["dataset"]))
      refuse(path, where, "give exactly one of 'task:' (a built-in task) and 'dataset:' (a measured dataset)");
    double count = 1.0;
    if (item["count"]) {
      try {
        count = item["count"].as<double>();
      } catch (const YAML::BadConversion&) {
        count = 0;
      }
      if (!std::isfinite(count) || count <= 0)
        refuse(path, where + ".count", "must be a number > 0 (how often the task runs per inference)");
    }
    const std::string name = item["name"] ? scalar_text(item["name"], path, where + ".name") : std::string();
    if (item["task"]) {
      const auto text = scalar_text(item["task"], path, where + ".task");
      task_spec spec;
      try {
        spec = parse_task(text);
      } catch (const std::invalid_argument& e) {
        refuse(path, where + ".task", e.what());
      }
      if (layouts == "own" && spec.op == operator_kind::conv2d) spec.own_layouts = true;
      auto t = detail::builtin_task(spec, name.empty() ? spec.to_string() : name, count);
      const auto key = "task:" + t.task;
      builder.add(key, std::move(t));
      continue;
    }
    fs::path file = scalar_text(item["dataset"], path, where + ".dataset");
    if (file.is_relative()) file = folder / file;
    file = file.lexically_normal();
    if (!fs::is_regular_file(file))
      refuse(path, where + ".dataset",
             "no file " + file.string() + "; a relative path is read from the model file's folder");
    model_task t;
    t.names.push_back(name.empty() ? file.filename().string() : name);
    t.dataset = file.string();
    t.family = "dataset";
    t.count = count;
    const auto key = "dataset:" + t.dataset;  // before `t` is moved from
    builder.add(key, std::move(t));
  }
  return m;
}

model_report tune_model(const model& m, model_options options) {
  const auto& base = options.session;
  auto name = [&](const std::string& field) { return detail::option_name(base, field); };
  for (const auto& [field, set] :
       std::vector<std::pair<std::string, bool>>{{"task", !base.task.empty()},
                                                 {"dataset", !base.dataset.empty()},
                                                 {"kernel", !base.kernel.empty()},
                                                 {"workload", !base.workload.empty()},
                                                 {"space_file", !base.space_file.empty()},
                                                 {"objective", bool(base.objective)},
                                                 {"custom_backend", bool(base.custom_backend)},
                                                 {"space", bool(base.space)}})
    if (set)
      throw input_error("model " + m.origin + ": the model names the tasks; leave " + name(field) +
                        " out (one target per run)");
  if (m.tasks.empty()) throw input_error("model " + m.origin + ": no tasks");
  if (options.round_trials == 0) throw input_error("model: round_trials must be at least 1");
  try {
    validate(options.scheduler);
  } catch (const std::invalid_argument& e) {
    throw input_error(std::string("model: ") + e.what());
  }
  const std::uint64_t budget = options.budget_trials ? options.budget_trials : 64 * m.tasks.size();
  // One seed for the model: every task's run is recorded with it (a resume
  // finds each run by task, strategy and seed) and the scheduler draws from it.
  const std::uint64_t seed = base.seed ? *base.seed : detail::drawn_seed();
  options.scheduler.seed = seed;

  std::vector<scheduled_task> scheduled;
  for (const auto& t : m.tasks) scheduled.push_back({t.label(), t.count, t.flops, t.family});
  task_scheduler scheduler(scheduled, options.scheduler);

  // A task's runs must outlive a round: without a database file the rounds
  // are recorded in a temporary one, removed at the end.
  std::string db_path = base.db_path;
  fs::path temporary;
  if (db_path.empty()) {
    temporary = fs::temp_directory_path() / fmt::format("tune-model-{}-{}.db", ::getpid(), seed);
    db_path = temporary.string();
  }
  struct remove_on_exit {
    fs::path path;
    ~remove_on_exit() {
      if (path.empty()) return;
      std::error_code ec;
      for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(path.string() + suffix, ec);
    }
  } cleanup{temporary};

  // One event stream for the whole model: the rounds' runs publish on it in
  // turn and the model its progress after each round (model_progress); the
  // dashboard, when asked for, reads it and the database for the whole run.
  session_options board_options = base;
  board_options.db_path = db_path;
  std::unique_ptr<dashboard::server> board = detail::make_session_dashboard(board_options);
  std::shared_ptr<storage::event_publisher> publisher = base.publisher;
  if (!publisher && (!base.publish_endpoint.empty() || board)) {
    try {
      publisher = std::make_shared<storage::event_publisher>(
          base.publish_endpoint.empty() ? "tcp://127.0.0.1:*" : base.publish_endpoint, base.publish_key);
    } catch (const std::invalid_argument& e) {
      throw input_error(name("publish_endpoint") + ": " + e.what());
    }
  }
  // Every event on the stream says whose it is: a reader joining mid-model
  // knows a round's run_finished is not the end. An embedder's publisher
  // (session_options::publisher) is handed back without the tag.
  if (publisher) publisher->set_common_fields({{"model", m.name}});
  struct untag_on_exit {
    std::shared_ptr<storage::event_publisher> publisher;
    ~untag_on_exit() {
      if (publisher) publisher->set_common_fields(nlohmann::json::object());
    }
  } untag{publisher};
  if (board) detail::start_session_dashboard(*board, publisher->endpoint(), base);
  if (publisher && (base.publish_wait > 0 || board))
    publisher->wait_for_subscribers(base.publish_wait + (board ? 1 : 0), std::chrono::seconds(10));

  model_report report;
  report.name = m.name;
  report.unsupported = m.unsupported;
  report.not_tuned = m.not_tuned;
  report.seed = seed;
  report.scheduler = options.scheduler.kind;
  report.tasks.resize(m.tasks.size());
  for (std::size_t i = 0; i < m.tasks.size(); ++i) {
    report.tasks[i].label = m.tasks[i].label();
    report.tasks[i].names = m.tasks[i].names;
    report.tasks[i].target = m.tasks[i].task.empty() ? m.tasks[i].dataset : m.tasks[i].task;
    report.tasks[i].count = m.tasks[i].count;
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<bool> started(m.tasks.size(), false);
  std::vector<std::string> task_keys(m.tasks.size());                // each task's run_report::task_key
  std::vector<std::vector<std::string>> prior_keys(m.tasks.size());  // its prior tasks' keys
  // The labels of the tasks among `others` whose runs gave run `r` some of
  // its prior (run_report::prior_tasks_used, by task key).
  auto prior_labels = [&](const run_report& r, const std::vector<std::size_t>& others) {
    std::vector<std::string> labels;
    for (std::size_t other : others)
      if (std::find(r.prior_tasks_used.begin(), r.prior_tasks_used.end(), task_keys[other]) != r.prior_tasks_used.end())
        labels.push_back(report.tasks[other].label);
    return labels;
  };
  auto task_options = [&](std::size_t t) {
    session_options o = base;
    o.task = m.tasks[t].task;
    o.dataset = m.tasks[t].dataset;
    o.db_path = db_path;
    o.seed = seed;
    o.progress_line = false;
    o.publisher = publisher;  // the model's stream (none: no events)
    o.publish_wait = 0;
    o.dashboard_listen.clear();  // the model's dashboard serves every round
    o.dashboard_token.clear();
    o.on_dashboard = nullptr;
    return o;
  };
  // The model's progress on its stream: once before its first round, after
  // each round (the round's task), and once at the end (its end reason).
  auto publish_progress = [&](double latency_ms, std::optional<std::size_t> task, std::optional<end_reason> reason) {
    if (!publisher) return;
    storage::model_progress_event e;
    e.model = m.name;
    e.seed = seed;
    e.scheduler = std::string(to_string(options.scheduler.kind));
    e.trials = static_cast<std::int64_t>(report.trials);
    e.budget_trials = static_cast<std::int64_t>(budget);
    e.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (std::isfinite(latency_ms)) e.latency_ms = latency_ms;
    if (task) e.task = static_cast<std::int64_t>(*task);
    e.reason = reason;
    for (std::size_t i = 0; i < report.tasks.size(); ++i) {
      const auto& t = report.tasks[i];
      storage::model_task_state state;
      state.label = t.label;
      state.target = t.target;
      state.count = t.count;
      state.trials = static_cast<std::int64_t>(t.trials);
      if (t.best) state.best_ms = t.best->time_ms;
      state.run_id = t.run_id;
      state.done = scheduler.done(i);
      e.tasks.push_back(std::move(state));
    }
    publisher->publish(storage::make_event(e));
  };
  report.reason = end_reason::budget;
  publish_progress(std::nan(""), std::nullopt, std::nullopt);  // the model's start: no round yet
  if (options.one_pipeline) {
    // Every task's session at once, through one pipeline: each records its
    // run as a round does, and ends stopped for the end below.
    std::vector<std::unique_ptr<session>> sessions;
    std::vector<session*> raw;
    for (std::size_t t = 0; t < m.tasks.size(); ++t) {
      session_options o = task_options(t);
      o.resume = base.resume;
      o.budget.trials = budget + 100000;  // a cap no task reaches: the model's budget ends the pipeline
      o.confirm.top = 0;
      o.compare_vendor = false;
      o.stop_after_trials = 0;
      sessions.push_back(std::make_unique<session>(std::move(o)));
      raw.push_back(sessions.back().get());
    }
    detail::together_options together;
    together.origin = m.origin;
    together.tasks = scheduled;
    together.scheduler = options.scheduler;
    together.round_trials = options.round_trials;
    together.budget_trials = budget;
    together.transfer = base.auto_prior;
    double last_latency = std::nan(""), last_at = -1.0;
    together.on_progress = [&](const std::vector<std::uint64_t>& trials, const std::vector<double>& best_ms,
                               bool final) {
      std::uint64_t sum = 0;
      double latency = 0.0;
      for (std::size_t t = 0; t < trials.size(); ++t) {
        report.tasks[t].trials = trials[t];
        sum += trials[t];
        latency += m.tasks[t].count * best_ms[t];
        if (std::isfinite(best_ms[t])) {
          if (!report.tasks[t].best) report.tasks[t].best = trial_info{};
          report.tasks[t].best->time_ms = best_ms[t];
        }
      }
      if (sum == report.trials && (latency == last_latency || (std::isnan(latency) && std::isnan(last_latency))))
        return;  // nothing new since the last tick
      // A point when the latency fell, else at most one a second, and the last.
      const double now = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const bool fell = std::isfinite(latency) && !(latency >= last_latency);
      if (!final && !fell && now - last_at < 1.0) return;
      report.trials = sum;
      last_latency = latency;
      last_at = now;
      model_progress p;
      p.trials = sum;
      p.wall_s = now;
      p.latency_ms = latency;
      report.trace.push_back(p);
      publish_progress(latency, std::nullopt, std::nullopt);
      if (options.on_round) options.on_round(p);
    };
    auto result = detail::run_together(raw, together);
    report.trials = 0;
    for (std::size_t t = 0; t < m.tasks.size(); ++t) {
      const auto& r = result.reports[t];
      auto& task_report = report.tasks[t];
      task_report.trials = r.trials;
      task_report.run_id = r.run_id;
      task_report.best = r.best;
      task_report.rounds = result.rounds[t];
      task_keys[t] = r.task_key;
      // A task the budget never reached keeps its empty run, stopped: no end
      // to give it (a budget of 0 would be the default one).
      started[t] = r.trials > 0;
      report.trials += r.trials;
      if (result.done[t]) scheduler.mark_done(t);
    }
    // A task's prior came from its family's trials in this run (any task's).
    for (std::size_t t = 0; t < m.tasks.size(); ++t) {
      std::vector<std::size_t> others;
      for (std::size_t other = 0; other < m.tasks.size(); ++other)
        if (other != t) others.push_back(other);
      report.tasks[t].prior_from = prior_labels(result.reports[t], others);
    }
    report.reason = result.reason;
    report.device_busy = result.device_busy;
    report.compile_busy = result.compile_busy;
    if (base.stop.stop_requested() && report.reason != end_reason::failed) report.reason = end_reason::stopped;
  }
  while (!options.one_pipeline && report.trials < budget) {
    if (base.stop.stop_requested()) {
      report.reason = end_reason::stopped;
      break;
    }
    auto pick = scheduler.next();
    if (!pick) {
      report.reason = end_reason::exhausted;
      break;
    }
    const std::size_t t = *pick;
    auto& task_report = report.tasks[t];
    session_options o = task_options(t);
    // The tasks of its family that have run: the prior of its search, fixed at
    // its first round (later rounds see the same tasks' runs, grown); none
    // without auto_prior.
    std::vector<std::size_t> family;
    if (!started[t] && base.auto_prior)
      for (std::size_t other = 0; other < m.tasks.size(); ++other)
        if (started[other] && m.tasks[other].family == m.tasks[t].family) {
          family.push_back(other);
          prior_keys[t].push_back(task_keys[other]);
        }
    o.prior_tasks = prior_keys[t];
    // The first round of a task continues its earlier run only when asked
    // (a resume of the model); later rounds always continue it.
    o.resume = started[t] || base.resume;
    // The round hands out exactly its trials and ends as a stop does, so
    // that its run stays resumable; its budget is a cap no round reaches (a
    // run that ended by its budget could not be continued).
    o.budget.trials = task_report.trials + budget + 100000;
    o.confirm.top = 0;         // a round is not the end of the task's search
    o.compare_vendor = false;  // nor a time to compare
    o.stop_after_trials = std::min<std::uint64_t>(options.round_trials, budget - report.trials);
    run_report r = session(std::move(o)).run();
    if (!family.empty()) task_report.prior_from = prior_labels(r, family);
    started[t] = true;
    task_keys[t] = r.task_key;
    for (std::size_t other = 0; other < m.tasks.size(); ++other)
      if (other != t && started[other] && task_keys[other] == r.task_key)
        throw detail::same_task_key(m.origin, report.tasks[other].label, task_report.label, r.task_key);
    const std::uint64_t before = task_report.trials;
    task_report.trials = r.trials;
    task_report.run_id = r.run_id;
    task_report.best = r.best;
    ++task_report.rounds;
    // A resumed first round brings the task's recorded trials with it.
    report.trials += r.trials - before;
    if (r.reason == end_reason::exhausted || r.new_trials == 0) scheduler.mark_done(t);
    if (r.reason == end_reason::failed) {
      report.reason = end_reason::failed;
      break;
    }
    scheduler.record_round(t, r.best ? r.best->time_ms : std::nan(""));
    model_progress p;
    p.trials = report.trials;
    p.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    p.latency_ms = scheduler.weighted_latency();
    p.task = t;
    report.trace.push_back(p);
    publish_progress(p.latency_ms, t, std::nullopt);
    if (options.on_round) options.on_round(p);
  }
  report.search_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  report.one_pipeline = options.one_pipeline;
  for (std::size_t i = 0; i < m.tasks.size(); ++i) report.tasks[i].done = scheduler.done(i);
  // The end of each task's search: its run continued once more with nothing
  // left to hand out, so that it ends as a session does (its fastest trials
  // confirmed against each other, the vendor comparison when asked) and is
  // recorded as finished. A stopped model leaves its runs resumable instead.
  if (report.reason != end_reason::stopped && report.reason != end_reason::failed) {
    for (std::size_t t = 0; t < m.tasks.size(); ++t) {
      if (!started[t] || base.stop.stop_requested()) continue;
      auto& task_report = report.tasks[t];
      session_options o = task_options(t);
      o.resume = true;
      o.prior_tasks = prior_keys[t];
      o.budget.trials = task_report.trials;
      o.compare_vendor = base.compare_vendor && !m.tasks[t].task.empty();
      run_report r = session(std::move(o)).run();
      if (r.best) task_report.best = r.best;
      task_report.confirmed = !r.confirmation.empty();
      task_report.throughput = r.throughput;
    }
  }
  report.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  report.latency_ms = 0.0;
  for (std::size_t t = 0; t < m.tasks.size(); ++t)
    report.latency_ms += m.tasks[t].count * (report.tasks[t].best ? report.tasks[t].best->time_ms : std::nan(""));
  // The model against the vendors: every task's best vendor kernel and its
  // tuned kernel timed alternately (their throughputs), weighted as the model
  // runs them.
  double vendor_ms = 0.0, tuned_ms = 0.0;
  bool every_task = true;
  for (std::size_t t = 0; t < m.tasks.size(); ++t) {
    const auto* vendor = best_vendor(report.tasks[t].throughput);
    if (!vendor) {
      every_task = false;
      break;
    }
    const double flops = report.tasks[t].throughput["flops"].get<double>();
    vendor_ms += m.tasks[t].count * flops / ((*vendor)["gflops"].get<double>() * 1e6);
    tuned_ms += m.tasks[t].count * flops / ((*vendor)["tuned_gflops"].get<double>() * 1e6);
  }
  if (every_task) {
    report.vendor_latency_ms = vendor_ms;
    report.tuned_latency_interleaved_ms = tuned_ms;
  }
  publish_progress(report.latency_ms, std::nullopt, report.reason);
  if (board) detail::finish_model_dashboard(*board);
  return report;
}

nlohmann::json model_report::to_json() const {
  auto number = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  nlohmann::json j;
  j["model"] = name;
  j["seed"] = std::to_string(seed);
  j["scheduler"] = std::string(to_string(scheduler));
  j["trials"] = trials;
  j["wall_s"] = wall_s;
  j["search_s"] = search_s;
  j["one_pipeline"] = one_pipeline;
  if (one_pipeline) {
    j["device_busy"] = device_busy;
    j["compile_busy"] = compile_busy;
  }
  j["latency_ms"] = number(latency_ms);
  j["vendor_latency_ms"] = vendor_latency_ms ? nlohmann::json(*vendor_latency_ms) : nlohmann::json(nullptr);
  j["tuned_latency_interleaved_ms"] =
      tuned_latency_interleaved_ms ? nlohmann::json(*tuned_latency_interleaved_ms) : nlohmann::json(nullptr);
  j["reason"] = std::string(to_string(reason));
  j["unsupported"] = unsupported;
  j["not_tuned"] = not_tuned;
  j["tasks"] = nlohmann::json::array();
  for (const auto& t : tasks) {
    nlohmann::json tj{{"label", t.label},         {"names", t.names},          {"target", t.target}, {"count", t.count},
                      {"trials", t.trials},       {"rounds", t.rounds},        {"run_id", t.run_id}, {"done", t.done},
                      {"confirmed", t.confirmed}, {"prior_from", t.prior_from}};
    if (!t.throughput.is_null()) tj["throughput"] = t.throughput;
    tj["best_ms"] = t.best ? number(t.best->time_ms) : nlohmann::json(nullptr);
    tj["best_configuration"] = t.best ? nlohmann::json::parse(t.best->config_json) : nlohmann::json(nullptr);
    j["tasks"].push_back(std::move(tj));
  }
  j["trace"] = nlohmann::json::array();
  for (const auto& p : trace)
    j["trace"].push_back(
        {{"trials", p.trials}, {"wall_s", p.wall_s}, {"latency_ms", number(p.latency_ms)}, {"task", p.task}});
  return j;
}

std::string model_report::to_text() const {
  std::string out = fmt::format(
      "model {}: {} trials in {:.2f} s wall ({:.2f} s searching{}); ended by {}; seed {}; scheduler {}\n", name, trials,
      wall_s, search_s, one_pipeline ? ", every task through one pipeline" : ", one round at a time", to_string(reason),
      seed, to_string(scheduler));
  out += fmt::format("  {:>8}  {:>6}  {:>6}  {:>12}  {:>12}  {}\n", "count", "trials", "rounds", "best ms",
                     "count x best", "task");
  for (const auto& t : tasks) {
    const double best = t.best ? t.best->time_ms : std::nan("");
    std::string vendor;
    if (const auto* v = best_vendor(t.throughput))
      vendor = fmt::format(" · tuned / {} = {:.2f}x", (*v)["library"].get<std::string>(), (*v)["ratio"].get<double>());
    out += fmt::format("  {:>8g}  {:>6}  {:>6}  {:>12.4f}  {:>12.4f}  {} ({}){}{}{}\n", t.count, t.trials, t.rounds,
                       best, t.count * best, t.target, t.label, t.confirmed ? " · confirmed" : "",
                       t.done ? " · done" : "", vendor);
  }
  if (std::isfinite(latency_ms))
    out += fmt::format("model latency (sum of count x best): {:.4f} ms\n", latency_ms);
  else
    out += "model latency: not known (a task has no successful trial)\n";
  for (const auto& u : unsupported) out += "not tuned, no built-in task: " + u + "\n";
  if (!not_tuned.empty()) {
    out += "not tuned (not Conv, MatMul or Gemm):";
    for (const auto& n : not_tuned) out += " " + n;
    out += "\n";
  }
  if (vendor_latency_ms && tuned_latency_interleaved_ms)
    out += fmt::format(
        "against the best vendor kernel of each task, timed alternately with the tuned one: vendor {:.4f} ms, "
        "tuned {:.4f} ms, tuned / vendor = {:.2f}x\n",
        *vendor_latency_ms, *tuned_latency_interleaved_ms, *vendor_latency_ms / *tuned_latency_interleaved_ms);
  return out;
}

}  // namespace tune
