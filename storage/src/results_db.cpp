#include "tune/storage/results_db.hpp"

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

#include "results_store.hpp"
#include "tune/engine/limits.hpp"
#include "tune/engine/median.hpp"

namespace tune::storage {

std::int64_t detail::text_hash(std::string_view text) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ULL;
  std::int64_t out;
  std::memcpy(&out, &h, sizeof out);
  return out;
}

namespace {

using detail::legacy_finished_reason_sql;
using detail::sql_type;
using detail::statement;
using detail::text_hash;

// Statuses whose outcome a second measurement would repeat.
constexpr const char* reusable_statuses =
    "('ok', 'instantiation_error', 'compile_error', 'compile_error_device', 'wrong_answer')";

/// Compiler output longer than this is cut (at a character boundary) when recorded.
constexpr std::size_t max_message_bytes = 2048;

std::string clipped_message(const std::string& text) {
  if (text.size() <= max_message_bytes) return text;
  std::size_t end = max_message_bytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;  // not inside a UTF-8 sequence
  return text.substr(0, end);
}

double unix_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

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
    if (s_.type(col) != sql_type::text) fail(name, "expected text");
    std::string value = s_.text(col);
    if (!allow_empty && value.empty()) fail(name, "is empty");
    return value;
  }
  std::int64_t integer(int col, const std::string& name, std::int64_t min) const {
    if (s_.type(col) != sql_type::integer) fail(name, "expected an integer");
    std::int64_t value = s_.integer(col);
    if (value < min) fail(name, std::to_string(value) + " is below " + std::to_string(min));
    return value;
  }
  double real(int col, const std::string& name) const {
    auto type = s_.type(col);
    if (type != sql_type::real && type != sql_type::integer) fail(name, "expected a number");
    double value = s_.real(col);
    if (!std::isfinite(value) || value < 0) fail(name, "expected a finite number >= 0");
    return value;
  }
  std::optional<double> optional_real(int col, const std::string& name) const {
    if (s_.type(col) == sql_type::null) return std::nullopt;
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

/// The columns of a trial's row as the writers insert them, 19 of them.
constexpr const char* trial_insert_columns =
    "INSERT INTO trials (run_id, seq, config, status, time_ms, compile_s, run_s, device, finished_at, "
    "objectives, reused_from_run, config_hash, message, repeats, stopped_early, kernel_s, drift_flagged, "
    "duel_ms, duel_best_ms) VALUES ";
constexpr int trial_insert_width = 19;

/// "(?, ?, …)": `count` parameters without numbers, numbered in the order
/// they appear in the statement (SQLite looks a numbered ?N up in a list, a
/// cost that grows with the statement's parameters: a group's INSERT has 950).
std::string parameter_row(int count) {
  std::string row = "(";
  for (int k = 0; k < count; ++k) row += k ? ", ?" : "?";
  return row + ")";
}

}  // namespace

struct results_db::impl {
  std::unique_ptr<detail::results_store> store;  // SQLite or PostgreSQL

  /// The statements of record_trial(), prepared at its first call and kept:
  /// preparing them again for every trial was most of its cost. Each is
  /// reset after use, so none holds a read snapshot between trials.
  struct trial_writer {
    statement run_exists, existing, next_seq, insert;
    explicit trial_writer(detail::sql_connection& db)
        : run_exists(db, "SELECT count(*) FROM runs WHERE id = ?1", true),
          existing(db, "SELECT seq FROM trials WHERE config_hash = ?3 AND run_id = ?1 AND config = ?2", true),
          next_seq(db, "SELECT COALESCE(MAX(seq) + 1, 0) FROM trials WHERE run_id = ?1", true),
          insert(db, trial_insert_columns + parameter_row(trial_insert_width), true) {}
  };
  std::unique_ptr<trial_writer> writer;

  ~impl() { writer.reset(); }  // statements are finalized before the connection closes

  detail::sql_connection& db() const { return *store; }
  /// The file, or the URI without a password: for messages.
  const std::string& name() const { return store->name(); }
  /// The schema version as opened (older only for a read-only SQLite file).
  int file_version() const { return store->file_version(); }

  /// Runs `body` in one transaction; rolls back on exceptions.
  template <class Body>
  auto transaction(Body&& body) {
    return detail::in_transaction(*store, std::forward<Body>(body));
  }

  /// Binds one trial's row at parameters base + 1 … base + 19 of an INSERT
  /// of trial_insert_columns.
  static void bind_trial(statement& insert, int base, std::int64_t run_id, std::int64_t seq, const trial_record& trial,
                         double finished_at, std::int64_t hash) {
    insert.bind(base + 1, run_id)
        .bind(base + 2, seq)
        .bind(base + 3, trial.config_json)
        .bind(base + 4, std::string(tune::to_string(trial.state)));
    if (trial.state == status::ok)
      insert.bind(base + 5, trial.time_ms);
    else
      insert.bind_null(base + 5);
    insert.bind(base + 6, trial.compile_s)
        .bind(base + 7, trial.run_s)
        .bind(base + 8, trial.device)
        .bind(base + 9, finished_at);
    if (trial.objectives.empty())
      insert.bind_null(base + 10);
    else
      insert.bind(base + 10, nlohmann::json(trial.objectives).dump());
    if (trial.reused_from_run)
      insert.bind(base + 11, *trial.reused_from_run);
    else
      insert.bind_null(base + 11);
    insert.bind(base + 12, hash);
    if (trial.message.empty())
      insert.bind_null(base + 13);
    else
      insert.bind(base + 13, clipped_message(trial.message));
    insert.bind(base + 14, static_cast<std::int64_t>(trial.repeats))
        .bind(base + 15, static_cast<std::int64_t>(trial.stopped_early ? 1 : 0))
        .bind(base + 16, trial.kernel_s)
        .bind(base + 17, static_cast<std::int64_t>(trial.drift_flagged ? 1 : 0));
    if (!std::isnan(trial.duel_ms))  // checked: both set on an ok trial
      insert.bind(base + 18, trial.duel_ms).bind(base + 19, trial.duel_best_ms);
    else
      insert.bind_null(base + 18).bind_null(base + 19);
  }

  /// Writes one trial with the writer's INSERT (inside a transaction).
  void insert_trial(std::int64_t run_id, std::int64_t seq, const trial_record& trial, double finished_at,
                    std::int64_t hash) {
    if (!writer) writer = std::make_unique<trial_writer>(db());
    auto& insert = writer->insert;
    statement::reset_guard guard{insert};
    bind_trial(insert, 0, run_id, seq, trial, finished_at, hash);
    insert.step();
  }

  /// The columns read_run() reads, for this file's version.
  std::string run_columns() const {
    return std::string("id, task_key, strategy, seed, options, device_kind, started_at, finished_at, ") +
           (file_version() >= 3 ? "status, confirmed_seq"
                                : std::string("CASE status WHEN 'finished' THEN ") + legacy_finished_reason_sql +
                                      " ELSE status END, NULL");
  }
  /// The columns read_trial() reads (of trials as t), for this file's version.
  std::string trial_columns() const {
    return std::string(
               "t.id, t.run_id, t.seq, t.config, t.status, t.time_ms, t.compile_s, t.run_s, t.device, t.finished_at, "
               "t.objectives, t.reused_from_run, ") +
           (file_version() >= 3 ? "t.message, t.repeats, t.stopped_early, t.kernel_s, t.drift_flagged, "
                                : "NULL, 0, 0, 0.0, 0, ") +
           (file_version() >= 4 ? "t.duel_ms, t.duel_best_ms" : "NULL, NULL");
  }

  run_record read_run(const statement& s) const {
    std::int64_t id = s.type(0) == sql_type::integer ? s.integer(0) : -1;
    row_checker row(s, name(), "runs", id);
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
    if (s.type(9) != sql_type::null) run.confirmed_seq = row.integer(9, "confirmed_seq", 0);
    return run;
  }

  trial_record read_trial(const statement& s) const {
    std::int64_t id = s.type(0) == sql_type::integer ? s.integer(0) : -1;
    row_checker row(s, name(), "trials", id);
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
    if (s.type(10) != sql_type::null) {
      auto objectives = row.json(10, "objectives", nlohmann::json::value_t::array);
      for (const auto& value : objectives) {
        if (!value.is_number()) row.fail("objectives", "holds a value that is not a number");
        trial.objectives.push_back(value.get<double>());
      }
    }
    if (s.type(11) != sql_type::null) trial.reused_from_run = row.integer(11, "reused_from_run", 1);
    if (s.type(12) != sql_type::null) trial.message = row.text(12, "message", true);
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
};

results_db::results_db(const std::filesystem::path& file, open_mode mode, bool synchronous_full)
    : impl_(std::make_unique<impl>()) {
  impl_->store = is_postgres_target(file.string()) ? detail::open_postgres_store(file.string(), mode)
                                                   : detail::open_sqlite_store(file, mode, synchronous_full);
}

results_db::~results_db() = default;
std::optional<int> results_db::migrated_from() const { return impl_->store->migrated_from(); }
results_db::results_db(results_db&&) noexcept = default;
results_db& results_db::operator=(results_db&&) noexcept = default;

const std::filesystem::path& results_db::path() const { return impl_->store->path(); }

std::int64_t results_db::create_run(const run_spec& spec) {
  if (spec.task_key.empty()) throw std::invalid_argument("create_run: the task key is empty");
  if (spec.strategy.empty()) throw std::invalid_argument("create_run: the strategy name is empty");
  auto options = nlohmann::json::parse(spec.options_json, nullptr, false);
  if (options.is_discarded() || !options.is_object())
    throw std::invalid_argument("create_run: options must be a JSON object, got '" + spec.options_json + "'");
  return impl_->transaction([&] {
    statement s(impl_->db(),
                "INSERT INTO runs (task_key, strategy, seed, options, device_kind, started_at, status) "
                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'running') RETURNING id");
    s.bind(1, spec.task_key).bind(2, spec.strategy).bind(3, seed_text(spec.seed)).bind(4, spec.options_json);
    s.bind(5, spec.device_kind).bind(6, unix_now());
    if (!s.step() || s.type(0) != sql_type::integer)
      throw db_error("results DB " + impl_->name() + ": a new run was given no id");
    return s.integer(0);
  });
}

std::optional<run_record> results_db::find_run(std::int64_t run_id) const {
  statement s(impl_->db(), "SELECT " + impl_->run_columns() + " FROM runs WHERE id = ?1");
  s.bind(1, run_id);
  if (!s.step()) return std::nullopt;
  return impl_->read_run(s);
}

std::optional<run_record> results_db::latest_resumable_run(const std::string& task_key, const std::string& strategy,
                                                           std::uint64_t seed) const {
  statement s(impl_->db(),
              "SELECT " + impl_->run_columns() +
                  " FROM runs WHERE task_key = ?1 AND strategy = ?2 AND seed = ?3 AND status IN ('running', 'stopped') "
                  "ORDER BY started_at DESC, id DESC LIMIT 1");
  s.bind(1, task_key).bind(2, strategy).bind(3, seed_text(seed));
  if (!s.step()) return std::nullopt;
  return impl_->read_run(s);
}

std::vector<run_record> results_db::runs() const {
  statement s(impl_->db(), "SELECT " + impl_->run_columns() + " FROM runs ORDER BY id");
  std::vector<run_record> out;
  while (s.step()) out.push_back(impl_->read_run(s));
  return out;
}

std::string run_status_text(const run_record& run) {
  return run.reason ? std::string(to_string(*run.reason)) : std::string("running");
}

void results_db::finish_run(std::int64_t run_id, end_reason reason) {
  impl_->transaction([&] {
    statement s(impl_->db(), "UPDATE runs SET status = ?1, finished_at = ?2 WHERE id = ?3");
    s.bind(1, std::string(to_string(reason))).bind(2, unix_now()).bind(3, run_id);
    s.step();
    if (s.changes() == 0) throw db_error("results DB " + impl_->name() + ": no run with id " + std::to_string(run_id));
    return 0;
  });
}

void results_db::reopen_run(std::int64_t run_id) {
  impl_->transaction([&] {
    statement s(impl_->db(), "UPDATE runs SET status = 'running', finished_at = NULL WHERE id = ?1");
    s.bind(1, run_id);
    s.step();
    if (s.changes() == 0) throw db_error("results DB " + impl_->name() + ": no run with id " + std::to_string(run_id));
    return 0;
  });
}

bool results_db::claim_run(std::int64_t run_id) { return impl_->store->claim_run(run_id); }

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
  if (!d.writer) d.writer = std::make_unique<impl::trial_writer>(d.db());
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
    if (trials.size() == 1 || !d.store->batches_statements()) {
      // The kept statements: a lookup and an insert per trial (SQLite: no
      // round trips, and statements prepared once beat large ones made per
      // group; bench_results_db).
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
        double finished_at = trial.finished_at > 0 ? trial.finished_at : now;
        d.insert_trial(run_id, seq, trial, finished_at, hash);
        out.push_back({true, seq++, finished_at});
      }
      return std::move(out);
    }
    // A group on a server, where every statement is a round trip: the
    // configurations the run holds already, then the new rows, in a few
    // statements each of many rows.
    std::vector<std::int64_t> hashes;
    hashes.reserve(trials.size());
    for (const auto& trial : trials) hashes.push_back(text_hash(trial.config_json));
    std::unordered_map<std::string, std::int64_t> known;  // configuration text -> seq in the run
    constexpr std::size_t lookup_chunk = 200;
    for (std::size_t begin = 0; begin < trials.size(); begin += lookup_chunk) {
      const auto count = static_cast<int>(std::min(lookup_chunk, trials.size() - begin));
      // `+run_id`: found by the hash's index; SQLite would otherwise walk
      // the run's rows by its (run_id, seq) key, all of them for each group.
      std::string sql = "SELECT seq, config FROM trials WHERE +run_id = ? AND config_hash IN " + parameter_row(count);
      statement lookup(d.db(), sql);
      lookup.bind(1, run_id);
      for (int k = 0; k < count; ++k) lookup.bind(2 + k, hashes[begin + static_cast<std::size_t>(k)]);
      while (lookup.step()) known.emplace(lookup.text(1), lookup.integer(0));
    }
    std::vector<std::size_t> fresh;  // indices of the trials to insert, in order
    for (std::size_t i = 0; i < trials.size(); ++i) {
      const auto& trial = trials[i];
      auto [it, inserted] = known.emplace(trial.config_json, seq);
      if (!inserted) {  // in the run already, or given earlier in this group
        out.push_back({false, it->second});
        continue;
      }
      double finished_at = trial.finished_at > 0 ? trial.finished_at : now;
      out.push_back({true, seq++, finished_at});
      fresh.push_back(i);
    }
    constexpr std::size_t insert_chunk = 50;  // 950 parameters a statement
    for (std::size_t begin = 0; begin < fresh.size(); begin += insert_chunk) {
      const auto count = std::min(insert_chunk, fresh.size() - begin);
      std::string sql = trial_insert_columns;
      for (std::size_t r = 0; r < count; ++r) sql += (r ? ", " : "") + parameter_row(trial_insert_width);
      statement insert(d.db(), sql);
      for (std::size_t r = 0; r < count; ++r) {
        const auto i = fresh[begin + r];
        impl::bind_trial(insert, static_cast<int>(r) * trial_insert_width, run_id, out[i].seq, trials[i],
                         out[i].finished_at, hashes[i]);
      }
      insert.step();
    }
    return std::move(out);
  });
}

std::vector<trial_record> results_db::trials(std::int64_t run_id) const {
  statement s(impl_->db(), "SELECT " + impl_->trial_columns() + " FROM trials t WHERE t.run_id = ?1 ORDER BY t.seq");
  s.bind(1, run_id);
  return impl_->read_trials(s);
}

std::int64_t results_db::trial_count(std::int64_t run_id) const {
  statement s(impl_->db(), "SELECT count(*) FROM trials WHERE run_id = ?1");
  s.bind(1, run_id).step();
  return s.integer(0);
}

std::map<std::int64_t, run_totals> results_db::all_run_totals() const {
  statement s(impl_->db(),
              "SELECT run_id, count(*), count(CASE WHEN status = 'ok' THEN 1 END), "
              "min(CASE WHEN status = 'ok' THEN time_ms END) FROM trials GROUP BY run_id");
  std::map<std::int64_t, run_totals> out;
  while (s.step()) {
    auto& totals = out[s.integer(0)];
    totals.trials = s.integer(1);
    totals.ok_trials = s.integer(2);
    if (s.type(3) != sql_type::null) totals.best_time_ms = s.real(3);
  }
  return out;
}

std::optional<trial_record> results_db::find_cached(const std::string& task_key, const std::string& device_kind,
                                                    const std::string& config_json) const {
  // A version 1 file opened read-only has no hashes: its text is indexed.
  statement s(impl_->db(), "SELECT " + impl_->trial_columns() + " FROM trials t JOIN runs r ON r.id = t.run_id WHERE " +
                               (impl_->file_version() >= 2 ? "t.config_hash = ?4 AND " : "") +
                               "t.config = ?1 AND r.task_key = ?2 AND r.device_kind = ?3 AND t.status IN " +
                               reusable_statuses + " ORDER BY t.finished_at DESC, t.id DESC LIMIT 1");
  s.bind(1, config_json).bind(2, task_key).bind(3, device_kind);
  if (impl_->file_version() >= 2) s.bind(4, text_hash(config_json));
  if (!s.step()) return std::nullopt;
  return impl_->read_trial(s);
}

std::unordered_map<std::string, trial_record> results_db::load_cache(const std::string& task_key,
                                                                     const std::string& device_kind) const {
  statement s(impl_->db(),
              "SELECT " + impl_->trial_columns() +
                  " FROM trials t JOIN runs r ON r.id = t.run_id WHERE r.task_key = ?1 AND r.device_kind = ?2 AND "
                  "t.status IN " +
                  reusable_statuses + " ORDER BY t.finished_at, t.id");
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
    statement run(d.db(), "UPDATE runs SET confirmed_seq = ?1 WHERE id = ?2");
    run.bind(1, winner_seq).bind(2, run_id);
    run.step();
    if (run.changes() == 0)
      throw std::invalid_argument("record_confirmation: no run with id " + std::to_string(run_id));
    statement clear(d.db(), "DELETE FROM confirmations WHERE run_id = ?1");
    clear.bind(1, run_id).step();
    statement exists(d.db(), "SELECT count(*) FROM trials WHERE run_id = ?1 AND seq = ?2");
    statement insert(d.db(), "INSERT INTO confirmations (run_id, seq, round, time_ms) VALUES (?1, ?2, ?3, ?4)");
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
    statement flag(d.db(), "UPDATE trials SET drift_flagged = 1 WHERE run_id = ?1 AND seq = ?2");
    for (auto seq : seqs) {
      statement::reset_guard guard{flag};
      flag.bind(1, run_id).bind(2, seq).step();
    }
    return 0;
  });
}

std::vector<confirmation_row> results_db::confirmations(std::int64_t run_id) const {
  std::vector<confirmation_row> out;
  if (impl_->file_version() < 3) return out;  // an older file kept none
  statement s(impl_->db(), "SELECT " + std::string(impl_->store->confirmation_row_id()) +
                               ", seq, round, time_ms FROM confirmations WHERE run_id = ?1 ORDER BY seq, round");
  s.bind(1, run_id);
  while (s.step()) {
    row_checker row(s, impl_->name(), "confirmations", s.integer(0));
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
  statement s(impl_->db(), "SELECT DISTINCT task_key FROM runs");
  std::vector<std::string> out;
  while (s.step()) out.push_back(s.text(0));
  std::sort(out.begin(), out.end());  // by bytes, whatever collation the store has
  return out;
}

std::optional<task_summary> results_db::best(const std::string& task_key,
                                             const std::optional<std::string>& device_kind) const {
  std::string filter = "r.task_key = ?1" + std::string(device_kind ? " AND r.device_kind = ?2" : "");
  statement counts(impl_->db(),
                   "SELECT count(DISTINCT r.id), count(t.id), count(CASE WHEN t.status = 'ok' THEN 1 END) FROM runs r "
                   "LEFT JOIN trials t ON t.run_id = r.id WHERE " +
                       filter);
  counts.bind(1, task_key);
  if (device_kind) counts.bind(2, *device_kind);
  counts.step();
  task_summary summary;
  summary.task_key = task_key;
  summary.runs = counts.integer(0);
  summary.trials = counts.integer(1);
  summary.ok_trials = counts.integer(2);
  if (summary.runs == 0) return std::nullopt;

  // A run's confirmed winner counts by the statistic of its rounds (the
  // run's options.measurement.statistic: median, or min); the fastest of
  // them is the task's best. Without any, the fastest ok trial is.
  if (impl_->file_version() >= 3) {
    statement confirmed(impl_->db(), "SELECT r.id, r.confirmed_seq, r.options FROM runs r WHERE " + filter +
                                         " AND r.confirmed_seq IS NOT NULL");
    confirmed.bind(1, task_key);
    if (device_kind) confirmed.bind(2, *device_kind);
    struct winner {
      std::int64_t run_id, seq;
      time_statistic statistic;
    };
    std::vector<winner> winners;
    while (confirmed.step()) {
      auto options = nlohmann::json::parse(confirmed.text(2), nullptr, false);
      auto statistic = time_statistic::median;
      if (options.is_object() && options.contains("measurement") && options["measurement"].is_object() &&
          options["measurement"].contains("statistic") && options["measurement"]["statistic"].is_string())
        statistic = time_statistic_from_string(options["measurement"]["statistic"].get<std::string>())
                        .value_or(time_statistic::median);
      winners.push_back({confirmed.integer(0), confirmed.integer(1), statistic});
    }
    for (const auto& [run_id, seq, statistic] : winners) {
      std::vector<double> times;
      for (const auto& c : confirmations(run_id))
        if (c.seq == seq) times.push_back(c.time_ms);
      if (times.empty()) continue;
      std::sort(times.begin(), times.end());
      double confirmed_ms = statistic_of(times, statistic);
      if (summary.confirmed_ms && confirmed_ms >= *summary.confirmed_ms) continue;
      statement trial(impl_->db(),
                      "SELECT " + impl_->trial_columns() + " FROM trials t WHERE t.run_id = ?1 AND t.seq = ?2");
      trial.bind(1, run_id).bind(2, seq);
      if (!trial.step()) continue;
      summary.best = impl_->read_trial(trial);
      summary.confirmed_ms = confirmed_ms;
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
  const bool duels = impl_->file_version() >= 4;
  statement best(impl_->db(), "SELECT " + impl_->trial_columns() +
                                  " FROM trials t JOIN runs r ON r.id = t.run_id WHERE " + filter +
                                  " AND t.status = 'ok'" +
                                  (duels ? " AND NOT (t.duel_ms IS NOT NULL AND t.duel_ms >= t.duel_best_ms) ORDER BY "
                                           "COALESCE(t.duel_ms, t.time_ms) ASC"
                                         : " ORDER BY t.time_ms ASC") +
                                  ", t.finished_at ASC, t.id ASC LIMIT 1");
  best.bind(1, task_key);
  if (device_kind) best.bind(2, *device_kind);
  if (best.step()) {
    summary.best = impl_->read_trial(best);
    summary.best_run = find_run(summary.best->run_id);
  }
  return summary;
}

results_db::import_outcome results_db::import_run(const run_record& run, const std::vector<trial_record>& trials,
                                                  const std::vector<confirmation_row>& rounds) {
  for (std::size_t i = 0; i < trials.size(); ++i) {
    check_trial(trials[i]);
    if (trials[i].seq != static_cast<std::int64_t>(i))
      throw std::invalid_argument("import_run: run " + std::to_string(run.id) +
                                  "'s trials must be given in seq order "
                                  "from 0, as trials() gives them; trial " +
                                  std::to_string(i) + " has seq " + std::to_string(trials[i].seq));
  }
  for (const auto& round : rounds)
    if (!(std::isfinite(round.time_ms) && round.time_ms > 0) || round.seq < 0 ||
        round.seq >= static_cast<std::int64_t>(trials.size()))
      throw std::invalid_argument("import_run: run " + std::to_string(run.id) + ": confirmation round " +
                                  std::to_string(round.round) + " of trial " + std::to_string(round.seq) +
                                  " names no trial of the run or has no time > 0");
  auto& d = *impl_;
  return d.transaction([&] {
    d.store->serialize_imports();  // two copies at once never add one run twice
    import_outcome out;
    const std::string status = run_status_text(run);
    {
      statement find(d.db(),
                     "SELECT id, status FROM runs WHERE task_key = ?1 AND strategy = ?2 AND seed = ?3 AND "
                     "device_kind = ?4 AND started_at = ?5 ORDER BY id LIMIT 1");
      find.bind(1, run.task_key).bind(2, run.strategy).bind(3, seed_text(run.seed)).bind(4, run.device_kind);
      find.bind(5, run.started_at);
      if (find.step()) {
        out.run_id = find.integer(0);
        out.was_running = find.text(1) == "running";
      }
    }
    if (out.run_id == 0) {
      statement add(d.db(),
                    "INSERT INTO runs (task_key, strategy, seed, options, device_kind, started_at, status) "
                    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) RETURNING id");
      add.bind(1, run.task_key).bind(2, run.strategy).bind(3, seed_text(run.seed)).bind(4, run.options_json);
      add.bind(5, run.device_kind).bind(6, run.started_at).bind(7, status);
      if (!add.step() || add.type(0) != sql_type::integer)
        throw db_error("results DB " + d.name() + ": a copied run was given no id");
      out.run_id = add.integer(0);
      out.added = true;
    }
    // What the copy here holds must be the start of this run; a copy that
    // went on here (resumed after it was copied) is left as it is.
    std::vector<trial_record> here;
    {
      statement s(d.db(), "SELECT " + d.trial_columns() + " FROM trials t WHERE t.run_id = ?1 ORDER BY t.seq");
      s.bind(1, out.run_id);
      here = d.read_trials(s);
    }
    bool diverged = here.size() > trials.size();
    for (std::size_t i = 0; !diverged && i < here.size(); ++i)
      diverged = here[i].config_json != trials[i].config_json || here[i].state != trials[i].state;
    if (diverged) {
      out.diverged = true;
      return out;
    }
    for (std::size_t i = here.size(); i < trials.size(); ++i) {
      const auto& trial = trials[i];
      d.insert_trial(out.run_id, trial.seq, trial, trial.finished_at, text_hash(trial.config_json));
      ++out.trials_added;
    }
    // The run's state comes along with new trials, or to a copy that had not
    // ended; a copy that ended here keeps its own.
    if (!out.added && out.trials_added == 0 && !out.was_running) return out;
    {
      statement update(d.db(), "UPDATE runs SET status = ?1, finished_at = ?2, confirmed_seq = ?3 WHERE id = ?4");
      update.bind(1, status);
      if (run.finished_at)
        update.bind(2, *run.finished_at);
      else
        update.bind_null(2);
      if (run.confirmed_seq)
        update.bind(3, *run.confirmed_seq);
      else
        update.bind_null(3);
      update.bind(4, out.run_id).step();
    }
    statement clear(d.db(), "DELETE FROM confirmations WHERE run_id = ?1");
    clear.bind(1, out.run_id).step();
    statement insert(d.db(), "INSERT INTO confirmations (run_id, seq, round, time_ms) VALUES (?1, ?2, ?3, ?4)");
    for (const auto& round : rounds) {
      statement::reset_guard guard{insert};
      insert.bind(1, out.run_id).bind(2, round.seq).bind(3, static_cast<std::int64_t>(round.round));
      insert.bind(4, round.time_ms).step();
    }
    return out;
  });
}

void results_db::set_reused_from(std::int64_t run_id, const std::vector<std::pair<std::int64_t, std::int64_t>>& links) {
  if (links.empty()) return;
  auto& d = *impl_;
  d.transaction([&] {
    statement link(d.db(), "UPDATE trials SET reused_from_run = ?1 WHERE run_id = ?2 AND seq = ?3");
    for (const auto& [seq, reused] : links) {
      statement::reset_guard guard{link};
      link.bind(1, reused).bind(2, run_id).bind(3, seq).step();
    }
    return 0;
  });
}

}  // namespace tune::storage
