#include "tune/storage/results_db.hpp"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>
#include <thread>
#include <utility>

#include "tune/engine/median.hpp"

namespace tune::storage {
namespace {

// The trials table of version 3 (created as `name`, so that a migration can
// build it beside the old one). A configuration is found by its text's hash
// (config_hash, indexed) and then compared as text: an index over the text
// itself made every trial write two more keys of a few hundred bytes at random
// places, which cost most of a commit (docs/pipeline-files.md).
std::string trials_table_sql(const std::string& name) {
  return "CREATE TABLE " + name + R"sql( (
  id              INTEGER PRIMARY KEY,
  run_id          INTEGER NOT NULL REFERENCES runs(id),
  seq             INTEGER NOT NULL,  -- 0, 1, 2… in arrival order within the run
  config          TEXT NOT NULL,     -- canonical JSON object (search_space::to_json)
  config_hash     INTEGER NOT NULL,  -- 64-bit FNV-1a of config's bytes, as a signed integer
  status          TEXT NOT NULL,     -- tune::to_string(status)
  time_ms         REAL,              -- NULL unless status is ok
  compile_s       REAL NOT NULL,
  run_s           REAL NOT NULL,
  device          TEXT NOT NULL,
  finished_at     REAL NOT NULL,
  objectives      TEXT,              -- JSON array of numbers, or NULL
  reused_from_run INTEGER,           -- cache hit: the run that measured it
  message         TEXT,              -- compiler output or why it failed (at most max_message_bytes); NULL: none
  repeats         INTEGER NOT NULL DEFAULT 0,  -- timed runs behind time_ms; 0: unknown
  stopped_early   INTEGER NOT NULL DEFAULT 0,  -- 1: timing stopped early, clearly slower than the best
  kernel_s        REAL NOT NULL DEFAULT 0,     -- seconds inside the kernel's runs; 0: unknown
  drift_flagged   INTEGER NOT NULL DEFAULT 0,  -- 1: measured while its device had drifted (the probe said so)
  duel_ms         REAL,              -- a would-be new best's median against the best before it (version 4); NULL: no duel
  duel_best_ms    REAL,              -- that best's median in the same rounds
  UNIQUE (run_id, seq)
);
)sql";
}

constexpr const char* trials_index_sql = "CREATE INDEX trials_by_config_hash ON trials(config_hash, run_id);\n";

// A run's fastest trials re-measured in turn, round after round (version 3).
constexpr const char* confirmations_table_sql = R"sql(
CREATE TABLE confirmations (
  run_id  INTEGER NOT NULL REFERENCES runs(id),
  seq     INTEGER NOT NULL,  -- the trial re-measured (trials.seq)
  round   INTEGER NOT NULL,  -- 0, 1, …: every trial of the group is timed once per round
  time_ms REAL NOT NULL,
  PRIMARY KEY (run_id, seq, round)
);
)sql";

// Version 3 (version 1 indexed the configuration text, version 2 wrote
// "finished" for every way a run ended and kept no messages; both are migrated
// when opened for writing and read as they are otherwise). A newer file is
// refused.
const std::string schema_sql = R"sql(
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE runs (
  id          INTEGER PRIMARY KEY,
  task_key    TEXT NOT NULL,
  strategy    TEXT NOT NULL,
  seed        TEXT NOT NULL,      -- unsigned 64-bit, decimal (SQLite integers are signed)
  options     TEXT NOT NULL,      -- JSON object
  device_kind TEXT NOT NULL,
  started_at  REAL NOT NULL,      -- Unix seconds
  finished_at REAL,
  status      TEXT NOT NULL,      -- running, or why it ended: tune::to_string(end_reason)
  confirmed_seq INTEGER           -- the trial that won the confirmation rounds; NULL: none
);
CREATE INDEX runs_by_task ON runs(task_key, device_kind);
)sql" + trials_table_sql("trials") +
                               trials_index_sql + confirmations_table_sql;

// Statuses whose outcome a second measurement would repeat.
constexpr const char* reusable_statuses =
    "('ok', 'instantiation_error', 'compile_error', 'compile_error_device', 'wrong_answer')";

/// The end reason of a run that a file before version 3 recorded as
/// "finished" (it kept no reason): budget when its trials reached the
/// budget, else time when it had a time budget, else exhausted. In SQL over
/// a row of runs; the migration writes it and a read-only open reads it.
constexpr const char* legacy_finished_reason_sql =
    "CASE WHEN (SELECT count(*) FROM trials x WHERE x.run_id = runs.id) >= "
    "COALESCE(json_extract(runs.options, '$.budget'), 9.0e18) THEN 'budget' "
    "WHEN COALESCE(json_extract(runs.options, '$.time_budget_s'), 0) > 0 THEN 'time' ELSE 'exhausted' END";

/// Compiler output longer than this is cut (at a character boundary) when recorded.
constexpr std::size_t max_message_bytes = 2048;

std::string clipped_message(const std::string& text) {
  if (text.size() <= max_message_bytes) return text;
  std::size_t end = max_message_bytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;  // not inside a UTF-8 sequence
  return text.substr(0, end);
}

/// FNV-1a, 64 bits, over the text's bytes, as SQLite's signed integer: the
/// trials' config_hash. Fixed by the file format: never change it.
std::int64_t text_hash(std::string_view text) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ULL;
  std::int64_t out;
  std::memcpy(&out, &h, sizeof out);
  return out;
}

/// tune_config_hash(text) in SQL, for the migration of version 1 files.
void sql_text_hash(sqlite3_context* context, int, sqlite3_value** args) {
  const auto* text = reinterpret_cast<const char*>(sqlite3_value_text(args[0]));
  auto size = static_cast<std::size_t>(sqlite3_value_bytes(args[0]));
  sqlite3_result_int64(context, text_hash(text ? std::string_view(text, size) : std::string_view()));
}

double unix_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

/// A prepared statement; steps and reads with error checks.
class statement {
 public:
  /// `persistent`: kept for many uses (SQLITE_PREPARE_PERSISTENT).
  statement(sqlite3* db, const std::string& sql, const std::string& path, bool persistent = false)
      : db_(db), path_(path) {
    if (sqlite3_prepare_v3(db, sql.c_str(), static_cast<int>(sql.size()), persistent ? SQLITE_PREPARE_PERSISTENT : 0,
                           &stmt_, nullptr) != SQLITE_OK)
      throw db_error("results DB " + path + ": cannot prepare a query (" + sqlite3_errmsg(db) + ")");
  }
  ~statement() { sqlite3_finalize(stmt_); }
  statement(const statement&) = delete;
  statement& operator=(const statement&) = delete;

  statement& bind(int index, const std::string& text) {
    check(sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT));
    return *this;
  }
  statement& bind(int index, std::int64_t value) {
    check(sqlite3_bind_int64(stmt_, index, value));
    return *this;
  }
  statement& bind(int index, double value) {
    check(sqlite3_bind_double(stmt_, index, value));
    return *this;
  }
  statement& bind_null(int index) {
    check(sqlite3_bind_null(stmt_, index));
    return *this;
  }

  /// True while there is a row.
  bool step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw db_error("results DB " + path_ + ": " + sqlite3_errmsg(db_));
  }
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  /// Resets the statement when it goes out of scope (a kept statement must
  /// not hold a read snapshot, nor its bindings, past its use).
  struct reset_guard {
    statement& s;
    ~reset_guard() { s.reset(); }
  };
  /// Steps a statement that returns no row (BEGIN, COMMIT, INSERT) and resets it.
  void run() {
    reset_guard guard{*this};
    step();
  }

  int type(int col) const { return sqlite3_column_type(stmt_, col); }
  std::int64_t integer(int col) const { return sqlite3_column_int64(stmt_, col); }
  double real(int col) const { return sqlite3_column_double(stmt_, col); }
  std::string text(int col) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
    return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col))) : std::string();
  }

 private:
  void check(int rc) {
    if (rc != SQLITE_OK) throw db_error("results DB " + path_ + ": cannot bind a value (" + sqlite3_errmsg(db_) + ")");
  }
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  std::string path_;
};

/// Validates the columns of one row read back; every failure names the
/// file, table, row and column.
class row_checker {
 public:
  row_checker(const statement& s, std::string path, std::string table, std::int64_t row_id)
      : s_(s), path_(std::move(path)), table_(std::move(table)), row_id_(row_id) {}

  [[noreturn]] void fail(const std::string& column, const std::string& problem) const {
    throw db_error("results DB " + path_ + ": table " + table_ + ", row id " + std::to_string(row_id_) + ", column " +
                   column + ": " + problem + " (the file is corrupt or was written by another program)");
  }
  std::string text(int col, const std::string& name, bool allow_empty = false) const {
    if (s_.type(col) != SQLITE_TEXT) fail(name, "expected text");
    std::string value = s_.text(col);
    if (!allow_empty && value.empty()) fail(name, "is empty");
    return value;
  }
  std::int64_t integer(int col, const std::string& name, std::int64_t min) const {
    if (s_.type(col) != SQLITE_INTEGER) fail(name, "expected an integer");
    std::int64_t value = s_.integer(col);
    if (value < min) fail(name, std::to_string(value) + " is below " + std::to_string(min));
    return value;
  }
  double real(int col, const std::string& name) const {
    int type = s_.type(col);
    if (type != SQLITE_FLOAT && type != SQLITE_INTEGER) fail(name, "expected a number");
    double value = s_.real(col);
    if (!std::isfinite(value) || value < 0) fail(name, "expected a finite number >= 0");
    return value;
  }
  std::optional<double> optional_real(int col, const std::string& name) const {
    if (s_.type(col) == SQLITE_NULL) return std::nullopt;
    return real(col, name);
  }
  nlohmann::json json(int col, const std::string& name, nlohmann::json::value_t expected) const {
    auto parsed = nlohmann::json::parse(text(col, name, true), nullptr, false);
    if (parsed.is_discarded()) fail(name, "is not valid JSON");
    if (parsed.type() != expected)
      fail(name, expected == nlohmann::json::value_t::object ? "expected a JSON object" : "expected a JSON array");
    return parsed;
  }

 private:
  const statement& s_;
  std::string path_, table_;
  std::int64_t row_id_;
};

std::string seed_text(std::uint64_t seed) { return std::to_string(seed); }

}  // namespace

struct results_db::impl {
  std::filesystem::path file;
  std::string name;  // file as text, for messages
  sqlite3* db = nullptr;
  bool read_only = false;
  int claim_fd = -1;                           // holds the locks of claim_run()
  std::int64_t file_version = schema_version;  // as opened (older only when read-only)

  /// The statements of record_trial(), prepared at its first call and kept:
  /// preparing them again for every trial was most of its cost. Each is
  /// reset after use, so none holds a read snapshot between trials.
  struct trial_writer {
    statement run_exists, existing, next_seq, insert;
    trial_writer(sqlite3* db, const std::string& name)
        : run_exists(db, "SELECT count(*) FROM runs WHERE id = ?1", name, true),
          existing(db, "SELECT seq FROM trials WHERE config_hash = ?3 AND run_id = ?1 AND config = ?2", name, true),
          next_seq(db, "SELECT COALESCE(MAX(seq) + 1, 0) FROM trials WHERE run_id = ?1", name, true),
          insert(db,
                 "INSERT INTO trials (run_id, seq, config, status, time_ms, compile_s, run_s, device, finished_at, "
                 "objectives, reused_from_run, config_hash, message, repeats, stopped_early, kernel_s, drift_flagged, "
                 "duel_ms, duel_best_ms) "
                 "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)",
                 name, true) {}
  };
  std::unique_ptr<trial_writer> writer;
  /// BEGIN IMMEDIATE and COMMIT of transaction(), kept as the writer's are.
  std::unique_ptr<statement> begin, commit;

  ~impl() {
    writer.reset();  // statements are finalized before the connection closes
    begin.reset();
    commit.reset();
    if (claim_fd >= 0) ::close(claim_fd);
    if (db) sqlite3_close_v2(db);
  }

  void exec(const std::string& sql) {
    char* error = nullptr;
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
      std::string message = error ? error : sqlite3_errmsg(db);
      sqlite3_free(error);
      throw db_error("results DB " + name + ": " + message);
    }
  }

  /// PRAGMA journal_mode = WAL. Changing the journal turns a read
  /// transaction into a write one, and there SQLite answers SQLITE_BUSY at
  /// once, without its busy handler, while another connection holds the
  /// write lock (two processes starting on the same new file): retried here
  /// for as long as the busy timeout (10 s).
  void switch_to_wal() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (int wait_ms = 1;; wait_ms = std::min(2 * wait_ms, 50)) {
      try {
        statement wal(db, "PRAGMA journal_mode = WAL", name);
        if (!wal.step() || wal.text(0) != "wal")
          throw db_error("cannot switch to the WAL journal (the file system may not support it)");
        return;
      } catch (const db_error&) {
        // The statement is finalized by now; finalizing a statement whose
        // step failed leaves that step's error code on the connection.
        if ((sqlite3_errcode(db) & 0xff) != SQLITE_BUSY || std::chrono::steady_clock::now() >= deadline) throw;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
    }
  }

  /// Runs `body` inside BEGIN IMMEDIATE … COMMIT; rolls back on exceptions.
  template <class Body>
  auto transaction(Body&& body) {
    if (!begin) {
      begin = std::make_unique<statement>(db, "BEGIN IMMEDIATE", name, true);
      commit = std::make_unique<statement>(db, "COMMIT", name, true);
    }
    begin->run();
    try {
      auto result = body();
      commit->run();
      return result;
    } catch (...) {
      sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }

  /// The columns read_run() reads, for this file's version.
  std::string run_columns() const {
    return std::string("id, task_key, strategy, seed, options, device_kind, started_at, finished_at, ") +
           (file_version >= 3 ? "status, confirmed_seq"
                              : std::string("CASE status WHEN 'finished' THEN ") + legacy_finished_reason_sql +
                                    " ELSE status END, NULL");
  }
  /// The columns read_trial() reads (of trials as t), for this file's version.
  std::string trial_columns() const {
    return std::string(
               "t.id, t.run_id, t.seq, t.config, t.status, t.time_ms, t.compile_s, t.run_s, t.device, t.finished_at, "
               "t.objectives, t.reused_from_run, ") +
           (file_version >= 3 ? "t.message, t.repeats, t.stopped_early, t.kernel_s, t.drift_flagged, "
                              : "NULL, 0, 0, 0.0, 0, ") +
           (file_version >= 4 ? "t.duel_ms, t.duel_best_ms" : "NULL, NULL");
  }

  run_record read_run(const statement& s) const {
    std::int64_t id = s.type(0) == SQLITE_INTEGER ? s.integer(0) : -1;
    row_checker row(s, name, "runs", id);
    run_record run;
    run.id = row.integer(0, "id", 1);
    run.task_key = row.text(1, "task_key");
    run.strategy = row.text(2, "strategy");
    std::string seed = row.text(3, "seed");
    try {
      std::size_t used = 0;
      run.seed = std::stoull(seed, &used);
      if (used != seed.size() || seed.front() == '-') throw std::invalid_argument("trailing text");
    } catch (const std::exception&) {
      row.fail("seed", "'" + seed + "' is not an unsigned 64-bit integer");
    }
    row.json(4, "options", nlohmann::json::value_t::object);
    run.options_json = s.text(4);
    run.device_kind = row.text(5, "device_kind", true);
    run.started_at = row.real(6, "started_at");
    run.finished_at = row.optional_real(7, "finished_at");
    std::string state = row.text(8, "status");
    if (state != "running") {
      run.reason = end_reason_from_string(state);
      if (!run.reason)
        row.fail("status",
                 "'" + state + "' is neither running nor an end reason (" + std::string(end_reason_names()) + ")");
    }
    if (s.type(9) != SQLITE_NULL) run.confirmed_seq = row.integer(9, "confirmed_seq", 0);
    return run;
  }

  trial_record read_trial(const statement& s) const {
    std::int64_t id = s.type(0) == SQLITE_INTEGER ? s.integer(0) : -1;
    row_checker row(s, name, "trials", id);
    trial_record trial;
    trial.run_id = row.integer(1, "run_id", 1);
    trial.seq = row.integer(2, "seq", 0);
    row.json(3, "config", nlohmann::json::value_t::object);
    trial.config_json = s.text(3);
    std::string state = row.text(4, "status");
    auto parsed = status_from_string(state);
    if (!parsed) row.fail("status", "'" + state + "' is not a known status");
    trial.state = *parsed;
    auto time_ms = row.optional_real(5, "time_ms");
    if (trial.state == status::ok && !time_ms) row.fail("time_ms", "is NULL but the status is ok");
    if (trial.state != status::ok && time_ms) row.fail("time_ms", "is set but the status is " + state);
    if (time_ms) trial.time_ms = *time_ms;
    trial.compile_s = row.real(6, "compile_s");
    trial.run_s = row.real(7, "run_s");
    trial.device = row.text(8, "device", true);
    trial.finished_at = row.real(9, "finished_at");
    if (s.type(10) != SQLITE_NULL) {
      auto objectives = row.json(10, "objectives", nlohmann::json::value_t::array);
      for (const auto& value : objectives) {
        if (!value.is_number()) row.fail("objectives", "holds a value that is not a number");
        trial.objectives.push_back(value.get<double>());
      }
    }
    if (s.type(11) != SQLITE_NULL) trial.reused_from_run = row.integer(11, "reused_from_run", 1);
    if (s.type(12) != SQLITE_NULL) trial.message = row.text(12, "message", true);
    auto repeats = row.integer(13, "repeats", 0);
    if (repeats > std::numeric_limits<std::uint32_t>::max()) row.fail("repeats", "is too large");
    trial.repeats = static_cast<std::uint32_t>(repeats);
    auto early = row.integer(14, "stopped_early", 0);
    if (early > 1) row.fail("stopped_early", "is neither 0 nor 1");
    trial.stopped_early = early == 1;
    trial.kernel_s = row.real(15, "kernel_s");
    auto drifted = row.integer(16, "drift_flagged", 0);
    if (drifted > 1) row.fail("drift_flagged", "is neither 0 nor 1");
    trial.drift_flagged = drifted == 1;
    auto duel = row.optional_real(17, "duel_ms"), duel_best = row.optional_real(18, "duel_best_ms");
    if (duel.has_value() != duel_best.has_value())
      row.fail("duel_ms", "and duel_best_ms are not both set or both NULL");
    if (duel && trial.state != status::ok) row.fail("duel_ms", "is set but the status is " + state);
    if (duel) {
      trial.duel_ms = *duel;
      trial.duel_best_ms = *duel_best;
    }
    return trial;
  }

  std::vector<trial_record> read_trials(statement& s) const {
    std::vector<trial_record> out;
    while (s.step()) out.push_back(read_trial(s));
    return out;
  }

  void open(open_mode mode, bool synchronous_full);
  void check_schema();
  void migrate();
  std::optional<int> migrated_from;  // set by the migration this open made
};

void results_db::impl::open(open_mode mode, bool synchronous_full) {
  namespace fs = std::filesystem;
  read_only = mode == open_mode::read_only;
  const bool in_memory = file == ":memory:";
  std::error_code ec;
  if (in_memory && read_only)
    throw std::invalid_argument("results DB :memory: cannot be opened read-only; give a file path");
  if (in_memory) {
    // A run without a database file: nothing outlives the process.
  } else if (fs::is_directory(file, ec))
    throw std::invalid_argument("results DB " + name + " is a directory; give a file path, e.g. results.db");
  bool exists = in_memory || fs::exists(file, ec);
  if (read_only && !exists) throw std::invalid_argument("results DB " + name + " does not exist; check its path");
  if (!exists) {
    auto parent = fs::absolute(file, ec).parent_path();
    if (!fs::is_directory(parent, ec))
      throw std::invalid_argument("cannot create results DB " + name + ": directory " + parent.string() +
                                  " does not exist; create it or choose another path");
  }
  int flags = read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  if (sqlite3_open_v2(file.c_str(), &db, flags | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
    std::string message = db ? sqlite3_errmsg(db) : "out of memory";
    throw std::invalid_argument("cannot open results DB " + name + ": " + message +
                                "; check the path and its permissions");
  }
  sqlite3_extended_result_codes(db, 1);
  // SQLite touches the file only at the first statement: turn what fails
  // there (not a database, not writable) into a message about the path.
  try {
    sqlite3_busy_timeout(db, 10000);
    exec("PRAGMA foreign_keys = ON");
    {
      statement tables(db, "SELECT count(*) FROM sqlite_master", name);
      tables.step();
    }  // finalized: an open statement would keep a read transaction
    if (!read_only && !in_memory) {
      switch_to_wal();
      exec(synchronous_full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL");
    }
  } catch (const db_error&) {
    int code = sqlite3_errcode(db) & 0xff;
    std::string why = sqlite3_errmsg(db);
    if (code == SQLITE_NOTADB) why = "the file is not an SQLite database";
    if (code == SQLITE_READONLY || code == SQLITE_CANTOPEN || code == SQLITE_PERM)
      why = "the file cannot be written (" + std::string(sqlite3_errmsg(db)) + ")";
    throw std::invalid_argument("cannot use results DB " + name + ": " + why + "; choose another file");
  }
  check_schema();
}

void results_db::impl::check_schema() {
  auto has_table = [&](const std::string& table) {
    statement s(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1", name);
    s.bind(1, table);
    s.step();
    return s.integer(0) > 0;
  };
  auto empty = [&] {
    statement count(db, "SELECT count(*) FROM sqlite_master", name);
    count.step();
    return count.integer(0) == 0;
  };  // each statement finalized at once: an open one would pin an old snapshot
  if (empty()) {
    if (read_only) throw std::invalid_argument("results DB " + name + " is empty: no tuning run has written to it yet");
    // Two processes may create the same new file at once: the first to take
    // the write lock makes the schema, the other finds it made.
    transaction([&] {
      if (!empty()) return 0;
      exec(schema_sql);
      exec("INSERT INTO schema_version (version) VALUES (" + std::to_string(schema_version) + ")");
      return 0;
    });
  }
  if (!has_table("schema_version") || !has_table("runs") || !has_table("trials"))
    throw std::invalid_argument("results DB " + name +
                                " is an SQLite database but not a tune-engine results DB (tables schema_version, "
                                "runs, trials missing); choose another file");
  std::int64_t found = 0;
  {
    statement version(db, "SELECT version FROM schema_version", name);
    if (!version.step() || version.type(0) != SQLITE_INTEGER)
      throw std::invalid_argument("results DB " + name + ": table schema_version holds no version number");
    found = version.integer(0);
  }  // finalized: a migration drops a table, which no open statement may read
  if (found > schema_version)
    throw std::invalid_argument("results DB " + name + " has schema version " + std::to_string(found) +
                                ", newer than this tune-engine understands (" + std::to_string(schema_version) +
                                "); use a newer tune-engine or another file");
  if (found < 1)
    throw std::invalid_argument("results DB " + name + ": schema version " + std::to_string(found) +
                                " is not valid; choose another file");
  file_version = found;
  if (file_version < schema_version && !read_only) migrate();
}

void results_db::impl::migrate() {
  if (sqlite3_create_function_v2(db, "tune_config_hash", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nullptr, sql_text_hash,
                                 nullptr, nullptr, nullptr) != SQLITE_OK)
    throw db_error("results DB " + name + ": " + sqlite3_errmsg(db));
  // One transaction: another process that opens the file meanwhile waits and
  // then finds it done.
  transaction([&] {
    std::int64_t version = 0;
    {
      statement now(db, "SELECT version FROM schema_version", name);
      if (!now.step() || now.integer(0) >= schema_version) return 0;
      version = now.integer(0);
    }  // finalized: DROP TABLE waits for no statement of this connection
    migrated_from = static_cast<int>(version);
    if (version == 1) {
      // 1 -> 3: the trials table again with each configuration's hash,
      // without the unique key and the index over the text (a table's
      // constraint cannot be dropped in SQLite, so the table is copied).
      exec(trials_table_sql("trials_v3") +
           "INSERT INTO trials_v3 (id, run_id, seq, config, config_hash, status, time_ms, compile_s, run_s, device, "
           "finished_at, objectives, reused_from_run) SELECT id, run_id, seq, config, tune_config_hash(config), "
           "status, time_ms, compile_s, run_s, device, finished_at, objectives, reused_from_run FROM trials;\n"
           "DROP TABLE trials;\n"
           "ALTER TABLE trials_v3 RENAME TO trials;\n" +
           trials_index_sql);
    }
    // 2 -> 3 -> 4: what each trial adds (a table copied from version 1 has
    // them; version 4 added the duel's columns), room for confirmation rounds,
    // and why each finished run ended, as far as its trials and budget tell.
    // Only what is missing is added.
    auto has_column = [&](const char* table, const char* column) {
      statement s(db, std::string("SELECT count(*) FROM pragma_table_info('") + table + "') WHERE name = ?1", name);
      s.bind(1, std::string(column));
      s.step();
      return s.integer(0) > 0;
    };
    std::string sql;
    for (const auto& [column, type] :
         std::vector<std::pair<const char*, const char*>>{{"message", "TEXT"},
                                                          {"repeats", "INTEGER NOT NULL DEFAULT 0"},
                                                          {"stopped_early", "INTEGER NOT NULL DEFAULT 0"},
                                                          {"kernel_s", "REAL NOT NULL DEFAULT 0"},
                                                          {"drift_flagged", "INTEGER NOT NULL DEFAULT 0"},
                                                          {"duel_ms", "REAL"},
                                                          {"duel_best_ms", "REAL"}})
      if (!has_column("trials", column))
        sql += std::string("ALTER TABLE trials ADD COLUMN ") + column + " " + type + ";\n";
    if (!has_column("runs", "confirmed_seq")) sql += "ALTER TABLE runs ADD COLUMN confirmed_seq INTEGER;\n";
    {
      statement table(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'confirmations'", name);
      table.step();
      if (table.integer(0) == 0) sql += confirmations_table_sql;
    }
    exec(sql + "UPDATE runs SET status = " + legacy_finished_reason_sql + " WHERE status = 'finished';\n" +
         "UPDATE schema_version SET version = " + std::to_string(schema_version) + ";\n");
    return 0;
  });
  file_version = schema_version;
}

results_db::results_db(const std::filesystem::path& file, open_mode mode, bool synchronous_full)
    : impl_(std::make_unique<impl>()) {
  impl_->file = file;
  impl_->name = file.string();
  impl_->open(mode, synchronous_full);
}

results_db::~results_db() = default;
std::optional<int> results_db::migrated_from() const { return impl_->migrated_from; }
results_db::results_db(results_db&&) noexcept = default;
results_db& results_db::operator=(results_db&&) noexcept = default;

const std::filesystem::path& results_db::path() const { return impl_->file; }

std::int64_t results_db::create_run(const run_spec& spec) {
  if (spec.task_key.empty()) throw std::invalid_argument("create_run: the task key is empty");
  if (spec.strategy.empty()) throw std::invalid_argument("create_run: the strategy name is empty");
  auto options = nlohmann::json::parse(spec.options_json, nullptr, false);
  if (options.is_discarded() || !options.is_object())
    throw std::invalid_argument("create_run: options must be a JSON object, got '" + spec.options_json + "'");
  return impl_->transaction([&] {
    statement s(impl_->db,
                "INSERT INTO runs (task_key, strategy, seed, options, device_kind, started_at, status) "
                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'running')",
                impl_->name);
    s.bind(1, spec.task_key).bind(2, spec.strategy).bind(3, seed_text(spec.seed)).bind(4, spec.options_json);
    s.bind(5, spec.device_kind).bind(6, unix_now());
    s.step();
    return static_cast<std::int64_t>(sqlite3_last_insert_rowid(impl_->db));
  });
}

std::optional<run_record> results_db::find_run(std::int64_t run_id) const {
  statement s(impl_->db, "SELECT " + impl_->run_columns() + " FROM runs WHERE id = ?1", impl_->name);
  s.bind(1, run_id);
  if (!s.step()) return std::nullopt;
  return impl_->read_run(s);
}

std::optional<run_record> results_db::latest_resumable_run(const std::string& task_key, const std::string& strategy,
                                                           std::uint64_t seed) const {
  statement s(impl_->db,
              "SELECT " + impl_->run_columns() +
                  " FROM runs WHERE task_key = ?1 AND strategy = ?2 AND seed = ?3 AND status IN ('running', 'stopped') "
                  "ORDER BY started_at DESC, id DESC LIMIT 1",
              impl_->name);
  s.bind(1, task_key).bind(2, strategy).bind(3, seed_text(seed));
  if (!s.step()) return std::nullopt;
  return impl_->read_run(s);
}

std::vector<run_record> results_db::runs() const {
  statement s(impl_->db, "SELECT " + impl_->run_columns() + " FROM runs ORDER BY id", impl_->name);
  std::vector<run_record> out;
  while (s.step()) out.push_back(impl_->read_run(s));
  return out;
}

std::string run_status_text(const run_record& run) {
  return run.reason ? std::string(to_string(*run.reason)) : std::string("running");
}

void results_db::finish_run(std::int64_t run_id, end_reason reason) {
  impl_->transaction([&] {
    statement s(impl_->db, "UPDATE runs SET status = ?1, finished_at = ?2 WHERE id = ?3", impl_->name);
    s.bind(1, std::string(to_string(reason))).bind(2, unix_now()).bind(3, run_id);
    s.step();
    if (sqlite3_changes(impl_->db) == 0)
      throw db_error("results DB " + impl_->name + ": no run with id " + std::to_string(run_id));
    return 0;
  });
}

void results_db::reopen_run(std::int64_t run_id) {
  impl_->transaction([&] {
    statement s(impl_->db, "UPDATE runs SET status = 'running', finished_at = NULL WHERE id = ?1", impl_->name);
    s.bind(1, run_id);
    s.step();
    if (sqlite3_changes(impl_->db) == 0)
      throw db_error("results DB " + impl_->name + ": no run with id " + std::to_string(run_id));
    return 0;
  });
}

bool results_db::claim_run(std::int64_t run_id) {
  auto& d = *impl_;
  if (d.file == ":memory:") return true;
  if (d.claim_fd < 0) {
    d.claim_fd = ::open(d.file.c_str(), O_RDWR | O_CLOEXEC);
    if (d.claim_fd < 0)
      throw db_error("results DB " + d.name + ": cannot open the file to claim run " + std::to_string(run_id) + " (" +
                     std::strerror(errno) + ")");
  }
  // SQLite locks bytes from 2^30 on, 512 of them; a run's byte lies at
  // 2^40 + id, beyond any database (an OFD lock, unlike a POSIX one, is not
  // dropped when SQLite closes another descriptor of the file).
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  lock.l_start = (static_cast<off_t>(1) << 40) + static_cast<off_t>(run_id);
  lock.l_len = 1;
  if (::fcntl(d.claim_fd, F_OFD_SETLK, &lock) == 0) return true;
  if (errno == EAGAIN || errno == EACCES) return false;
  throw db_error("results DB " + d.name + ": cannot lock run " + std::to_string(run_id) + " (" + std::strerror(errno) +
                 ")");
}

namespace {

void check_trial(const trial_record& trial) {
  // Validated without building a document: a valid JSON text is an object
  // exactly when its first character after white space is '{'.
  auto first = trial.config_json.find_first_not_of(" \t\n\r");
  if (first == std::string::npos || trial.config_json[first] != '{' || !nlohmann::json::accept(trial.config_json))
    throw std::invalid_argument("record_trial: the configuration must be a JSON object, got '" + trial.config_json +
                                "'");
  if (trial.state == status::ok && (!std::isfinite(trial.time_ms) || trial.time_ms < 0))
    throw std::invalid_argument("record_trial: an ok trial needs a finite time >= 0, got " +
                                std::to_string(trial.time_ms));
  if (!std::isfinite(trial.compile_s) || trial.compile_s < 0 || !std::isfinite(trial.run_s) || trial.run_s < 0 ||
      !std::isfinite(trial.kernel_s) || trial.kernel_s < 0)
    throw std::invalid_argument("record_trial: compile_s, run_s and kernel_s must be finite and >= 0");
  for (double value : trial.objectives)
    if (!std::isfinite(value)) throw std::invalid_argument("record_trial: objectives must be finite numbers");
  if (!(std::isfinite(trial.finished_at) && trial.finished_at >= 0))
    throw std::invalid_argument("record_trial: finished_at must be a finite time >= 0 (Unix seconds)");
  bool duel = !std::isnan(trial.duel_ms), duel_best = !std::isnan(trial.duel_best_ms);
  if (duel != duel_best || (duel && !(trial.state == status::ok && std::isfinite(trial.duel_ms) && trial.duel_ms > 0 &&
                                      std::isfinite(trial.duel_best_ms) && trial.duel_best_ms > 0)))
    throw std::invalid_argument(
        "record_trial: duel_ms and duel_best_ms must both be NaN (no duel) or both finite times > 0 of an ok trial");
}

}  // namespace

record_outcome results_db::record_trial(std::int64_t run_id, const trial_record& trial) {
  return record_trials(run_id, {trial}).front();
}

std::vector<record_outcome> results_db::record_trials(std::int64_t run_id, const std::vector<trial_record>& trials) {
  for (const auto& trial : trials) check_trial(trial);
  std::vector<record_outcome> out;
  if (trials.empty()) return out;
  auto& d = *impl_;
  if (!d.writer) d.writer = std::make_unique<impl::trial_writer>(d.db, d.name);
  auto& w = *d.writer;
  return d.transaction([&] {
    {
      statement::reset_guard guard{w.run_exists};
      w.run_exists.bind(1, run_id).step();
      if (w.run_exists.integer(0) == 0)
        throw std::invalid_argument("record_trial: no run with id " + std::to_string(run_id));
    }
    std::int64_t seq = 0;
    {
      statement::reset_guard guard{w.next_seq};
      w.next_seq.bind(1, run_id).step();
      seq = w.next_seq.integer(0);
    }
    double now = unix_now();
    out.reserve(trials.size());
    for (const auto& trial : trials) {
      std::int64_t hash = text_hash(trial.config_json);
      {
        statement::reset_guard guard{w.existing};
        w.existing.bind(1, run_id).bind(2, trial.config_json).bind(3, hash);
        if (w.existing.step()) {
          out.push_back({false, w.existing.integer(0)});
          continue;
        }
      }
      auto& insert = w.insert;
      statement::reset_guard guard{insert};
      insert.bind(1, run_id).bind(2, seq).bind(3, trial.config_json).bind(4, std::string(tune::to_string(trial.state)));
      if (trial.state == status::ok)
        insert.bind(5, trial.time_ms);
      else
        insert.bind_null(5);
      double finished_at = trial.finished_at > 0 ? trial.finished_at : now;
      insert.bind(6, trial.compile_s).bind(7, trial.run_s).bind(8, trial.device).bind(9, finished_at);
      if (trial.objectives.empty())
        insert.bind_null(10);
      else
        insert.bind(10, nlohmann::json(trial.objectives).dump());
      if (trial.reused_from_run)
        insert.bind(11, *trial.reused_from_run);
      else
        insert.bind_null(11);
      insert.bind(12, hash);
      if (trial.message.empty())
        insert.bind_null(13);
      else
        insert.bind(13, clipped_message(trial.message));
      insert.bind(14, static_cast<std::int64_t>(trial.repeats))
          .bind(15, static_cast<std::int64_t>(trial.stopped_early ? 1 : 0))
          .bind(16, trial.kernel_s)
          .bind(17, static_cast<std::int64_t>(trial.drift_flagged ? 1 : 0));
      if (!std::isnan(trial.duel_ms))  // checked: both set on an ok trial
        insert.bind(18, trial.duel_ms).bind(19, trial.duel_best_ms);
      else
        insert.bind_null(18).bind_null(19);
      insert.step();
      out.push_back({true, seq++, finished_at});
    }
    return std::move(out);
  });
}

std::vector<trial_record> results_db::trials(std::int64_t run_id) const {
  statement s(impl_->db, "SELECT " + impl_->trial_columns() + " FROM trials t WHERE t.run_id = ?1 ORDER BY t.seq",
              impl_->name);
  s.bind(1, run_id);
  return impl_->read_trials(s);
}

std::int64_t results_db::trial_count(std::int64_t run_id) const {
  statement s(impl_->db, "SELECT count(*) FROM trials WHERE run_id = ?1", impl_->name);
  s.bind(1, run_id).step();
  return s.integer(0);
}

std::map<std::int64_t, run_totals> results_db::all_run_totals() const {
  statement s(impl_->db,
              "SELECT run_id, count(*), count(CASE WHEN status = 'ok' THEN 1 END), "
              "min(CASE WHEN status = 'ok' THEN time_ms END) FROM trials GROUP BY run_id",
              impl_->name);
  std::map<std::int64_t, run_totals> out;
  while (s.step()) {
    auto& totals = out[s.integer(0)];
    totals.trials = s.integer(1);
    totals.ok_trials = s.integer(2);
    if (s.type(3) != SQLITE_NULL) totals.best_time_ms = s.real(3);
  }
  return out;
}

std::optional<trial_record> results_db::find_cached(const std::string& task_key, const std::string& device_kind,
                                                    const std::string& config_json) const {
  // A version 1 file opened read-only has no hashes: its text is indexed.
  statement s(impl_->db,
              "SELECT " + impl_->trial_columns() + " FROM trials t JOIN runs r ON r.id = t.run_id WHERE " +
                  (impl_->file_version >= 2 ? "t.config_hash = ?4 AND " : "") +
                  "t.config = ?1 AND r.task_key = ?2 AND r.device_kind = ?3 AND t.status IN " + reusable_statuses +
                  " ORDER BY t.finished_at DESC, t.id DESC LIMIT 1",
              impl_->name);
  s.bind(1, config_json).bind(2, task_key).bind(3, device_kind);
  if (impl_->file_version >= 2) s.bind(4, text_hash(config_json));
  if (!s.step()) return std::nullopt;
  return impl_->read_trial(s);
}

std::unordered_map<std::string, trial_record> results_db::load_cache(const std::string& task_key,
                                                                     const std::string& device_kind) const {
  statement s(impl_->db,
              "SELECT " + impl_->trial_columns() +
                  " FROM trials t JOIN runs r ON r.id = t.run_id WHERE r.task_key = ?1 AND r.device_kind = ?2 AND "
                  "t.status IN " +
                  reusable_statuses + " ORDER BY t.finished_at, t.id",
              impl_->name);
  s.bind(1, task_key).bind(2, device_kind);
  std::unordered_map<std::string, trial_record> out;
  // Ascending order: a later measurement of a configuration replaces an earlier one.
  for (auto& trial : impl_->read_trials(s)) out[trial.config_json] = std::move(trial);
  return out;
}

void results_db::record_confirmation(std::int64_t run_id, const std::vector<confirmation_row>& rows,
                                     std::int64_t winner_seq) {
  bool winner_found = false;
  for (const auto& row : rows) {
    if (!(std::isfinite(row.time_ms) && row.time_ms > 0))
      throw std::invalid_argument("record_confirmation: trial " + std::to_string(row.seq) + ", round " +
                                  std::to_string(row.round) + ": a time must be finite and > 0");
    winner_found = winner_found || row.seq == winner_seq;
  }
  if (!winner_found)
    throw std::invalid_argument("record_confirmation: the winner, trial " + std::to_string(winner_seq) +
                                ", has no confirmation round");
  auto& d = *impl_;
  d.transaction([&] {
    statement run(d.db, "UPDATE runs SET confirmed_seq = ?1 WHERE id = ?2", d.name);
    run.bind(1, winner_seq).bind(2, run_id);
    run.step();
    if (sqlite3_changes(d.db) == 0)
      throw std::invalid_argument("record_confirmation: no run with id " + std::to_string(run_id));
    statement clear(d.db, "DELETE FROM confirmations WHERE run_id = ?1", d.name);
    clear.bind(1, run_id).step();
    statement exists(d.db, "SELECT count(*) FROM trials WHERE run_id = ?1 AND seq = ?2", d.name);
    statement insert(d.db, "INSERT INTO confirmations (run_id, seq, round, time_ms) VALUES (?1, ?2, ?3, ?4)", d.name);
    for (const auto& row : rows) {
      {
        statement::reset_guard guard{exists};
        exists.bind(1, run_id).bind(2, row.seq).step();
        if (exists.integer(0) == 0)
          throw std::invalid_argument("record_confirmation: run " + std::to_string(run_id) + " has no trial " +
                                      std::to_string(row.seq));
      }
      statement::reset_guard guard{insert};
      insert.bind(1, run_id).bind(2, row.seq).bind(3, static_cast<std::int64_t>(row.round)).bind(4, row.time_ms);
      insert.step();
    }
    return 0;
  });
}

void results_db::flag_drift(std::int64_t run_id, const std::vector<std::int64_t>& seqs) {
  if (seqs.empty()) return;
  auto& d = *impl_;
  d.transaction([&] {
    statement flag(d.db, "UPDATE trials SET drift_flagged = 1 WHERE run_id = ?1 AND seq = ?2", d.name);
    for (auto seq : seqs) {
      statement::reset_guard guard{flag};
      flag.bind(1, run_id).bind(2, seq).step();
    }
    return 0;
  });
}

std::vector<confirmation_row> results_db::confirmations(std::int64_t run_id) const {
  std::vector<confirmation_row> out;
  if (impl_->file_version < 3) return out;  // an older file kept none
  statement s(impl_->db, "SELECT rowid, seq, round, time_ms FROM confirmations WHERE run_id = ?1 ORDER BY seq, round",
              impl_->name);
  s.bind(1, run_id);
  while (s.step()) {
    row_checker row(s, impl_->name, "confirmations", s.integer(0));
    confirmation_row c;
    c.seq = row.integer(1, "seq", 0);
    auto round = row.integer(2, "round", 0);
    if (round > std::numeric_limits<std::uint32_t>::max()) row.fail("round", "is too large");
    c.round = static_cast<std::uint32_t>(round);
    c.time_ms = row.real(3, "time_ms");
    out.push_back(c);
  }
  return out;
}

std::vector<std::string> results_db::tasks() const {
  statement s(impl_->db, "SELECT DISTINCT task_key FROM runs ORDER BY task_key", impl_->name);
  std::vector<std::string> out;
  while (s.step()) out.push_back(s.text(0));
  return out;
}

std::optional<task_summary> results_db::best(const std::string& task_key,
                                             const std::optional<std::string>& device_kind) const {
  std::string filter = "r.task_key = ?1" + std::string(device_kind ? " AND r.device_kind = ?2" : "");
  statement counts(impl_->db,
                   "SELECT count(DISTINCT r.id), count(t.id), count(CASE WHEN t.status = 'ok' THEN 1 END) FROM runs r "
                   "LEFT JOIN trials t ON t.run_id = r.id WHERE " +
                       filter,
                   impl_->name);
  counts.bind(1, task_key);
  if (device_kind) counts.bind(2, *device_kind);
  counts.step();
  task_summary summary;
  summary.task_key = task_key;
  summary.runs = counts.integer(0);
  summary.trials = counts.integer(1);
  summary.ok_trials = counts.integer(2);
  if (summary.runs == 0) return std::nullopt;

  // A run's confirmed winner counts by the median of its rounds; the fastest
  // of them is the task's best. Without any, the fastest ok trial is.
  if (impl_->file_version >= 3) {
    statement confirmed(impl_->db,
                        "SELECT r.id, r.confirmed_seq FROM runs r WHERE " + filter + " AND r.confirmed_seq IS NOT NULL",
                        impl_->name);
    confirmed.bind(1, task_key);
    if (device_kind) confirmed.bind(2, *device_kind);
    std::vector<std::pair<std::int64_t, std::int64_t>> winners;
    while (confirmed.step()) winners.emplace_back(confirmed.integer(0), confirmed.integer(1));
    for (const auto& [run_id, seq] : winners) {
      std::vector<double> times;
      for (const auto& c : confirmations(run_id))
        if (c.seq == seq) times.push_back(c.time_ms);
      if (times.empty()) continue;
      std::sort(times.begin(), times.end());
      double median = tune::sorted_median(times);
      if (summary.confirmed_ms && median >= *summary.confirmed_ms) continue;
      statement trial(impl_->db,
                      "SELECT " + impl_->trial_columns() + " FROM trials t WHERE t.run_id = ?1 AND t.seq = ?2",
                      impl_->name);
      trial.bind(1, run_id).bind(2, seq);
      if (!trial.step()) continue;
      summary.best = impl_->read_trial(trial);
      summary.confirmed_ms = median;
      summary.confirmed_min_ms = times.front();
      summary.confirmed_max_ms = times.back();
      summary.confirmed_rounds = static_cast<std::uint32_t>(times.size());
    }
    if (summary.best) {
      summary.best_run = find_run(summary.best->run_id);
      return summary;
    }
  }
  // A trial that lost its duel against the best before it is not the best;
  // one that had a duel counts by its duel's median (trial::best_judged_ms).
  const bool duels = impl_->file_version >= 4;
  statement best(impl_->db,
                 "SELECT " + impl_->trial_columns() + " FROM trials t JOIN runs r ON r.id = t.run_id WHERE " + filter +
                     " AND t.status = 'ok'" +
                     (duels ? " AND NOT (t.duel_ms IS NOT NULL AND t.duel_ms >= t.duel_best_ms) ORDER BY "
                              "COALESCE(t.duel_ms, t.time_ms) ASC"
                            : " ORDER BY t.time_ms ASC") +
                     ", t.finished_at ASC, t.id ASC LIMIT 1",
                 impl_->name);
  best.bind(1, task_key);
  if (device_kind) best.bind(2, *device_kind);
  if (best.step()) {
    summary.best = impl_->read_trial(best);
    summary.best_run = find_run(summary.best->run_id);
  }
  return summary;
}

}  // namespace tune::storage
