#include "conversions.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tune::python {

py::object to_python(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null:
    case nlohmann::json::value_t::discarded:
      return py::none();
    case nlohmann::json::value_t::boolean:
      return py::bool_(value.get<bool>());
    case nlohmann::json::value_t::number_integer:
      return py::int_(value.get<std::int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return py::int_(value.get<std::uint64_t>());
    case nlohmann::json::value_t::number_float:
      return py::float_(value.get<double>());
    case nlohmann::json::value_t::string:
      return py::str(value.get_ref<const std::string&>());
    case nlohmann::json::value_t::binary:
      return py::bytes(std::string(value.get_binary().begin(), value.get_binary().end()));
    case nlohmann::json::value_t::array: {
      py::list out;
      for (const auto& item : value) out.append(to_python(item));
      return out;
    }
    case nlohmann::json::value_t::object: {
      py::dict out;
      for (auto it = value.begin(); it != value.end(); ++it) out[py::str(it.key())] = to_python(it.value());
      return out;
    }
  }
  return py::none();
}

nlohmann::json to_json(py::handle value, const std::string& what) {
  if (value.is_none()) return nullptr;
  if (py::isinstance<py::bool_>(value)) return value.cast<bool>();
  if (py::isinstance<py::int_>(value)) return value.cast<std::int64_t>();
  if (py::isinstance<py::float_>(value)) return value.cast<double>();
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  if (py::isinstance<py::dict>(value)) {
    auto out = nlohmann::json::object();
    for (auto [key, item] : value.cast<py::dict>()) {
      if (!py::isinstance<py::str>(key))
        throw py::value_error(what + ": the key " + py::repr(key).cast<std::string>() + " is not a string");
      out[key.cast<std::string>()] = to_json(item, what + "[" + key.cast<std::string>() + "]");
    }
    return out;
  }
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    auto out = nlohmann::json::array();
    std::size_t i = 0;
    for (auto item : value) out.push_back(to_json(item, what + "[" + std::to_string(i++) + "]"));
    return out;
  }
  throw py::value_error(what + ": " + py::repr(value).cast<std::string>() +
                        " is not plain data (None, bool, int, float, str, list, tuple or dict)");
}

py::object to_python(const parameter_value& value) {
  if (auto number = std::get_if<double>(&value)) {
    if (*number == std::floor(*number) && std::abs(*number) < 1e15) return py::int_(static_cast<std::int64_t>(*number));
    return py::float_(*number);
  }
  if (auto text = std::get_if<std::string>(&value)) return py::str(*text);
  py::list out;
  for (auto part : std::get<std::vector<std::int64_t>>(value)) out.append(part);
  return out;
}

parameter_value value_from_python(py::handle value, const std::string& what) {
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    std::vector<std::int64_t> parts;
    for (auto item : value) {
      if (!py::isinstance<py::int_>(item) || py::isinstance<py::bool_>(item))
        throw py::value_error(what + ": " + py::repr(value).cast<std::string>() +
                              " holds a value that is not an int; a factorization or permutation is a list of ints");
      parts.push_back(item.cast<std::int64_t>());
    }
    return parts;
  }
  // int, float, bool, and number types of other libraries (numpy) alike.
  if (py::hasattr(value, "__float__")) return py::float_(value.cast<py::object>()).cast<double>();
  throw py::value_error(what + ": " + py::repr(value).cast<std::string>() +
                        " is not a number, a str or a list of ints");
}

py::dict config_to_dict(const search_space& space, const configuration& config) {
  py::dict out;
  for (const auto& [name, value] : space.values(config)) out[py::str(name)] = to_python(value);
  return out;
}

configuration config_from_dict(const search_space& space, py::handle config, const std::string& what) {
  if (!py::isinstance<py::dict>(config))
    throw py::value_error(what + ": expected a dict {name: value}, got " + py::repr(config).cast<std::string>());
  std::map<std::string, parameter_value> values;
  for (auto [key, item] : config.cast<py::dict>()) {
    auto name = py::str(key).cast<std::string>();
    values.emplace(name, value_from_python(item, what + "['" + name + "']"));
  }
  try {
    return space.from_values(values);
  } catch (const std::invalid_argument& e) {
    throw py::value_error(what + ": " + e.what());
  }
}

std::map<std::string, double> hyper_from_python(py::handle hyper, const std::string& what) {
  std::map<std::string, double> out;
  if (hyper.is_none()) return out;
  if (!py::isinstance<py::dict>(hyper))
    throw py::value_error(what + ": hyperparameters must be a dict {name: number}, e.g. {\"population\": 100}");
  for (auto [key, value] : hyper.cast<py::dict>()) {
    auto name = py::str(key).cast<std::string>();
    if (py::isinstance<py::str>(value) || !py::hasattr(value, "__float__"))
      throw py::value_error(what + ": hyperparameter '" + name + "' is " + py::repr(value).cast<std::string>() +
                            "; it must be a number, e.g. " + name + "=8");
    out[name] = py::float_(value.cast<py::object>()).cast<double>();
  }
  return out;
}

std::uint64_t unsigned_from_python(py::handle value, const std::string& what) {
  if (!py::isinstance<py::int_>(value) || py::isinstance<py::bool_>(value) || value.cast<py::int_>() < py::int_(0))
    throw py::value_error(what + " is " + py::repr(value).cast<std::string>() + "; it must be an int >= 0");
  return value.cast<std::uint64_t>();
}

std::string path_from_python(py::handle value, const std::string& what) {
  if (value.is_none()) return {};
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  if (py::hasattr(value, "__fspath__")) {
    auto path = value.attr("__fspath__")();
    if (py::isinstance<py::str>(path)) return path.cast<std::string>();
  }
  throw py::value_error(what + ": expected a path (str or os.PathLike), got " + py::repr(value).cast<std::string>());
}

void apply_shared_arguments(session_options& o, const std::string& who, const shared_session_arguments& a) {
  o.strategy = a.strategy.value_or("");
  o.hyper = hyper_from_python(a.hyper, who);
  if (!a.seed.is_none()) o.seed = unsigned_from_python(a.seed, who + ": seed");
  o.topology_file = path_from_python(a.topology, who + ": topology");
  o.db_path = path_from_python(a.db, who + ": db");
  o.resume = a.resume;
  o.time_scale = a.time_scale;
  o.backend_name = a.backend.value_or("");
  if (!a.confirm.is_none())
    o.confirm.top = static_cast<std::uint32_t>(std::min<std::uint64_t>(
        unsigned_from_python(a.confirm, who + ": confirm"), std::numeric_limits<std::uint32_t>::max()));
  o.lease_devices = a.lease;
  o.option_names.emplace("lease_devices", "lease");
  o.auto_prior = a.auto_prior;
  o.publish_endpoint = a.publish.value_or("");
  o.publish_key = a.publish_key.value_or("");
  o.publish_wait = a.publish_wait;
  o.option_names.emplace("publish_endpoint", "publish");
}

}  // namespace tune::python
