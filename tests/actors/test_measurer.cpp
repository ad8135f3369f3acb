#include <algorithm>
#include <caf/exit_reason.hpp>
#include <catch2/catch.hpp>
#include <cmath>
#include <initializer_list>
#include <map>
#include <vector>

#include "actors/pipeline_fixtures.hpp"

using namespace tune;
using namespace tune::actors;
using tune::testing::reply_timeout;

namespace {

compiled_candidate built(const search_space& space, std::uint64_t flat) {
  compiled_candidate c;
  c.cand.id = flat;
  c.cand.config = space.unflatten(flat);
  c.build.state = status::ok;
  c.build.compile_s = 0.5;
  return c;
}

/// Sends the configurations (by flat index) to the measurer one at a time,
/// each after the last one's trial: the trials, by candidate id.
template <class Measurer>
std::map<std::uint64_t, measured_trial> measure_each(tune::testing::actor_test_system& t, const Measurer& m,
                                                     const search_space& space,
                                                     std::initializer_list<std::uint64_t> flats) {
  std::map<std::uint64_t, measured_trial> got;
  for (auto flat : flats)
    t.self->request(m, reply_timeout, measure_atom::value, built(space, flat))
        .receive([&](measured_trial& trial) { got[trial.candidate_id] = trial; },
                 [&](caf::error& err) { FAIL("error crossed the mailbox: " << t.system.render(err)); });
  return got;
}

}  // namespace

TEST_CASE("measurer runs one candidate at a time, in the order they arrive", "[actors]") {
  tune::testing::actor_test_system t;
  auto space = tune::testing::grid_space();
  auto backend = std::make_shared<tune::testing::grid_backend>(space, 2);
  measurer_options options;
  options.device = 1;
  options.drift.every_trials = 0;  // the run order is the trials' alone
  options.duel.rounds = 0;
  auto m = spawn_measurer(t.system, backend, options);

  std::vector<std::uint64_t> sent = {7, 3, 12, 0, 30};
  for (auto flat : sent) t.self->send(m, measure_atom::value, built(*space, flat));
  std::vector<measured_trial> got;
  for (std::size_t i = 0; i < sent.size(); ++i)
    t.self->receive([&](measured_trial& trial) { got.push_back(std::move(trial)); },
                    caf::after(reply_timeout) >> [&] { FAIL("no trial from the measurer"); });
  REQUIRE(got.size() == sent.size());
  auto order = backend->run_order(1);
  REQUIRE(order.size() == sent.size());
  for (std::size_t i = 0; i < sent.size(); ++i) {
    CHECK(order[i] == space->unflatten(sent[i]));
    CHECK(got[i].candidate_id == sent[i]);
    CHECK(got[i].state == status::ok);
    CHECK(got[i].device_id == 1);
    CHECK(got[i].time_ms == tune::testing::grid_time_ms(got[i].config));
    CHECK(got[i].compile_s == 0.5);
  }
  CHECK_FALSE(backend->overlapping_runs());
  t.self->send_exit(m, caf::exit_reason::user_shutdown);
}

TEST_CASE("a run is measured against the faster of its candidate's reference and the device's own best", "[actors]") {
  tune::testing::actor_test_system t;
  auto space = tune::testing::grid_space();
  auto backend = std::make_shared<tune::testing::grid_backend>(space);
  measurer_options options;
  options.drift.every_trials = 0;
  options.duel.rounds = 0;
  auto m = spawn_measurer(t.system, backend, options);
  // Issued before any best was known (no reference), then one issued against
  // a slower best than the device has measured since, then a faster one.
  std::vector<compiled_candidate> sent = {built(*space, 7), built(*space, 3), built(*space, 12), built(*space, 30),
                                          built(*space, 0)};
  sent[3].cand.reference_ms = 1000.0;
  sent[4].cand.reference_ms = 0.5;
  for (const auto& c : sent) t.self->send(m, measure_atom::value, c);
  std::vector<double> times;
  for (std::size_t i = 0; i < sent.size(); ++i)
    t.self->receive([&](measured_trial& trial) { times.push_back(trial.time_ms); },
                    caf::after(reply_timeout) >> [&] { FAIL("no trial from the measurer"); });
  REQUIRE(times.size() == sent.size());
  auto references = backend->references(0);
  REQUIRE(references.size() == sent.size());
  CHECK(std::isnan(references[0]));  // nothing measured yet
  CHECK(references[1] == times[0]);
  CHECK(references[2] == std::min(times[0], times[1]));
  CHECK(references[3] == std::min({times[0], times[1], times[2]}));
  CHECK(references[4] == 0.5);
  t.self->send_exit(m, caf::exit_reason::user_shutdown);
}

TEST_CASE("until a best is known, runs get the limit of the first runs, doubled after each run it stopped",
          "[actors]") {
  tune::testing::actor_test_system t;
  auto space = tune::testing::grid_space();
  auto backend = std::make_shared<tune::testing::grid_backend>(space);
  measurer_options options;
  options.drift.every_trials = 0;
  options.duel.rounds = 0;
  options.early_stop.first_limit_ms = 3000.0;
  options.timing.timeouts.run_s = 100.0;  // the ceiling (100000 ms) far away
  // Two stopped with no best known (each doubles the limit), one that becomes
  // the best, then one stopped against that best: the limit stays.
  backend->too_slow_run = {space->unflatten(7), space->unflatten(3), space->unflatten(30)};
  auto m = spawn_measurer(t.system, backend, options);
  auto got = measure_each(t, m, *space, {7, 3, 12, 30, 0});
  REQUIRE(got.size() == 5);
  CHECK(got[7].state == status::too_slow);
  CHECK(got[12].state == status::ok);
  CHECK(got[30].state == status::too_slow);
  auto limits = backend->first_limits(0);
  auto references = backend->references(0);
  REQUIRE(limits.size() == 5);
  CHECK(limits[0] == 3000.0);
  CHECK(limits[1] == 6000.0);
  CHECK(limits[2] == 12000.0);
  CHECK(limits[3] == 12000.0);
  CHECK(limits[4] == 12000.0);  // a stop against a best does not double it
  CHECK(std::isnan(references[2]));
  CHECK(references[3] == got[12].time_ms);

  // The limit never passes the run timeout: 3000, 6000, then 12000 capped at 10000.
  options.timing.timeouts.run_s = 10.0;
  auto capped = std::make_shared<tune::testing::grid_backend>(space);
  capped->too_slow_run = {space->unflatten(7), space->unflatten(3), space->unflatten(5)};
  auto m3 = spawn_measurer(t.system, capped, options);
  measure_each(t, m3, *space, {7, 3, 5, 6});
  CHECK(capped->first_limits(0) == std::vector<double>{3000.0, 6000.0, 10000.0, 10000.0});

  // Off (0): no limit however many runs are stopped.
  options.early_stop.first_limit_ms = 0.0;
  auto off = std::make_shared<tune::testing::grid_backend>(space);
  off->too_slow_run = {space->unflatten(7)};
  auto m2 = spawn_measurer(t.system, off, options);
  measure_each(t, m2, *space, {7, 3});
  CHECK(off->first_limits(0) == std::vector<double>{0.0, 0.0});
  t.self->send_exit(m, caf::exit_reason::user_shutdown);
  t.self->send_exit(m2, caf::exit_reason::user_shutdown);
  t.self->send_exit(m3, caf::exit_reason::user_shutdown);
}

TEST_CASE("a failing device gives statuses, and the measurer goes on", "[actors]") {
  tune::testing::actor_test_system t;
  auto space = tune::testing::grid_space();
  auto backend = std::make_shared<tune::testing::grid_backend>(space);
  backend->fail_run = {space->unflatten(1)};
  backend->throw_run = {space->unflatten(2)};
  auto m = spawn_measurer(t.system, backend, measurer_options{});

  auto got = measure_each(t, m, *space, {1, 2, 3});
  REQUIRE(got.size() == 3);
  CHECK(got[1].state == status::runtime_error);
  CHECK(got[1].message.find("crashed") != std::string::npos);
  CHECK(std::isnan(got[1].time_ms));
  CHECK(got[2].state == status::unknown);
  CHECK(got[2].message.find("fell over") != std::string::npos);
  CHECK(got[3].state == status::ok);
  t.self->send_exit(m, caf::exit_reason::user_shutdown);
}

TEST_CASE("a run that hangs past its timeout becomes run_timeout and the device is reused", "[actors]") {
  tune::testing::actor_test_system t;
  auto space = tune::testing::grid_space();
  auto backend = std::make_shared<tune::testing::grid_backend>(space);
  backend->hang_run = {space->unflatten(4)};
  // Timeouts far above a 2 ms run, so a loaded machine (ctest -j next to
  // compiler jobs) does not time out the run that should succeed.
  backend->hang_time = std::chrono::milliseconds(2000);
  measurer_options options;
  options.timing.timeouts.run_s = 0.5;
  options.timing.request_grace_s = 0.25;
  auto m = spawn_measurer(t.system, backend, options);

  std::map<std::uint64_t, measured_trial> got;
  for (std::uint64_t flat : {4u, 5u}) t.self->send(m, measure_atom::value, built(*space, flat));
  for (int i = 0; i < 2; ++i)
    t.self->receive([&](measured_trial& trial) { got[trial.candidate_id] = trial; },
                    caf::after(reply_timeout) >> [&] { FAIL("no trial from the measurer"); });
  REQUIRE(got.size() == 2);
  CHECK(got[4].state == status::run_timeout);
  CHECK(got[5].state == status::ok);
  t.self->send_exit(m, caf::exit_reason::user_shutdown);
}

namespace {
/// A device that slows down by half after its 20th run and recovers after its 35th.
class drifting_backend final : public tune::testing::grid_backend {
 public:
  using grid_backend::grid_backend;
  run_result run(const configuration& config, const build_result& build, int device,
                 const run_limits& limits) override {
    auto out = grid_backend::run(config, build, device, limits);
    auto n = ++runs_;
    if (n > 20 && n <= 35) out.time_ms *= 1.5;
    return out;
  }

 private:
  std::atomic<int> runs_{0};
};
}  // namespace

TEST_CASE("the drift probe flags the trials measured while its device had slowed down, and names the suspects",
          "[actors]") {
  tune::testing::actor_test_system t;
  auto space = tune::testing::grid_space();
  auto backend = std::make_shared<drifting_backend>(space);
  measurer_options options;
  options.drift.every_trials = 4;
  options.drift.every_s = 0;
  options.drift.baseline = 3;
  options.duel.rounds = 0;  // the device's runs are the trials' and the probes' alone
  auto m = spawn_measurer(t.system, backend, options);
  // One at a time, so that the device's runs come in a known order: a probe
  // after every 4 trials (runs 5, 10, 15, ...), the first three the baseline.
  std::vector<measured_trial> got;
  for (std::uint64_t flat = 0; flat < 40; ++flat)
    t.self->request(m, reply_timeout, measure_atom::value, built(*space, flat))
        .receive([&](measured_trial& trial) { got.push_back(std::move(trial)); },
                 [&](caf::error& err) { FAIL(t.system.render(err)); });
  REQUIRE(got.size() == 40);
  // The baseline: the fastest of the first 4 trials' configurations (not
  // the first: a slow one would make every probe slow), measured 3 times,
  // after trials 3, 7 and 11.
  const auto& last = got.back().drift;
  double fastest = 1e300;
  for (std::uint64_t flat = 0; flat < 4; ++flat)
    fastest = std::min(fastest, tune::testing::grid_time_ms(space->unflatten(flat)));
  REQUIRE(fastest < tune::testing::grid_time_ms(space->unflatten(0)));
  CHECK(last.baseline_ms == fastest);
  CHECK(last.max_ratio == Approx(1.5));
  CHECK(last.min_ratio == Approx(1.0));
  CHECK(last.probes > 3);
  // Runs 21..35 are slow (trials 16-27 and the probes after trials 19, 23 and
  // 27): the first probe out of the band names the trials since the last
  // probe in the band, and the trials after it are flagged as they come until
  // a probe is back in the band (the one after trial 31).
  std::set<std::uint64_t> flagged;
  for (const auto& trial : got) {
    if (trial.drift_flagged) flagged.insert(trial.candidate_id);
    for (auto id : trial.drift_suspects) flagged.insert(id);
  }
  CHECK_FALSE(flagged.empty());
  for (std::uint64_t id = 16; id <= 27; ++id) CHECK(flagged.count(id) == 1);  // measured slow
  CHECK(flagged.count(0) == 0);                                               // before the slow runs
  CHECK(flagged.count(15) == 0);  // measured before them, the probe after it in the band
  CHECK(flagged.count(39) == 0);  // after the device recovered
  CHECK(last.flagged == flagged.size());
  double probe_s = 0;
  for (const auto& trial : got) probe_s += trial.probe_s;
  CHECK(probe_s > 0);
  t.self->send_exit(m, caf::exit_reason::user_shutdown);
}

TEST_CASE("without probes nothing is flagged", "[actors]") {
  tune::testing::actor_test_system t;
  auto space = tune::testing::grid_space();
  auto backend = std::make_shared<drifting_backend>(space);
  measurer_options options;
  options.drift.every_trials = 0;
  auto m = spawn_measurer(t.system, backend, options);
  for (std::uint64_t flat = 0; flat < 20; ++flat)
    t.self->request(m, reply_timeout, measure_atom::value, built(*space, flat))
        .receive(
            [&](measured_trial& trial) {
              CHECK_FALSE(trial.drift_flagged);
              CHECK(trial.drift_suspects.empty());
              CHECK(trial.drift.probes == 0);
            },
            [&](caf::error& err) { FAIL(t.system.render(err)); });
  t.self->send_exit(m, caf::exit_reason::user_shutdown);
}

namespace {
/// A device whose runs give each configuration its own time, except the
/// first run of the "lucky" ones, which comes out low: a search that kept that
/// figure would crown an outlier.
class lucky_backend final : public tune::testing::grid_backend {
 public:
  using grid_backend::grid_backend;
  std::map<configuration, double> time_ms, lucky_first_ms;
  run_result run(const configuration& config, const build_result& build, int device,
                 const run_limits& limits) override {
    auto out = grid_backend::run(config, build, device, limits);
    std::lock_guard<std::mutex> lock(mutex_);
    out.time_ms = time_ms.at(config);
    if (auto lucky = lucky_first_ms.find(config); lucky != lucky_first_ms.end()) {
      out.time_ms = lucky->second;
      lucky_first_ms.erase(lucky);
    }
    return out;
  }

 private:
  std::mutex mutex_;
};
}  // namespace

TEST_CASE("a would-be new best duels the best before it: a lucky figure loses, a real improvement wins", "[actors]") {
  tune::testing::actor_test_system t;
  auto space = tune::testing::grid_space();
  auto backend = std::make_shared<lucky_backend>(space);
  auto config = [&](std::uint64_t flat) { return space->unflatten(flat); };
  backend->time_ms = {{config(0), 10.0}, {config(1), 10.5}, {config(2), 9.0}, {config(3), 4.0}, {config(4), 9.5}};
  backend->lucky_first_ms = {{config(1), 8.5}};  // 15% below the best: within the margin, so it duels
  measurer_options options;
  options.drift.every_trials = 0;
  options.duel.rounds = 3;
  options.duel.margin = 0.2;
  options.duel.max_share = 1e9;  // this device's runs report 2 ms each: no bound on the duels here
  auto m = spawn_measurer(t.system, backend, options);

  auto got = measure_each(t, m, *space, {0, 1, 2, 4, 3});
  REQUIRE(got.size() == 5);
  // The first ok trial has nothing to meet.
  CHECK(std::isnan(got[0].duel_ms));
  // The lucky one measured 8.5 but is 10.5 against the best's 10 in turn.
  CHECK(got[1].time_ms == 8.5);
  CHECK(got[1].duel_ms == 10.5);
  CHECK(got[1].duel_best_ms == 10.0);
  CHECK(got[1].duel_lost());
  CHECK(got[1].duel_s > 0);
  // A real improvement wins and becomes the device's best...
  CHECK(got[2].duel_ms == 9.0);
  CHECK(got[2].duel_best_ms == 10.0);
  CHECK_FALSE(got[2].duel_lost());
  // ...so the next one meets it, not the first best: 9.5 is not below 9.
  CHECK(std::isnan(got[4].duel_ms));
  // Far faster than the best (beyond the margin): no duel.
  CHECK(std::isnan(got[3].duel_ms));
  // Each duel ran the two in turn, challenger first, 3 rounds.
  auto order = backend->run_order(0);
  std::vector<configuration> expected = {config(0), config(1)};
  for (int r = 0; r < 3; ++r) expected.insert(expected.end(), {config(1), config(0)});
  expected.push_back(config(2));
  for (int r = 0; r < 3; ++r) expected.insert(expected.end(), {config(2), config(0)});
  expected.insert(expected.end(), {config(4), config(3)});
  CHECK(order == expected);
  t.self->send_exit(m, caf::exit_reason::user_shutdown);
}

TEST_CASE("duels off: no trial is measured twice", "[actors]") {
  tune::testing::actor_test_system t;
  auto space = tune::testing::grid_space();
  auto backend = std::make_shared<lucky_backend>(space);
  auto config = [&](std::uint64_t flat) { return space->unflatten(flat); };
  backend->time_ms = {{config(0), 10.0}, {config(1), 10.5}};
  backend->lucky_first_ms = {{config(1), 8.5}};
  measurer_options options;
  options.drift.every_trials = 0;
  options.duel.rounds = 0;
  auto m = spawn_measurer(t.system, backend, options);
  auto got = measure_each(t, m, *space, {0, 1});
  CHECK(std::isnan(got[1].duel_ms));
  CHECK_FALSE(got[1].duel_lost());
  CHECK(backend->run_order(0).size() == 2);
  t.self->send_exit(m, caf::exit_reason::user_shutdown);
}

namespace {
/// Trials 0, 1, 2 of a device where 0 takes 10 ms, 1 a lucky 8.5 ms once
/// (10.5 ms in a duel) and 2 a real 9 ms, its duels bounded by `max_share`
/// and `reserved_runs`: the trials and how many runs the device made.
std::pair<std::map<std::uint64_t, measured_trial>, std::size_t> three_would_be_bests(double max_share,
                                                                                     double reserved_runs) {
  tune::testing::actor_test_system t;
  auto space = tune::testing::grid_space();
  auto backend = std::make_shared<lucky_backend>(space);
  auto config = [&](std::uint64_t flat) { return space->unflatten(flat); };
  backend->time_ms = {{config(0), 10.0}, {config(1), 10.5}, {config(2), 9.0}};
  backend->lucky_first_ms = {{config(1), 8.5}};
  measurer_options options;
  options.drift.every_trials = 0;
  options.duel.rounds = 3;
  options.duel.max_share = max_share;
  options.duel.reserved_runs = reserved_runs;
  auto m = spawn_measurer(t.system, backend, options);
  auto got = measure_each(t, m, *space, {0, 1, 2});
  t.self->send_exit(m, caf::exit_reason::user_shutdown);
  return {got, backend->run_order(0).size()};
}
}  // namespace

TEST_CASE("duels stop once they have taken their share of the device's measuring time", "[actors]") {
  auto [got, runs] = three_would_be_bests(1e-9, 0);  // the first duel takes the whole share
  REQUIRE(got.size() == 3);
  CHECK(got[1].duel_lost());  // the first duel runs
  CHECK_FALSE(got[1].duel_skipped);
  CHECK(std::isnan(got[2].duel_ms));  // the next would-be best is taken as measured, and says so
  CHECK(got[2].duel_skipped);
  CHECK_FALSE(got[0].duel_skipped);
  CHECK(runs == 3 + 6);
}

TEST_CASE("the duels leave room in their share for the end-of-run confirmation's measurements", "[actors]") {
  // Unbounded duels (max_share 1e9), except for what is reserved: priced at
  // what the first duel's measurements cost, a huge reservation leaves no
  // room for a second duel; the first runs before any price is known.
  for (double reserved : {0.0, 1e15}) {
    auto got = three_would_be_bests(1e9, reserved).first;
    REQUIRE(got.size() == 3);
    INFO("reserved " << reserved);
    CHECK(got[1].duel_lost());  // the first duel runs either way
    CHECK(std::isfinite(got[2].duel_ms) == (reserved == 0));
    CHECK(got[2].duel_skipped == (reserved > 0));
  }
}
