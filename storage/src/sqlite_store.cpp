#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <utility>

#include "results_store.hpp"

namespace tune::storage::detail {
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

/// tune_config_hash(text) in SQL, for the migration of version 1 files.
void sql_text_hash(sqlite3_context* context, int, sqlite3_value** args) {
  const auto* text = reinterpret_cast<const char*>(sqlite3_value_text(args[0]));
  auto size = static_cast<std::size_t>(sqlite3_value_bytes(args[0]));
  sqlite3_result_int64(context, text_hash(text ? std::string_view(text, size) : std::string_view()));
}

/// A prepared SQLite statement.
class sqlite_cursor final : public sql_cursor {
 public:
  sqlite_cursor(sqlite3* db, const std::string& sql, const std::string& name, bool persistent) : db_(db), name_(name) {
    if (sqlite3_prepare_v3(db, sql.c_str(), static_cast<int>(sql.size()), persistent ? SQLITE_PREPARE_PERSISTENT : 0,
                           &stmt_, nullptr) != SQLITE_OK)
      throw db_error("results DB " + name_ + ": cannot prepare a query (" + sqlite3_errmsg(db) + ")");
  }
  ~sqlite_cursor() override { sqlite3_finalize(stmt_); }
  sqlite_cursor(const sqlite_cursor&) = delete;
  sqlite_cursor& operator=(const sqlite_cursor&) = delete;

  void bind_text(int index, const std::string& text) override {
    check(sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT));
  }
  void bind_integer(int index, std::int64_t value) override { check(sqlite3_bind_int64(stmt_, index, value)); }
  void bind_real(int index, double value) override { check(sqlite3_bind_double(stmt_, index, value)); }
  void bind_null(int index) override { check(sqlite3_bind_null(stmt_, index)); }
  bool step() override {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) {
      changes_ = sqlite3_changes(db_);
      return false;
    }
    throw db_error("results DB " + name_ + ": " + sqlite3_errmsg(db_));
  }
  void reset() override {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  sql_type type(int col) const override {
    switch (sqlite3_column_type(stmt_, col)) {
      case SQLITE_INTEGER:
        return sql_type::integer;
      case SQLITE_FLOAT:
        return sql_type::real;
      case SQLITE_NULL:
        return sql_type::null;
      case SQLITE_BLOB:
        return sql_type::blob;
      default:
        return sql_type::text;
    }
  }
  std::int64_t integer(int col) const override { return sqlite3_column_int64(stmt_, col); }
  double real(int col) const override { return sqlite3_column_double(stmt_, col); }
  std::string text(int col) const override {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
    return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col))) : std::string();
  }
  std::int64_t changes() const override { return changes_; }

 private:
  void check(int rc) {
    if (rc != SQLITE_OK) throw db_error("results DB " + name_ + ": cannot bind a value (" + sqlite3_errmsg(db_) + ")");
  }
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  std::string name_;
  std::int64_t changes_ = 0;
};

/// An SQLite file (WAL journal) or ":memory:".
class sqlite_store final : public results_store {
 public:
  explicit sqlite_store(const std::filesystem::path& path) : file(path), name_(path.string()) {}
  ~sqlite_store() override {
    begin_.reset();  // statements are finalized before the connection closes
    commit_.reset();
    if (claim_fd >= 0) ::close(claim_fd);
    if (db) sqlite3_close_v2(db);
  }

  std::unique_ptr<sql_cursor> prepare(const std::string& sql, bool persistent) override {
    return std::make_unique<sqlite_cursor>(db, sql, name_, persistent);
  }
  void exec(const std::string& sql) override {
    char* error = nullptr;
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
      std::string message = error ? error : sqlite3_errmsg(db);
      sqlite3_free(error);
      throw db_error("results DB " + name_ + ": " + message);
    }
  }
  /// BEGIN IMMEDIATE: the write lock at once, so that two writers never
  /// both read before either writes.
  void begin() override {
    if (!begin_) {
      begin_ = std::make_unique<statement>(*this, "BEGIN IMMEDIATE", true);
      commit_ = std::make_unique<statement>(*this, "COMMIT", true);
    }
    begin_->run();
  }
  void commit() override { commit_->run(); }
  void rollback() noexcept override { sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr); }
  const std::string& name() const override { return name_; }
  int file_version() const override { return static_cast<int>(version_); }
  std::optional<int> migrated_from() const override { return migrated_from_; }
  const char* confirmation_row_id() const override { return "rowid"; }
  const std::filesystem::path& path() const override { return file; }
  bool claim_run(std::int64_t run_id) override;

  /// Opened after construction, so that a failed open closes what it opened.
  void open(results_db::open_mode mode, bool synchronous_full);

 private:
  void check_schema();
  void migrate();
  void switch_to_wal();

  std::filesystem::path file;
  std::string name_;
  sqlite3* db = nullptr;
  bool read_only = false;
  int claim_fd = -1;                                   // holds the locks of claim_run()
  std::int64_t version_ = results_db::schema_version;  // as opened (older only when read-only)
  std::optional<int> migrated_from_;                   // set by the migration this open made
  std::unique_ptr<statement> begin_, commit_;          // kept: prepared once
};

void sqlite_store::open(results_db::open_mode mode, bool synchronous_full) {
  namespace fs = std::filesystem;
  read_only = mode == results_db::open_mode::read_only;
  const bool in_memory = file == ":memory:";
  std::error_code ec;
  if (in_memory && read_only)
    throw std::invalid_argument("results DB :memory: cannot be opened read-only; give a file path");
  if (in_memory) {
    // A run without a database file: nothing outlives the process.
  } else if (fs::is_directory(file, ec))
    throw std::invalid_argument("results DB " + name_ + " is a directory; give a file path, e.g. results.db");
  bool exists = in_memory || fs::exists(file, ec);
  if (read_only && !exists) throw std::invalid_argument("results DB " + name_ + " does not exist; check its path");
  if (!exists) {
    auto parent = fs::absolute(file, ec).parent_path();
    if (!fs::is_directory(parent, ec))
      throw std::invalid_argument("cannot create results DB " + name_ + ": directory " + parent.string() +
                                  " does not exist; create it or choose another path");
  }
  int flags = read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  if (sqlite3_open_v2(file.c_str(), &db, flags | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
    std::string message = db ? sqlite3_errmsg(db) : "out of memory";
    throw std::invalid_argument("cannot open results DB " + name_ + ": " + message +
                                "; check the path and its permissions");
  }
  sqlite3_extended_result_codes(db, 1);
  // SQLite touches the file only at the first statement: turn what fails
  // there (not a database, not writable) into a message about the path.
  try {
    sqlite3_busy_timeout(db, 10000);
    exec("PRAGMA foreign_keys = ON");
    {
      statement tables(*this, "SELECT count(*) FROM sqlite_master");
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
    throw std::invalid_argument("cannot use results DB " + name_ + ": " + why + "; choose another file");
  }
  check_schema();
}

void sqlite_store::check_schema() {
  auto has_table = [&](const std::string& table) {
    statement s(*this, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1");
    s.bind(1, table);
    s.step();
    return s.integer(0) > 0;
  };
  auto empty = [&] {
    statement count(*this, "SELECT count(*) FROM sqlite_master");
    count.step();
    return count.integer(0) == 0;
  };  // each statement finalized at once: an open one would pin an old snapshot
  if (empty()) {
    if (read_only)
      throw std::invalid_argument("results DB " + name_ + " is empty: no tuning run has written to it yet");
    // Two processes may create the same new file at once: the first to take
    // the write lock makes the schema, the other finds it made.
    in_transaction(*this, [&] {
      if (!empty()) return 0;
      exec(schema_sql);
      exec("INSERT INTO schema_version (version) VALUES (" + std::to_string(results_db::schema_version) + ")");
      return 0;
    });
  }
  if (!has_table("schema_version") || !has_table("runs") || !has_table("trials"))
    throw std::invalid_argument("results DB " + name_ +
                                " is an SQLite database but not a tune-engine results DB (tables schema_version, "
                                "runs, trials missing); choose another file");
  std::int64_t found = 0;
  {
    statement version(*this, "SELECT version FROM schema_version");
    if (!version.step() || version.type(0) != sql_type::integer)
      throw std::invalid_argument("results DB " + name_ + ": table schema_version holds no version number");
    found = version.integer(0);
  }  // finalized: a migration drops a table, which no open statement may read
  if (found > results_db::schema_version)
    throw std::invalid_argument("results DB " + name_ + " has schema version " + std::to_string(found) +
                                ", newer than this tune-engine understands (" +
                                std::to_string(results_db::schema_version) +
                                "); use a newer tune-engine or another file");
  if (found < 1)
    throw std::invalid_argument("results DB " + name_ + ": schema version " + std::to_string(found) +
                                " is not valid; choose another file");
  version_ = found;
  if (version_ < results_db::schema_version && !read_only) migrate();
}

void sqlite_store::migrate() {
  if (sqlite3_create_function_v2(db, "tune_config_hash", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nullptr, sql_text_hash,
                                 nullptr, nullptr, nullptr) != SQLITE_OK)
    throw db_error("results DB " + name_ + ": " + sqlite3_errmsg(db));
  // One transaction: another process that opens the file meanwhile waits and
  // then finds it done.
  in_transaction(*this, [&] {
    std::int64_t version = 0;
    {
      statement now(*this, "SELECT version FROM schema_version");
      if (!now.step() || now.integer(0) >= results_db::schema_version) return 0;
      version = now.integer(0);
    }  // finalized: DROP TABLE waits for no statement of this connection
    migrated_from_ = static_cast<int>(version);
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
      statement s(*this, std::string("SELECT count(*) FROM pragma_table_info('") + table + "') WHERE name = ?1");
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
      statement table(*this, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'confirmations'");
      table.step();
      if (table.integer(0) == 0) sql += confirmations_table_sql;
    }
    exec(sql + "UPDATE runs SET status = " + legacy_finished_reason_sql + " WHERE status = 'finished';\n" +
         "UPDATE schema_version SET version = " + std::to_string(results_db::schema_version) + ";\n");
    return 0;
  });
  version_ = results_db::schema_version;
}

void sqlite_store::switch_to_wal() {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (int wait_ms = 1;; wait_ms = std::min(2 * wait_ms, 50)) {
    try {
      statement wal(*this, "PRAGMA journal_mode = WAL");
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

bool sqlite_store::claim_run(std::int64_t run_id) {
  if (file == ":memory:") return true;
  if (claim_fd < 0) {
    claim_fd = ::open(file.c_str(), O_RDWR | O_CLOEXEC);
    if (claim_fd < 0)
      throw db_error("results DB " + name_ + ": cannot open the file to claim run " + std::to_string(run_id) + " (" +
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
  if (::fcntl(claim_fd, F_OFD_SETLK, &lock) == 0) return true;
  if (errno == EAGAIN || errno == EACCES) return false;
  throw db_error("results DB " + name_ + ": cannot lock run " + std::to_string(run_id) + " (" + std::strerror(errno) +
                 ")");
}

}  // namespace

std::unique_ptr<results_store> open_sqlite_store(const std::filesystem::path& file, results_db::open_mode mode,
                                                 bool synchronous_full) {
  auto store = std::make_unique<sqlite_store>(file);
  store->open(mode, synchronous_full);
  return store;
}

}  // namespace tune::storage::detail
