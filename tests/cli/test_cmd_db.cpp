// tune-engine db copy, and runs of the command on a PostgreSQL results store
// (the throw-away server of tests/postgres_server.hpp; skipped where none runs).
#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "actors/scratch_dir.hpp"
#include "cli/cli_process.hpp"
#include "postgres_server.hpp"
#include "skip.hpp"
#include "tune/storage/results_db.hpp"

using namespace tune::storage;
using Catch::Matchers::Contains;
using tune::test::cli_process;
using tune::test::postgres_server;

namespace {

trial_record db_trial_of(int tile, double time_ms) {
  trial_record t;
  t.config_json = "{\"tile\":" + std::to_string(tile) + "}";
  t.state = time_ms > 0 ? tune::status::ok : tune::status::compile_error;
  t.time_ms = time_ms > 0 ? time_ms : std::nan("");
  t.compile_s = 0.2;
  t.run_s = 0.1;
  t.device = "sim0";
  t.message = time_ms > 0 ? "" : "error: no";
  return t;
}

/// Two runs: the second reuses a measurement of the first and has confirmation rounds.
void fill_target(const std::string& target) {
  results_db db(target);
  auto a = db.create_run({"gemm/512", "random", 1, R"({"budget": 3})", "replay:t4"});
  db.record_trial(a, db_trial_of(1, 4.0));
  db.record_trial(a, db_trial_of(2, -1));
  db.finish_run(a, tune::end_reason::budget);
  auto b = db.create_run({"gemm/512", "bo", 18446744073709551615ull, R"({"budget": 9})", "replay:t4"});
  auto reused = db_trial_of(1, 4.0);
  reused.reused_from_run = a;
  db.record_trial(b, reused);
  auto duel = db_trial_of(3, 1.5);
  duel.duel_ms = 1.6;
  duel.duel_best_ms = 1.7;
  db.record_trial(b, duel);
  db.record_confirmation(b, {{1, 0, 1.55}, {1, 1, 1.58}, {0, 0, 4.1}, {0, 1, 4.2}}, 1);
}

nlohmann::json copy(const std::string& from, const std::string& to) {
  cli_process p({"db", "copy", from, to, "--json"});
  INFO(p.err());
  REQUIRE(p.wait() == 0);
  return nlohmann::json::parse(p.out());
}

/// Every run with its trials and rounds, ids left out (each store numbers its own).
nlohmann::json contents(const std::string& target) {
  results_db db(target, results_db::open_mode::read_only);
  nlohmann::json out = nlohmann::json::array();
  std::map<std::int64_t, std::size_t> index;
  for (const auto& run : db.runs()) {
    index[run.id] = out.size();
    nlohmann::json trials = nlohmann::json::array();
    for (const auto& t : db.trials(run.id))
      trials.push_back({t.seq, t.config_json, tune::to_string(t.state), std::isnan(t.time_ms) ? -1.0 : t.time_ms,
                        t.finished_at, t.message, t.duel_ms == t.duel_ms ? t.duel_ms : -1.0,
                        t.reused_from_run ? static_cast<std::int64_t>(index.at(*t.reused_from_run)) : -1});
    nlohmann::json rounds = nlohmann::json::array();
    for (const auto& r : db.confirmations(run.id)) rounds.push_back({r.seq, r.round, r.time_ms});
    out.push_back({run.task_key, run.strategy, std::to_string(run.seed), run.options_json, run.device_kind,
                   run.started_at, run.finished_at.value_or(-1), run_status_text(run), run.confirmed_seq.value_or(-1),
                   trials, rounds});
  }
  return out;
}

}  // namespace

TEST_CASE("db copy: SQLite to PostgreSQL and back, the same runs, and copying again adds nothing twice", "[cli]") {
  auto& server = postgres_server::shared();
  if (!server.why_not().empty()) SKIP_TEST("PostgreSQL: " << server.why_not());
  tune::test::scratch_dir dir("cli-db-copy");
  const auto laptop = (dir / "laptop.db").string(), back = (dir / "back.db").string();
  const auto team = server.new_database();
  fill_target(laptop);

  auto first = copy(laptop, team);
  CHECK(first["runs_added"] == 2);
  CHECK(first["trials_added"] == 4);
  CHECK(first["to"].get<std::string>().rfind("postgresql://postgres@127.0.0.1:", 0) == 0);
  CHECK(contents(team) == contents(laptop));

  auto again = copy(laptop, team);
  CHECK(again["runs_added"] == 0);
  CHECK(again["runs_unchanged"] == 2);
  CHECK(again["trials_added"] == 0);

  // The laptop's run goes on; the next copy brings the team's copy up to date.
  {
    results_db db(laptop);
    auto run = db.runs().back().id;
    db.reopen_run(run);
    db.record_trial(run, db_trial_of(4, 1.2));
    db.finish_run(run, tune::end_reason::time);
  }
  auto update = copy(laptop, team);
  CHECK(update["runs_updated"] == 1);
  CHECK(update["trials_added"] == 1);
  CHECK(contents(team) == contents(laptop));

  // And back, into a new file: the same runs again.
  auto home = copy(team, back);
  CHECK(home["runs_added"] == 2);
  CHECK(contents(back) == contents(laptop));

  // The laptop's run goes on again; the team's older copy does not roll it back.
  {
    results_db db(laptop);
    auto run = db.runs().back().id;
    db.reopen_run(run);
    db.record_trial(run, db_trial_of(5, 1.1));
  }
  auto before = contents(laptop);
  auto behind = copy(team, laptop);
  CHECK(behind["runs_diverged"] == 1);
  CHECK(behind["runs_unchanged"] == 1);
  CHECK(behind["trials_added"] == 0);
  CHECK(contents(laptop) == before);

  // best reads the team's store as it reads a file.
  cli_process best({"best", "--db", team, "--task", "gemm/512", "--json"});
  REQUIRE(best.wait() == 0);
  auto answer = nlohmann::json::parse(best.out());
  CHECK(answer["runs"] == 2);
  CHECK(answer["best"]["config"] == nlohmann::json{{"tile", 3}});  // the confirmed winner
}

TEST_CASE("db copy: bad stores get one clear message each and exit 2", "[cli]") {
  tune::test::scratch_dir dir("cli-db-copy-bad");
  const auto file = (dir / "a.db").string();
  {
    cli_process p({"db", "copy", (dir / "missing.db").string(), file});
    CHECK(p.wait() == 2);
    CHECK_THAT(p.err(), Contains("missing.db does not exist"));
  }
  fill_target(file);
  {
    cli_process p({"db", "copy", file, file});
    CHECK(p.wait() == 2);
    CHECK_THAT(p.err(), Contains("FROM and TO are the same store"));
  }
  {
    cli_process p({"db", "copy", file, "postgresql://tuner:s3cret@127.0.0.1:1/team"});
    CHECK(p.wait() == 2);
    CHECK_THAT(p.err(), Contains("holds a password") && !Contains("s3cret"));
  }
  {
    cli_process p(
        {"db", "copy", "postgresql://tuner:s3cret@127.0.0.1:1/team", "postgresql://tuner:s3cret@127.0.0.1:1/team"});
    CHECK(p.wait() == 2);
    CHECK_THAT(p.err(), Contains("holds a password") && !Contains("s3cret"));
  }
  {
    cli_process p({"db", "copy", file, "postgresql://tuner@127.0.0.1:1/team"});
    CHECK(p.wait() == 2);
    CHECK_THAT(p.err(), Contains("cannot connect to results DB postgresql://tuner@127.0.0.1:1/team"));
  }
  {
    cli_process p({"db"});
    CHECK(p.wait() == 2);
    CHECK_THAT(p.err(), Contains("db: give a command: 'db copy FROM TO'"));
  }
}

TEST_CASE(
    "tune --db postgresql://…: one process at a time continues a run, killed its run resumes, best and "
    "export read it",
    "[cli]") {
  auto& server = postgres_server::shared();
  if (!server.why_not().empty()) SKIP_TEST("PostgreSQL: " << server.why_not());
  tune::test::scratch_dir dir("cli-tune-postgres");
  const auto team = server.new_database();
  const std::string dataset = std::string(TUNE_DATA_DIR) + "/replay/conv_a100_slice.json.gz";
  const std::vector<std::string> args{"tune",       "--dataset", dataset,    "--time-scale", "0.02",
                                      "--strategy", "random",    "--budget", "60",           "--seed",
                                      "5",          "--db",      team,       "--resume",     "--quiet"};
  auto recorded = [&] {
    results_db db(team, results_db::open_mode::read_only);
    auto runs = db.runs();
    return runs.empty() ? std::int64_t{0} : db.trial_count(runs[0].id);
  };
  auto wait_for_trials = [&](cli_process& p) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (p.running() && std::chrono::steady_clock::now() < deadline) {
      try {
        if (recorded() >= 3) return true;
      } catch (const std::invalid_argument&) {  // no tables yet
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  };
  {
    cli_process first(args, tune::test::output_file{(dir / "first.txt").string()});
    REQUIRE(wait_for_trials(first));
    // While the first holds the run, a second process is refused.
    first.signal(SIGSTOP);
    cli_process second(args);
    CHECK(second.wait() == 2);
    CHECK_THAT(second.err(), Contains("is being continued by another tune-engine process"));
    first.signal(SIGKILL);  // killed mid-run: its lease ends with its connection
  }
  auto before = recorded();
  CHECK(before < 60);
  // The server ends the killed holder's session, and its lease, once it sees
  // the connection closed.
  const auto name = team.substr(team.rfind('/') + 1);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (server.psql(name, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'") != "0\n" &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  auto resumed = args;
  resumed.push_back("--summary-json");
  resumed.push_back((dir / "s.json").string());
  cli_process p(resumed);
  INFO(p.err());
  REQUIRE(p.wait() == 0);
  std::ifstream in(dir / "s.json");
  auto summary = nlohmann::json::parse(in);
  CHECK(summary["resumed"] == true);
  results_db db(team, results_db::open_mode::read_only);
  REQUIRE(db.runs().size() == 1);  // the same run went on
  auto trials = db.trials(db.runs()[0].id);
  CHECK(trials.size() == 60);
  std::set<std::string> distinct;
  for (const auto& t : trials) distinct.insert(t.config_json);
  CHECK(distinct.size() == trials.size());

  cli_process best({"best", "--db", team, "--json"});
  REQUIRE(best.wait() == 0);
  CHECK(nlohmann::json::parse(best.out())["trials"] == 60);
  cli_process exported({"export", "--db", team, "--format", "kernel-tuner"});
  REQUIRE(exported.wait() == 0);
  CHECK(nlohmann::json::parse(exported.out()).contains("cache"));
}
