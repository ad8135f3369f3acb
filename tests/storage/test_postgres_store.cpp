// The PostgreSQL results store (storage/src/postgres_store.cpp): what differs
// from the SQLite file. What both do alike (runs, trials, resume, the cache,
// best, confirmation, claims) is tested against both in test_results_db.cpp.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <random>
#include <set>
#include <thread>

#include "postgres_server.hpp"
#include "skip.hpp"
#include "store_kinds.hpp"
#include "tune/storage/results_db.hpp"

using namespace tune::storage;
using Catch::Matchers::Contains;
using tune::status;
using tune::test::open_error;
using tune::test::postgres_server;

namespace {

run_spec pg_spec(const std::string& task) {
  run_spec s;
  s.task_key = task;
  s.strategy = "random";
  s.seed = 3;
  s.options_json = R"({"budget": 50})";
  s.device_kind = "replay:test";
  return s;
}

trial_record pg_ok_trial(int x, double time_ms) {
  trial_record t;
  t.config_json = "{\"x\":" + std::to_string(x) + "}";
  t.state = status::ok;
  t.time_ms = time_ms;
  t.compile_s = 0.01;
  t.run_s = 0.02;
  t.device = "sim0";
  return t;
}

}  // namespace

TEST_CASE("postgres store: targets are told from SQLite paths", "[storage]") {
  CHECK(is_postgres_target("postgresql://tuner@db.example:5432/tune"));
  CHECK(is_postgres_target("postgres://db.example/tune?sslmode=require"));
  CHECK(is_postgres_target("host=db.example dbname=tune"));
  CHECK(is_postgres_target("host=/run/postgresql dbname=tune"));  // a socket folder
  CHECK(is_postgres_target(" dbname = tune"));
  CHECK(is_postgres_target("service=team"));
  CHECK(is_postgres_target("password=s3cret host=db dbname=t"));  // refused when opened, never a file name
  CHECK(is_postgres_target("sslmode=require host=db dbname=t"));
  CHECK_FALSE(is_postgres_target("results.db"));
  CHECK_FALSE(is_postgres_target("/tmp/dbname=x/results.db"));  // a path, though it says dbname=
  CHECK_FALSE(is_postgres_target("runs/dbname=x.db"));
  CHECK_FALSE(is_postgres_target("x=1.db"));
  CHECK_FALSE(is_postgres_target(":memory:"));
  CHECK_FALSE(is_postgres_target("postgresql.db"));
}

TEST_CASE("postgres store: a bad target, a password, no server, a newer schema: one clear message each", "[storage]") {
  if (!postgres_available()) SKIP_TEST("this build has no PostgreSQL support (libpq-dev)");
  auto bad_uri = open_error("postgresql://tuner@db.example:notaport/tune?nonsense=1");
  CHECK_THAT(bad_uri, Contains("not a valid PostgreSQL URI") && Contains("postgresql://user@host:port/dbname"));

  // A password is refused, and never repeated.
  auto secret = open_error("postgresql://tuner:hunter2secret@127.0.0.1:1/tune");
  CHECK_THAT(secret, Contains("holds a password") && Contains("PGPASSFILE") && Contains("postgresql://tuner@"));
  CHECK_THAT(secret, !Contains("hunter2secret"));
  auto keyword_secret = open_error("host=127.0.0.1 port=1 dbname=tune password=hunter2secret");
  CHECK_THAT(keyword_secret, Contains("holds a password") && !Contains("hunter2secret"));

  // Nothing listens on port 1 of 127.0.0.1.
  auto unreachable = open_error("postgresql://tuner@127.0.0.1:1/tune");
  CHECK_THAT(unreachable, Contains("cannot connect to results DB postgresql://tuner@127.0.0.1:1/tune") &&
                              Contains("check that the server runs"));

  auto& server = postgres_server::shared();
  if (!server.why_not().empty()) return;  // the rest needs a server (the checks above ran)
  auto uri = server.new_database();
  auto name = uri.substr(uri.rfind('/') + 1);
  // A database no run wrote to, read-only: said plainly; opened to write, it gets the tables.
  CHECK_THAT(open_error(uri, results_db::open_mode::read_only), Contains("holds no tune-engine tables yet"));
  CHECK(open_error(uri).empty());
  CHECK(server.psql(name, "SELECT version FROM schema_version") == "4\n");

  server.psql(name, "UPDATE schema_version SET version = 99");
  auto newer = open_error(uri);
  CHECK_THAT(newer, Contains("schema version 99, newer than this tune-engine understands (4)"));

  // Another program's tables of the same names.
  auto other = server.new_database();
  server.psql(other.substr(other.rfind('/') + 1), "CREATE TABLE runs (id INTEGER)");
  CHECK_THAT(open_error(other), Contains("is not a tune-engine results DB"));

  // A schema of the search path that does not exist.
  auto fresh = server.new_database();
  CHECK_THAT(open_error(fresh + "?options=-csearch_path%3Dnowhere"), Contains("no schema of the search_path exists"));
}

TEST_CASE("postgres store: what a compiler printed is kept though it is not UTF-8", "[storage]") {
  auto& server = postgres_server::shared();
  if (!server.why_not().empty()) SKIP_TEST("PostgreSQL: " << server.why_not());
  results_db db(server.new_database());
  CHECK(db.path().string().rfind("postgresql://postgres@127.0.0.1:", 0) == 0);
  auto run = db.create_run(pg_spec("gemm/64"));
  auto t = pg_ok_trial(1, 2.0);
  t.state = status::compile_error;
  t.message = std::string("error: bad byte \xff here, a NUL \0 there, \xc3\xa9 kept", 46);
  REQUIRE(db.record_trial(run, t).inserted);
  auto back = db.trials(run).at(0).message;
  CHECK(back == "error: bad byte \xEF\xBF\xBD here, a NUL \xEF\xBF\xBD there, \xc3\xa9 kept");
  // Times come back as the same doubles.
  auto exact = pg_ok_trial(2, 0.1 + 0.2);
  exact.finished_at = 1.7e9 + 1.0 / 3.0;
  db.record_trial(run, exact);
  auto stored = db.trials(run).at(1);
  CHECK(stored.time_ms == 0.1 + 0.2);
  CHECK(stored.finished_at == 1.7e9 + 1.0 / 3.0);
}

TEST_CASE("postgres store: many writers at once on a new database, each its own run, nothing lost or twice",
          "[storage]") {
  auto& server = postgres_server::shared();
  if (!server.why_not().empty()) SKIP_TEST("PostgreSQL: " << server.why_not());
  const auto uri = server.new_database();
  constexpr int writers = 8, trials = 40;
  std::atomic<int> failures{0};
  std::vector<std::int64_t> runs(writers);
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w)
    threads.emplace_back([&, w] {
      try {
        results_db db(uri);  // all of them making the tables at once: one does
        runs[w] = db.create_run(pg_spec("task/" + std::to_string(w)));
        if (!db.claim_run(runs[w])) ++failures;
        for (int i = 0; i < trials; i += 4) {
          std::vector<trial_record> group;
          for (int k = i; k < i + 4; ++k) group.push_back(pg_ok_trial(k, 1.0 + k));
          db.record_trials(runs[w], group);
        }
        db.finish_run(runs[w], tune::end_reason::budget);
      } catch (const std::exception& e) {
        UNSCOPED_INFO("writer " << w << ": " << e.what());
        ++failures;
      }
    });
  for (auto& t : threads) t.join();
  CHECK(failures == 0);
  results_db db(uri, results_db::open_mode::read_only);
  CHECK(db.runs().size() == writers);
  CHECK(std::set<std::int64_t>(runs.begin(), runs.end()).size() == writers);
  for (auto run : runs) {
    auto stored = db.trials(run);
    REQUIRE(stored.size() == trials);
    for (int i = 0; i < trials; ++i) CHECK(stored[i].seq == i);
    CHECK(db.find_run(run)->reason == tune::end_reason::budget);
  }
}

TEST_CASE("postgres store: coordinators killed mid-commit leave whole trials, and their runs resume", "[storage]") {
  auto& server = postgres_server::shared();
  if (!server.why_not().empty()) SKIP_TEST("PostgreSQL: " << server.why_not());
  const auto uri = server.new_database();
  std::int64_t run_ids[3];
  {
    results_db db(uri);
    for (auto& id : run_ids) id = db.create_run(pg_spec("task/killed"));
  }
  std::mt19937 rng(11);
  std::vector<pid_t> children;
  std::vector<int> ready;
  for (auto run : run_ids) {
    int pipe_fd[2];
    REQUIRE(pipe(pipe_fd) == 0);
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      close(pipe_fd[0]);
      try {
        results_db db(uri);
        if (!db.claim_run(run)) _exit(3);
        for (int i = 0;; ++i) {
          db.record_trials(run, {pg_ok_trial(2 * i, 1.0), pg_ok_trial(2 * i + 1, 2.0)});
          if (i == 2) (void)!write(pipe_fd[1], "y", 1);  // some trials are in
        }
      } catch (...) {
        _exit(4);
      }
    }
    close(pipe_fd[1]);
    children.push_back(child);
    ready.push_back(pipe_fd[0]);
  }
  for (std::size_t c = 0; c < children.size(); ++c) {
    char byte = 0;
    REQUIRE(read(ready[c], &byte, 1) == 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 60)(rng)));
    kill(children[c], SIGKILL);
    int wstatus = 0;
    waitpid(children[c], &wstatus, 0);
    CHECK(WIFSIGNALED(wstatus));  // killed while writing, not ended on its own
    close(ready[c]);
  }
  results_db db(uri);
  for (auto run : run_ids) {
    auto stored = db.trials(run);
    INFO("run " << run << ": " << stored.size() << " trials");
    REQUIRE(stored.size() >= 6);
    CHECK(stored.size() % 2 == 0);  // a group of two is committed whole or not at all
    for (std::size_t i = 0; i < stored.size(); ++i) {
      CHECK(stored[i].seq == static_cast<std::int64_t>(i));
      CHECK(stored[i].config_json == "{\"x\":" + std::to_string(i) + "}");
    }
    // The killed holder's claim is gone once the server has seen its connection close.
    bool claimed = false;
    for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
         !claimed && std::chrono::steady_clock::now() < deadline;) {
      claimed = db.claim_run(run);
      if (!claimed) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    REQUIRE(claimed);
    auto next = static_cast<int>(stored.size());
    CHECK(db.record_trial(run, pg_ok_trial(next, 1.5)).seq == next);
    db.finish_run(run, tune::end_reason::budget);
  }
}
