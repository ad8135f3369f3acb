#include "tune/engine/multi_task.hpp"

#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "tune/engine/nearest_configuration.hpp"

namespace tune {

configuration tagged(std::uint32_t task, const configuration& config) {
  configuration out;
  out.reserve(config.size() + 1);
  out.push_back(task);
  out.insert(out.end(), config.begin(), config.end());
  return out;
}

std::uint32_t task_of(const configuration& config) {
  if (config.empty()) throw std::invalid_argument("task_of: an empty configuration has no task");
  if (config.front() > std::numeric_limits<std::uint32_t>::max())
    throw std::invalid_argument("task_of: task index " + std::to_string(config.front()) + " is out of range");
  return static_cast<std::uint32_t>(config.front());
}

configuration untagged(const configuration& config) {
  if (config.empty()) throw std::invalid_argument("untagged: an empty configuration has no task");
  return configuration(config.begin() + 1, config.end());
}

namespace {

class multi_task_codec final : public configuration_codec {
 public:
  explicit multi_task_codec(std::vector<search_space_ptr> spaces) : spaces_(std::move(spaces)) {}

  bool is_valid(const configuration& config) const override {
    return !config.empty() && config.front() < spaces_.size() && spaces_[config.front()]->is_valid(untagged(config));
  }

  std::string to_json(const configuration& config) const override {
    if (!is_valid(config)) throw std::invalid_argument("multi-task configuration: not one of the tasks' spaces");
    nlohmann::json j;
    j["task"] = config.front();
    j["configuration"] = nlohmann::json::parse(spaces_[config.front()]->to_json(untagged(config)));
    return j.dump();
  }

  configuration from_json(const std::string& text) const override {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      throw std::invalid_argument("multi-task configuration '" + text + "': not JSON (" + e.what() + ")");
    }
    if (!j.is_object() || !j.contains("task") || !j["task"].is_number_unsigned() || !j.contains("configuration"))
      throw std::invalid_argument("multi-task configuration '" + text +
                                  "': expected {\"task\": <index>, \"configuration\": {...}}");
    const auto task = j["task"].get<std::uint64_t>();
    if (task >= spaces_.size())
      throw std::invalid_argument("multi-task configuration '" + text + "': task " + std::to_string(task) +
                                  " does not exist (" + std::to_string(spaces_.size()) + " tasks)");
    return tagged(static_cast<std::uint32_t>(task), spaces_[task]->from_json(j["configuration"].dump()));
  }

 private:
  std::vector<search_space_ptr> spaces_;
};

}  // namespace

search_space_ptr multi_task_space(std::vector<search_space_ptr> spaces) {
  if (spaces.empty()) throw std::invalid_argument("multi_task_space: no task");
  for (const auto& s : spaces)
    if (!s) throw std::invalid_argument("multi_task_space: a task has no space");
  return std::make_shared<const search_space>(std::make_shared<const multi_task_codec>(std::move(spaces)),
                                              "the tasks of a model");
}

multi_task_strategy::multi_task_strategy(std::vector<std::unique_ptr<strategy>> searches, task_scheduler scheduler,
                                         std::uint32_t round_trials)
    : searches_(std::move(searches)), scheduler_(std::move(scheduler)), round_trials_(round_trials) {
  if (searches_.size() != scheduler_.size())
    throw std::invalid_argument("multi_task_strategy: " + std::to_string(searches_.size()) + " strategies for " +
                                std::to_string(scheduler_.size()) + " tasks");
  for (const auto& s : searches_)
    if (!s) throw std::invalid_argument("multi_task_strategy: a task has no strategy");
  if (round_trials_ == 0) throw std::invalid_argument("multi_task_strategy: a round needs at least one trial");
  tasks_.resize(searches_.size());
  for (auto& t : tasks_) t.best_ms = std::nan("");
}

void multi_task_strategy::set_transfer(multi_task_transfer transfer) {
  if (transfer.spaces.size() != tasks_.size())
    throw std::invalid_argument("multi_task_strategy: " + std::to_string(transfer.spaces.size()) +
                                " spaces for the transfer of " + std::to_string(tasks_.size()) + " tasks");
  for (const auto& space : transfer.spaces)
    if (!space) throw std::invalid_argument("multi_task_strategy: a task of the transfer has no space");
  if (!transfer.remake) throw std::invalid_argument("multi_task_strategy: a transfer needs a way to remake a strategy");
  transfer_ = std::move(transfer);
}

void multi_task_strategy::start_from_family(std::size_t task) {
  if (!transfer_ || tasks_[task].observed > 0) return;
  const std::string& family = scheduler_.task(task).family;
  if (family.empty()) return;
  const search_space& space = *transfer_->spaces[task];
  std::vector<trial_result> carried;
  std::vector<std::size_t> from;
  for (std::size_t other = 0; other < tasks_.size(); ++other) {
    if (other == task || scheduler_.task(other).family != family) continue;
    const search_space& other_space = *transfer_->spaces[other];
    bool gave = false;
    for (const auto& r : tasks_[other].results) {
      std::map<std::string, parameter_value> values;
      for (auto& [name, value] : other_space.values(r.config)) values.emplace(name, value);
      auto config = nearest_configuration(space, values);
      if (!config) continue;  // a value it lacks (a category, a loop order)
      trial_result own = r;
      own.config = std::move(*config);
      carried.push_back(std::move(own));
      gave = true;
    }
    if (gave) from.push_back(other);
  }
  if (carried.empty()) return;
  if (auto made = transfer_->remake(task, merged_prior(carried), from)) searches_[task] = std::move(made);
}

std::string multi_task_strategy::name() const { return searches_.front()->name(); }

void multi_task_strategy::close_open_round() {
  if (!open_) return;
  auto& t = tasks_[*open_];
  const std::size_t task = *open_;
  open_.reset();
  open_left_ = 0;
  // A round that handed nothing out is no round.
  if (open_handed_ == 0 && !t.pending.empty()) t.pending.pop_back();
  open_handed_ = 0;
  record_finished_rounds(task);
}

void multi_task_strategy::record_finished_rounds(std::size_t task) {
  auto& t = tasks_[task];
  // The oldest round is recorded once its results are in, unless it is the
  // round still being handed out.
  while (!t.pending.empty() && t.pending.front() == 0 && !(open_ == task && t.pending.size() == 1)) {
    t.pending.pop_front();
    scheduler_.record_round(task, t.best_ms);
  }
}

std::vector<configuration> multi_task_strategy::propose(std::size_t n) {
  std::vector<configuration> out;
  if (!started_) {
    // Recorded results (a resume) count as each such task's first round.
    started_ = true;
    for (std::size_t i = 0; i < tasks_.size(); ++i)
      if (std::isfinite(tasks_[i].best_ms)) scheduler_.record_round(i, tasks_[i].best_ms);
  }
  std::vector<bool> offered_nothing(tasks_.size(), false);
  while (out.size() < n) {
    if (!open_) {
      std::vector<bool> busy(tasks_.size());
      for (std::size_t i = 0; i < tasks_.size(); ++i) busy[i] = !tasks_[i].pending.empty();
      // A task that has just offered nothing is not asked again in this call
      // (another may fill the pipeline); none left: wait for results.
      auto pick = scheduler_.next(busy, offered_nothing);
      if (!pick) break;
      if (!tasks_[*pick].opened) {
        tasks_[*pick].opened = true;
        start_from_family(*pick);
      }
      open_ = *pick;
      open_left_ = round_trials_;
      open_handed_ = 0;
      tasks_[*pick].pending.push_back(0);
    }
    const std::size_t task = *open_;
    auto& t = tasks_[task];
    auto got = searches_[task]->propose(std::min<std::size_t>(open_left_, n - out.size()));
    if (got.empty()) {
      offered_nothing[task] = true;
      // A task with nothing in flight and nothing to offer is exhausted;
      // one with results to come may offer more once they are in.
      if (t.in_flight() == 0) scheduler_.mark_done(task);
      close_open_round();
      continue;
    }
    for (auto& c : got) {
      auto tag = tagged(static_cast<std::uint32_t>(task), c);
      handed_out_.insert(tag);
      out.push_back(std::move(tag));
    }
    t.pending.back() += static_cast<std::uint32_t>(got.size());
    open_handed_ += static_cast<std::uint32_t>(got.size());
    open_left_ -= static_cast<std::uint32_t>(std::min<std::size_t>(got.size(), open_left_));
    if (open_left_ == 0) close_open_round();
  }
  return out;
}

void multi_task_strategy::observe(const trial_result& result) {
  const std::uint32_t task = task_of(result.config);
  if (task >= tasks_.size())
    throw std::invalid_argument("multi_task_strategy: a result of task " + std::to_string(task) + " of " +
                                std::to_string(tasks_.size()));
  trial_result own = result;
  own.config = untagged(result.config);
  searches_[task]->observe(own);
  auto& t = tasks_[task];
  ++t.observed;
  if (transfer_) t.results.push_back(own);
  if (result.ok() && !(result.time_ms >= t.best_ms)) t.best_ms = result.time_ms;
  if (handed_out_.erase(result.config) == 0) return;  // recorded earlier, not handed out by this run
  for (auto& left : t.pending)
    if (left > 0) {
      --left;
      break;
    }
  record_finished_rounds(task);
}

}  // namespace tune
