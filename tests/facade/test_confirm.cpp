// The run's fastest trials measured again against each other: the lucky
// outlier of the search loses to what is really fastest, the rounds are
// recorded, and `best` reads the confirmed winner.
#include <catch2/catch.hpp>
#include <functional>
#include <map>
#include <mutex>

#include "objective_backend.hpp"
#include "report_detail.hpp"
#include "tune/engine/parameter.hpp"
#include "tune/storage/results_db.hpp"
#include "tune/tune.hpp"

using namespace tune;

namespace {

search_space_ptr line_space(int n) {
  std::vector<double> xs;
  for (int i = 0; i < n; ++i) xs.push_back(i);
  return std::make_shared<search_space>(std::vector<parameter_ptr>{make_discrete_parameter("x", xs)}, "line");
}

/// A backend of the user's over line_space(n) whose x measures times(x, k),
/// k the number of times x was measured before (a lucky first measurement,
/// say).
std::shared_ptr<backend> measured_line(int n, const std::string& name,
                                       std::function<double(std::uint64_t x, int k)> times) {
  auto calls = std::make_shared<std::pair<std::mutex, std::map<std::uint64_t, int>>>();
  return detail::make_objective_backend(
      [calls, times](const configuration& c) {
        std::lock_guard lock(calls->first);
        return times(c[0], calls->second[c[0]]++);
      },
      line_space(n), name);
}

trial_info info(std::uint64_t seq, int x, double time_ms, bool stopped_early = false) {
  trial_info t;
  t.seq = seq;
  t.config = {static_cast<std::uint64_t>(x)};
  t.config_json = "{\"x\": " + std::to_string(x) + "}";
  t.state = status::ok;
  t.time_ms = time_ms;
  t.stopped_early = stopped_early;
  return t;
}

}  // namespace

TEST_CASE("confirmation: the fastest distinct trials measured in full are kept, fastest first", "[facade]") {
  detail::fastest_trials keep(3);
  keep.offer(info(0, 1, 5.0));
  keep.offer(info(1, 2, 3.0));
  keep.offer(info(2, 3, 9.0));
  keep.offer(info(3, 4, 1.0, true));  // stopped early: its time is not a full measurement
  keep.offer(info(4, 5, 4.0));
  keep.offer(info(5, 2, 3.5));  // the same configuration, slower: the faster one stays
  auto failed = info(6, 6, 0.1);
  failed.state = status::runtime_error;
  keep.offer(failed);
  const auto& kept = keep.kept();
  REQUIRE(kept.size() == 3);
  CHECK(kept[0].seq == 1);
  CHECK(kept[1].seq == 4);
  CHECK(kept[2].seq == 0);
  keep.offer(info(7, 2, 2.0));  // the same configuration, faster: replaces it
  CHECK(keep.kept()[0].seq == 7);
  CHECK(keep.kept().size() == 3);
  detail::fastest_trials none(0);
  none.offer(info(0, 1, 1.0));
  CHECK(none.kept().empty());
}

TEST_CASE("confirmation: a lucky measurement of the search loses the rounds, which are recorded", "[facade]") {
  // x = 3 is measured once at 0.5 ms (a lucky moment) and at 2 ms every time
  // after; x = 5 is 1 ms always; the rest are 10 ms and more.
  // A backend of the user's that measures these times (a plain objective
  // function is the user's number and is not measured again).
  session_options o;
  const auto times = [](std::uint64_t x, int n) {
    if (x == 3) return n == 0 ? 0.5 : 2.0;
    if (x == 5) return 1.0;
    return 10.0 + static_cast<double>(x);
  };
  o.custom_backend = measured_line(8, "confirm", times);
  o.strategy = "random";
  o.budget.trials = 8;  // every configuration once
  o.seed = 3;
  o.db_path =
      (std::filesystem::temp_directory_path() / ("tune-confirm-" + std::to_string(::getpid()) + ".db")).string();
  std::filesystem::remove(o.db_path);
  o.confirm = {3, 4};
  auto report = session(o).run();
  REQUIRE(report.best);
  CHECK(report.best->config_json == "{\"x\": 5}");
  CHECK(report.best->time_ms == 1.0);
  REQUIRE(report.confirmation.size() == 3);
  CHECK(report.confirmation[0].rounds_ms == std::vector<double>{1.0, 1.0, 1.0, 1.0});
  CHECK(report.confirmation[1].search_ms == 0.5);  // x = 3, found at 0.5 ms
  CHECK(report.confirmation[1].time_ms == 2.0);
  CHECK_THAT(report.to_text(), Catch::Matchers::Contains("confirmed: the median of 4 rounds"));
  CHECK(report.to_json()["best"]["search_time_ms"] == 1.0);
  // The rounds take time of their own, after the run's wall time, and say so.
  CHECK(report.confirmation_s > 0.0);
  CHECK(report.to_json()["time"]["confirmation_s"] == report.confirmation_s);
  CHECK_THAT(report.to_text(), Catch::Matchers::Contains(" s after the run); "));
  // The database keeps the rounds and answers `best` with the winner.
  storage::results_db db(o.db_path, storage::results_db::open_mode::read_only);
  auto best = db.best(report.task_key);
  REQUIRE(best);
  REQUIRE(best->best);
  CHECK(best->best->config_json == "{\"x\": 5}");
  REQUIRE(best->confirmed_ms);
  CHECK(*best->confirmed_ms == 1.0);
  CHECK(best->confirmed_rounds == 4);
  CHECK(db.confirmations(report.run_id).size() == 12);
  std::filesystem::remove(o.db_path);
  // Switched off, the search's lucky 0.5 ms is the answer.
  o.confirm.top = 0;
  o.custom_backend = measured_line(8, "confirm", times);  // counting from nothing again
  auto unconfirmed = session(o).run();
  CHECK(unconfirmed.best->config_json == "{\"x\": 3}");
  CHECK(unconfirmed.best->time_ms == 0.5);
  CHECK(unconfirmed.confirmation.empty());
  CHECK(unconfirmed.confirmation_s == 0.0);
  std::filesystem::remove(o.db_path);
}

TEST_CASE("confirmation: the rounds come to the run's statistic, median or min", "[facade]") {
  // x = 3 runs once at 0.9 ms and at 3 ms after; x = 5 at 1 ms always. By the
  // median of 4 rounds x = 5 wins (1 against 3 ms); by the least, x = 3 (0.9).
  const auto times = [](std::uint64_t x, int n) { return x == 3 ? (n == 0 ? 0.9 : 3.0) : 1.0; };
  std::vector<trial_info> fastest = {info(0, 3, 1.0), info(1, 5, 1.0)};
  std::string note;
  auto by_median = detail::confirm_fastest(*measured_line(8, "confirm-median", times), fastest, 0, 4, tune::timeouts{},
                                           time_statistic::median, note);
  REQUIRE(by_median.size() == 2);
  CHECK(by_median[0].seq == 1);
  CHECK(by_median[0].time_ms == 1.0);
  CHECK(by_median[1].time_ms == 3.0);
  auto by_min = detail::confirm_fastest(*measured_line(8, "confirm-min", times), fastest, 0, 4, tune::timeouts{},
                                        time_statistic::min, note);
  REQUIRE(by_min.size() == 2);
  CHECK(by_min[0].seq == 0);
  CHECK(by_min[0].time_ms == 0.9);
  CHECK(by_min[0].rounds_ms == std::vector<double>{0.9, 3.0, 3.0, 3.0});
  run_report report;
  report.best = info(0, 3, 0.9);
  report.confirmation = by_min;
  report.statistic = time_statistic::min;
  CHECK_THAT(report.to_text(), Catch::Matchers::Contains("confirmed: the min of 4 rounds (0.9–3 ms)"));
  CHECK(report.to_json()["statistic"] == "min");
  CHECK(report.to_json()["confirmation"][0]["time_ms"] == 0.9);
}

TEST_CASE("confirmation: a stopped run is not confirmed", "[facade]") {
  session_options o;
  o.custom_backend = detail::make_objective_backend(
      [](const configuration& c) { return 1.0 + static_cast<double>(c[0]); }, line_space(4), "confirm");
  o.strategy = "random";
  o.budget.trials = 4;
  o.seed = 1;
  o.on_trial = [&](const trial_info&) { o.stop.request_stop(); };
  auto stopped = session(o).run();
  CHECK(stopped.reason == end_reason::stopped);
  CHECK(stopped.confirmation.empty());
  // The same run to its end is confirmed.
  o.on_trial = nullptr;
  o.stop = stop_source{};
  auto finished = session(o).run();
  CHECK(finished.reason == end_reason::budget);
  CHECK(finished.confirmation.size() == 4);
}

TEST_CASE("duel: a would-be new best measured lucky loses to the best before it during the run, and says so",
          "[facade]") {
  // x = 0 runs at 10 ms; x = 1 is measured once at 8.5 ms (a lucky moment,
  // 15% below: close enough to duel) and at 10.5 ms every time after.
  session_options o;
  const auto times = [](std::uint64_t x, int n) {
    if (x == 1) return n == 0 ? 8.5 : 10.5;
    return 10.0;
  };
  o.custom_backend = measured_line(2, "duel", times);
  o.strategy = "random";
  o.budget.trials = 2;
  o.seed = 1;
  o.confirm.top = 0;  // the search's own answer, to see the duel's effect alone
  o.db_path = (std::filesystem::temp_directory_path() / ("tune-duel-" + std::to_string(::getpid()) + ".db")).string();
  std::filesystem::remove(o.db_path);
  std::vector<trial_info> seen;
  o.on_trial = [&](const trial_info& t) { seen.push_back(t); };
  auto report = session(o).run();
  REQUIRE(seen.size() == 2);
  REQUIRE(seen[0].config_json == "{\"x\": 0}");  // seed 1 proposes x = 0 first
  CHECK(std::isnan(seen[0].duel_ms));
  CHECK(seen[1].time_ms == 8.5);
  CHECK(seen[1].duel_ms == 10.5);
  CHECK(seen[1].duel_best_ms == 10.0);
  CHECK_FALSE(seen[1].new_best);
  REQUIRE(report.best);
  CHECK(report.best->config_json == "{\"x\": 0}");
  CHECK(report.duels.count == 1);
  CHECK(report.duels.lost == 1);
  CHECK_THAT(report.to_text(), Catch::Matchers::Contains("duels: 1 would-be best measured against the best before"));
  CHECK(report.to_json()["duels"]["lost"] == 1);
  CHECK(report.to_json()["time"]["devices"].begin().value()["duel_s"].get<double>() > 0);
  // The database keeps both medians; `best` answers x = 0.
  storage::results_db db(o.db_path, storage::results_db::open_mode::read_only);
  auto trials = db.trials(report.run_id);
  REQUIRE(trials.size() == 2);
  CHECK(trials[1].duel_ms == 10.5);
  CHECK(trials[1].duel_best_ms == 10.0);
  CHECK(std::isnan(trials[0].duel_ms));
  auto best = db.best(report.task_key);
  REQUIRE(best);
  REQUIRE(best->best);
  CHECK(best->best->config_json == "{\"x\": 0}");
  std::filesystem::remove(o.db_path);

  // Without duels, the lucky figure is the best.
  o.custom_backend = measured_line(2, "duel", times);  // counting from nothing again
  seen.clear();
  o.confirm.duel_rounds = 0;
  o.db_path.clear();
  auto plain = session(o).run();
  REQUIRE(plain.best);
  CHECK(plain.best->config_json == "{\"x\": 1}");
  CHECK(plain.duels.count == 0);
}
