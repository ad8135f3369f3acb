// The Python module tune_engine.
#include <dlfcn.h>
#include <pybind11/pybind11.h>

#include <string>

#include "bindings.hpp"
#include "tune/tune.hpp"

PYBIND11_MODULE(tune_engine, m) {
  m.doc() = R"doc(tune-engine from Python: search spaces, ask/tell strategies, tuning through
the actor pipeline, and replay statistics on measured datasets.

    import tune_engine as te
    space = te.Space({"x": [1, 2, 4, 8], "y": ["a", "b"]}, constraints=["x > 1"])
    report = te.tune(lambda c: c["x"] * (2 if c["y"] == "a" else 1), space=space, budget=20, seed=1)
    report["best"]["config"]

Bad input raises ValueError naming the argument and the fix.)doc";
  m.attr("__version__") = std::string(tune::version());
  tune::python::bind_space(m);
  tune::python::bind_strategy(m);
  tune::python::bind_session(m);
  tune::python::bind_model(m);
  // The parts written in Python (tune_engine.kernel_tuner) are in the folder
  // tune_engine/ beside this file: a __path__ makes them its submodules.
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&tune::python::bind_session), &info) != 0 && info.dli_fname) {
    std::string file = info.dli_fname;
    auto slash = file.rfind('/');
    std::string folder = (slash == std::string::npos ? std::string(".") : file.substr(0, slash)) + "/tune_engine";
    pybind11::list path;
    path.append(folder);
    m.attr("__path__") = path;
  }
}
