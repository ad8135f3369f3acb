// tune_engine.Strategy: the engine's strategies as ask/tell, the way Optuna
// users know it (propose, evaluate, observe).
#include "tune/engine/strategy.hpp"

#include <pybind11/stl.h>

#include <cmath>

#include "bindings.hpp"
#include "conversions.hpp"

namespace tune::python {
namespace {

struct strategy_handle {
  search_space_ptr space;
  std::unique_ptr<strategy> search;
  std::string name;
};

std::string accepted_statuses() {
  std::string out;
  for (int i = 0; i <= static_cast<int>(status::unknown); ++i)
    out += (out.empty() ? "" : ", ") + std::string(to_string(static_cast<status>(i)));
  return out;
}

strategy_handle make_handle(const std::optional<std::string>& name, const space_handle& space, py::handle seed,
                            const py::kwargs& hyper) {
  strategy_handle handle;
  handle.space = space.space;
  handle.name = name && !name->empty() ? *name : default_strategy_name();
  strategy_options options;
  options.seed = unsigned_from_python(seed, "Strategy: seed");
  options.hyper = hyper_from_python(hyper, "Strategy");
  try {
    handle.search = make_strategy(handle.name, handle.space, options);
  } catch (const std::invalid_argument& e) {
    throw py::value_error(std::string("Strategy: ") + e.what());
  }
  return handle;
}

void observe(strategy_handle& s, py::handle config, std::optional<double> time_ms, const std::string& state) {
  trial_result result;
  result.config = config_from_dict(*s.space, config, "Strategy.observe: config");
  auto parsed = status_from_string(state);
  if (!parsed)
    throw py::value_error("Strategy.observe: status '" + state + "' is unknown (accepted: " + accepted_statuses() +
                          ")");
  result.state = *parsed;
  if (result.state == status::ok) {
    if (!time_ms || !std::isfinite(*time_ms))
      throw py::value_error(
          "Strategy.observe: time_ms must be a finite number with status 'ok'; report a failure "
          "with status='runtime_error' (or another failure status)");
    result.time_ms = *time_ms;
  }
  s.search->observe(result);
}

}  // namespace

void bind_strategy(py::module_& m) {
  m.def("strategies", &strategy_names, "The names Strategy and tune accept.");
  m.def("default_strategy", &default_strategy_name, "The strategy used when none is named.");

  py::class_<strategy_handle>(m, "Strategy", R"doc(
A search strategy as ask/tell:

    s = Strategy("opevo", space, seed=1, population=16)
    for config in s.propose(8):
        s.observe(config, time_ms=measure(config))          # or status="runtime_error"

Every random choice flows from seed: the same seed and the same observations
give the same proposals. Hyperparameters are keyword arguments (numbers).
)doc")
      .def(py::init(&make_handle), py::arg("name"), py::arg("space"), py::arg("seed") = 0)
      .def_property_readonly("name", [](const strategy_handle& s) { return s.name; })
      .def(
          "propose",
          [](strategy_handle& s, py::handle n) {
            py::list out;
            for (const auto& config : s.search->propose(unsigned_from_python(n, "Strategy.propose: n")))
              out.append(config_to_dict(*s.space, config));
            return out;
          },
          py::arg("n") = 1,
          "Up to n new valid configurations as dicts (fewer, even none, when the strategy has nothing to offer).")
      .def("observe", &observe, py::arg("config"), py::arg("time_ms") = py::none(), py::arg("status") = "ok",
           "Tells how a proposed configuration did: time_ms (lower is better) with status 'ok', or a failure status "
           "such as 'compile_error' or 'runtime_error'.")
      .def("__repr__", [](const strategy_handle& s) { return "Strategy('" + s.name + "')"; });
}

}  // namespace tune::python
