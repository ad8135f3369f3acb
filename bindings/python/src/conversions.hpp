#pragma once
// Values between the engine and Python: results become plain dicts, lists,
// numbers and strings; configurations are dicts {"name": value}.

#include <pybind11/pybind11.h>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "tune/engine/space.hpp"
#include "tune/tune.hpp"

namespace tune::python {

namespace py = pybind11;

/// A Space as Python holds it: an immutable engine space.
struct space_handle {
  search_space_ptr space;
};

/// JSON to dict / list / int / float / str / bool / None.
py::object to_python(const nlohmann::json& value);
/// Plain Python data (dict, list, tuple, numbers, str, bool, None) to JSON;
/// throws py::value_error naming `what` for anything else.
nlohmann::json to_json(py::handle value, const std::string& what);

/// A parameter value: an integral number becomes an int, a tuple a list.
py::object to_python(const parameter_value& value);
/// Throws py::value_error naming `what` when the value is none of a number,
/// a string or a sequence of integers.
parameter_value value_from_python(py::handle value, const std::string& what);

/// {"name": value, ...} in the space's order.
py::dict config_to_dict(const search_space& space, const configuration& config);
/// Throws py::value_error naming `what` and the parameter.
configuration config_from_dict(const search_space& space, py::handle config, const std::string& what);

/// Hyperparameters {name: number} (a dict or **kwargs); None gives none.
/// Throws py::value_error naming `what` and the hyperparameter.
std::map<std::string, double> hyper_from_python(py::handle hyper, const std::string& what);

/// A non-negative int (bool refused); throws py::value_error naming `what`.
std::uint64_t unsigned_from_python(py::handle value, const std::string& what);

/// A path given as str or os.PathLike; "" for None.
std::string path_from_python(py::handle value, const std::string& what);

/// The keyword arguments Session and tune_model both take.
struct shared_session_arguments {
  py::handle seed, hyper, topology, db, confirm;
  std::optional<std::string> strategy, backend;
  double time_scale = 1.0;
  bool resume = false;
  bool lease = true;
  bool auto_prior = true;
  std::optional<std::string> publish, publish_key;
  std::size_t publish_wait = 0;
};
/// Sets those options; a bad value raises py::value_error naming `who`
/// ("Session", "tune_model") and the argument.
void apply_shared_arguments(session_options& o, const std::string& who, const shared_session_arguments& a);

}  // namespace tune::python
