#pragma once
// The two kinds of results store the storage tests run against, for
// TEMPLATE_TEST_CASE: an SQLite file in a scratch folder, and a new database
// on the throw-away PostgreSQL server (tests/postgres_server.hpp; skipped
// where none can run). Each gives the target results_db opens and runs SQL
// on it as another program would.

#include <sqlite3.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "actors/scratch_dir.hpp"
#include "postgres_server.hpp"

namespace tune::test {

/// Runs SQL that returns nothing on an SQLite file directly, as another
/// program (or a disk fault) would.
inline void sqlite_exec(const std::filesystem::path& file, const std::string& text) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(file.c_str(), &db) == SQLITE_OK);
  char* error = nullptr;
  int rc = sqlite3_exec(db, text.c_str(), nullptr, nullptr, &error);
  std::string message = error ? error : "";
  sqlite3_free(error);
  sqlite3_close(db);
  INFO(message);
  REQUIRE(rc == SQLITE_OK);
}

/// The integer a query's first row and column hold, read from an SQLite file directly.
inline std::int64_t sqlite_count(const std::filesystem::path& file, const std::string& text) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(file.c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, text.c_str(), -1, &stmt, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(stmt) == SQLITE_ROW);
  std::int64_t value = sqlite3_column_int64(stmt, 0);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return value;
}

/// What opening a store says when it refuses (std::invalid_argument); empty when it opens.
inline std::string open_error(const std::filesystem::path& target,
                              storage::results_db::open_mode mode = storage::results_db::open_mode::read_write) {
  try {
    storage::results_db db(target, mode);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

class sqlite_file {
 public:
  explicit sqlite_file(const std::string& name) : dir_(name) {}
  std::string why_not() const { return {}; }
  std::string target() const { return (dir_ / "results.db").string(); }
  /// Runs SQL that returns nothing.
  void sql(const std::string& text) const { sqlite_exec(target(), text); }
  /// The integer a query's first row and column hold.
  std::int64_t count(const std::string& text) const { return sqlite_count(target(), text); }

 private:
  scratch_dir dir_;
};

class postgres_database {
 public:
  explicit postgres_database(const std::string&) {
    auto& server = postgres_server::shared();
    if (server.why_not().empty()) {
      target_ = server.new_database();
      name_ = target_.substr(target_.rfind('/') + 1);
    }
  }
  std::string why_not() const { return postgres_server::shared().why_not(); }
  std::string target() const { return target_; }
  void sql(const std::string& text) const { postgres_server::shared().psql(name_, text); }
  std::int64_t count(const std::string& text) const { return std::stoll(postgres_server::shared().psql(name_, text)); }

 private:
  std::string target_, name_;
};

}  // namespace tune::test
