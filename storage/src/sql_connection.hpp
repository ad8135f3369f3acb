#pragma once
// What results_db needs of an SQL database, so that one set of queries serves
// both stores: SQLite (a file, the default) and PostgreSQL (a server shared by
// a team or a build farm). Queries are written once, in the SQL both speak,
// with parameters as ?1, ?2, …; each connection turns them into its own form.
// Internal to tune::storage.

#include <cstdint>
#include <memory>
#include <string>

namespace tune::storage::detail {

/// The kind of a column's value in the current row (no column of ours holds
/// a blob: one found there is corrupt).
enum class sql_type { null, integer, real, text, blob };

/// A prepared query: bind, step through the rows, read columns.
class sql_cursor {
 public:
  virtual ~sql_cursor() = default;
  virtual void bind_text(int index, const std::string& text) = 0;
  virtual void bind_integer(int index, std::int64_t value) = 0;
  virtual void bind_real(int index, double value) = 0;
  virtual void bind_null(int index) = 0;
  /// Runs the query at the first call; true while there is a row.
  virtual bool step() = 0;
  /// Forgets the rows and the bindings, so that the query can run again.
  virtual void reset() = 0;
  virtual sql_type type(int col) const = 0;
  virtual std::int64_t integer(int col) const = 0;
  virtual double real(int col) const = 0;
  virtual std::string text(int col) const = 0;
  /// Rows changed by the query (UPDATE, DELETE), once it ran.
  virtual std::int64_t changes() const = 0;
};

/// One connection to a results store.
class sql_connection {
 public:
  virtual ~sql_connection() = default;
  /// `persistent`: the query is kept for many uses (prepared once).
  virtual std::unique_ptr<sql_cursor> prepare(const std::string& sql, bool persistent) = 0;
  /// Runs statements without parameters or rows (schema, pragmas).
  virtual void exec(const std::string& sql) = 0;
  /// BEGIN (taking the write lock at once where the store has one), COMMIT, ROLLBACK.
  virtual void begin() = 0;
  virtual void commit() = 0;
  virtual void rollback() noexcept = 0;
  /// The store's name in messages: the file, or a PostgreSQL URI without its password.
  virtual const std::string& name() const = 0;
};

/// A prepared query with error checks and chained binds: what results_db's
/// code holds.
class statement {
 public:
  statement(sql_connection& db, const std::string& sql, bool persistent = false) : c_(db.prepare(sql, persistent)) {}

  statement& bind(int index, const std::string& text) {
    c_->bind_text(index, text);
    return *this;
  }
  statement& bind(int index, std::int64_t value) {
    c_->bind_integer(index, value);
    return *this;
  }
  statement& bind(int index, double value) {
    c_->bind_real(index, value);
    return *this;
  }
  statement& bind_null(int index) {
    c_->bind_null(index);
    return *this;
  }
  bool step() { return c_->step(); }
  void reset() { c_->reset(); }
  /// Resets the statement when it goes out of scope (a kept statement must
  /// not hold a read snapshot, nor its bindings, past its use).
  struct reset_guard {
    statement& s;
    ~reset_guard() { s.reset(); }
  };
  /// Steps a statement that returns no row and resets it.
  void run() {
    reset_guard guard{*this};
    step();
  }
  sql_type type(int col) const { return c_->type(col); }
  std::int64_t integer(int col) const { return c_->integer(col); }
  double real(int col) const { return c_->real(col); }
  std::string text(int col) const { return c_->text(col); }
  std::int64_t changes() const { return c_->changes(); }

 private:
  std::unique_ptr<sql_cursor> c_;
};

}  // namespace tune::storage::detail

namespace tune::storage::detail {

/// Runs `body` inside BEGIN … COMMIT; rolls back on exceptions.
template <class Body>
auto in_transaction(sql_connection& db, Body&& body) {
  db.begin();
  try {
    auto result = body();
    db.commit();
    return result;
  } catch (...) {
    db.rollback();
    throw;
  }
}

}  // namespace tune::storage::detail
