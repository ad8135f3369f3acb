/* The C API given bad arguments: NULL handles and pointers, files that do not
 * exist, unknown strategies and hyperparameters, bad options and calls out of
 * order each return their status and a message naming the problem; nothing
 * crashes and no exception escapes. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tune/tune.h"

static int failures = 0;

/* Checks that `call` returned `expected` and that tune_last_error() holds
 * `fragment`. */
static void expect(tune_status got, tune_status expected, const char* fragment, const char* what, int line) {
  const char* message = tune_last_error();
  if (got != expected || strstr(message, fragment) == NULL) {
    fprintf(stderr, "line %d: %s: got %s \"%s\", expected %s with \"%s\"\n", line, what, tune_status_name(got), message,
            tune_status_name(expected), fragment);
    ++failures;
  }
}
#define EXPECT(call, status, fragment) expect((call), (status), (fragment), #call, __LINE__)

static double zero_cost(const char* config_json, void* user_data, int* failed) {
  (void)config_json;
  (void)user_data;
  (void)failed;
  return 0.0;
}

static void* fail_in_another_thread(void* unused) {
  (void)unused;
  tune_space* space = NULL;
  tune_space_from_file("/no/such/other_thread.json", &space);
  return NULL;
}

int main(void) {
  const char* data_dir = getenv("TUNE_DATA_DIR");
  if (!data_dir) {
    fprintf(stderr, "set TUNE_DATA_DIR to the repository's data folder\n");
    return 1;
  }
  char space_path[1024];
  snprintf(space_path, sizeof space_path, "%s/specs/opevo_mm_N512K1024M1024_search_space.json", data_dir);

  /* Spaces. */
  tune_space* space = (tune_space*)&failures; /* must be reset to NULL on failure */
  EXPECT(tune_space_from_file(NULL, &space), TUNE_ERROR_NULL_ARGUMENT, "tune_space_from_file: `path` is NULL");
  EXPECT(tune_space_from_file(space_path, NULL), TUNE_ERROR_NULL_ARGUMENT, "`out` is NULL");
  EXPECT(tune_space_from_file("/no/such/space.json", &space), TUNE_ERROR_INVALID_ARGUMENT, "/no/such/space.json");
  if (space != NULL) {
    fprintf(stderr, "a failed tune_space_from_file left *out set\n");
    ++failures;
  }
  EXPECT(tune_space_from_json("{not json", &space), TUNE_ERROR_INVALID_ARGUMENT, "is not JSON");
  EXPECT(tune_space_from_json("{\"t\": {\"_type\": \"bogus\", \"_value\": 1}}", &space), TUNE_ERROR_INVALID_ARGUMENT,
         "bogus");
  EXPECT(tune_space_from_file(space_path, &space), TUNE_OK, "");

  size_t dimension = 0;
  uint64_t count = 0;
  EXPECT(tune_space_dimension(NULL, &dimension), TUNE_ERROR_NULL_ARGUMENT, "`space` is NULL");
  EXPECT(tune_space_dimension(space, NULL), TUNE_ERROR_NULL_ARGUMENT, "`out` is NULL");
  EXPECT(tune_space_parameter(space, 3, NULL, NULL, NULL), TUNE_ERROR_OUT_OF_RANGE, "`index` 3 is past the last of 3");
  EXPECT(tune_space_cartesian_size(NULL, &count), TUNE_ERROR_NULL_ARGUMENT, "`space` is NULL");
  EXPECT(tune_space_count_valid(space, NULL), TUNE_ERROR_NULL_ARGUMENT, "`out` is NULL");

  uint64_t indices[3] = {0, 0, 0};
  char small[8];
  size_t needed = 0;
  EXPECT(tune_space_config_to_json(space, indices, 2, small, sizeof small, &needed), TUNE_ERROR_INVALID_ARGUMENT,
         "`count` is 2 but the space has 3 parameters");
  EXPECT(tune_space_config_to_json(space, indices, 3, small, sizeof small, &needed), TUNE_ERROR_BUFFER_TOO_SMALL,
         "`buffer_size` is 8 bytes");
  if (needed <= sizeof small) {
    fprintf(stderr, "needed is %zu, expected more than the 8 bytes given\n", needed);
    ++failures;
  }
  indices[1] = 1000;
  EXPECT(tune_space_config_to_json(space, indices, 3, small, sizeof small, &needed), TUNE_ERROR_OUT_OF_RANGE,
         "`indices[1]` is 1000 but parameter 'X'");
  int valid = 0;
  EXPECT(tune_space_is_valid(space, NULL, &valid), TUNE_ERROR_NULL_ARGUMENT, "`config_json` is NULL");
  EXPECT(tune_space_is_valid(space, "[1, 2]", &valid), TUNE_ERROR_INVALID_ARGUMENT, "is not a JSON object");
  EXPECT(tune_space_is_valid(space, "{\"K\": [1, 1, 1024]}", &valid), TUNE_ERROR_INVALID_ARGUMENT, "'X' has no value");
  EXPECT(tune_space_config_from_json(space, "{\"K\": {\"a\": 1}}", indices, 3), TUNE_ERROR_INVALID_ARGUMENT,
         "parameter 'K' has the value {\"a\":1}");

  /* Strategies. */
  tune_strategy* strategy = NULL;
  const char* good_hyper[] = {"lambda=4"};
  const char* unknown_hyper[] = {"bogus=1"};
  const char* malformed_hyper[] = {"lambda"};
  const char* null_hyper[] = {NULL};
  EXPECT(tune_strategy_create("nope", space, 1, NULL, 0, &strategy), TUNE_ERROR_INVALID_ARGUMENT,
         "unknown strategy 'nope' (accepted: random");
  EXPECT(tune_strategy_create("opevo", NULL, 1, NULL, 0, &strategy), TUNE_ERROR_NULL_ARGUMENT, "`space` is NULL");
  EXPECT(tune_strategy_create("opevo", space, 1, unknown_hyper, 1, &strategy), TUNE_ERROR_INVALID_ARGUMENT,
         "unknown hyperparameter 'bogus'");
  EXPECT(tune_strategy_create("opevo", space, 1, malformed_hyper, 1, &strategy), TUNE_ERROR_INVALID_ARGUMENT,
         "tune_strategy_create hyper lambda: expected name=value");
  EXPECT(tune_strategy_create("opevo", space, 1, null_hyper, 1, &strategy), TUNE_ERROR_NULL_ARGUMENT,
         "`hyper[0]` is NULL");
  EXPECT(tune_strategy_create("opevo", space, 1, NULL, 1, &strategy), TUNE_ERROR_NULL_ARGUMENT, "`hyper` is NULL");
  EXPECT(tune_strategy_create("opevo", space, 1, good_hyper, 1, &strategy), TUNE_OK, "");

  size_t proposed = 0;
  const char* config = NULL;
  EXPECT(tune_strategy_propose(NULL, 1, &proposed), TUNE_ERROR_NULL_ARGUMENT, "`strategy` is NULL");
  EXPECT(tune_strategy_proposal(strategy, 0, &config), TUNE_ERROR_OUT_OF_RANGE, "`index` 0 is past the last of the 0");
  EXPECT(tune_strategy_propose(strategy, 1, &proposed), TUNE_OK, "");
  EXPECT(tune_strategy_proposal(strategy, 0, &config), TUNE_OK, "");
  EXPECT(tune_strategy_observe(strategy, config, NAN, TUNE_TRIAL_OK), TUNE_ERROR_INVALID_ARGUMENT,
         "with TUNE_TRIAL_OK; pass a finite time");
  EXPECT(tune_strategy_observe(strategy, config, 1.0, (tune_trial_status)42), TUNE_ERROR_INVALID_ARGUMENT,
         "`status` is 42");
  EXPECT(tune_strategy_observe(strategy, "{\"K\": 1}", 1.0, TUNE_TRIAL_OK), TUNE_ERROR_INVALID_ARGUMENT, "config_json");
  EXPECT(tune_strategy_observe(strategy, config, NAN, TUNE_TRIAL_COMPILE_ERROR), TUNE_OK, "");
  tune_strategy_free(strategy);
  tune_strategy_free(NULL);

  /* Options and sessions. */
  tune_options* options = NULL;
  EXPECT(tune_options_create(NULL), TUNE_ERROR_NULL_ARGUMENT, "`out` is NULL");
  EXPECT(tune_options_create(&options), TUNE_OK, "");
  EXPECT(tune_options_set(options, "colour", "red"), TUNE_ERROR_INVALID_ARGUMENT,
         "unknown key 'colour' (accepted: strategy, hyper, budget");
  EXPECT(tune_options_set(options, "budget", "many"), TUNE_ERROR_INVALID_ARGUMENT, "budget: 'many' is not");
  EXPECT(tune_options_set(options, "budget", "-3"), TUNE_ERROR_INVALID_ARGUMENT, "budget: '-3' is not");
  EXPECT(tune_options_set(options, "budget", "0"), TUNE_ERROR_INVALID_ARGUMENT,
         "budget: '0' is not a budget; give at least 1 trial, or leave budget unset");
  EXPECT(tune_options_set(options, "seed", "-1"), TUNE_ERROR_INVALID_ARGUMENT, "seed: '-1' is not");
  EXPECT(tune_options_set(options, "time_scale", "-1"), TUNE_ERROR_INVALID_ARGUMENT, "time_scale");
  EXPECT(tune_options_set(options, "mode", "fast"), TUNE_ERROR_INVALID_ARGUMENT, "mode: 'fast'");
  EXPECT(tune_options_set(options, "device_wait", "later"), TUNE_ERROR_INVALID_ARGUMENT,
         "device_wait: 'later' is none of");
  EXPECT(tune_options_set(options, "lease", "2"), TUNE_ERROR_INVALID_ARGUMENT, "lease: '2' is neither 0 nor 1");
  EXPECT(tune_options_set(options, "auto_prior", "yes"), TUNE_ERROR_INVALID_ARGUMENT, "auto_prior: 'yes' is not");
  EXPECT(tune_options_set(options, "auto_prior", "2"), TUNE_ERROR_INVALID_ARGUMENT,
         "auto_prior: '2' is neither 0 nor 1");
  EXPECT(tune_options_set(options, "seed", NULL), TUNE_ERROR_NULL_ARGUMENT, "`value` is NULL");
  EXPECT(tune_options_set_objective(options, NULL, NULL), TUNE_ERROR_NULL_ARGUMENT, "`objective` is NULL");
  EXPECT(tune_options_set_space(options, NULL), TUNE_ERROR_NULL_ARGUMENT, "`space` is NULL");

  tune_session* session = NULL;
  EXPECT(tune_session_create(NULL, &session), TUNE_ERROR_NULL_ARGUMENT, "`options` is NULL");
  EXPECT(tune_options_set_objective(options, zero_cost, NULL), TUNE_OK, "");
  EXPECT(tune_options_set(options, "space_file", "/no/such/objective_space.json"), TUNE_OK, "");
  EXPECT(tune_session_create(options, &session), TUNE_ERROR_INVALID_ARGUMENT, "/no/such/objective_space.json");
  EXPECT(tune_options_set(options, "space_file", space_path), TUNE_OK, "");
  EXPECT(tune_options_set(options, "strategy", "nope"), TUNE_OK, "");
  EXPECT(tune_session_create(options, &session), TUNE_ERROR_INVALID_ARGUMENT, "unknown strategy 'nope'");
  EXPECT(tune_options_set(options, "strategy", "opevo"), TUNE_OK, "");
  EXPECT(tune_options_set(options, "hyper", "bogus=1"), TUNE_OK, "");
  EXPECT(tune_session_create(options, &session), TUNE_ERROR_INVALID_ARGUMENT, "bogus");
  EXPECT(tune_options_set(options, "hyper", "lambda"), TUNE_OK, "");
  EXPECT(tune_session_create(options, &session), TUNE_ERROR_INVALID_ARGUMENT,
         "tune_options_set(\"hyper\") lambda: expected name=value");
  if (session != NULL) {
    fprintf(stderr, "a failed tune_session_create left *out set\n");
    ++failures;
  }
  tune_options_free(options);

  EXPECT(tune_options_create(&options), TUNE_OK, "");
  EXPECT(tune_options_set(options, "space_file", space_path), TUNE_OK, "");
  EXPECT(tune_options_set(options, "budget", "2"), TUNE_OK, "");
  EXPECT(tune_options_set_objective(options, zero_cost, NULL), TUNE_OK, "");
  EXPECT(tune_session_create(options, &session), TUNE_OK, "");
  tune_options_free(options);
  const char* best = NULL;
  tune_end_reason reason;
  EXPECT(tune_session_best(session, &best, NULL), TUNE_ERROR_STATE, "has not run; call tune_session_run first");
  EXPECT(tune_session_end_reason(session, &reason), TUNE_ERROR_STATE, "has not run");
  EXPECT(tune_session_report_json(session, NULL), TUNE_ERROR_NULL_ARGUMENT, "`json` is NULL");
  EXPECT(tune_session_run(NULL), TUNE_ERROR_NULL_ARGUMENT, "`session` is NULL");
  uint64_t seed = 0;
  EXPECT(tune_session_seed(NULL, &seed), TUNE_ERROR_NULL_ARGUMENT, "`session` is NULL");
  EXPECT(tune_session_seed(session, NULL), TUNE_ERROR_NULL_ARGUMENT, "`out` is NULL");
  EXPECT(tune_session_seed(session, &seed), TUNE_OK, "");
  EXPECT(tune_session_request_stop(NULL), TUNE_ERROR_NULL_ARGUMENT, "`session` is NULL");
  tune_session_free(session);
  tune_session_free(NULL);
  tune_options_free(NULL);
  tune_space_free(space);
  tune_space_free(NULL);

  /* The message is per thread: a failure elsewhere leaves this one alone. */
  tune_space* other = NULL;
  EXPECT(tune_space_from_file(NULL, &other), TUNE_ERROR_NULL_ARGUMENT, "`path` is NULL");
  pthread_t thread;
  pthread_create(&thread, NULL, fail_in_another_thread, NULL);
  pthread_join(thread, NULL);
  if (strstr(tune_last_error(), "other_thread") != NULL || strstr(tune_last_error(), "`path` is NULL") == NULL) {
    fprintf(stderr, "tune_last_error() shows another thread's message: %s\n", tune_last_error());
    ++failures;
  }

  if (strcmp(tune_status_name((tune_status)99), "?") != 0 ||
      strcmp(tune_trial_status_name((tune_trial_status)-1), "?") != 0) {
    fprintf(stderr, "names of values out of range are not \"?\"\n");
    ++failures;
  }
  if (failures) {
    fprintf(stderr, "test_c_api_errors: %d failed\n", failures);
    return 1;
  }
  puts("test_c_api_errors: all passed");
  return 0;
}
