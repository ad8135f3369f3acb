// Readers of search-space files: NNI OpEvo spaces, T1 specs, the tune_params
// block of Kernel Tuner caches, and the format detection of read_space_file.
#include "tune/engine/readers.hpp"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "list_expr.hpp"
#include "tune/engine/constraint.hpp"

namespace tune {
namespace {

using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

[[noreturn]] void fail(const std::string& origin, const std::string& field, const std::string& problem) {
  throw std::invalid_argument(origin + ": " + field + ": " + problem);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Kernel Tuner writes its cache append-only and closes it with "}}" only at
/// the end of a run; an interrupted run leaves the entries without it.
std::string repaired_cache(std::string text) {
  while (!text.empty() && (std::isspace(static_cast<unsigned char>(text.back())) || text.back() == ','))
    text.pop_back();
  return text + "}}";
}

template <class J>
J parse_json_text(const std::string& text, const std::string& path, bool repair_truncated_cache) {
  // Deep nesting would cost the recursion of printing a value in a message.
  if (json_nesting_depth(text) > max_json_depth)
    throw std::invalid_argument(path + ": (file): arrays and objects nested more than " +
                                std::to_string(max_json_depth) + " levels deep; not a file tune-engine reads");
  try {
    return J::parse(text);
  } catch (const nlohmann::json::parse_error& first) {
    if (repair_truncated_cache) {
      try {
        return J::parse(repaired_cache(text));
      } catch (const nlohmann::json::parse_error&) {
      }
    }
    std::string what = first.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 2: …"
    auto colon = what.find("] ");
    if (colon != std::string::npos) what = what.substr(colon + 2);
    throw std::invalid_argument(path + ": (file): not valid JSON: " + what);
  }
}

template <class J>
J parse_json_file(const std::string& path, bool repair_truncated_cache) {
  return parse_json_text<J>(read_file_text(path), path, repair_truncated_cache);
}

template <class J>
parameter_value scalar_value(const J& v, const std::string& origin, const std::string& field) {
  if (v.is_number()) return v.template get<double>();
  if (v.is_string()) return v.template get<std::string>();
  if (v.is_boolean()) return v.template get<bool>() ? 1.0 : 0.0;
  fail(origin, field, "value " + v.dump() + " is neither a number, a string nor a boolean");
}

// ---------------------------------------------------------------- NNI

template <class J>
std::int64_t positive_integer(const J& v, const std::string& origin, const std::string& field, const char* what) {
  if (!v.is_number() || (!v.is_number_integer() && std::floor(v.template get<double>()) != v.template get<double>()))
    fail(origin, field, std::string("expected ") + what + ", got " + v.dump());
  auto n = v.template get<std::int64_t>();
  if (n < 1) fail(origin, field, std::string("expected ") + what + ", got " + v.dump());
  return n;
}

template <class J>
search_space nni_impl(const J& doc, const std::string& origin) {
  if (!doc.is_object() || doc.empty())
    fail(origin, "(top level)",
         "expected an object of parameters such as {\"tile\": {\"_type\": \"factor\", \"_value\": [1024, 4]}}");
  std::vector<parameter_ptr> params;
  for (const auto& [name, spec] : doc.items()) {
    std::string field = name;
    if (!spec.is_object() || !spec.contains("_type") || !spec.contains("_value"))
      fail(origin, field, "expected an object with \"_type\" and \"_value\", got " + spec.dump());
    if (!spec["_type"].is_string()) fail(origin, field + "._type", "expected a string, got " + spec["_type"].dump());
    std::string type = spec["_type"].template get<std::string>();
    const auto& value = spec["_value"];
    std::string vfield = field + "._value";
    if (type == "factor") {
      if (!value.is_array() || value.size() != 2)
        fail(origin, vfield, "expected [product, parts] such as [1024, 4], got " + value.dump());
      auto product = positive_integer(value[0], origin, vfield + "[0]", "a positive integer product");
      auto parts = positive_integer(value[1], origin, vfield + "[1]", "a positive number of parts");
      if (parts > 16) fail(origin, vfield + "[1]", "at most 16 parts are supported, got " + value[1].dump());
      params.push_back(make_factorization_parameter(name, product, static_cast<int>(parts)));
    } else if (type == "perm") {
      const auto& n_value = value.is_array() && value.size() == 1 ? value[0] : value;
      auto n = positive_integer(n_value, origin, vfield, "the number of elements to permute, such as 4 or [4]");
      if (n > 12) fail(origin, vfield, "at most 12 elements can be permuted, got " + n_value.dump());
      params.push_back(make_permutation_parameter(name, static_cast<int>(n)));
    } else if (type == "discrete" || type == "choice") {
      if (!value.is_array() || value.empty())
        fail(origin, vfield, "expected a non-empty list of values such as [0, 512, 1500], got " + value.dump());
      std::vector<parameter_value> values;
      for (std::size_t i = 0; i < value.size(); ++i)
        values.push_back(scalar_value(value[i], origin, vfield + "[" + std::to_string(i) + "]"));
      if (type == "discrete") {
        std::vector<double> numbers;
        for (std::size_t i = 0; i < values.size(); ++i) {
          auto* d = std::get_if<double>(&values[i]);
          if (!d) fail(origin, vfield + "[" + std::to_string(i) + "]", "a discrete parameter takes numbers only");
          if (std::find(numbers.begin(), numbers.end(), *d) != numbers.end())
            fail(origin, vfield, "the value " + value[i].dump() + " is listed twice");
          numbers.push_back(*d);
        }
        std::sort(numbers.begin(), numbers.end());
        params.push_back(make_discrete_parameter(name, numbers));
      } else {
        for (std::size_t i = 0; i < values.size(); ++i)
          if (std::find(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(i), values[i]) !=
              values.begin() + static_cast<std::ptrdiff_t>(i))
            fail(origin, vfield, "the value " + value[i].dump() + " is listed twice");
        params.push_back(make_categorical_parameter(name, values));
      }
    } else {
      fail(origin, field + "._type", "'" + type + "' is not supported; use factor, perm, discrete or choice");
    }
  }
  return search_space(std::move(params), origin);
}

// ---------------------------------------------------------------- Kernel Tuner

template <class J>
search_space kernel_tuner_impl(const J& cache, const std::string& origin, const kind_overrides& overrides) {
  if (!cache.is_object() || !cache.contains("tune_params"))
    fail(origin, "tune_params", "missing; a Kernel Tuner cache has a \"tune_params\" object");
  const auto& tune_params = cache["tune_params"];
  if (!tune_params.is_object() || tune_params.empty())
    fail(origin, "tune_params", "expected an object of parameter value lists, got " + tune_params.dump());
  std::vector<std::string> names;
  if (cache.contains("tune_params_keys")) {
    const auto& keys = cache["tune_params_keys"];
    if (!keys.is_array()) fail(origin, "tune_params_keys", "expected a list of names, got " + keys.dump());
    for (const auto& k : keys) {
      if (!k.is_string()) fail(origin, "tune_params_keys", "expected a list of names, got element " + k.dump());
      std::string name = k.template get<std::string>();
      if (!tune_params.contains(name))
        fail(origin, "tune_params_keys", "'" + name + "' has no value list in tune_params");
      if (std::find(names.begin(), names.end(), name) != names.end())
        fail(origin, "tune_params_keys", "'" + name + "' is listed twice");
      names.push_back(name);
    }
    if (names.size() != tune_params.size())
      fail(origin, "tune_params_keys",
           "lists " + std::to_string(names.size()) + " names, tune_params has " + std::to_string(tune_params.size()));
  } else {
    for (const auto& [name, values] : tune_params.items()) names.push_back(name);
  }
  for (const auto& [name, kind] : overrides)
    if (std::find(names.begin(), names.end(), name) == names.end())
      fail(origin, "kind override '" + name + "'", "no such parameter in tune_params");
  std::vector<parameter_ptr> params;
  for (const auto& name : names) {
    std::string field = "tune_params." + name;
    const auto& list = tune_params[name];
    if (!list.is_array()) fail(origin, field, "expected a list of values, got " + list.dump());
    std::vector<parameter_value> values;
    for (std::size_t i = 0; i < list.size(); ++i)
      values.push_back(scalar_value(list[i], origin, field + "[" + std::to_string(i) + "]"));
    auto it = overrides.find(name);
    params.push_back(guess_parameter(name, std::move(values), it == overrides.end() ? "" : it->second, origin, field));
  }
  return search_space(std::move(params), origin);
}

// ---------------------------------------------------------------- T1

template <class J>
const J& member(const J& obj, const char* key, const std::string& origin, const std::string& field) {
  if (!obj.is_object() || !obj.contains(key)) fail(origin, field, "missing");
  return obj[key];
}

template <class J>
search_space t1_impl(const J& doc, const std::string& origin) {
  const auto& cs = member(doc, "ConfigurationSpace", origin, "ConfigurationSpace");
  const auto& tps = member(cs, "TuningParameters", origin, "ConfigurationSpace.TuningParameters");
  if (!tps.is_array() || tps.empty())
    fail(origin, "ConfigurationSpace.TuningParameters", "expected a non-empty list of parameters, got " + tps.dump());
  std::vector<parameter_ptr> params;
  for (std::size_t i = 0; i < tps.size(); ++i) {
    std::string field = "ConfigurationSpace.TuningParameters[" + std::to_string(i) + "]";
    const auto& tp = tps[i];
    const auto& name_json = member(tp, "Name", origin, field + ".Name");
    if (!name_json.is_string()) fail(origin, field + ".Name", "expected a string, got " + name_json.dump());
    std::string name = name_json.template get<std::string>();
    std::string type = "int";
    if (tp.contains("Type")) {
      if (!tp["Type"].is_string()) fail(origin, field + ".Type", "expected a string, got " + tp["Type"].dump());
      type = tp["Type"].template get<std::string>();
      if (type != "int" && type != "float" && type != "string" && type != "bool")
        fail(origin, field + ".Type", "'" + type + "' is not one of int, float, string, bool");
    }
    const auto& values_json = member(tp, "Values", origin, field + ".Values");
    std::vector<parameter_value> values;
    if (values_json.is_string()) {
      try {
        values = evaluate_list_expression(values_json.template get<std::string>());
      } catch (const std::invalid_argument& e) {
        fail(origin, field + ".Values",
             "cannot read '" + values_json.template get<std::string>() + "': " + e.what() +
                 "; expected a list such as [1, 2, 4], list(range(1, 9)) or [2**i for i in range(0, 6)]");
      }
    } else if (values_json.is_array()) {
      for (std::size_t k = 0; k < values_json.size(); ++k)
        values.push_back(scalar_value(values_json[k], origin, field + ".Values[" + std::to_string(k) + "]"));
    } else {
      fail(origin, field + ".Values", "expected a list or a Python list expression, got " + values_json.dump());
    }
    for (std::size_t k = 0; k < values.size(); ++k) {
      auto* d = std::get_if<double>(&values[k]);
      bool fits = type == "string" ? !d : d && (type != "int" && type != "bool" ? true : std::floor(*d) == *d);
      if (!fits) fail(origin, field + ".Values", "value " + to_string(values[k]) + " is not of Type '" + type + "'");
    }
    params.push_back(guess_parameter(name, std::move(values), "", origin, field + ".Values"));
  }
  search_space space(std::move(params), origin);
  if (cs.contains("Conditions")) {
    const auto& conditions = cs["Conditions"];
    if (!conditions.is_array())
      fail(origin, "ConfigurationSpace.Conditions",
           "expected a list of {Expression, Parameters}, got " + conditions.dump());
    std::vector<std::string> expressions;
    for (std::size_t i = 0; i < conditions.size(); ++i) {
      std::string field = "ConfigurationSpace.Conditions[" + std::to_string(i) + "].Expression";
      const auto& e = member(conditions[i], "Expression", origin, field);
      if (!e.is_string()) fail(origin, field, "expected a string, got " + e.dump());
      expressions.push_back(e.template get<std::string>());
    }
    try {
      space.add_constraints(expressions);
    } catch (const std::invalid_argument& error) {
      // Compiled together on the way in; only a failure is worth finding the
      // condition for, to name its field.
      for (std::size_t i = 0; i < expressions.size(); ++i) {
        try {
          make_constraint_set(space, {expressions[i]});
        } catch (const std::invalid_argument& one) {
          fail(origin, "ConfigurationSpace.Conditions[" + std::to_string(i) + "].Expression", one.what());
        }
      }
      throw;
    }
  }
  return space;
}

}  // namespace

std::string read_file_text(const std::string& path, std::size_t max_bytes) {
  auto too_large = [&] {
    std::string limit =
        max_bytes % (1 << 20) == 0 ? std::to_string(max_bytes >> 20) + " MiB" : std::to_string(max_bytes) + " bytes";
    return std::invalid_argument(path + ": (file): holds more than " + limit +
                                 (ends_with(path, ".gz") ? " decompressed" : "") +
                                 "; not a file tune-engine reads (split a larger dataset)");
  };
  if (ends_with(path, ".gz")) {
    gzFile file = gzopen(path.c_str(), "rb");
    if (!file) throw std::invalid_argument(path + ": (file): cannot open; check the path");
    std::string out;
    char buffer[1 << 16];
    int n = 0;
    while ((n = gzread(file, buffer, sizeof buffer)) > 0) {
      if (out.size() + static_cast<std::size_t>(n) > max_bytes) {
        gzclose(file);
        throw too_large();
      }
      out.append(buffer, static_cast<std::size_t>(n));
    }
    int error = 0;
    const char* message = gzerror(file, &error);
    std::string what = message ? message : "";
    gzclose(file);
    if (n < 0 || (error != Z_OK && error != Z_STREAM_END))
      throw std::invalid_argument(path + ": (file): not a readable gzip file: " + what);
    return out;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument(path + ": (file): cannot open; check the path");
  std::error_code error;
  if (auto size = std::filesystem::file_size(path, error); !error && size > max_bytes) throw too_large();
  std::ostringstream out;
  out << in.rdbuf();
  if (out.tellp() > static_cast<std::streamoff>(max_bytes)) throw too_large();
  return out.str();
}

std::size_t json_nesting_depth(std::string_view text) {
  std::size_t depth = 0, deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

json read_json_file(const std::string& path, bool repair_truncated_cache) {
  return parse_json_file<json>(path, repair_truncated_cache);
}

parameter_ptr guess_parameter(const std::string& name, std::vector<parameter_value> values,
                              const std::string& override_kind, const std::string& origin, const std::string& field) {
  std::vector<parameter_value> unique;
  for (auto& v : values)
    if (std::find(unique.begin(), unique.end(), v) == unique.end()) unique.push_back(std::move(v));
  if (unique.empty()) fail(origin, field, "the list of values is empty; give at least one value");
  bool numeric = std::all_of(unique.begin(), unique.end(),
                             [](const parameter_value& v) { return std::holds_alternative<double>(v); });
  bool discrete = numeric && unique.size() > 2;
  if (!override_kind.empty()) {
    if (override_kind != "discrete" && override_kind != "categorical")
      fail(origin, "kind override '" + name + "'", "'" + override_kind + "' is not 'discrete' or 'categorical'");
    if (override_kind == "discrete" && !numeric)
      fail(origin, "kind override '" + name + "'", "a parameter with non-numeric values cannot be discrete");
    discrete = override_kind == "discrete";
  }
  if (discrete) {
    std::vector<double> numbers;
    for (const auto& v : unique) numbers.push_back(std::get<double>(v));
    std::sort(numbers.begin(), numbers.end());
    return make_discrete_parameter(name, numbers);
  }
  return make_categorical_parameter(name, unique);
}

search_space read_nni_space(const std::string& path) {
  return nni_impl(parse_json_file<ordered_json>(path, false), path);
}

search_space nni_space_from_json(const json& doc, const std::string& origin) { return nni_impl(doc, origin); }

search_space read_t1_spec(const std::string& path) { return t1_impl(parse_json_file<ordered_json>(path, false), path); }

search_space t1_space_from_json(const json& doc, const std::string& origin) { return t1_impl(doc, origin); }

search_space read_kernel_tuner_space(const std::string& path, const kind_overrides& overrides) {
  return kernel_tuner_impl(parse_json_file<ordered_json>(path, true), path, overrides);
}

search_space kernel_tuner_space_from_json(const json& cache, const std::string& origin,
                                          const kind_overrides& overrides) {
  return kernel_tuner_impl(cache, origin, overrides);
}

search_space read_space_file(const std::string& path) {
  auto doc = parse_json_file<ordered_json>(path, true);
  if (doc.is_object() && doc.contains("ConfigurationSpace")) return t1_impl(doc, path);
  if (doc.is_object() && doc.contains("tune_params")) return kernel_tuner_impl(doc, path, {});
  if (doc.is_object() && !doc.empty() &&
      std::all_of(doc.begin(), doc.end(), [](const ordered_json& v) { return v.is_object() && v.contains("_type"); }))
    return nni_impl(doc, path);
  throw std::invalid_argument(path +
                              ": (top level): not a search-space file I know; expected an NNI space "
                              "({\"name\": {\"_type\": \"factor\", \"_value\": [1024, 4]}}), a T1 spec "
                              "(ConfigurationSpace.TuningParameters) or a Kernel Tuner cache (tune_params)");
}

}  // namespace tune
