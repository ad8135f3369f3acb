// Dataset readers for replay: Kernel Tuner caches, T4 results, KTT TuningOutput.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "tune/kernels/replay.hpp"

namespace tune {
namespace {

using json = nlohmann::json;

[[noreturn]] void fail(const std::string& origin, const std::string& field, const std::string& problem) {
  throw std::invalid_argument(origin + ": " + field + ": " + problem);
}

parameter_value to_value(const json& v, const std::string& origin, const std::string& field) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? 1.0 : 0.0;
  fail(origin, field, "value " + v.dump() + " is neither a number nor a string");
}

double number(const json& obj, const char* key, const std::string& origin, const std::string& field) {
  auto it = obj.find(key);
  if (it == obj.end()) return 0.0;
  if (!it->is_number()) fail(origin, field + "." + key, "expected a number, got " + it->dump());
  return it->get<double>();
}

std::vector<double> number_list(const json& v, const std::string& origin, const std::string& field) {
  std::vector<double> out;
  if (!v.is_array()) fail(origin, field, "expected a list of numbers, got " + v.dump());
  for (const auto& x : v) {
    if (!x.is_number()) fail(origin, field, "expected a list of numbers, got element " + x.dump());
    out.push_back(x.get<double>());
  }
  return out;
}

/// Every override names a parameter of the dataset (guess_parameter checks
/// the kind it asks for).
void check_overrides(const std::vector<std::string>& names, const kind_overrides& overrides,
                     const std::string& origin) {
  for (const auto& [name, kind] : overrides)
    if (std::find(names.begin(), names.end(), name) == names.end())
      fail(origin, "kind override '" + name + "'", "no such parameter in the dataset");
}

/// Parameters from the values that occur, sorted, kinds guessed (numeric lists
/// of more than two values discrete, two-valued flags and strings categorical).
search_space space_from_rows(const std::vector<std::string>& names,
                             const std::vector<std::vector<parameter_value>>& rows, const kind_overrides& overrides,
                             const std::string& origin) {
  check_overrides(names, overrides, origin);
  std::vector<parameter_ptr> params;
  for (std::size_t p = 0; p < names.size(); ++p) {
    std::vector<parameter_value> values;
    for (const auto& row : rows)
      if (std::find(values.begin(), values.end(), row[p]) == values.end()) values.push_back(row[p]);
    std::sort(values.begin(), values.end());
    auto it = overrides.find(names[p]);
    params.push_back(guess_parameter(names[p], std::move(values), it == overrides.end() ? "" : it->second, origin,
                                     "values of " + names[p]));
  }
  return search_space(std::move(params), origin);
}

/// Adds one record; the configuration is looked up by values in `space`.
void add_record(replay_dataset& out, const search_space& space, const std::vector<parameter_value>& row,
                replay_record record, const std::string& field) {
  configuration config(space.dimension());
  for (std::size_t p = 0; p < row.size(); ++p) {
    try {
      config[p] = space.parameters()[p]->index_of(row[p]);
    } catch (const std::invalid_argument&) {
      fail(out.origin, field + "." + space.parameters()[p]->name(),
           "value " + to_string(row[p]) + " is not in the parameter's list of values");
    }
  }
  if (out.index.count(config)) fail(out.origin, field, "configuration recorded twice");
  out.index.emplace(config, out.configs.size());
  out.configs.push_back(std::move(config));
  out.records.push_back(std::move(record));
}

void finish(replay_dataset& out, search_space space) {
  if (out.configs.empty()) fail(out.origin, "configurations", "the dataset records no configuration");
  space.restrict_to(out.configs);
  out.space = std::make_shared<const search_space>(std::move(space));
}

std::optional<status> kernel_tuner_status(const std::string& text) {
  if (text == "CompilationFailedConfig") return status::compile_error;
  if (text == "RuntimeFailedConfig") return status::runtime_error;
  if (text == "InvalidConfig") return status::instantiation_error;
  return std::nullopt;
}

replay_dataset read_kernel_tuner(const json& doc, const std::string& origin, const kind_overrides& overrides) {
  replay_dataset out;
  out.origin = origin;
  out.format = "kernel_tuner";
  out.kernel = doc.value("kernel_name", "");
  out.device = doc.value("device_name", "");
  if (doc.contains("problem_size")) out.problem = doc["problem_size"].dump();
  search_space space = kernel_tuner_space_from_json(doc, origin, overrides);  // checks the overrides too
  const auto& cache = doc.at("cache");
  if (!cache.is_object()) fail(origin, "cache", "expected an object of configurations, got " + cache.dump());
  for (const auto& [key, entry] : cache.items()) {
    std::string field = "cache[\"" + key + "\"]";
    if (!entry.is_object()) fail(origin, field, "expected an object, got " + entry.dump());
    std::vector<parameter_value> row;
    for (const auto& param : space.parameters()) {
      auto it = entry.find(param->name());
      if (it == entry.end()) fail(origin, field + "." + param->name(), "missing; every entry names every tune_param");
      row.push_back(to_value(*it, origin, field + "." + param->name()));
    }
    replay_record rec;
    auto time = entry.find("time");
    if (time == entry.end()) fail(origin, field + ".time", "missing");
    if (time->is_number()) {
      rec.state = status::ok;
      rec.time_ms = time->get<double>();
      if (auto times = entry.find("times"); times != entry.end())
        rec.times_ms = number_list(*times, origin, field + ".times");
    } else if (time->is_string()) {
      auto s = kernel_tuner_status(time->get<std::string>());
      if (!s)
        fail(origin, field + ".time",
             "unknown status '" + time->get<std::string>() +
                 "'; expected a number or CompilationFailedConfig, RuntimeFailedConfig, InvalidConfig");
      rec.state = *s;
    } else {
      fail(origin, field + ".time", "expected a number or a status string, got " + time->dump());
    }
    rec.compile_s = number(entry, "compile_time", origin, field) / 1000.0;
    rec.benchmark_s = number(entry, "benchmark_time", origin, field) / 1000.0;
    rec.verification_s = number(entry, "verification_time", origin, field) / 1000.0;
    add_record(out, space, row, std::move(rec), field);
  }
  finish(out, std::move(space));
  return out;
}

std::optional<status> t4_status(const std::string& text) {
  if (text == "correct") return status::ok;
  if (text == "compile") return status::compile_error;
  if (text == "runtime") return status::runtime_error;
  if (text == "timeout") return status::run_timeout;
  if (text == "correctness") return status::wrong_answer;
  if (text == "constraints") return status::instantiation_error;
  return std::nullopt;
}

replay_dataset read_t4(const json& doc, const std::string& origin, const kind_overrides& overrides) {
  replay_dataset out;
  out.origin = origin;
  out.format = "t4";
  const auto& results = doc.at("results");
  if (!results.is_array()) fail(origin, "results", "expected a list of results");
  std::vector<std::string> names;
  std::vector<std::vector<parameter_value>> rows;
  std::vector<replay_record> records;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    std::string field = "results[" + std::to_string(i) + "]";
    if (!r.is_object() || !r.contains("configuration") || !r["configuration"].is_object())
      fail(origin, field + ".configuration", "missing or not an object");
    const auto& cfg = r["configuration"];
    if (names.empty())
      for (const auto& [k, v] : cfg.items()) names.push_back(k);
    std::vector<parameter_value> row;
    for (const auto& n : names) {
      if (!cfg.contains(n)) fail(origin, field + ".configuration." + n, "missing; every result names every parameter");
      row.push_back(to_value(cfg[n], origin, field + ".configuration." + n));
    }
    if (cfg.size() != names.size()) fail(origin, field + ".configuration", "has parameters the first result lacks");
    replay_record rec;
    std::string inval = r.value("invalidity", "");
    auto s = t4_status(inval);
    if (!s)
      fail(origin, field + ".invalidity",
           "unknown status '" + inval + "'; expected correct, compile, runtime, timeout, correctness or constraints");
    rec.state = *s;
    if (rec.state == status::ok) {
      bool found = false;
      for (const auto& m : r.value("measurements", json::array()))
        if (m.value("name", "") == "time" && m.contains("value") && m["value"].is_number()) {
          rec.time_ms = m["value"].get<double>();
          found = true;
        }
      if (!found) fail(origin, field + ".measurements", "a correct result needs a numeric 'time' measurement");
    }
    if (r.contains("times") && r["times"].is_object()) {
      const auto& t = r["times"];
      rec.compile_s = number(t, "compilation", origin, field + ".times") / 1000.0;
      rec.verification_s = number(t, "validation", origin, field + ".times") / 1000.0;
      if (t.contains("runtimes")) {
        rec.times_ms = number_list(t["runtimes"], origin, field + ".times.runtimes");
        for (double x : rec.times_ms) rec.benchmark_s += x / 1000.0;
      }
    }
    rows.push_back(std::move(row));
    records.push_back(std::move(rec));
  }
  search_space space = space_from_rows(names, rows, overrides, origin);
  for (std::size_t i = 0; i < rows.size(); ++i)
    add_record(out, space, rows[i], std::move(records[i]), "results[" + std::to_string(i) + "]");
  finish(out, std::move(space));
  return out;
}

std::optional<status> ktt_status(const std::string& text) {
  if (text == "Ok") return status::ok;
  if (text == "CompilationFailed") return status::compile_error;
  if (text == "ComputationFailed") return status::runtime_error;
  if (text == "ValidationFailed") return status::wrong_answer;
  if (text == "DeviceLimitsExceeded") return status::instantiation_error;
  return std::nullopt;
}

replay_dataset read_ktt(const json& doc, const std::string& origin, const kind_overrides& overrides) {
  replay_dataset out;
  out.origin = origin;
  out.format = "ktt";
  const auto& meta = doc.at("Metadata");
  out.device = meta.value("Device", "");
  std::string unit = meta.value("TimeUnit", "Microseconds");
  double to_ms = 0;
  if (unit == "Nanoseconds")
    to_ms = 1e-6;
  else if (unit == "Microseconds")
    to_ms = 1e-3;
  else if (unit == "Milliseconds")
    to_ms = 1.0;
  else
    fail(origin, "Metadata.TimeUnit",
         "unknown unit '" + unit + "'; expected Nanoseconds, Microseconds or Milliseconds");
  const auto& results = doc.at("Results");
  if (!results.is_array()) fail(origin, "Results", "expected a list of results");
  std::vector<std::string> names;
  std::vector<std::vector<parameter_value>> rows;
  std::vector<replay_record> records;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    std::string field = "Results[" + std::to_string(i) + "]";
    if (!r.is_object() || !r.contains("Configuration") || !r["Configuration"].is_array())
      fail(origin, field + ".Configuration", "missing or not a list of {Name, Value}");
    if (out.kernel.empty()) out.kernel = r.value("KernelName", "");
    std::vector<parameter_value> row(names.size());
    std::size_t seen = 0;
    for (const auto& pv : r["Configuration"]) {
      if (!pv.contains("Name") || !pv["Name"].is_string() || !pv.contains("Value"))
        fail(origin, field + ".Configuration", "each entry needs a Name and a Value");
      std::string name = pv["Name"].get<std::string>();
      auto it = std::find(names.begin(), names.end(), name);
      if (it == names.end()) {
        if (i != 0) fail(origin, field + ".Configuration." + name, "parameter absent from the first result");
        names.push_back(name);
        row.emplace_back();
        it = names.end() - 1;
      }
      row[it - names.begin()] = to_value(pv["Value"], origin, field + ".Configuration." + name);
      ++seen;
    }
    if (seen != names.size()) fail(origin, field + ".Configuration", "lacks parameters the first result has");
    replay_record rec;
    std::string st = r.value("Status", "");
    auto s = ktt_status(st);
    if (!s)
      fail(origin, field + ".Status",
           "unknown status '" + st +
               "'; expected Ok, CompilationFailed, ComputationFailed, ValidationFailed or DeviceLimitsExceeded");
    rec.state = *s;
    double total = number(r, "TotalDuration", origin, field);
    if (rec.state == status::ok) rec.time_ms = total * to_ms;
    // KTT records no compile time; the kernel runs once per result.
    rec.benchmark_s = total * to_ms / 1000.0;
    rec.verification_s = number(r, "ValidationOverhead", origin, field) * to_ms / 1000.0;
    rows.push_back(std::move(row));
    records.push_back(std::move(rec));
  }
  search_space space = space_from_rows(names, rows, overrides, origin);
  for (std::size_t i = 0; i < rows.size(); ++i)
    add_record(out, space, rows[i], std::move(records[i]), "Results[" + std::to_string(i) + "]");
  finish(out, std::move(space));
  return out;
}

}  // namespace

const replay_record* replay_dataset::find(const configuration& config) const {
  auto it = index.find(config);
  return it == index.end() ? nullptr : &records[it->second];
}

std::vector<double> replay_dataset::sorted_ok_times() const {
  std::vector<double> out;
  for (const auto& r : records)
    if (r.state == status::ok && std::isfinite(r.time_ms)) out.push_back(r.time_ms);
  std::sort(out.begin(), out.end());
  return out;
}

double replay_dataset::best_time_ms() const {
  auto t = sorted_ok_times();
  return t.empty() ? std::nan("") : t.front();
}

replay_dataset read_replay_dataset(const std::string& path, const kind_overrides& overrides) {
  if (!std::filesystem::is_regular_file(path))
    fail(path, "file", "no such file; give a Kernel Tuner cache, T4 results or KTT TuningOutput (.json or .json.gz)");
  json doc = read_json_file(path, true);
  if (!doc.is_object()) fail(path, "top level", "expected a JSON object");
  try {
    if (doc.contains("cache") && doc.contains("tune_params")) return read_kernel_tuner(doc, path, overrides);
    if (doc.contains("results") && doc.contains("metadata")) return read_t4(doc, path, overrides);
    if (doc.contains("Results") && doc.contains("Metadata")) return read_ktt(doc, path, overrides);
  } catch (const json::exception& e) {
    fail(path, "structure", e.what());
  }
  fail(path, "top level",
       "not a replay dataset; expected a Kernel Tuner cache (tune_params, cache), T4 results (metadata, results) or "
       "KTT TuningOutput (Metadata, Results)");
}

kind_overrides read_kind_overrides(const std::string& path) {
  json doc = read_json_file(path, false);
  if (!doc.is_object()) fail(path, "top level", "expected {\"parameter\": \"discrete\" | \"categorical\"}");
  kind_overrides out;
  for (const auto& [k, v] : doc.items()) {
    if (!v.is_string()) fail(path, k, "expected \"discrete\" or \"categorical\", got " + v.dump());
    out[k] = v.get<std::string>();
  }
  return out;
}

}  // namespace tune
