/* The C API from C11: a space from JSON text, ask/tell with a seed, and a
 * session that tunes a C objective through the actor pipeline, with a failing
 * configuration; a session without a seed tells the one drawn, which repeats
 * its trials; a trial callback and another thread stop runs; a model run and a
 * single run publish their events. */
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "tune/tune.h"

#define CHECK_OK(call)                                                                               \
  do {                                                                                               \
    tune_status status_ = (call);                                                                    \
    if (status_ != TUNE_OK) {                                                                        \
      fprintf(stderr, "%s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call, tune_status_name(status_), \
              tune_last_error());                                                                    \
      exit(1);                                                                                       \
    }                                                                                                \
  } while (0)

#define CHECK(condition)                                                      \
  do {                                                                        \
    if (!(condition)) {                                                       \
      fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #condition); \
      exit(1);                                                                \
    }                                                                         \
  } while (0)

/* x in 1..8 (discrete), y in {a, b, c}: 24 configurations, the cheapest is
 * x = 5, y = "b". */
static const char* const space_json =
    "{\"x\": {\"_type\": \"discrete\", \"_value\": [1, 2, 3, 4, 5, 6, 7, 8]},"
    " \"y\": {\"_type\": \"choice\", \"_value\": [\"a\", \"b\", \"c\"]}}";

typedef struct objective_state {
  const tune_space* space;
  atomic_int calls;
  int pause_us; /* per call: a stop must arrive before the budget is spent */
} objective_state;

/* Cost from the value indices of x and y (a third parameter, if any, is
 * ignored); x = 8 fails. */
static double cost_of(const tune_space* space, const char* config_json, int* failed) {
  uint64_t indices[3];
  size_t dimension = 0;
  CHECK_OK(tune_space_dimension(space, &dimension));
  CHECK(dimension <= 3);
  CHECK_OK(tune_space_config_from_json(space, config_json, indices, dimension));
  double x = (double)(indices[0] + 1);
  double y_penalty = indices[1] == 1 ? 0.0 : 1.5;
  if (x == 8) *failed = 1;
  return fabs(x - 5.0) + y_penalty + 1.0;
}

static double objective(const char* config_json, void* user_data, int* failed) {
  objective_state* state = user_data;
  atomic_fetch_add(&state->calls, 1);
  if (state->pause_us > 0) {
    struct timespec pause = {0, state->pause_us * 1000L};
    nanosleep(&pause, NULL);
  }
  return cost_of(state->space, config_json, failed);
}

typedef struct trial_log {
  int trials;
  int failures;
  int new_bests;
  int stop_after; /* 0: never */
  char failure_message[256];
  char configs[4096]; /* the configurations, in arrival order */
} trial_log;

static int on_trial(const tune_trial* trial, void* user_data) {
  trial_log* log = user_data;
  CHECK(trial->seq == (uint64_t)log->trials); /* 0, 1, 2... in arrival order */
  ++log->trials;
  CHECK(trial->config_json && trial->config_json[0] == '{');
  strncat(log->configs, trial->config_json, sizeof log->configs - strlen(log->configs) - 1);
  if (trial->status != TUNE_TRIAL_OK) {
    ++log->failures;
    CHECK(isnan(trial->time_ms));
    snprintf(log->failure_message, sizeof log->failure_message, "%s", trial->message);
  }
  if (trial->new_best) ++log->new_bests;
  return log->stop_after != 0 && log->trials >= log->stop_after;
}

static void test_space_queries(const tune_space* space) {
  size_t dimension = 0;
  CHECK_OK(tune_space_dimension(space, &dimension));
  CHECK(dimension == 2);
  const char* name = NULL;
  const char* kind = NULL;
  uint64_t cardinality = 0;
  CHECK_OK(tune_space_parameter(space, 1, &name, &kind, &cardinality));
  CHECK(strcmp(name, "y") == 0 && strcmp(kind, "categorical") == 0 && cardinality == 3);
  uint64_t size = 0;
  CHECK_OK(tune_space_cartesian_size(space, &size));
  CHECK(size == 24);
  CHECK_OK(tune_space_count_valid(space, &size));
  CHECK(size == 24);

  uint64_t indices[2] = {4, 1};
  char buffer[64];
  size_t needed = 0;
  CHECK_OK(tune_space_config_to_json(space, indices, 2, buffer, sizeof buffer, &needed));
  CHECK(strcmp(buffer, "{\"x\": 5, \"y\": \"b\"}") == 0);
  CHECK(needed == strlen(buffer) + 1);
  uint64_t back[2] = {0, 0};
  CHECK_OK(tune_space_config_from_json(space, buffer, back, 2));
  CHECK(back[0] == 4 && back[1] == 1);
  int valid = 0;
  CHECK_OK(tune_space_is_valid(space, buffer, &valid));
  CHECK(valid == 1);
}

/* Ask/tell until the strategy has nothing left; returns how many were asked
 * and writes them, joined, into `trace`. */
static int ask_tell(const tune_space* space, uint64_t seed, char* trace, size_t trace_size, double* best) {
  const char* hyper[] = {"lambda=4", "rho=4"};
  tune_strategy* strategy = NULL;
  CHECK_OK(tune_strategy_create("opevo", space, seed, hyper, 2, &strategy));
  const char* name = NULL;
  CHECK_OK(tune_strategy_name(strategy, &name));
  CHECK(strcmp(name, "opevo") == 0);
  int asked = 0;
  trace[0] = '\0';
  *best = INFINITY;
  for (int round = 0; round < 100; ++round) {
    size_t count = 0;
    CHECK_OK(tune_strategy_propose(strategy, 3, &count));
    if (count == 0) break;
    for (size_t i = 0; i < count; ++i) {
      const char* config = NULL;
      CHECK_OK(tune_strategy_proposal(strategy, i, &config));
      strncat(trace, config, trace_size - strlen(trace) - 1);
      int failed = 0;
      double cost = cost_of(space, config, &failed);
      CHECK_OK(tune_strategy_observe(strategy, config, cost, failed ? TUNE_TRIAL_RUNTIME_ERROR : TUNE_TRIAL_OK));
      if (!failed && cost < *best) *best = cost;
      ++asked;
    }
  }
  tune_strategy_free(strategy);
  return asked;
}

static void test_ask_tell(const tune_space* space) {
  static char first[8192], again[8192], other[8192];
  double best = 0;
  int asked = ask_tell(space, 7, first, sizeof first, &best);
  CHECK(asked == 24); /* every configuration once, then nothing */
  CHECK(best == 1.0);
  CHECK(ask_tell(space, 7, again, sizeof again, &best) == 24);
  CHECK(strcmp(first, again) == 0);
  CHECK(ask_tell(space, 8, other, sizeof other, &best) == 24);
  CHECK(strcmp(first, other) != 0);
}

/* `seed` NULL: none set (one is drawn). */
static tune_options* seeded_options(const tune_space* space, objective_state* state, trial_log* log, const char* budget,
                                    const char* seed) {
  tune_options* options = NULL;
  CHECK_OK(tune_options_create(&options));
  CHECK_OK(tune_options_set_space(options, space));
  CHECK_OK(tune_options_set_objective(options, objective, state));
  CHECK_OK(tune_options_set_trial_callback(options, on_trial, log));
  CHECK_OK(tune_options_set(options, "strategy", "random"));
  CHECK_OK(tune_options_set(options, "budget", budget));
  if (seed) CHECK_OK(tune_options_set(options, "seed", seed));
  return options;
}

static tune_options* session_options(const tune_space* space, objective_state* state, trial_log* log,
                                     const char* budget) {
  return seeded_options(space, state, log, budget, "3");
}

/* A session over `space` with the random strategy and `seed` (NULL: drawn),
 * run to its end. */
static tune_session* run_seeded_session(const tune_space* space, objective_state* state, trial_log* log,
                                        const char* budget, const char* seed) {
  tune_options* options = seeded_options(space, state, log, budget, seed);
  tune_session* session = NULL;
  CHECK_OK(tune_session_create(options, &session));
  tune_options_free(options);
  CHECK_OK(tune_session_run(session));
  return session;
}

/* The same with seed 3. */
static tune_session* run_session(const tune_space* space, objective_state* state, trial_log* log, const char* budget) {
  return run_seeded_session(space, state, log, budget, "3");
}

static void test_session_tunes_the_objective(const tune_space* space) {
  objective_state state = {space, 0, 0};
  trial_log log = {0};
  tune_session* session = run_session(space, &state, &log, "24");

  tune_end_reason reason = TUNE_END_FAILED;
  CHECK_OK(tune_session_end_reason(session, &reason));
  CHECK(reason == TUNE_END_BUDGET);
  uint64_t trials = 0;
  CHECK_OK(tune_session_trial_count(session, &trials));
  CHECK(trials == 24);
  CHECK(log.trials == 24 && atomic_load(&state.calls) == 24);
  CHECK(log.failures == 3); /* x = 8 with each y */
  CHECK(strstr(log.failure_message, "failed") != NULL);
  CHECK(log.new_bests >= 1);

  const char* best = NULL;
  double best_ms = 0;
  CHECK_OK(tune_session_best(session, &best, &best_ms));
  CHECK(strcmp(best, "{\"x\": 5, \"y\": \"b\"}") == 0);
  CHECK(best_ms == 1.0);
  const char* report = NULL;
  CHECK_OK(tune_session_report_json(session, &report));
  CHECK(strstr(report, "\"budget\"") != NULL);
  CHECK(strstr(report, "\"seed\":3") != NULL);
  uint64_t seed = 0;
  CHECK_OK(tune_session_seed(session, &seed));
  CHECK(seed == 3);
  CHECK(tune_session_run(session) == TUNE_ERROR_STATE);
  tune_session_free(session);
}

/* A session without a seed draws one: tune_session_seed and the report tell
 * it, and a session given it tries the same configurations in the same order. */
static void test_a_drawn_seed_repeats_the_run(const tune_space* space) {
  objective_state state = {space, 0, 0};
  static trial_log drawn_log, again_log, other_log;
  tune_session* drawn = run_seeded_session(space, &state, &drawn_log, "12", NULL);
  uint64_t seed = 0;
  CHECK_OK(tune_session_seed(drawn, &seed));
  const char* report = NULL;
  CHECK_OK(tune_session_report_json(drawn, &report));
  char seed_text[32], seed_json[48];
  snprintf(seed_text, sizeof seed_text, "%llu", (unsigned long long)seed);
  snprintf(seed_json, sizeof seed_json, "\"seed\":%s,", seed_text);
  CHECK(strstr(report, seed_json) != NULL);
  CHECK(drawn_log.trials == 12);

  tune_session* again = run_seeded_session(space, &state, &again_log, "12", seed_text);
  uint64_t again_seed = 0;
  CHECK_OK(tune_session_seed(again, &again_seed));
  CHECK(again_seed == seed);
  CHECK(again_log.trials == 12);
  CHECK(strcmp(drawn_log.configs, again_log.configs) == 0);

  tune_session* other = run_seeded_session(space, &state, &other_log, "12", NULL);
  uint64_t other_seed = 0;
  CHECK_OK(tune_session_seed(other, &other_seed));
  CHECK(other_seed != seed);
  tune_session_free(drawn);
  tune_session_free(again);
  tune_session_free(other);
}

/* x and y in 1..8, z in 0..999: 64,000 configurations, far more than are
 * measured before the stop takes effect (every call pauses 500 us). */
static const char* const large_space_json =
    "{\"x\": {\"_type\": \"discrete\", \"_value\": [1, 2, 3, 4, 5, 6, 7, 8]},"
    " \"y\": {\"_type\": \"choice\", \"_value\": [\"a\", \"b\", \"c\"]},"
    " \"z\": {\"_type\": \"discrete\", \"_value\": [%s]}}";

static tune_space* make_large_space(void) {
  static char values[8000];
  static char json[8400];
  values[0] = '\0';
  for (int z = 0; z < 1000; ++z) {
    char item[16];
    snprintf(item, sizeof item, z ? ", %d" : "%d", z);
    strcat(values, item);
  }
  snprintf(json, sizeof json, large_space_json, values);
  tune_space* space = NULL;
  CHECK_OK(tune_space_from_json(json, &space));
  return space;
}

static void check_stopped(const tune_session* session) {
  tune_end_reason reason = TUNE_END_BUDGET;
  CHECK_OK(tune_session_end_reason(session, &reason));
  CHECK(reason == TUNE_END_STOPPED);
  uint64_t trials = 0;
  CHECK_OK(tune_session_trial_count(session, &trials));
  CHECK(trials >= 3 && trials < 24000);
}

static void test_trial_callback_stops_the_run(void) {
  tune_space* space = make_large_space();
  objective_state state = {space, 0, 500};
  trial_log log = {0};
  log.stop_after = 3;
  tune_session* session = run_session(space, &state, &log, "24000");
  check_stopped(session);
  tune_session_free(session);
  tune_space_free(space);
}

typedef struct stopper {
  tune_session* session;
  objective_state* state;
} stopper;

/* Waits for three objective calls (a minute at most), then asks the session
   to stop. */
static void* stop_after_three_calls(void* user_data) {
  stopper* s = user_data;
  struct timespec pause = {0, 1000000L};
  for (int waited_ms = 0; atomic_load(&s->state->calls) < 3 && waited_ms < 60000; ++waited_ms) nanosleep(&pause, NULL);
  CHECK_OK(tune_session_request_stop(s->session));
  return NULL;
}

static void test_request_stop_from_another_thread(void) {
  tune_space* space = make_large_space();
  objective_state state = {space, 0, 500};
  trial_log log = {0};
  tune_options* options = session_options(space, &state, &log, "24000");
  tune_session* session = NULL;
  CHECK_OK(tune_session_create(options, &session));
  tune_options_free(options);
  stopper s = {session, &state};
  pthread_t thread;
  CHECK(pthread_create(&thread, NULL, stop_after_three_calls, &s) == 0);
  CHECK_OK(tune_session_run(session));
  pthread_join(thread, NULL);
  check_stopped(session);
  tune_session_free(session);
  tune_space_free(space);
}

/* A model's tasks (replayed measured spaces) under one budget: the report is
 * the model's, a best per task, and tune_session_best refuses. Without a db
 * the rounds are kept in a temporary database. */
static void test_model_session(void) {
  const char* data = getenv("TUNE_DATA_DIR");
  CHECK(data != NULL);
  char model[4096];
  snprintf(model, sizeof model, "%s/../examples/models/replayed_gpu.yaml", data);
  tune_options* options = NULL;
  CHECK_OK(tune_options_create(&options));
  CHECK_OK(tune_options_set(options, "model", model));
  CHECK_OK(tune_options_set(options, "time_scale", "0.001"));
  CHECK_OK(tune_options_set(options, "budget", "40"));
  CHECK_OK(tune_options_set(options, "round_trials", "4"));
  CHECK_OK(tune_options_set(options, "scheduler", "round_robin"));
  CHECK(tune_options_set(options, "scheduler", "fifo") == TUNE_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(tune_last_error(), "scheduler") != NULL);
  CHECK(tune_options_set(options, "round_trials", "0") == TUNE_ERROR_INVALID_ARGUMENT);
  CHECK(tune_options_set(options, "one_pipeline", "maybe") == TUNE_ERROR_INVALID_ARGUMENT);
  tune_session* session = NULL;
  CHECK_OK(tune_session_create(options, &session));
  uint64_t seed = 0;
  CHECK_OK(tune_session_seed(session, &seed)); /* drawn at creation */
  CHECK_OK(tune_session_run(session));
  tune_end_reason reason;
  CHECK_OK(tune_session_end_reason(session, &reason));
  CHECK(reason == TUNE_END_BUDGET);
  uint64_t trials = 0;
  CHECK_OK(tune_session_trial_count(session, &trials));
  CHECK(trials >= 40);
  const char* json = NULL;
  CHECK_OK(tune_session_report_json(session, &json));
  CHECK(strstr(json, "\"model\":\"replayed-gpu-model\"") != NULL);
  CHECK(strstr(json, "\"scheduler\":\"round_robin\"") != NULL);
  char seed_text[64];
  snprintf(seed_text, sizeof seed_text, "\"seed\":\"%llu\"", (unsigned long long)seed);
  CHECK(strstr(json, seed_text) != NULL);
  const char* best = NULL;
  CHECK(tune_session_best(session, &best, NULL) == TUNE_ERROR_STATE);
  CHECK(strstr(tune_last_error(), "per task") != NULL);
  CHECK(strstr(json, "\"one_pipeline\":false") != NULL);
  tune_session_free(session);
  /* The same through one pipeline: the budget spent, the report says how. */
  CHECK_OK(tune_options_set(options, "one_pipeline", "1"));
  CHECK_OK(tune_session_create(options, &session));
  CHECK_OK(tune_session_run(session));
  CHECK_OK(tune_session_trial_count(session, &trials));
  CHECK(trials == 40);
  CHECK_OK(tune_session_report_json(session, &json));
  CHECK(strstr(json, "\"one_pipeline\":true") != NULL);
  CHECK(strstr(json, "\"device_busy\":[") != NULL);
  tune_session_free(session);
  CHECK_OK(tune_options_set(options, "one_pipeline", "0"));
  /* A model and a target of its own: refused when run, naming the option. */
  CHECK_OK(tune_options_set(options, "task", "matmul:8x8x8"));
  CHECK_OK(tune_session_create(options, &session));
  CHECK(tune_session_run(session) != TUNE_OK);
  CHECK(strstr(tune_last_error(), "leave task out") != NULL);
  tune_session_free(session);
  tune_options_free(options);
}

/* Two shapes of one operator (built-in CPU tasks): the second task's search
 * starts from the first's runs, unless auto_prior is 0. The model file and
 * the kernel cache go to TUNE_TEST_DIR (the build tree; see CMakeLists.txt). */
static const char* model_report_json(const char* model, const char* auto_prior, tune_session** session) {
  tune_options* options = NULL;
  CHECK_OK(tune_options_create(&options));
  CHECK_OK(tune_options_set(options, "model", model));
  CHECK_OK(tune_options_set(options, "seed", "2"));
  CHECK_OK(tune_options_set(options, "budget", "6"));
  CHECK_OK(tune_options_set(options, "round_trials", "2"));
  if (auto_prior) CHECK_OK(tune_options_set(options, "auto_prior", auto_prior));
  CHECK_OK(tune_session_create(options, session));
  tune_options_free(options);
  CHECK_OK(tune_session_run(*session));
  const char* json = NULL;
  CHECK_OK(tune_session_report_json(*session, &json));
  return json;
}

static void test_model_auto_prior(void) {
  const char* dir = getenv("TUNE_TEST_DIR");
  CHECK(dir != NULL);
  char model[4096];
  snprintf(model, sizeof model, "%s/c_api_two_shapes.yaml", dir);
  FILE* file = fopen(model, "w");
  CHECK(file != NULL);
  fputs("tasks:\n  - {name: a, task: \"bmm:2x32x32x32\"}\n  - {name: b, task: \"bmm:4x32x32x32\"}\n", file);
  CHECK(fclose(file) == 0);
  tune_session* session = NULL;
  const char* json = model_report_json(model, NULL, &session);
  CHECK(strstr(json, "\"prior_from\":[\"a\"]") != NULL);
  tune_session_free(session);
  json = model_report_json(model, "0", &session);
  CHECK(strstr(json, "\"prior_from\":[]") != NULL);
  CHECK(strstr(json, "\"prior_from\":[\"") == NULL);
  tune_session_free(session);
}

/* A model run publishes its rounds' runs and its model_progress events on the
 * one stream its "publish" key names: a ZeroMQ subscriber (libzmq's C API)
 * reads them, every event tagged with the model's name, the last the model's
 * end. A single run publishes its run_started … run_finished the same way. */
typedef struct {
  void* socket;
  char events[1 << 20]; /* every message, one per line */
  size_t used;
  int ended; /* the stream's last event came */
  const char* last_type;
} event_log;

static void* read_events(void* user_data) {
  event_log* log = user_data;
  static char message[1 << 16];
  for (;;) {
    int n = zmq_recv(log->socket, message, sizeof message - 1, 0);
    if (n < 0) break; /* nothing for ZMQ_RCVTIMEO: the test fails below */
    if (n > (int)sizeof message - 1) n = (int)sizeof message - 1;
    message[n] = '\0';
    if (log->used + (size_t)n + 2 < sizeof log->events) {
      memcpy(log->events + log->used, message, (size_t)n);
      log->used += (size_t)n;
      log->events[log->used++] = '\n';
      log->events[log->used] = '\0';
    }
    if (strstr(message, log->last_type) != NULL && strstr(message, "\"reason\":\"") != NULL) {
      log->ended = 1;
      break;
    }
  }
  return NULL;
}

static size_t count_lines_with(const char* text, const char* what) {
  size_t count = 0;
  for (const char* line = text; *line;) {
    const char* end = strchr(line, '\n');
    size_t length = end ? (size_t)(end - line) : strlen(line);
    char saved[1 << 16];
    if (length < sizeof saved) {
      memcpy(saved, line, length);
      saved[length] = '\0';
      count += strstr(saved, what) != NULL;
    }
    line += length + (end != NULL);
  }
  return count;
}

/* Runs `options` publishing on `endpoint` (waiting for this one subscriber)
 * and reads its events into `log` until the event of `last_type` with a
 * reason came. */
static void run_and_read(tune_options* options, const char* endpoint, const char* last_type, event_log* log) {
  CHECK_OK(tune_options_set(options, "publish", endpoint));
  CHECK_OK(tune_options_set(options, "publish_wait", "1"));
  void* context = zmq_ctx_new();
  CHECK(context != NULL);
  log->socket = zmq_socket(context, ZMQ_SUB);
  CHECK(log->socket != NULL);
  int timeout_ms = 60000;
  CHECK(zmq_setsockopt(log->socket, ZMQ_RCVTIMEO, &timeout_ms, sizeof timeout_ms) == 0);
  CHECK(zmq_setsockopt(log->socket, ZMQ_SUBSCRIBE, "", 0) == 0);
  CHECK(zmq_connect(log->socket, endpoint) == 0); /* before the bind: ZeroMQ connects when it comes */
  log->used = 0;
  log->events[0] = '\0';
  log->ended = 0;
  log->last_type = last_type;
  pthread_t reader;
  CHECK(pthread_create(&reader, NULL, read_events, log) == 0);
  tune_session* session = NULL;
  CHECK_OK(tune_session_create(options, &session));
  CHECK_OK(tune_session_run(session));
  CHECK(pthread_join(reader, NULL) == 0);
  tune_session_free(session);
  zmq_close(log->socket);
  zmq_ctx_term(context);
}

static event_log published;

static void test_events_published(void) {
  const char* data = getenv("TUNE_DATA_DIR");
  CHECK(data != NULL);
  char model[4096], endpoint[4096], dataset[4096];
  snprintf(model, sizeof model, "%s/../examples/models/replayed_gpu.yaml", data);
  /* In /tmp: a socket's path has room for about 100 bytes, a build tree's may not. */
  snprintf(endpoint, sizeof endpoint, "ipc:///tmp/tune-c-api-events-%ld.ipc", (long)getpid());
  tune_options* options = NULL;
  CHECK_OK(tune_options_create(&options));
  CHECK(tune_options_set(options, "publish_wait", "one") == TUNE_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(tune_last_error(), "publish_wait") != NULL);
  CHECK_OK(tune_options_set(options, "model", model));
  CHECK_OK(tune_options_set(options, "time_scale", "0.001"));
  CHECK_OK(tune_options_set(options, "budget", "24"));
  CHECK_OK(tune_options_set(options, "round_trials", "6"));
  CHECK_OK(tune_options_set(options, "seed", "3"));
  run_and_read(options, endpoint, "\"type\":\"model_progress\"", &published);
  CHECK(published.ended);
  /* Four rounds of 6 trials: a run each (and the tasks' confirmations at the
   * end, runs too), the model's start, a progress event after each round and
   * its end. */
  size_t events = count_lines_with(published.events, "\"type\"");
  size_t runs = count_lines_with(published.events, "\"type\":\"run_started\"");
  CHECK(runs >= 4);
  CHECK(count_lines_with(published.events, "\"type\":\"run_finished\"") == runs);
  CHECK(count_lines_with(published.events, "\"type\":\"trial_finished\"") >= 24);
  CHECK(count_lines_with(published.events, "\"type\":\"model_progress\"") == 6);
  CHECK(count_lines_with(published.events, "\"model\":\"replayed-gpu-model\"") == events);
  CHECK(count_lines_with(published.events, "\"reason\":\"budget\"") >= 1);
  tune_options_free(options);

  /* One run: its events, from run_started to run_finished. */
  snprintf(dataset, sizeof dataset, "%s/datasets/gemm_clblast/RTX_3090.json.gz", data);
  CHECK_OK(tune_options_create(&options));
  CHECK_OK(tune_options_set(options, "dataset", dataset));
  CHECK_OK(tune_options_set(options, "time_scale", "0.001"));
  CHECK_OK(tune_options_set(options, "budget", "10"));
  run_and_read(options, endpoint, "\"type\":\"run_finished\"", &published);
  CHECK(published.ended);
  CHECK(count_lines_with(published.events, "\"type\":\"run_started\"") == 1);
  CHECK(count_lines_with(published.events, "\"type\":\"trial_finished\"") >= 10);
  CHECK(count_lines_with(published.events, "\"model\"") == 0);
  tune_options_free(options);

  /* Off loopback without a key: refused when the session is made, naming the key. */
  CHECK_OK(tune_options_create(&options));
  CHECK_OK(tune_options_set(options, "dataset", dataset));
  CHECK_OK(tune_options_set(options, "publish", "tcp://0.0.0.0:5999"));
  tune_session* session = NULL;
  tune_status status = tune_session_create(options, &session);
  if (status == TUNE_OK) {
    status = tune_session_run(session);
    tune_session_free(session);
  }
  CHECK(status != TUNE_OK);
  CHECK(strstr(tune_last_error(), "publish") != NULL);
  tune_options_free(options);
  remove(endpoint + strlen("ipc://"));
}

int main(void) {
  CHECK(strlen(tune_version()) >= 5);
  CHECK(strstr(tune_strategy_names(), "opevo") != NULL);
  CHECK(strstr(tune_strategy_names(), tune_default_strategy()) != NULL);
  CHECK(strcmp(tune_trial_status_name(TUNE_TRIAL_COMPILE_ERROR), "compile_error") == 0);
  CHECK(strcmp(tune_end_reason_name(TUNE_END_STOPPED), "stopped") == 0);

  tune_space* space = NULL;
  CHECK_OK(tune_space_from_json(space_json, &space));
  CHECK(strcmp(tune_last_error(), "") == 0);
  test_space_queries(space);
  test_ask_tell(space);
  test_session_tunes_the_objective(space);
  test_a_drawn_seed_repeats_the_run(space);
  test_trial_callback_stops_the_run();
  test_request_stop_from_another_thread();
  test_model_session();
  test_model_auto_prior();
  test_events_published();
  tune_space_free(space);
  puts("test_c_api: all passed");
  return 0;
}
