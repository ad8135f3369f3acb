#pragma once
// A results store as results_db opens it: a connection plus what differs
// between SQLite and PostgreSQL beyond the SQL itself (opening, the schema
// and its migrations, claiming a run). Internal to tune::storage.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "sql_connection.hpp"
#include "tune/storage/results_db.hpp"

namespace tune::storage::detail {

class results_store : public sql_connection {
 public:
  /// The schema version as opened (older only for a read-only SQLite file).
  virtual int file_version() const = 0;
  /// The version this open migrated from; nullopt when it migrated nothing.
  virtual std::optional<int> migrated_from() const = 0;
  /// results_db::claim_run: held until the store is closed or its holder dies.
  virtual bool claim_run(std::int64_t run_id) = 0;
  /// Inside a transaction: holds off other imports into the store until it
  /// ends (SQLite's BEGIN IMMEDIATE does already).
  virtual void serialize_imports() {}
  /// Whether a group of trials is written in a few statements of many rows
  /// (a server: each statement is a round trip) rather than row by row with
  /// statements prepared once (SQLite, where that is faster).
  virtual bool batches_statements() const { return false; }
  /// What identifies a row of confirmations in messages.
  virtual const char* confirmation_row_id() const = 0;
  /// results_db::path(): the file, or the PostgreSQL URI without its password.
  virtual const std::filesystem::path& path() const = 0;
};

/// FNV-1a, 64 bits, over the text's bytes, as a signed integer: the trials'
/// config_hash. Fixed by the file format: never change it.
std::int64_t text_hash(std::string_view text);

/// The end reason of a run that a file before version 3 recorded as
/// "finished" (it kept no reason): budget when its trials reached the
/// budget, else time when it had a time budget, else exhausted. In SQLite's
/// SQL over a row of runs; the migration writes it and a read-only open reads it.
inline constexpr const char* legacy_finished_reason_sql =
    "CASE WHEN (SELECT count(*) FROM trials x WHERE x.run_id = runs.id) >= "
    "COALESCE(json_extract(runs.options, '$.budget'), 9.0e18) THEN 'budget' "
    "WHEN COALESCE(json_extract(runs.options, '$.time_budget_s'), 0) > 0 THEN 'time' ELSE 'exhausted' END";

/// Opens an SQLite file (":memory:": no file) as results_db's constructor documents.
std::unique_ptr<results_store> open_sqlite_store(const std::filesystem::path& file, results_db::open_mode mode,
                                                 bool synchronous_full);
/// Opens a PostgreSQL database (a postgresql:// URI or a libpq conninfo).
std::unique_ptr<results_store> open_postgres_store(const std::string& target, results_db::open_mode mode);

}  // namespace tune::storage::detail
