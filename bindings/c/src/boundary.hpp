#pragma once
// The C boundary: what the opaque handles hold, and the guard that turns every
// C++ exception into a tune_status plus a thread-local message.

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tune/engine/space.hpp"
#include "tune/engine/strategy.hpp"
#include "tune/model.hpp"
#include "tune/tune.h"
#include "tune/tune.hpp"

struct tune_space {
  tune::search_space_ptr space;
  // Parameter names and kinds handed out as const char*.
  std::vector<std::string> names;
};

struct tune_strategy {
  tune::search_space_ptr space;
  std::unique_ptr<tune::strategy> strategy;
  std::string name;
  std::vector<std::string> proposals;  // JSON text of the last propose
};

struct tune_options {
  tune::session_options options;
  std::vector<std::string> hyper_items;
  tune_objective_fn objective = nullptr;
  void* objective_user = nullptr;
  tune_trial_fn on_trial = nullptr;
  void* trial_user = nullptr;
  std::string model_file;  ///< "model": a model's tasks instead of one target
  tune::scheduler_kind scheduler = tune::scheduler_kind::gradient;
  std::uint32_t round_trials = tune::model_options{}.round_trials;
  bool one_pipeline = false;
};

struct tune_session {
  /// One of the two: a session, or a model's tasks (tune::tune_model).
  std::unique_ptr<tune::session> session;
  std::optional<tune::model> model;
  tune::model_options model_options;
  bool started = false;
  std::optional<tune::run_report> report;
  std::optional<tune::model_report> model_report;
  std::string report_json;
  std::string best_json;
};

namespace tune::c_api {

/// A failure with the status the caller gets.
struct boundary_error : std::runtime_error {
  boundary_error(tune_status code, const std::string& message) : std::runtime_error(message), code(code) {}
  tune_status code;
};

void set_last_error(const std::string& message) noexcept;

/// Throws TUNE_ERROR_NULL_ARGUMENT naming the argument when `pointer` is NULL.
void require(const void* pointer, const char* argument);

/// Runs `body`; TUNE_OK when it returns, else the status of what it threw and
/// the message, prefixed with `function`.
template <class Body>
tune_status guarded(const char* function, Body&& body) noexcept {
  tune_status code = TUNE_OK;
  std::string message;
  try {
    body();
  } catch (const boundary_error& e) {
    code = e.code;
    message = e.what();
  } catch (const std::bad_alloc&) {
    code = TUNE_ERROR_OUT_OF_MEMORY;
    message = "out of memory";
  } catch (const std::invalid_argument& e) {
    code = TUNE_ERROR_INVALID_ARGUMENT;
    message = e.what();
  } catch (const std::exception& e) {
    code = TUNE_ERROR_RUNTIME;
    message = e.what();
  } catch (...) {
    code = TUNE_ERROR_RUNTIME;
    message = "an exception that is not a std::exception";
  }
  set_last_error(code == TUNE_OK ? std::string() : std::string(function) + ": " + message);
  return code;
}

/// The configuration that JSON text {"name": value, ...} names in `space`;
/// throws std::invalid_argument naming `argument` and the problem.
configuration parse_config(const search_space& space, const char* config_json, const char* argument);

}  // namespace tune::c_api
