// A node's task as the JSON text that crosses the network (nodes.hpp).
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "tune/actors/nodes.hpp"

namespace tune::actors {
namespace {

[[noreturn]] void bad(const std::string& field, const std::string& problem) {
  throw std::invalid_argument("the task's '" + field + "' " + problem);
}

template <class T>
T get(const nlohmann::json& doc, const std::string& field, bool (nlohmann::json::*is)() const noexcept,
      const char* expected, T fallback) {
  if (!doc.contains(field)) return fallback;
  if (!(doc[field].*is)()) bad(field, std::string("is not ") + expected);
  return doc[field].get<T>();
}

}  // namespace

std::string node_task::to_json() const {
  const char* kind_name = kind == kind_t::task ? "task" : kind == kind_t::replay ? "replay" : "multi";
  nlohmann::json doc = {{"kind", kind_name}, {"seed", seed}};
  if (kind == kind_t::multi) {
    doc["parts"] = nlohmann::json::array();
    for (const auto& part : parts) doc["parts"].push_back(nlohmann::json::parse(part.to_json()));
    doc["part_bytes"] = part_bytes;
    doc["time_scale"] = time_scale;
  } else if (kind == kind_t::task) {
    doc["task"] = task;
    doc["threads"] = threads;
  } else {
    doc["dataset_name"] = dataset_name;
    doc["kinds"] = kinds;
    doc["time_scale"] = time_scale;
  }
  if (timeouts) {
    doc["compile_timeout_s"] = timeouts->compile_s;
    doc["run_timeout_s"] = timeouts->run_s;
  }
  if (measurement)
    doc["measurement"] = {{"min_time_s", measurement->min_time_s},
                          {"min_repeats", measurement->min_repeats},
                          {"max_repeats", measurement->max_repeats},
                          {"flush_cache", measurement->flush_cache},
                          {"statistic", to_string(measurement->statistic)}};
  if (!devices.empty()) doc["devices"] = devices;
  doc["early_stop"] = {{"slow_factor", early_stop.slow_factor},
                       {"min_slow_ms", early_stop.min_slow_ms},
                       {"margin", early_stop.margin},
                       {"first_limit_ms", early_stop.first_limit_ms}};
  return doc.dump();
}

node_task node_task::from_json(const std::string& text) {
  auto doc = nlohmann::json::parse(text, nullptr, false);
  if (!doc.is_object()) throw std::invalid_argument("the task is not a JSON object");
  node_task out;
  auto kind = get<std::string>(doc, "kind", &nlohmann::json::is_string, "a string", "");
  if (kind == "task")
    out.kind = kind_t::task;
  else if (kind == "replay")
    out.kind = kind_t::replay;
  else if (kind == "multi")
    out.kind = kind_t::multi;
  else
    bad("kind", "is '" + kind +
                    "'; a node builds 'task' (a built-in kernel), 'replay' (a measured dataset) or 'multi' (several)");
  out.seed = get<std::uint64_t>(doc, "seed", &nlohmann::json::is_number_unsigned, "an unsigned integer", 0);
  if (out.kind == kind_t::multi) {
    if (!doc.contains("parts") || !doc["parts"].is_array() || doc["parts"].empty())
      bad("parts", "must be a non-empty array of tasks");
    if (!doc.contains("part_bytes") || !doc["part_bytes"].is_array() || doc["part_bytes"].size() != doc["parts"].size())
      bad("part_bytes", "must be an array with one byte count per part");
    for (std::size_t i = 0; i < doc["parts"].size(); ++i) {
      const auto& bytes = doc["part_bytes"][i];
      if (!bytes.is_number_unsigned()) bad("part_bytes", "holds " + bytes.dump() + ", not a byte count");
      node_task part;
      try {
        part = from_json(doc["parts"][i].dump());
      } catch (const std::invalid_argument& e) {
        bad("parts[" + std::to_string(i) + "]", std::string("is wrong: ") + e.what());
      }
      if (part.kind == kind_t::multi) bad("parts[" + std::to_string(i) + "]", "is itself a multi task");
      if (!out.parts.empty() && part.kind != out.parts.front().kind)
        bad("parts[" + std::to_string(i) + "]", "is of another kind than parts[0] (one backend per run)");
      out.parts.push_back(std::move(part));
      out.part_bytes.push_back(bytes.get<std::uint64_t>());
    }
    out.time_scale = get<double>(doc, "time_scale", &nlohmann::json::is_number, "a number", 1.0);
    if (!(out.time_scale >= 0)) bad("time_scale", "must be >= 0");
  } else if (out.kind == kind_t::task) {
    out.task = get<std::string>(doc, "task", &nlohmann::json::is_string, "a string", "");
    if (out.task.empty()) bad("task", "is missing (e.g. matmul:64x64x64)");
    out.threads = get<int>(doc, "threads", &nlohmann::json::is_number_integer, "an integer", 1);
    if (out.threads < 1 || out.threads > 1024) bad("threads", "must be from 1 to 1024");
  } else {
    out.dataset_name = get<std::string>(doc, "dataset_name", &nlohmann::json::is_string, "a string", "dataset.json");
    const auto& name = out.dataset_name;
    if (name.empty() || name.find('/') != std::string::npos || name.find("..") != std::string::npos)
      bad("dataset_name", "'" + name + "' is not a plain file name");
    if (doc.contains("kinds")) {
      if (!doc["kinds"].is_object()) bad("kinds", "is not an object");
      for (const auto& [parameter, value] : doc["kinds"].items()) {
        if (!value.is_string()) bad("kinds", "holds a value that is not a string (" + parameter + ")");
        out.kinds[parameter] = value.get<std::string>();
      }
    }
    out.time_scale = get<double>(doc, "time_scale", &nlohmann::json::is_number, "a number", 1.0);
    if (!(out.time_scale >= 0)) bad("time_scale", "must be >= 0");
  }
  if (doc.contains("compile_timeout_s") || doc.contains("run_timeout_s")) {
    tune::timeouts limits;
    limits.compile_s = get<double>(doc, "compile_timeout_s", &nlohmann::json::is_number, "a number", limits.compile_s);
    limits.run_s = get<double>(doc, "run_timeout_s", &nlohmann::json::is_number, "a number", limits.run_s);
    if (!(limits.compile_s > 0) || !(limits.run_s > 0)) bad("compile_timeout_s/run_timeout_s", "must be > 0");
    out.timeouts = limits;
  }
  if (doc.contains("early_stop")) {
    const auto& stop = doc["early_stop"];
    if (!stop.is_object()) bad("early_stop", "is not an object");
    auto& policy = out.early_stop;
    policy.slow_factor = get<double>(stop, "slow_factor", &nlohmann::json::is_number, "a number", policy.slow_factor);
    policy.min_slow_ms = get<double>(stop, "min_slow_ms", &nlohmann::json::is_number, "a number", policy.min_slow_ms);
    policy.margin = get<double>(stop, "margin", &nlohmann::json::is_number, "a number", policy.margin);
    policy.first_limit_ms =
        get<double>(stop, "first_limit_ms", &nlohmann::json::is_number, "a number", policy.first_limit_ms);
    if (!(policy.slow_factor >= 0) || !(policy.min_slow_ms >= 0) || !(policy.margin >= 0) ||
        !(policy.first_limit_ms >= 0))
      bad("early_stop", "holds a negative number");
  }
  if (doc.contains("measurement")) {
    const auto& m = doc["measurement"];
    if (!m.is_object()) bad("measurement", "is not an object");
    tune::measurement_protocol p;
    p.min_time_s = get<double>(m, "min_time_s", &nlohmann::json::is_number, "a number", p.min_time_s);
    p.min_repeats = get<int>(m, "min_repeats", &nlohmann::json::is_number_integer, "an integer", p.min_repeats);
    p.max_repeats = get<int>(m, "max_repeats", &nlohmann::json::is_number_integer, "an integer", p.max_repeats);
    p.flush_cache = get<bool>(m, "flush_cache", &nlohmann::json::is_boolean, "true or false", p.flush_cache);
    auto statistic = get<std::string>(m, "statistic", &nlohmann::json::is_string, "median or min", "median");
    if (auto parsed = tune::time_statistic_from_string(statistic))
      p.statistic = *parsed;
    else
      bad("measurement.statistic", "is '" + statistic + "', not median or min");
    if (auto problem = tune::measurement_problem(p); !problem.empty()) bad("measurement", "is wrong: " + problem);
    out.measurement = p;
  }
  if (doc.contains("devices")) {
    if (!doc["devices"].is_array()) bad("devices", "is not an array");
    for (const auto& index : doc["devices"]) {
      if (!index.is_number_unsigned() || index.get<std::uint64_t>() > 1u << 20)
        bad("devices", "holds " + index.dump() + ", not a device index");
      out.devices.push_back(index.get<std::uint32_t>());
    }
  }
  return out;
}

}  // namespace tune::actors
