#include "boundary.hpp"

#include <nlohmann/json.hpp>

namespace tune::c_api {
namespace {

thread_local std::string last_error;

}  // namespace

void set_last_error(const std::string& message) noexcept {
  try {
    last_error = message;
  } catch (...) {
    last_error.clear();
  }
}

void require(const void* pointer, const char* argument) {
  if (!pointer) throw boundary_error(TUNE_ERROR_NULL_ARGUMENT, std::string("`") + argument + "` is NULL");
}

configuration parse_config(const search_space& space, const char* config_json, const char* argument) {
  require(config_json, argument);
  try {
    return space.from_json(config_json);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string(argument) + ": " + e.what());
  }
}

}  // namespace tune::c_api

extern "C" {

const char* tune_last_error(void) { return tune::c_api::last_error.c_str(); }

const char* tune_status_name(tune_status status) {
  switch (status) {
    case TUNE_OK:
      return "ok";
    case TUNE_ERROR_NULL_ARGUMENT:
      return "null_argument";
    case TUNE_ERROR_INVALID_ARGUMENT:
      return "invalid_argument";
    case TUNE_ERROR_OUT_OF_RANGE:
      return "out_of_range";
    case TUNE_ERROR_BUFFER_TOO_SMALL:
      return "buffer_too_small";
    case TUNE_ERROR_STATE:
      return "state";
    case TUNE_ERROR_RUNTIME:
      return "runtime";
    case TUNE_ERROR_OUT_OF_MEMORY:
      return "out_of_memory";
  }
  return "?";
}

const char* tune_trial_status_name(tune_trial_status status) {
  auto value = static_cast<int>(status);
  if (value < TUNE_TRIAL_OK || value > TUNE_TRIAL_UNKNOWN) return "?";
  // to_string(status) returns views of string literals: NUL-terminated.
  return tune::to_string(static_cast<tune::status>(value)).data();
}

const char* tune_end_reason_name(tune_end_reason reason) {
  auto value = static_cast<int>(reason);
  if (value < TUNE_END_BUDGET || value > TUNE_END_FAILED) return "?";
  return tune::to_string(static_cast<tune::end_reason>(value)).data();
}

const char* tune_version(void) {
  static const std::string text(tune::version());
  return text.c_str();
}

}  // extern "C"

// The C enumerations mirror the C++ ones value for value.
static_assert(TUNE_TRIAL_OK == static_cast<int>(tune::status::ok));
static_assert(TUNE_TRIAL_INSTANTIATION_ERROR == static_cast<int>(tune::status::instantiation_error));
static_assert(TUNE_TRIAL_COMPILE_ERROR == static_cast<int>(tune::status::compile_error));
static_assert(TUNE_TRIAL_COMPILE_ERROR_DEVICE == static_cast<int>(tune::status::compile_error_device));
static_assert(TUNE_TRIAL_RUNTIME_ERROR == static_cast<int>(tune::status::runtime_error));
static_assert(TUNE_TRIAL_WRONG_ANSWER == static_cast<int>(tune::status::wrong_answer));
static_assert(TUNE_TRIAL_BUILD_TIMEOUT == static_cast<int>(tune::status::build_timeout));
static_assert(TUNE_TRIAL_RUN_TIMEOUT == static_cast<int>(tune::status::run_timeout));
static_assert(TUNE_TRIAL_UNKNOWN == static_cast<int>(tune::status::unknown));
static_assert(TUNE_TRIAL_TOO_SLOW == static_cast<int>(tune::status::too_slow));
static_assert(TUNE_END_BUDGET == static_cast<int>(tune::end_reason::budget));
static_assert(TUNE_END_TIME == static_cast<int>(tune::end_reason::time));
static_assert(TUNE_END_EXHAUSTED == static_cast<int>(tune::end_reason::exhausted));
static_assert(TUNE_END_STOPPED == static_cast<int>(tune::end_reason::stopped));
static_assert(TUNE_END_FAILED == static_cast<int>(tune::end_reason::failed));
