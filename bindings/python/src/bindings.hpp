#pragma once
// The parts of the tune_engine module, each defined in its own file.

#include <pybind11/pybind11.h>

namespace tune::python {

void bind_space(pybind11::module_& m);
void bind_strategy(pybind11::module_& m);
void bind_session(pybind11::module_& m);
void bind_model(pybind11::module_& m);

}  // namespace tune::python
