// tune_engine.read_model and tune_engine.tune_model: a model's tasks under
// one trial budget (tune/model.hpp), from Python.
#include "tune/model.hpp"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "conversions.hpp"

namespace py = pybind11;

namespace tune::python {
namespace {

py::dict model_to_python(const model& m) {
  py::list tasks;
  for (const auto& t : m.tasks) {
    py::dict d;
    d["names"] = t.names;
    d["task"] = t.task.empty() ? py::object(py::none()) : py::object(py::str(t.task));
    d["dataset"] = t.dataset.empty() ? py::object(py::none()) : py::object(py::str(t.dataset));
    d["count"] = t.count;
    d["family"] = t.family;
    d["flops"] = t.flops;
    tasks.append(d);
  }
  py::dict out;
  out["name"] = m.name;
  out["origin"] = m.origin;
  out["entries"] = m.entries;
  out["tasks"] = tasks;
  return out;
}

py::object run_model(py::handle model_file, py::handle budget, py::handle seed, std::optional<std::string> strategy,
                     py::handle hyper, py::handle topology, py::handle db, std::optional<std::string> backend,
                     double time_scale, bool resume, const std::string& scheduler, py::handle round_trials,
                     py::handle confirm, bool compare_vendor, bool lease, bool auto_prior,
                     std::optional<std::string> publish, std::optional<std::string> publish_key,
                     std::size_t publish_wait, bool one_pipeline) {
  const auto path = path_from_python(model_file, "tune_model: model (the path of a model file)");
  if (path.empty()) throw py::value_error("tune_model: model is None; give the path of a model file (YAML)");
  auto kind = scheduler_kind_from_string(scheduler);
  if (!kind) throw py::value_error("tune_model: scheduler '" + scheduler + "' is neither 'gradient' nor 'round_robin'");
  model_options o;
  o.scheduler.kind = *kind;
  if (!budget.is_none()) {
    o.budget_trials = unsigned_from_python(budget, "tune_model: budget");
    if (o.budget_trials == 0) throw py::value_error("tune_model: budget is 0; give at least 1 trial, or None");
  }
  const auto round = unsigned_from_python(round_trials, "tune_model: round_trials");
  if (round == 0 || round > 1'000'000)
    throw py::value_error("tune_model: round_trials is " + std::to_string(round) + "; it must lie in 1 .. 1000000");
  o.round_trials = static_cast<std::uint32_t>(round);
  o.one_pipeline = one_pipeline;
  auto& s = o.session;
  apply_shared_arguments(s, "tune_model",
                         {seed, hyper, topology, db, confirm, strategy, backend, time_scale, resume, lease, auto_prior,
                          publish, publish_key, publish_wait});
  s.compare_vendor = compare_vendor;
  s.option_names.emplace("db_path", "db");
  model m = read_model(path);
  model_report report;
  {
    py::gil_scoped_release release;
    report = tune_model(m, std::move(o));
  }
  return to_python(report.to_json());
}

}  // namespace

void bind_model(py::module_& m) {
  m.def(
      "read_model", [](py::handle path) { return model_to_python(read_model(path_from_python(path, "read_model"))); },
      py::arg("path"), R"doc(
Reads a model file (YAML: "name" and "tasks", each with "task" (a built-in
task) or "dataset", "name" and "count") as a dict: "name", "origin",
"entries" and "tasks", identical workloads merged (counts added, every name
kept). A bad file raises ValueError naming the file, the field and the fix.
)doc");
  m.def("tune_model", &run_model, py::arg("model"), py::kw_only(), py::arg("budget") = py::none(),
        py::arg("seed") = py::none(), py::arg("strategy") = py::none(), py::arg("hyper") = py::none(),
        py::arg("topology") = py::none(), py::arg("db") = py::none(), py::arg("backend") = py::none(),
        py::arg("time_scale") = 1.0, py::arg("resume") = false, py::arg("scheduler") = "gradient",
        py::arg("round_trials") = model_options{}.round_trials, py::arg("confirm") = py::none(),
        py::arg("compare_vendor") = false, py::arg("lease") = true, py::arg("auto_prior") = true,
        py::arg("publish") = py::none(), py::arg("publish_key") = py::none(), py::arg("publish_wait") = 0,
        py::arg("one_pipeline") = false, R"doc(
Tunes the tasks of a model file under one trial budget (trials in all; None:
64 per task), in rounds of round_trials trials of the task the scheduler
("gradient", Ansor's rule, or "round_robin") picks, and returns the report as
`tune-engine tune --model --summary-json` writes it: "model", "seed",
"scheduler", "trials", "latency_ms" (sum of count x best), "tasks" (each with
"label" (the names joined), "names", "target", "count", "trials", "rounds", "best_ms",
"best_configuration", "confirmed", "run_id", with compare_vendor its
"throughput"), "trace" (after every round) and, with compare_vendor, the
model's "vendor_latency_ms" and "tuned_latency_interleaved_ms". Every task's
run is recorded in db (a temporary database without one). A task's first
round starts from the runs of its family's tasks that ran before it (its
"prior_from"); auto_prior=False starts every task cold. publish (a ZeroMQ
endpoint, e.g. "tcp://127.0.0.1:5557") streams the rounds' runs and the
model's model_progress events on one stream, as `tune --model --publish`
does (off loopback it needs publish_key, the CURVE secret key); publish_wait
waits up to 10 s for that many subscribers first. one_pipeline=True runs
every task through one pipeline (the devices shared in steady state, the
nodes' too; tasks of one backend), its "trace" a point when the latency fell, else at
most one a second.
)doc");
}

}  // namespace tune::python
