// tune_engine.Session / tune / replay: the facade's session through the real
// actor pipeline. The pipeline runs on a thread of its own with the GIL
// released; Python is entered only to call the objective and the callbacks,
// and the calling thread wakes every 50 ms to let Ctrl-C through.
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <limits>
#include <map>
#include <mutex>
#include <thread>

#include "bindings.hpp"
#include "conversions.hpp"
#include "tune/kernels/cpu_backend.hpp"
#include "tune/kernels/devices.hpp"
#include "tune/kernels/user_kernel.hpp"
#include "tune/storage/export.hpp"
#include "tune/storage/results_db.hpp"
#include "tune/tune.hpp"

namespace tune::python {
namespace {

/// Holds the GIL on a pipeline thread for one call into Python. The thread's
/// Python thread state is made on its first call and kept until the thread
/// ends: a thread state made and dropped per call (what gil_scoped_acquire
/// does on a thread Python did not start) made a call 77 us instead of 2 us
/// (bench/bench_python_overhead.py).
class python_call {
 public:
  // A thread that holds the GIL already (Python's own) keeps it as it is.
  python_call() : entered_(!PyGILState_Check()) {
    if (entered_) PyEval_RestoreThread(thread_state());
  }
  ~python_call() {
    if (entered_) PyEval_SaveThread();
  }
  python_call(const python_call&) = delete;
  python_call& operator=(const python_call&) = delete;

 private:
  bool entered_;

  struct kept_state {
    PyThreadState* state = PyThreadState_New(PyInterpreterState_Main());
    ~kept_state() {
      if (!Py_IsInitialized() || finalizing()) return;
      PyEval_RestoreThread(state);
      PyThreadState_Clear(state);
      PyThreadState_DeleteCurrent();
    }
  };
  static bool finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
    return Py_IsFinalizing();
#else
    return _Py_IsFinalizing();
#endif
  }
  static PyThreadState* thread_state() {
    thread_local kept_state kept;
    return kept.state;
  }
};

/// The Python objects a running session calls, shared with the pipeline's
/// threads; released under the GIL whichever thread lets go of them last.
struct python_callbacks {
  py::object objective;
  py::object on_trial;
  py::object on_new_best;
  py::object on_progress;
  stop_source stop;
  search_space_ptr space;  // set once the session has read it

  std::mutex mutex;
  std::exception_ptr callback_error;  // the first exception a callback raised

  ~python_callbacks() {
    if (!Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;
    objective = py::object();
    on_trial = py::object();
    on_new_best = py::object();
    on_progress = py::object();
  }

  /// A callback raised: KeyboardInterrupt stops the run; anything else stops
  /// it too and is raised again once it has drained. Holds the GIL.
  void raised(const py::error_already_set& error) {
    stop.request_stop();
    if (error.matches(PyExc_KeyboardInterrupt)) return;
    std::lock_guard lock(mutex);
    if (!callback_error) callback_error = std::make_exception_ptr(error);
  }
};

std::string describe(const py::error_already_set& error) {
  return py::str(error.type().attr("__name__")).cast<std::string>() + ": " + py::str(error.value()).cast<std::string>();
}

objective_fn wrap_objective(std::shared_ptr<python_callbacks> callbacks) {
  return [callbacks](const configuration& config) -> double {
    python_call gil;
    try {
      py::object cost = callbacks->objective(config_to_dict(*callbacks->space, config));
      if (py::isinstance<py::str>(cost) || !py::hasattr(cost, "__float__"))
        throw std::runtime_error("the objective returned " + py::repr(cost).cast<std::string>() +
                                 "; return a number (lower is better) or raise to fail the trial");
      return py::float_(cost).cast<double>();
    } catch (py::error_already_set& error) {
      if (error.matches(PyExc_KeyboardInterrupt)) callbacks->stop.request_stop();
      throw std::runtime_error(describe(error));
    }
  };
}

std::function<void(const trial_info&)> wrap_trial_callback(std::shared_ptr<python_callbacks> callbacks,
                                                           py::object python_callbacks::*which) {
  return [callbacks, which](const trial_info& trial) {
    python_call gil;
    try {
      ((*callbacks).*which)(to_python(trial.to_json()));
    } catch (py::error_already_set& error) {
      callbacks->raised(error);
    }
  };
}

py::dict progress_to_python(const progress_info& p) {
  py::dict out;
  out["trials"] = p.trials;
  out["budget"] = p.budget;
  out["at_s"] = p.at_s;
  out["trials_per_s"] = p.trials_per_s;
  out["compile_busy"] = p.compile_busy;
  out["device_busy"] = p.device_busy;
  out["best_time_ms"] = p.best_time_ms ? py::object(py::float_(*p.best_time_ms)) : py::none();
  return out;
}

std::function<void(const progress_info&)> wrap_progress_callback(std::shared_ptr<python_callbacks> callbacks) {
  return [callbacks](const progress_info& progress) {
    python_call gil;
    try {
      callbacks->on_progress(progress_to_python(progress));
    } catch (py::error_already_set& error) {
      callbacks->raised(error);
    }
  };
}

void require_callable(py::handle value, const char* name) {
  if (!value.is_none() && !PyCallable_Check(value.ptr()))
    throw py::value_error(std::string("Session: ") + name + " is " + py::repr(value).cast<std::string>() +
                          ", which is not callable; pass a function");
}

run_mode mode_from_python(const std::string& mode) {
  if (mode == "steady") return run_mode::steady;
  if (mode == "generational") return run_mode::generational;
  throw py::value_error("Session: mode '" + mode + "' is neither 'steady' nor 'generational'");
}

/// early_stop: True (the defaults), False (every rule off) or a dict of
/// early_stop_policy's numbers by name, each given one set on the defaults.
early_stop_policy early_stop_from_python(py::handle value) {
  if (py::isinstance<py::bool_>(value)) return value.cast<bool>() ? early_stop_policy{} : early_stop_policy::off();
  if (!py::isinstance<py::dict>(value))
    throw py::value_error("Session: early_stop is " + py::repr(value).cast<std::string>() +
                          "; give True, False or a dict such as {\"build_factor\": 0, \"slow_factor\": 4}");
  std::map<std::string, double> settings;
  for (auto [key, item] : value.cast<py::dict>()) {
    auto name = py::str(key).cast<std::string>();
    if (!py::hasattr(item, "__float__") || py::isinstance<py::str>(item) || py::isinstance<py::bool_>(item))
      throw py::value_error("Session: early_stop[\"" + name + "\"] is " + py::repr(item).cast<std::string>() +
                            "; give a number (0 switches the rule off)");
    settings[name] = py::float_(py::reinterpret_borrow<py::object>(item)).cast<double>();
  }
  try {
    return set_early_stop(settings, early_stop_policy{}, "Session: early_stop");
  } catch (const input_error& e) {
    throw py::value_error(e.what());
  }
}

// {"min_time_s", "min_repeats", "max_repeats", "statistic"}, each optional;
// None: the topology's or the defaults.
std::optional<measurement_protocol> measurement_from_python(py::handle value) {
  if (value.is_none()) return std::nullopt;
  if (!py::isinstance<py::dict>(value))
    throw py::value_error("Session: measurement is " + py::repr(value).cast<std::string>() +
                          "; give a dict such as {\"min_time_s\": 0, \"min_repeats\": 7, \"max_repeats\": 7}");
  measurement_protocol p;
  for (auto [key, item] : value.cast<py::dict>()) {
    auto name = py::str(key).cast<std::string>();
    std::string what = "Session: measurement[\"" + name + "\"]";
    if (name == "min_time_s") {
      if (!py::hasattr(item, "__float__") || py::isinstance<py::str>(item))
        throw py::value_error(what + " is " + py::repr(item).cast<std::string>() + "; give seconds as a number");
      p.min_time_s = py::float_(py::reinterpret_borrow<py::object>(item)).cast<double>();
    } else if (name == "min_repeats" || name == "max_repeats") {
      auto n = unsigned_from_python(item, what);
      (name == "min_repeats" ? p.min_repeats : p.max_repeats) = static_cast<int>(std::min<std::uint64_t>(n, 1u << 30));
    } else if (name == "statistic") {
      auto parsed = py::isinstance<py::str>(item) ? time_statistic_from_string(item.cast<std::string>()) : std::nullopt;
      if (!parsed)
        throw py::value_error(what + " is " + py::repr(item).cast<std::string>() + "; give 'median' or 'min'");
      p.statistic = *parsed;
    } else {
      throw py::value_error(what + ": unknown field; the fields are min_time_s, min_repeats, max_repeats, statistic");
    }
  }
  if (auto problem = measurement_problem(p); !problem.empty())
    throw py::value_error("Session: measurement: " + problem);
  return p;
}

// start: a list of configuration dicts, handed out first; each as the JSON
// text session_options::start holds.
std::vector<std::string> start_from_python(py::handle start) {
  std::vector<std::string> out;
  if (start.is_none()) return out;
  if (!py::isinstance<py::list>(start) && !py::isinstance<py::tuple>(start))
    throw py::type_error("Session: start is a " + py::str(start.get_type().attr("__name__")).cast<std::string>() +
                         "; give a list of configuration dicts, e.g. [{\"x\": 4}]");
  auto dumps = py::module_::import("json").attr("dumps");
  std::size_t i = 0;
  for (auto item : start) {
    if (!py::isinstance<py::dict>(item))
      throw py::type_error("Session: start[" + std::to_string(i) + "] is a " +
                           py::str(item.get_type().attr("__name__")).cast<std::string>() +
                           "; give a dict of the parameters' values");
    out.push_back(dumps(item).cast<std::string>());
    ++i;
  }
  return out;
}

class session_handle {
 public:
  session_handle(py::object objective, py::object space, std::optional<std::string> strategy, py::object budget,
                 py::object seed, py::object topology, py::object db, py::object on_trial, py::object on_new_best,
                 py::object on_progress, std::optional<std::string> task, py::object dataset, py::object kinds,
                 double time_scale, py::object hyper, double time_budget_s, std::string task_name, bool resume,
                 std::string mode, py::object batch, std::optional<std::string> backend, bool progress,
                 py::object kernel, py::object measurement, py::object confirm, py::object early_stop, bool lease,
                 std::string device_wait, py::object start, bool auto_prior, std::optional<std::string> publish,
                 std::optional<std::string> publish_key, std::size_t publish_wait)
      : callbacks_(std::make_shared<python_callbacks>()) {
    require_callable(objective, "objective");
    require_callable(on_trial, "on_trial");
    require_callable(on_new_best, "on_new_best");
    require_callable(on_progress, "on_progress");
    session_options o;
    if (!objective.is_none()) {
      callbacks_->objective = objective;
      o.objective = wrap_objective(callbacks_);
    }
    if (py::isinstance<space_handle>(space)) {
      o.space = space.cast<const space_handle&>().space;
    } else if (py::isinstance<py::dict>(space)) {
      o.space = py::module_::import("tune_engine").attr("Space")(space).cast<const space_handle&>().space;
    } else {
      o.space_file = path_from_python(space, "Session: space (a Space, a dict or a file path)");
    }
    apply_shared_arguments(o, "Session",
                           {seed, hyper, topology, db, confirm, strategy, backend, time_scale, resume, lease,
                            auto_prior, publish, publish_key, publish_wait});
    if (!budget.is_none()) {
      o.budget.trials = unsigned_from_python(budget, "Session: budget");
      if (o.budget.trials == 0)
        throw py::value_error("Session: budget is 0; give at least 1 trial, or None for the target's default");
    }
    o.budget.seconds = time_budget_s;
    // The facade calls budget.seconds "time_budget"; the keyword is time_budget_s.
    o.option_names.emplace("time_budget", "time_budget_s");
    o.task = task.value_or("");
    o.dataset = path_from_python(dataset, "Session: dataset");
    o.kinds_file = path_from_python(kinds, "Session: kinds");
    o.task_name = std::move(task_name);
    o.mode = mode_from_python(mode);
    auto batch_size = unsigned_from_python(batch, "Session: batch");
    if (batch_size == 0 || batch_size > 1'000'000)
      throw py::value_error("Session: batch is " + std::to_string(batch_size) + "; it must lie in 1 .. 1000000");
    o.batch = static_cast<std::uint32_t>(batch_size);
    o.progress_line = progress;
    o.kernel = path_from_python(kernel, "Session: kernel (a launch description or the folder holding launch.json)");
    o.measurement = measurement_from_python(measurement);
    o.early_stop = early_stop_from_python(early_stop);
    if (device_wait == "wait")
      o.device_wait = device_wait_policy::wait;
    else if (device_wait == "free")
      o.device_wait = device_wait_policy::free;
    else if (device_wait == "fail")
      o.device_wait = device_wait_policy::fail;
    else
      throw py::value_error("Session: device_wait is '" + device_wait + "'; use \"wait\", \"free\" or \"fail\"");
    o.start = start_from_python(start);
    if (!on_trial.is_none()) {
      callbacks_->on_trial = on_trial;
      o.on_trial = wrap_trial_callback(callbacks_, &python_callbacks::on_trial);
    }
    if (!on_new_best.is_none()) {
      callbacks_->on_new_best = on_new_best;
      o.on_new_best = wrap_trial_callback(callbacks_, &python_callbacks::on_new_best);
    }
    if (!on_progress.is_none()) {
      callbacks_->on_progress = on_progress;
      o.on_progress = wrap_progress_callback(callbacks_);
    }
    callbacks_->stop = o.stop;
    session_ = std::make_unique<session>(std::move(o));
    callbacks_->space = session_->space();
  }

  py::object run() {
    if (started_) throw std::runtime_error("Session.run: this session has run already; create another Session");
    started_ = true;
    std::optional<run_report> report;
    std::exception_ptr failure;
    std::mutex mutex;
    std::condition_variable finished;
    bool done = false;
    std::thread pipeline([&] {
      try {
        report = session_->run();
      } catch (...) {
        failure = std::current_exception();
      }
      std::lock_guard lock(mutex);
      done = true;
      finished.notify_all();
    });
    while (true) {
      {
        py::gil_scoped_release release;
        std::unique_lock lock(mutex);
        if (finished.wait_for(lock, std::chrono::milliseconds(50), [&] { return done; })) break;
      }
      // Ctrl-C (or another signal handler raising) on the main thread.
      if (PyErr_CheckSignals() != 0) callbacks_->raised(py::error_already_set());
    }
    {
      py::gil_scoped_release release;
      pipeline.join();
    }
    if (failure) std::rethrow_exception(failure);
    {
      std::lock_guard lock(callbacks_->mutex);
      if (callbacks_->callback_error) std::rethrow_exception(callbacks_->callback_error);
    }
    return to_python(report->to_json());
  }

  ~session_handle() {
    // The pipeline's threads take the GIL as they end; let them.
    py::gil_scoped_release release;
    session_.reset();
  }
  session_handle(const session_handle&) = delete;
  session_handle& operator=(const session_handle&) = delete;

  void stop() { session_->request_stop(); }
  space_handle space() const { return {session_->space()}; }
  std::uint64_t seed() const { return session_->seed(); }
  std::uint64_t budget() const { return session_->budget_trials(); }

 private:
  std::shared_ptr<python_callbacks> callbacks_;
  std::unique_ptr<session> session_;
  bool started_ = false;
};

py::object replay(py::handle dataset, std::optional<std::string> strategy, py::handle budget, py::handle runs,
                  py::handle seed, py::handle kinds, bool noise, unsigned threads, const py::kwargs& hyper) {
  replay_options o;
  o.dataset = path_from_python(dataset, "replay: dataset");
  o.kinds_file = path_from_python(kinds, "replay: kinds");
  o.strategy = strategy.value_or("");
  o.hyper = hyper_from_python(hyper, "replay");
  o.budget = unsigned_from_python(budget, "replay: budget");
  o.runs = unsigned_from_python(runs, "replay: runs");
  o.seed = unsigned_from_python(seed, "replay: seed");
  o.noise = noise;
  o.threads = threads;
  nlohmann::json statistics;
  {
    py::gil_scoped_release release;
    statistics = replay_statistics(o);
  }
  return to_python(statistics);
}

// A recorded run as a document of another tool (storage::export_run), in
// its own key order.
py::object export_run(py::handle db, py::handle run, const std::string& format) {
  auto path = path_from_python(db, "export_run: db");
  auto which = storage::export_format_from_string(format);
  if (!which) {
    std::string names;
    for (const auto& name : storage::export_format_names()) names += (names.empty() ? "" : ", ") + name;
    throw py::value_error("export_run: format '" + format + "' is not one of " + names);
  }
  std::string document;
  {
    py::gil_scoped_release release;
    storage::results_db results(path, storage::results_db::open_mode::read_only);
    std::int64_t run_id = 0;
    if (run.is_none()) {
      for (const auto& r : results.runs()) run_id = std::max(run_id, r.id);
      if (run_id == 0) throw std::invalid_argument("export_run: results DB " + path + " holds no runs yet");
    } else {
      py::gil_scoped_acquire gil;
      run_id = static_cast<std::int64_t>(unsigned_from_python(run, "export_run: run"));
    }
    document = storage::export_run(results, run_id, *which).dump();
  }
  return py::module_::import("json").attr("loads")(document);
}

// One configuration of a C/C++ user kernel built and run once on its inputs;
// every array afterwards in `arrays` (Kernel Tuner's run_kernel).
py::dict run_user_kernel(py::handle kernel, py::handle config, py::handle arrays) {
  auto launch = path_from_python(kernel, "run_user_kernel: kernel (a launch description)");
  auto path = path_from_python(arrays, "run_user_kernel: arrays (a file to write)");
  kernel_program_ptr program;
  try {
    program = read_user_kernel(launch);
  } catch (const std::invalid_argument& e) {
    throw py::value_error(std::string("run_user_kernel: ") + e.what());
  }
  if (program->geometry)
    throw py::value_error("run_user_kernel: " + launch + " is a CUDA kernel; only C/C++ kernels run once here");
  auto configuration = config_from_dict(*program->space, config, "run_user_kernel: config");
  run_result result;
  {
    py::gil_scoped_release release;
    result = run_cpu_program_once(*program, {}, configuration, path);
  }
  py::dict out;
  out["status"] = std::string(to_string(result.state));
  out["message"] = result.message;
  return out;
}

}  // namespace

void bind_session(py::module_& m) {
  py::class_<session_handle>(m, "Session", R"doc(
One tuning run through the actor pipeline (generator, compile pool, one
measurer per device, population). Tune exactly one of: an objective (a
callable taking a configuration dict and returning a cost to minimise, e.g.
milliseconds) over `space` (a Space, a dict for Space(...), or a space file);
a built-in `task` ("matmul:512x1024x1024"); a measured `dataset` to replay.

    s = Session(objective=cost, space={"x": [1, 2, 4, 8]}, strategy="opevo",
                budget=50, seed=1, on_trial=print)
    report = s.run()          # a dict: best, trials, reason, seed, ...

A user `kernel` (its launch description, or the folder holding launch.json;
docs/kernels.md) is measured on the topology's devices; `measurement`
({"min_time_s", "min_repeats", "max_repeats", "statistic": "median" or "min"})
says how each configuration is timed, `confirm` how many of the fastest are measured again against each
other at the end (0: none; default 5), and early_stop=False times every
candidate in full instead of stopping clearly slower ones early (and builds
each up to the compile timeout); a dict sets the rules' numbers instead, e.g.
{"slow_factor": 4, "build_factor": 0} (the names of the command's
--early-stop; 0 switches a rule off).

Each local device (its cores, its GPU) is leased for the run, so that no
other run on this machine measures on it meanwhile; when another process
holds one, device_wait="wait" (the default) waits for it, "free" measures
on the devices that are free and "fail" raises RuntimeError naming the
holder. lease=False measures without.

budget=None gives the target's default (s.budget tells it); seed=None draws
one, which s.seed and the report's "seed" tell, so that the run can be
repeated with seed=report["seed"]. resume=True continues the latest unfinished
run in db of the same task, strategy and seed: give the seed that run used.
start=[{...}, ...] (configuration dicts) are handed out first, and the strategy
goes on knowing their results (a starting point, Kernel Tuner's x0). The runs
of the same task on other device kinds that db holds are the search's prior
(used by "bo"); auto_prior=False leaves them out. publish (a ZeroMQ
endpoint, e.g. "tcp://127.0.0.1:5557") streams the run's events as
`tune --publish` does (off loopback it needs publish_key, the CURVE secret
key); publish_wait waits up to 10 s for that many subscribers first.

on_trial and on_new_best get each trial as a dict: "seq" (its number in the
run), "config", "status", "time_ms" (None unless ok), "times_ms" (each timed
run's milliseconds; [] when unknown), "objectives",
"compile_s", "run_s", "device", "message", "finished_s", "reused_from_run"
(the earlier run whose measurement was reused, else None) and "new_best".

An exception raised by the objective makes a failed trial carrying its
message; the run goes on. s.stop() (from any thread or a callback), a
KeyboardInterrupt raised in a callback, or Ctrl-C ends the run with reason
"stopped" once the trials in flight have finished. Any other exception raised
in a callback stops the run and is raised again by run().
)doc")
      .def(py::init<py::object, py::object, std::optional<std::string>, py::object, py::object, py::object, py::object,
                    py::object, py::object, py::object, std::optional<std::string>, py::object, py::object, double,
                    py::object, double, std::string, bool, std::string, py::object, std::optional<std::string>, bool,
                    py::object, py::object, py::object, py::object, bool, std::string, py::object, bool,
                    std::optional<std::string>, std::optional<std::string>, std::size_t>(),
           py::arg("objective") = py::none(), py::kw_only(), py::arg("space") = py::none(),
           py::arg("strategy") = py::none(), py::arg("budget") = py::none(), py::arg("seed") = py::none(),
           py::arg("topology") = py::none(), py::arg("db") = py::none(), py::arg("on_trial") = py::none(),
           py::arg("on_new_best") = py::none(), py::arg("on_progress") = py::none(), py::arg("task") = py::none(),
           py::arg("dataset") = py::none(), py::arg("kinds") = py::none(), py::arg("time_scale") = 1.0,
           py::arg("hyper") = py::none(), py::arg("time_budget_s") = 0.0, py::arg("task_name") = "objective",
           py::arg("resume") = false, py::arg("mode") = "steady", py::arg("batch") = 8, py::arg("backend") = py::none(),
           py::arg("progress") = false, py::arg("kernel") = py::none(), py::arg("measurement") = py::none(),
           py::arg("confirm") = py::none(), py::arg("early_stop") = py::bool_(true), py::arg("lease") = true,
           py::arg("device_wait") = "wait", py::arg("start") = py::none(), py::arg("auto_prior") = true,
           py::arg("publish") = py::none(), py::arg("publish_key") = py::none(), py::arg("publish_wait") = 0)
      .def("run", &session_handle::run, "Runs to the end and returns the report as a dict. Once per session.")
      .def("stop", &session_handle::stop, "Ends the run once the trials in flight have finished. Thread-safe.")
      .def_property_readonly("space", &session_handle::space, "The Space being searched.")
      .def_property_readonly("seed", &session_handle::seed, "The run's seed: the one given, or the one drawn for it.")
      .def_property_readonly("budget", &session_handle::budget,
                             "The run's trial budget: the one given, or the target's default.");

  m.def(
      "tune",
      [](py::args args, py::kwargs kwargs) {
        return py::module_::import("tune_engine").attr("Session")(*args, **kwargs).attr("run")();
      },
      R"doc(tune(objective=None, *, space=None, strategy=None, budget=None, seed=None, topology=None, db=None,
     on_trial=None, on_new_best=None, on_progress=None, task=None, dataset=None, ...)

Session(...).run(): tunes and returns the report as a dict (its "seed" is the
one drawn when seed is None). See Session.)doc");

  m.def("export_run", &export_run, py::arg("db"), py::arg("run") = py::none(), py::arg("format") = "kernel-tuner",
        R"doc(
A recorded run of the results database `db` (the latest when run is None) as
`tune-engine export` writes it: format "kernel-tuner" (a Kernel Tuner cache)
or "t4", returned as a dict.
)doc");

  m.def(
      "devices",
      [] {
        nlohmann::json all;
        {
          py::gil_scoped_release release;
          all = devices_json(list_devices());
        }
        return to_python(all);
      },
      R"doc(
What each backend (cpu, cuda, hip) sees on this machine, as
`tune-engine devices --json` prints it: a list of {"backend", "built",
"available", "message", "devices": [{"id", "name", "details"}]}.
)doc");

  m.def("run_user_kernel", &run_user_kernel, py::arg("kernel"), py::arg("config"), py::arg("arrays"), R"doc(
Builds one configuration (a dict) of the C/C++ user kernel described by
`kernel` (its launch.json) and runs it once on its inputs in the measuring
process; every array as it is afterwards is written to the file `arrays`
(raw elements, in argument order). Returns {"status", "message"}.
)doc");

  m.def("replay", &replay, py::arg("dataset"), py::arg("strategy") = py::none(), py::arg("budget") = 100,
        py::arg("runs") = 10, py::arg("seed") = 0, py::arg("kinds") = py::none(), py::arg("noise") = false,
        py::arg("threads") = 2, R"doc(
Replays `runs` searches of a strategy on a measured dataset (Kernel Tuner
cache, T4 results, KTT output) and returns the statistics that
`tune-engine replay --json` prints: the mean fraction of the optimum reached
after 20 ... 500 evaluations, evaluations to 0.90/0.95/0.99, the exact
random-search baseline and the score. Hyperparameters are keyword arguments.
)doc");
}

}  // namespace tune::python
