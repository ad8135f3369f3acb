#ifndef TUNE_TUNE_H
#define TUNE_TUNE_H
/* tune-engine's C API: search spaces, ask/tell strategies and tuning sessions
 * through the actor pipeline, for programs in C or any language with a C FFI.
 *
 *   tune_space* space;    tune_space_from_file("space.json", &space);
 *   tune_options* opts;   tune_options_create(&opts);
 *   tune_options_set_space(opts, space);
 *   tune_options_set_objective(opts, my_cost, my_data);
 *   tune_options_set(opts, "budget", "100");   (else the target's default)
 *   tune_options_set(opts, "seed", "1");       (else drawn: tune_session_seed)
 *   tune_session* s;      tune_session_create(opts, &s);
 *   tune_session_run(s);  tune_session_best(s, &config_json, &time_ms);
 *
 * Conventions:
 * - Every function that can fail returns a tune_status; on failure
 *   tune_last_error() holds a message naming the argument, file or field and
 *   the fix. No C++ exception ever leaves this API.
 * - Handles are opaque; each *_create / *_from_* has its *_free (NULL is a
 *   no-op for every *_free).
 * - A configuration crosses the boundary as JSON text, {"name": value, ...}
 *   in the space's parameter order (numbers, strings, lists of integers for
 *   factorizations and permutations).
 * - Strings returned through `const char**` belong to the handle they came
 *   from and stay valid until the call named beside the function or the
 *   handle is freed.
 */

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TUNE_API __attribute__((visibility("default")))
#else
#define TUNE_API
#endif

/* -- statuses and errors --------------------------------------------------- */

typedef enum tune_status {
  TUNE_OK = 0,
  TUNE_ERROR_NULL_ARGUMENT = 1,    /* a required handle or pointer is NULL */
  TUNE_ERROR_INVALID_ARGUMENT = 2, /* a bad value, file, name or hyperparameter */
  TUNE_ERROR_OUT_OF_RANGE = 3,     /* an index past the end */
  TUNE_ERROR_BUFFER_TOO_SMALL = 4, /* *needed says how many bytes are wanted */
  TUNE_ERROR_STATE = 5,            /* the call does not fit the handle's state */
  TUNE_ERROR_RUNTIME = 6,          /* the pipeline broke down, or anything else */
  TUNE_ERROR_OUT_OF_MEMORY = 7
} tune_status;

/* How one trial ended (TVM's numbering, as tune-engine records it). */
typedef enum tune_trial_status {
  TUNE_TRIAL_OK = 0,
  TUNE_TRIAL_INSTANTIATION_ERROR = 1,
  TUNE_TRIAL_COMPILE_ERROR = 2,
  TUNE_TRIAL_COMPILE_ERROR_DEVICE = 3,
  TUNE_TRIAL_RUNTIME_ERROR = 4,
  TUNE_TRIAL_WRONG_ANSWER = 5,
  TUNE_TRIAL_BUILD_TIMEOUT = 6,
  TUNE_TRIAL_RUN_TIMEOUT = 7,
  TUNE_TRIAL_UNKNOWN = 8,
  TUNE_TRIAL_TOO_SLOW = 9 /* stopped: far slower than the best time known */
} tune_trial_status;

/* Why a session's run ended. */
typedef enum tune_end_reason {
  TUNE_END_BUDGET = 0,    /* the trial budget was spent */
  TUNE_END_TIME = 1,      /* time_budget_s passed */
  TUNE_END_EXHAUSTED = 2, /* the strategy had nothing left to propose */
  TUNE_END_STOPPED = 3,   /* tune_session_request_stop or a trial callback asked */
  TUNE_END_FAILED = 4     /* the pipeline itself broke down */
} tune_end_reason;

/* The message of the most recent call on this thread: empty after TUNE_OK. */
TUNE_API const char* tune_last_error(void);
/* "ok", "null_argument", "invalid_argument", ... */
TUNE_API const char* tune_status_name(tune_status status);
/* "ok", "compile_error", "runtime_error", ...; "?" for a value out of range. */
TUNE_API const char* tune_trial_status_name(tune_trial_status status);
/* "budget", "time", "exhausted", "stopped", "failed". */
TUNE_API const char* tune_end_reason_name(tune_end_reason reason);
/* The library's version, "MAJOR.MINOR.PATCH". */
TUNE_API const char* tune_version(void);

/* -- search spaces ----------------------------------------------------------- */

typedef struct tune_space tune_space;

/* Reads an NNI space, a T1 spec or a Kernel Tuner cache's tune_params. */
TUNE_API tune_status tune_space_from_file(const char* path, tune_space** out);
/* An NNI space written as JSON text, e.g.
 * {"tile": {"_type": "factor", "_value": [1024, 4]}, "unroll": {"_type": "choice", "_value": [0, 1]}}. */
TUNE_API tune_status tune_space_from_json(const char* json_text, tune_space** out);
TUNE_API void tune_space_free(tune_space* space);

/* Number of parameters. */
TUNE_API tune_status tune_space_dimension(const tune_space* space, size_t* out);
/* Name, kind ("factorization", "permutation", "discrete", "categorical") and
 * number of values of one parameter; any output may be NULL. */
TUNE_API tune_status tune_space_parameter(const tune_space* space, size_t index, const char** name, const char** kind,
                                          uint64_t* cardinality);
/* Product of the cardinalities; TUNE_ERROR_OUT_OF_RANGE beyond 2^64. */
TUNE_API tune_status tune_space_cartesian_size(const tune_space* space, uint64_t* out);
/* Configurations that satisfy every constraint; TUNE_ERROR_OUT_OF_RANGE when
 * the Cartesian product is too large to enumerate (over 20,000,000). */
TUNE_API tune_status tune_space_count_valid(const tune_space* space, uint64_t* out);
/* *valid = 1 when the configuration exists and satisfies every constraint. */
TUNE_API tune_status tune_space_is_valid(const tune_space* space, const char* config_json, int* valid);
/* A configuration as value indices (one per parameter, `count` of them) and
 * back. to_json writes at most buffer_size bytes with the final NUL; *needed
 * (may be NULL) receives the size wanted, NUL included. */
TUNE_API tune_status tune_space_config_to_json(const tune_space* space, const uint64_t* indices, size_t count,
                                               char* buffer, size_t buffer_size, size_t* needed);
TUNE_API tune_status tune_space_config_from_json(const tune_space* space, const char* config_json, uint64_t* indices,
                                                 size_t count);

/* -- strategies: ask/tell ---------------------------------------------------- */

typedef struct tune_strategy tune_strategy;

/* The accepted strategy names, comma-separated, and the default one. */
TUNE_API const char* tune_strategy_names(void);
TUNE_API const char* tune_default_strategy(void);

/* A strategy searching `space` (which may be freed afterwards). `name` NULL or
 * "" means the default; `hyper` holds `hyper_count` items "name=value", e.g.
 * "population=100". Every random choice flows from `seed`. */
TUNE_API tune_status tune_strategy_create(const char* name, const tune_space* space, uint64_t seed,
                                          const char* const* hyper, size_t hyper_count, tune_strategy** out);
TUNE_API void tune_strategy_free(tune_strategy* strategy);
/* Valid until the strategy is freed. */
TUNE_API tune_status tune_strategy_name(const tune_strategy* strategy, const char** name);
/* Asks for up to n new configurations; *count receives how many came (maybe
 * 0 when the strategy has nothing to offer). Read them with
 * tune_strategy_proposal. */
TUNE_API tune_status tune_strategy_propose(tune_strategy* strategy, size_t n, size_t* count);
/* One configuration of the last propose, valid until the next propose. */
TUNE_API tune_status tune_strategy_proposal(const tune_strategy* strategy, size_t index, const char** config_json);
/* Tells the strategy how a configuration did: time_ms (lower is better) for
 * TUNE_TRIAL_OK, ignored for any failure status. */
TUNE_API tune_status tune_strategy_observe(tune_strategy* strategy, const char* config_json, double time_ms,
                                           tune_trial_status status);

/* -- sessions: tuning through the actor pipeline ------------------------------ */

/* The cost of one configuration (lower is better, e.g. milliseconds). Set
 * *failed to non-zero to make the trial fail; a non-finite return value
 * fails it too. Called from a pipeline thread, one call at a time per device. */
typedef double (*tune_objective_fn)(const char* config_json, void* user_data, int* failed);

/* One finished trial; the strings live until the callback returns. */
typedef struct tune_trial {
  uint64_t seq; /* its number in the run: 0, 1, 2... in arrival order (a resumed run's recorded trials first) */
  const char* config_json;
  tune_trial_status status;
  double time_ms;      /* NaN unless status is TUNE_TRIAL_OK */
  const char* message; /* why it failed, or compiler output; may be "" */
  double finished_s;   /* seconds since the start of the run */
  int new_best;        /* non-zero when it improved the best time */
} tune_trial;

/* Called on the pipeline's thread after every trial, in arrival order.
 * Return non-zero to stop the run: the trials in flight finish, nothing new
 * starts, and the run ends with TUNE_END_STOPPED. */
typedef int (*tune_trial_fn)(const tune_trial* trial, void* user_data);

typedef struct tune_options tune_options;

TUNE_API tune_status tune_options_create(tune_options** out);
TUNE_API void tune_options_free(tune_options* options);
/* Sets one option from text. Keys:
 *   strategy        a strategy name (tune_strategy_names)
 *   hyper           "name=value", one hyperparameter; repeat to add more
 *   budget          trials in all, at least 1 (unset: the target's default,
 *                   e.g. 100 for an objective)
 *   time_budget_s   seconds (simulated for a dataset); 0: none
 *   seed            an unsigned integer; every random choice flows from it.
 *                   Unset: one is drawn; tune_session_seed (and "seed" in
 *                   tune_session_report_json) tells which, so that the run
 *                   can be repeated
 *   db              SQLite results database path; unset: kept in memory
 *   resume          0 or 1: continue the latest unfinished run in db of the
 *                   same task, strategy and seed (set the seed that run used:
 *                   a drawn one matches no earlier run)
 *   topology        topology YAML file (compile workers, devices)
 *   space_file      the space the objective searches (or tune_options_set_space)
 *   task            a built-in kernel instead of an objective, e.g. "matmul:64x64x64"
 *   dataset         a measured dataset to replay instead of an objective
 *   kinds           with dataset: parameter kind overrides file
 *   time_scale      with dataset: wall seconds per recorded second
 *   task_name       names the objective's task in the results database
 *   mode            "steady" (default) or "generational"
 *   batch           generational mode: candidates per generation
 *   lease           0 or 1 (default 1): lease each local device (its cores,
 *                   its GPU) for the run, so that no other run on this
 *                   machine measures on it meanwhile
 *   auto_prior      0 or 1 (default 1): take the runs of the same task on
 *                   other device kinds in db (with model: also each task's
 *                   family's runs) as the search's prior
 *   device_wait     when another process holds a device's lease: "wait"
 *                   (default) for it, measure on the "free" devices, or
 *                   "fail" at once (tune_session_run fails naming the holder)
 *   model           a model file (YAML: tasks with their counts) instead of one
 *                   target: its tasks are tuned in rounds under one budget
 *                   (trials in all; unset: 64 per task), the report JSON is the
 *                   model's (what `tune-engine tune --model --summary-json`
 *                   writes: "tasks", each with its best, "latency_ms", ...),
 *                   and tune_session_best refuses (a best per task)
 *   scheduler       with model: "gradient" (default) or "round_robin"
 *   round_trials    with model: trials of one task per round (default 16)
 *   one_pipeline    with model: "1" runs every task through one pipeline
 *                   (the devices shared in steady state, nodes' too; tasks of one
 *                   backend), "0" (default) one round at a time
 *   publish         a ZeroMQ endpoint to publish the run's events on (JSON,
 *                   one per message: docs/events.md), e.g.
 *                   "tcp://127.0.0.1:5557" or "ipc:///tmp/run.ipc"; a model
 *                   publishes all its rounds and its model_progress events
 *                   on this one stream. Off loopback it needs publish_key
 *   publish_key     the stream's CURVE secret key (Z85 text); never logged
 *   publish_wait    wait up to 10 s for this many subscribers before the
 *                   run starts (default 0: events before a subscriber
 *                   connects are lost, as ZeroMQ drops them) */
TUNE_API tune_status tune_options_set(tune_options* options, const char* key, const char* value);
/* The space an objective searches (copied: it may be freed afterwards). */
TUNE_API tune_status tune_options_set_space(tune_options* options, const tune_space* space);
TUNE_API tune_status tune_options_set_objective(tune_options* options, tune_objective_fn objective, void* user_data);
TUNE_API tune_status tune_options_set_trial_callback(tune_options* options, tune_trial_fn callback, void* user_data);

typedef struct tune_session tune_session;

/* Validates the options (files read, strategy and hyperparameters checked). */
TUNE_API tune_status tune_session_create(const tune_options* options, tune_session** out);
/* Not while tune_session_run is running. */
TUNE_API void tune_session_free(tune_session* session);
/* Runs to the end; blocks. Once per session. */
TUNE_API tune_status tune_session_run(tune_session* session);
/* Thread-safe: the run drains and ends with TUNE_END_STOPPED. */
TUNE_API tune_status tune_session_request_stop(tune_session* session);
/* The run's seed: the one set with tune_options_set(options, "seed", ...), or
 * the one drawn for it when none was set. Known from tune_session_create on. */
TUNE_API tune_status tune_session_seed(const tune_session* session, uint64_t* out);
/* After the run: */
TUNE_API tune_status tune_session_end_reason(const tune_session* session, tune_end_reason* out);
TUNE_API tune_status tune_session_trial_count(const tune_session* session, uint64_t* out);
/* The fastest configuration; TUNE_ERROR_STATE when no trial succeeded. */
TUNE_API tune_status tune_session_best(const tune_session* session, const char** config_json, double* time_ms);
/* The run report as JSON text (what `tune-engine tune --summary-json` writes). */
TUNE_API tune_status tune_session_report_json(const tune_session* session, const char** json);

#ifdef __cplusplus
}
#endif

#endif /* TUNE_TUNE_H */
