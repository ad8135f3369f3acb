// tune_engine.Space: a search space read from a file or built from a dict.
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "conversions.hpp"
#include "tune/engine/readers.hpp"

namespace tune::python {
namespace {

const char* const space_forms =
    "a list of values such as [1, 2, 4, 8] or [\"a\", \"b\"], or an NNI spec such as "
    "{\"_type\": \"factor\", \"_value\": [1024, 4]}";

parameter_ptr parameter_from_python(const std::string& name, py::handle spec, const std::string& kind) {
  const std::string field = "Space: parameter '" + name + "'";
  if (py::isinstance<py::dict>(spec)) {
    if (!kind.empty()) throw py::value_error(field + ": kinds applies to value lists only, not to an NNI spec");
    nlohmann::json doc = {{name, to_json(spec, field)}};
    return nni_space_from_json(doc, "Space").parameters().at(0);
  }
  if (py::isinstance<py::str>(spec) || !py::isinstance<py::iterable>(spec))
    throw py::value_error(field + ": " + py::repr(spec).cast<std::string>() + " is not " + space_forms);
  std::vector<parameter_value> values;
  for (auto item : spec) values.push_back(value_from_python(item, field));
  if (values.empty()) throw py::value_error(field + ": the list of values is empty; give at least one value");
  return guess_parameter(name, std::move(values), kind, "Space", name);
}

space_handle space_from_python(const py::dict& parameters, const std::vector<std::string>& constraints,
                               const std::map<std::string, std::string>& kinds) {
  if (parameters.empty())
    throw py::value_error(std::string("Space: no parameters; give a dict {name: values}, each being ") + space_forms);
  std::vector<parameter_ptr> built;
  for (auto [key, spec] : parameters) {
    if (!py::isinstance<py::str>(key))
      throw py::value_error("Space: the parameter name " + py::repr(key).cast<std::string>() + " is not a str");
    auto name = key.cast<std::string>();
    auto kind = kinds.find(name);
    built.push_back(parameter_from_python(name, spec, kind == kinds.end() ? std::string() : kind->second));
  }
  for (const auto& [name, kind] : kinds)
    if (!parameters.contains(name))
      throw py::value_error("Space: kinds names '" + name + "', which is not a parameter");
  auto space = std::make_shared<search_space>(std::move(built), "Space");
  try {
    space->add_constraints(constraints);
  } catch (const std::invalid_argument& e) {
    throw py::value_error(std::string("Space: constraints: ") + e.what());
  }
  return {space};
}

py::dict parameter_description(const parameter& p) {
  py::dict out;
  out["name"] = p.name();
  out["kind"] = to_string(p.kind());
  out["size"] = p.cardinality();
  return out;
}

}  // namespace

void bind_space(py::module_& m) {
  py::class_<space_handle>(m, "Space", R"doc(
A search space: named parameters and constraints over their values.

    Space({"x": [1, 2, 4, 8], "y": ["a", "b"]}, constraints=["x > 1"])
    Space({"tile": {"_type": "factor", "_value": [1024, 4]}})
    Space.from_file("data/specs/convolution_milo_T1.json")

Numeric lists of more than two values are ordered (discrete) parameters; flags,
strings and two-valued lists are categorical, unless kinds={"x": "categorical"}
says otherwise. Constraints are Python expressions over parameter names.
)doc")
      .def(py::init(&space_from_python), py::arg("parameters"), py::arg("constraints") = std::vector<std::string>{},
           py::arg("kinds") = std::map<std::string, std::string>{})
      .def_static(
          "from_file",
          [](py::handle path) {
            return space_handle{
                std::make_shared<const search_space>(read_space_file(path_from_python(path, "Space.from_file: path")))};
          },
          py::arg("path"), "Reads an NNI space, a T1 spec or a Kernel Tuner cache's tune_params.")
      .def_property_readonly("names",
                             [](const space_handle& s) {
                               std::vector<std::string> names;
                               for (const auto& p : s.space->parameters()) names.push_back(p->name());
                               return names;
                             })
      .def_property_readonly(
          "parameters",
          [](const space_handle& s) {
            py::list out;
            for (const auto& p : s.space->parameters()) out.append(parameter_description(*p));
            return out;
          },
          "[{'name', 'kind', 'size'}, ...] in the space's order")
      .def(
          "values",
          [](const space_handle& s, const std::string& name) {
            auto index = s.space->find(name);
            if (!index) throw py::key_error("Space.values: '" + name + "' is not a parameter");
            const auto& p = *s.space->parameters()[*index];
            if (p.cardinality() > 1'000'000)
              throw py::value_error("Space.values: '" + name + "' has " + std::to_string(p.cardinality()) +
                                    " values, too many to list");
            py::list out;
            for (std::uint64_t i = 0; i < p.cardinality(); ++i) out.append(to_python(p.value(i)));
            return out;
          },
          py::arg("name"), "Every value of one parameter, in index order.")
      .def_property_readonly("constraints", [](const space_handle& s) { return s.space->constraint_expressions(); })
      .def_property_readonly(
          "cartesian_size", [](const space_handle& s) { return s.space->cartesian_size(); },
          "Product of the parameters' sizes; None beyond 2**64.")
      .def(
          "count_valid", [](const space_handle& s, std::uint64_t limit) { return s.space->count_valid(limit); },
          py::arg("limit") = 20'000'000,
          "Configurations satisfying every constraint; None when the product exceeds limit.")
      .def(
          "is_valid",
          [](const space_handle& s, py::handle config) {
            return s.space->is_valid(config_from_dict(*s.space, config, "Space.is_valid: config"));
          },
          py::arg("config"))
      .def_property_readonly("origin", [](const space_handle& s) { return s.space->origin(); })
      .def("__len__", [](const space_handle& s) { return s.space->dimension(); })
      .def("__repr__", [](const space_handle& s) {
        std::string text = "Space(";
        for (const auto& p : s.space->parameters())
          text += (text.size() > 6 ? ", " : "") + p->name() + ": " + to_string(p->kind()) + "[" +
                  std::to_string(p->cardinality()) + "]";
        return text + ")";
      });
}

}  // namespace tune::python
