#include "tune/storage/export.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tune/storage/results_db.hpp"

namespace tune::storage {
namespace {

using ordered_json = nlohmann::ordered_json;

/// One parameter of the exported run: its name and every value it can take,
/// as JSON (numbers, strings, or integer tuples).
struct recorded_parameter {
  std::string name;
  std::vector<ordered_json> values;
};

/// The scalar columns of the export: a tuple parameter `tile` of width k
/// becomes tile_0 … tile_{k-1}.
struct exported_column {
  std::string name;
  std::vector<ordered_json> values;  ///< distinct; sorted when numeric
};

struct exported_parameter {
  std::string name;
  std::size_t width = 0;  ///< 0: a scalar (one column named like the parameter)
  std::vector<exported_column> columns;
};

nlohmann::json value_json(const parameter_value& value) {
  if (const auto* number = std::get_if<double>(&value)) {
    // The results DB writes integral numbers without a fraction; keep them
    // integers so Kernel Tuner keys read "32", not "32.0".
    if (std::fabs(*number) < 1e15 && *number == std::floor(*number)) return static_cast<std::int64_t>(*number);
    return *number;
  }
  if (const auto* text = std::get_if<std::string>(&value)) return *text;
  return std::get<std::vector<std::int64_t>>(value);
}

bool contains(const std::vector<ordered_json>& values, const ordered_json& value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

void sort_if_numeric(std::vector<ordered_json>& values) {
  if (std::all_of(values.begin(), values.end(), [](const ordered_json& v) { return v.is_number(); }))
    std::sort(values.begin(), values.end(),
              [](const ordered_json& a, const ordered_json& b) { return a.get<double>() < b.get<double>(); });
}

class run_exporter {
 public:
  run_exporter(const results_db& db, std::int64_t run_id) {
    auto run = db.find_run(run_id);
    if (!run) throw std::invalid_argument("results DB " + db.path().string() + " has no run " + std::to_string(run_id));
    run_ = *run;
    origin_ = "results DB " + db.path().string() + ", run " + std::to_string(run_id);
    trials_ = db.trials(run_id);
    if (trials_.empty()) throw std::invalid_argument(origin_ + " has no trial yet: there is nothing to export");
    for (const auto& trial : trials_) configs_.push_back(ordered_json::parse(trial.config_json));
    auto options = ordered_json::parse(run_.options_json);
    if (options.contains("space"))
      read_description(options["space"]);
    else
      read_trial_values();
    for (const auto& p : recorded_) parameters_.push_back(to_columns(p));
  }

  ordered_json kernel_tuner() const {
    ordered_json doc;
    doc["device_name"] = run_.device_kind;
    doc["kernel_name"] = run_.task_key;
    doc["tune_params_keys"] = column_names();
    doc["tune_params"] = tune_params();
    doc["objective"] = "time";
    doc["tune_engine"] = provenance();
    ordered_json cache = ordered_json::object();
    for (std::size_t t = 0; t < trials_.size(); ++t) {
      const auto& trial = trials_[t];
      auto row = columns_of(t);
      std::string key;
      ordered_json entry = ordered_json::object();
      for (const auto& [name, value] : row.items()) {
        key += (key.empty() ? "" : ",") + (value.is_string() ? value.get<std::string>() : value.dump());
        entry[name] = value;
      }
      if (trial.state == status::ok)
        entry["time"] = trial.time_ms;
      else
        entry["time"] = kernel_tuner_failure(trial.state);
      entry["compile_time"] = trial.compile_s * 1000.0;
      entry["verification_time"] = 0;
      entry["benchmark_time"] = trial.run_s * 1000.0;
      entry["strategy_time"] = 0;
      entry["framework_time"] = 0;
      entry["timestamp"] = timestamp(trial.finished_at);
      cache[key] = std::move(entry);
    }
    doc["cache"] = std::move(cache);
    return doc;
  }

  ordered_json t4() const {
    ordered_json doc;
    doc["schema_version"] = "1.0.0";
    // "miliseconds" is how Kernel Tuner and the benchmark hub's T4 files spell it.
    doc["metadata"] = {{"timeunit", "miliseconds"},
                       {"tune_params_keys", column_names()},
                       {"tune_params", tune_params()},
                       {"tune_engine", provenance()}};
    ordered_json results = ordered_json::array();
    for (std::size_t t = 0; t < trials_.size(); ++t) {
      const auto& trial = trials_[t];
      bool ok = trial.state == status::ok;
      ordered_json result;
      result["timestamp"] = timestamp(trial.finished_at);
      result["configuration"] = columns_of(t);
      // Only the mean kernel time is recorded, not the individual runs.
      result["times"] = {{"compilation", trial.compile_s * 1000.0},
                         {"framework", 0},
                         {"search_algorithm", 0},
                         {"validation", 0},
                         {"runtimes", ok ? ordered_json::array({trial.time_ms}) : ordered_json::array()}};
      result["invalidity"] = t4_invalidity(trial.state);
      result["correctness"] = ok ? 1 : 0;
      result["measurements"] = ok ? ordered_json::array({{{"name", "time"}, {"value", trial.time_ms}, {"unit", "ms"}}})
                                  : ordered_json::array();
      result["objectives"] = ordered_json::array({"time"});
      results.push_back(std::move(result));
    }
    doc["results"] = std::move(results);
    return doc;
  }

 private:
  [[noreturn]] void fail(const std::string& where, const std::string& problem) const {
    throw std::invalid_argument(origin_ + ": " + where + ": " + problem);
  }

  void read_description(const ordered_json& space) {
    const std::string field = "options.space.parameters";
    if (!space.is_object() || !space.contains("parameters") || !space["parameters"].is_array())
      fail(field, "missing or not a list; the run's options hold no readable search space");
    for (std::size_t i = 0; i < space["parameters"].size(); ++i) {
      const auto& p = space["parameters"][i];
      std::string where = field + "[" + std::to_string(i) + "]";
      if (!p.is_object() || !p.contains("name") || !p["name"].is_string() || !p.contains("values") ||
          !p["values"].is_array() || p["values"].empty())
        fail(where, "expected {\"name\": text, \"values\": [at least one value]}");
      recorded_parameter param{p["name"].get<std::string>(), {}};
      for (const auto& v : p["values"]) param.values.push_back(v);
      recorded_.push_back(std::move(param));
    }
    if (recorded_.empty()) fail(field, "the recorded space has no parameter");
  }

  /// A run recorded before its space was: the values its trials used.
  void read_trial_values() {
    for (const auto& [name, value] : configs_.front().items()) recorded_.push_back({name, {}});
    for (const auto& config : configs_)
      for (auto& param : recorded_)
        if (auto it = config.find(param.name); it != config.end() && !contains(param.values, *it))
          param.values.push_back(*it);
    for (auto& param : recorded_) sort_if_numeric(param.values);
  }

  exported_parameter to_columns(const recorded_parameter& param) const {
    exported_parameter out{param.name, 0, {}};
    std::string where = "parameter '" + param.name + "'";
    if (!param.values.front().is_array()) {
      for (const auto& v : param.values)
        if (!v.is_number() && !v.is_string()) fail(where, "value " + v.dump() + " is neither a number nor a string");
      out.columns.push_back({param.name, param.values});
      return out;
    }
    out.width = param.values.front().size();
    if (out.width == 0) fail(where, "its values are empty tuples");
    for (std::size_t i = 0; i < out.width; ++i) out.columns.push_back({param.name + "_" + std::to_string(i), {}});
    for (const auto& v : param.values) {
      if (!v.is_array() || v.size() != out.width)
        fail(where,
             "value " + v.dump() + " is not a tuple of " + std::to_string(out.width) + " numbers like the first");
      for (std::size_t i = 0; i < out.width; ++i) {
        if (!v[i].is_number_integer()) fail(where, "value " + v.dump() + " holds a part that is not an integer");
        if (!contains(out.columns[i].values, v[i])) out.columns[i].values.push_back(v[i]);
      }
    }
    for (auto& column : out.columns) sort_if_numeric(column.values);
    return out;
  }

  ordered_json column_names() const {
    std::vector<std::string> names;
    for (const auto& param : parameters_)
      for (const auto& column : param.columns) {
        if (std::find(names.begin(), names.end(), column.name) != names.end())
          fail("parameter '" + param.name + "'", "its column '" + column.name + "' clashes with another parameter");
        names.push_back(column.name);
      }
    return names;
  }

  ordered_json tune_params() const {
    ordered_json out = ordered_json::object();
    for (const auto& param : parameters_)
      for (const auto& column : param.columns) out[column.name] = column.values;
    return out;
  }

  /// The trial's values by column, in column order, checked against the space.
  ordered_json columns_of(std::size_t t) const {
    const auto& config = configs_[t];
    std::string where = "trial " + std::to_string(trials_[t].seq);
    if (!config.is_object()) fail(where, "its configuration is not a JSON object");
    ordered_json row = ordered_json::object();
    for (const auto& param : parameters_) {
      auto it = config.find(param.name);
      if (it == config.end()) fail(where, "has no value for parameter '" + param.name + "'");
      for (std::size_t i = 0; i < param.columns.size(); ++i) {
        const auto& column = param.columns[i];
        bool tuple = param.width > 0;
        if (tuple && (!it->is_array() || it->size() != param.width))
          fail(where,
               "parameter '" + param.name + "' is " + it->dump() + ", not a tuple of " + std::to_string(param.width));
        const ordered_json& value = tuple ? (*it)[i] : *it;
        if (!contains(column.values, value))
          fail(where, "value " + value.dump() + " of '" + column.name + "' is not in the recorded search space");
        row[column.name] = value;
      }
    }
    if (config.size() != parameters_.size())
      for (const auto& [name, value] : config.items())
        if (std::none_of(parameters_.begin(), parameters_.end(), [&](const auto& p) { return p.name == name; }))
          fail(where, "parameter '" + name + "' is not in the recorded search space");
    return row;
  }

  ordered_json provenance() const {
    return {{"run_id", run_.id}, {"task", run_.task_key},           {"strategy", run_.strategy},
            {"seed", run_.seed}, {"device_kind", run_.device_kind}, {"state", run_status_text(run_)}};
  }

  static std::string kernel_tuner_failure(status state) {
    switch (state) {
      case status::instantiation_error:
        return "InvalidConfig";
      case status::compile_error:
      case status::compile_error_device:
      case status::build_timeout:
        return "CompilationFailedConfig";
      default:
        return "RuntimeFailedConfig";
    }
  }

  static std::string t4_invalidity(status state) {
    switch (state) {
      case status::ok:
        return "correct";
      case status::instantiation_error:
        return "constraints";
      case status::compile_error:
      case status::compile_error_device:
        return "compile";
      case status::wrong_answer:
        return "correctness";
      case status::build_timeout:
      case status::run_timeout:
      case status::too_slow:
        return "timeout";
      default:
        return "runtime";
    }
  }

  /// "2026-11-24 01:02:03.456789+00:00", as Kernel Tuner writes them.
  static std::string timestamp(double unix_s) {
    auto whole = static_cast<std::time_t>(unix_s);
    std::tm utc{};
    gmtime_r(&whole, &utc);
    char date[32];
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S", &utc);
    char text[64];
    auto micros = static_cast<long>((unix_s - static_cast<double>(whole)) * 1e6);
    std::snprintf(text, sizeof text, "%s.%06ld+00:00", date, std::clamp(micros, 0L, 999999L));
    return text;
  }

  run_record run_;
  std::string origin_;
  std::vector<trial_record> trials_;
  std::vector<ordered_json> configs_;
  std::vector<recorded_parameter> recorded_;
  std::vector<exported_parameter> parameters_;
};

}  // namespace

std::string_view to_string(export_format format) { return format == export_format::t4 ? "t4" : "kernel-tuner"; }

namespace {
constexpr export_format all_export_formats[] = {export_format::t4, export_format::kernel_tuner};
}  // namespace

std::optional<export_format> export_format_from_string(std::string_view text) {
  for (auto format : all_export_formats)
    if (to_string(format) == text) return format;
  return std::nullopt;
}

std::vector<std::string> export_format_names() {
  std::vector<std::string> names;
  for (auto format : all_export_formats) names.emplace_back(to_string(format));
  return names;
}

nlohmann::json describe_space(const search_space& space) {
  nlohmann::json parameters = nlohmann::json::array();
  for (const auto& param : space.parameters()) {
    nlohmann::json values = nlohmann::json::array();
    for (std::uint64_t i = 0; i < param->cardinality(); ++i) values.push_back(value_json(param->value(i)));
    parameters.push_back({{"name", param->name()}, {"kind", to_string(param->kind())}, {"values", std::move(values)}});
  }
  return {{"parameters", std::move(parameters)}, {"constraints", space.constraint_expressions()}};
}

std::string with_space_description(const std::string& options_json, const search_space& space) {
  auto options = nlohmann::json::parse(options_json, nullptr, false);
  if (!options.is_object())
    throw std::invalid_argument("run options must be a JSON object, got '" + options_json + "'");
  if (!options.contains("space")) options["space"] = describe_space(space);
  return options.dump();
}

nlohmann::ordered_json export_run(const results_db& db, std::int64_t run_id, export_format format) {
  run_exporter exporter(db, run_id);
  return format == export_format::t4 ? exporter.t4() : exporter.kernel_tuner();
}

void write_export(const nlohmann::ordered_json& document, const std::filesystem::path& file) {
  auto temporary = file;
  temporary += ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(temporary);
    out << document.dump(1) << "\n";
    out.close();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(temporary, ignored);
      throw std::invalid_argument("cannot write " + file.string() +
                                  "; check that its directory exists and is writable");
    }
  }
  std::error_code ec;
  std::filesystem::rename(temporary, file, ec);
  if (ec) {
    std::filesystem::remove(temporary, ec);
    throw std::invalid_argument("cannot write " + file.string() + " (" + ec.message() + ")");
  }
}

}  // namespace tune::storage
