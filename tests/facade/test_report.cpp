// The facade's small pieces: hyperparameter parsing, strategy checks, end
// reasons, and the report as JSON and text.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "report_detail.hpp"
#include "tune/storage/results_db.hpp"
#include "tune/tune.hpp"

using namespace tune;

TEST_CASE("parse_hyper: name=value items become numbers", "[facade]") {
  auto h = parse_hyper({"rho=8", "q=0.5", "stall=-1e2"});
  CHECK(h.size() == 3);
  CHECK(h.at("rho") == 8);
  CHECK(h.at("q") == 0.5);
  CHECK(h.at("stall") == -100);
  CHECK(parse_hyper({}).empty());
}

TEST_CASE("parse_hyper: malformed items name the item and the fix", "[facade]") {
  for (std::string bad : {"rho", "=8", "rho=", "rho=8x", "rho=abc", "rho=nan", "rho=inf"}) {
    INFO(bad);
    CHECK_THROWS_WITH(parse_hyper({bad}), Catch::Matchers::StartsWith("hyper " + bad + ":"));
    CHECK_THROWS_WITH(parse_hyper({bad}, "--hyper"), Catch::Matchers::StartsWith("--hyper " + bad + ":"));
  }
  CHECK_THROWS_WITH(parse_hyper({"rho=8", "rho=9"}), Catch::Matchers::Contains("twice"));
  CHECK_THROWS_AS(parse_hyper({"rho"}), input_error);
  // An embedder's items are named as the embedder's caller knows them.
  CHECK_THROWS_WITH(parse_hyper({"rho"}, "hyper of my_tool"),
                    Catch::Matchers::StartsWith("hyper of my_tool rho:") && !Catch::Matchers::Contains("--hyper"));
}

TEST_CASE("parse_early_stop: name=value items set those rules and leave the others", "[facade]") {
  early_stop_policy d;
  auto p = parse_early_stop({"slow_factor=6", "build_factor=0", "min_build_s=2.5"}, d);
  CHECK(p.slow_factor == 6);
  CHECK(p.build_factor == 0);
  CHECK(p.min_build_s == 2.5);
  CHECK(p.min_slow_ms == d.min_slow_ms);
  CHECK(p.margin == d.margin);
  CHECK(p.first_limit_ms == d.first_limit_ms);
  // After every rule was switched off, one item switches its rule back on,
  // with its floor's default unless that is given too; the others stay off.
  p = parse_early_stop({"build_factor=10"}, early_stop_policy::off());
  CHECK(p.build_factor == 10);
  CHECK(p.min_build_s == d.min_build_s);
  CHECK(p.slow_factor == 0);
  CHECK(p.min_slow_ms == 0);
  p = parse_early_stop({"slow_factor=4"}, early_stop_policy::off());
  CHECK(p.slow_factor == 4);
  CHECK(p.min_slow_ms == d.min_slow_ms);
  CHECK(p.build_factor == 0);
  CHECK(p.min_build_s == 0);
  p = parse_early_stop({"build_factor=10", "min_build_s=0"}, early_stop_policy::off());
  CHECK(p.min_build_s == 0);
  // A floor the caller set stays; a rule already on keeps its floor, even
  // one of 0 (only a rule switched back on from 0 gets the default).
  auto low = d;
  low.min_build_s = 0;
  CHECK(parse_early_stop({"build_factor=20"}, low).min_build_s == 0);
  p = parse_early_stop({}, d);
  CHECK(p.margin == d.margin);
}

TEST_CASE("parse_early_stop: an unknown name, a negative value or a malformed item names the item and the fix",
          "[facade]") {
  early_stop_policy d;
  CHECK_THROWS_WITH(parse_early_stop({"slow=4"}, d, "--early-stop"),
                    Catch::Matchers::StartsWith("--early-stop slow=4: 'slow' is not an early-stop setting") &&
                        Catch::Matchers::Contains("known: slow_factor, min_slow_ms, margin, first_limit_ms, "
                                                  "build_factor, min_build_s"));
  CHECK_THROWS_WITH(parse_early_stop({"margin=-0.1"}, d, "--early-stop"),
                    Catch::Matchers::StartsWith("--early-stop margin=-0.1: must be 0"));
  CHECK_THROWS_AS(parse_early_stop({"margin"}, d), input_error);
  CHECK_THROWS_AS(parse_early_stop({"margin=x"}, d), input_error);
  CHECK_THROWS_WITH(parse_early_stop({"margin=1", "margin=2"}, d), Catch::Matchers::Contains("twice"));
}

TEST_CASE("validate_strategy: unknown names and hyperparameters are input errors", "[facade]") {
  std::vector<parameter_ptr> p;
  p.push_back(make_discrete_parameter("x", {1, 2, 3, 4}));
  auto space = std::make_shared<const search_space>(std::move(p));
  CHECK_NOTHROW(validate_strategy("opevo", {{"rho", 4}}, space));
  CHECK_THROWS_WITH(validate_strategy("nope", {}, space), Catch::Matchers::Contains("nope"));
  CHECK_THROWS_AS(validate_strategy("opevo", {{"nope", 1}}, space), input_error);
}

TEST_CASE("end_reason: every reason has its own name", "[facade]") {
  CHECK(to_string(end_reason::budget) == "budget");
  CHECK(to_string(end_reason::time) == "time");
  CHECK(to_string(end_reason::exhausted) == "exhausted");
  CHECK(to_string(end_reason::stopped) == "stopped");
  CHECK(to_string(end_reason::failed) == "failed");
}

TEST_CASE("run_report: JSON and text carry the run", "[facade]") {
  run_report r;
  r.run_id = 4;
  r.trials = 12;
  r.new_trials = 5;
  r.resumed = true;
  r.reason = end_reason::stopped;
  r.task_key = "bowl";
  r.strategy = "bo";
  r.seed = 9;
  trial_info best;
  best.config = {1, 2};
  best.config_json = R"({"x":2,"y":3})";
  best.state = status::ok;
  best.time_ms = 0.25;
  r.best = best;
  r.device_busy = {{"cpu0", 0.5}};
  r.trace = {{0.1, 3, 0.5}, {0.2, 7, 0.25}};
  auto j = r.to_json();
  CHECK(j["run_id"] == 4);
  CHECK(j["trials"] == 12);
  CHECK(j["new_trials"] == 5);
  CHECK(j["resumed"] == true);
  CHECK(j["reason"] == "stopped");
  CHECK(j["task"] == "bowl");
  CHECK(j["seed"] == 9);
  CHECK(j["best"]["config"]["y"] == 3);
  CHECK(j["best"]["time_ms"] == 0.25);
  CHECK(j["busy"]["devices"]["cpu0"] == 0.5);
  CHECK(j["trace"].size() == 2);
  CHECK_FALSE(j.contains("throughput"));
  auto text = r.to_text();
  CHECK_THAT(text, Catch::Matchers::Contains("run 4 (resumed): 12 trials (5 new)"));
  CHECK_THAT(text, Catch::Matchers::Contains("ended by stopped"));
  CHECK_THAT(text, Catch::Matchers::Contains(R"(best 0.25 ms: {"x":2,"y":3})"));
  CHECK_THAT(text, Catch::Matchers::Contains("cpu0 50.0%"));
  CHECK(j["db_migrated_from"].is_null());
  CHECK_THAT(text, !Catch::Matchers::Contains("migrated"));
  r.db_migrated_from = 1;
  CHECK(r.to_json()["db_migrated_from"] == 1);
  CHECK_THAT(r.to_text(), Catch::Matchers::Contains("results database: migrated from schema version 1 to " +
                                                    std::to_string(storage::results_db::schema_version)));

  // Duels: none, some, and would-be bests taken without one.
  CHECK_THAT(text, !Catch::Matchers::Contains("duels:"));
  r.duels = {3, 1, 0};
  CHECK_THAT(r.to_text(), Catch::Matchers::Contains("duels: 3 would-be bests measured against the best before, in "
                                                    "turn; 1 lost\n"));
  r.duels.skipped = 2;
  CHECK_THAT(r.to_text(), Catch::Matchers::Contains("; 1 lost; 2 more taken as measured (the duels had had their "
                                                    "share of the device's time)\n"));
  CHECK(r.to_json()["duels"] == nlohmann::json{{"count", 3}, {"lost", 1}, {"skipped", 2}});

  // Compile time: the workers' own builds and waiting, the background
  // builders' apart.
  r.sim_s = 10.0;
  r.compile_workers = 1;
  r.build_s = 9.0;
  CHECK_THAT(r.to_text(), Catch::Matchers::Contains("compile (1 worker): building 9.00 s, waiting 1.00 s\n"));
  CHECK_THAT(r.to_text(), !Catch::Matchers::Contains("background"));
  r.background_workers = 1;
  r.background_build_s = 4.0;  // of the 9
  r.background_busy = 0.25;
  CHECK_THAT(r.to_text(),
             Catch::Matchers::Contains("compile (1 worker): building 5.00 s, waiting 5.00 s; 1 more on the measuring "
                                       "core at idle priority while its device waited: building 4.00 s\n"));
  CHECK_THAT(r.to_text(), Catch::Matchers::Contains("busy after warm-up: compile 0.0% (background builds 25.0%)"));
  CHECK(r.to_json()["time"]["compile"]["waiting_s"] == 5.0);
  CHECK(r.to_json()["time"]["compile"]["background"] == nlohmann::json{{"workers", 1}, {"build_s", 4.0}});
  CHECK(r.to_json()["busy"]["background_builds"] == 0.25);

  r.best.reset();
  CHECK(r.to_json()["best"]["time_ms"].is_null());
  CHECK_THAT(r.to_text(), Catch::Matchers::Contains("best: none"));
}

TEST_CASE("trial_info: JSON writes a failed trial's time as null", "[facade]") {
  trial_info t;
  t.config_json = R"({"x":1})";
  t.state = status::compile_error;
  t.time_ms = std::nan("");
  t.message = "error: expected ';'";
  auto j = t.to_json();
  CHECK(j["status"] == "compile_error");
  CHECK(j["time_ms"].is_null());
  CHECK(j["message"] == "error: expected ';'");
  CHECK(j["config"]["x"] == 1);
}

TEST_CASE("version: MAJOR.MINOR.PATCH", "[facade]") {
  auto v = std::string(version());
  CHECK(std::count(v.begin(), v.end(), '.') == 2);
}

namespace {

// A report whose best trial took 1 ms.
run_report with_best_of_1ms() {
  run_report r;
  trial_info t;
  t.state = status::ok;
  t.time_ms = 1.0;
  t.config_json = "{}";
  r.best = t;
  return r;
}

// A vendor kernel without a comparison, and why.
vendor_result unavailable(std::string library, std::string variant, std::string note) {
  vendor_result v;
  v.library = std::move(library);
  v.variant = std::move(variant);
  v.note = std::move(note);
  return v;
}

// A vendor kernel compared in rounds of (tuned, vendor) seconds.
vendor_result compared(std::string library, std::string variant, std::string detail,
                       const std::vector<std::pair<double, double>>& times, double flops) {
  vendor_result v;
  v.library = std::move(library);
  v.variant = std::move(variant);
  v.detail = std::move(detail);
  for (auto [tuned, vendor] : times) {
    vendor_round r;
    r.tuned_s = tuned;
    r.vendor_s = vendor;
    v.rounds.push_back(r);
  }
  v.summarize(flops);
  return v;
}

}  // namespace

TEST_CASE("vendor comparison: the median and spread of the per-round ratios, and the best vendor", "[facade]") {
  vendor_comparison c;
  // Ratios 0.8, 0.75, 0.9: median 0.8; the vendor at 1e9 FLOP / 10 ms.
  c.vendors.push_back(
      compared("onednn", "plain", "brg:avx512_core", {{0.0125, 0.01}, {0.0144, 0.0108}, {0.0105, 0.00945}}, 1e9));
  c.vendors.push_back(unavailable("openblas", "default", "OpenBLAS: not built in"));
  // Ratios 0.5, 0.6, 0.56, 0.45: median 0.53.
  c.vendors.push_back(compared("openblas", "SkylakeX", "core SkylakeX",
                               {{0.02, 0.01}, {0.02, 0.012}, {0.02, 0.0112}, {0.02, 0.009}}, 1e9));
  c.tuned_gflops = 70.0;
  nlohmann::json best;
  auto list = detail::vendor_json(c, best);
  REQUIRE(list.size() == 3);
  CHECK(list[0]["ratio"].get<double>() == Approx(0.8));
  CHECK(list[0]["ratio_min"].get<double>() == Approx(0.75));
  CHECK(list[0]["ratio_max"].get<double>() == Approx(0.9));
  CHECK(list[0]["rounds"] == 3);
  CHECK(list[0]["round_ratios"].size() == 3);
  CHECK(list[0]["gflops"].get<double>() == Approx(100.0));
  CHECK(list[0]["detail"] == "brg:avx512_core");
  CHECK(list[1]["available"] == false);
  CHECK(list[1]["note"] == "OpenBLAS: not built in");
  CHECK_FALSE(list[1].contains("ratio"));
  CHECK(list[2]["ratio"].get<double>() == Approx(0.53));
  // The best vendor: the one the tuned kernel is least ahead of.
  CHECK(best["library"] == "openblas");
  CHECK(best["variant"] == "SkylakeX");
  CHECK(best["ratio"].get<double>() == Approx(0.53));
  CHECK(best["ratio_min"].get<double>() == Approx(0.45));
  CHECK(best["ratio_max"].get<double>() == Approx(0.6));
  CHECK(best["rounds"] == 4);

  run_report r = with_best_of_1ms();
  r.throughput = {{"task", "matmul:8x8x8"}, {"flops", 1024.0},     {"gflops", 80.0},      {"threads", 2}, {"rounds", 5},
                  {"vendors", list},        {"best_vendor", best}, {"tuned_gflops", 70.0}};
  auto text = r.to_text();
  CHECK_THAT(text, Catch::Matchers::Contains("timed alternately with each vendor kernel: 70.0 GFLOP/s"));
  CHECK_THAT(text, Catch::Matchers::Contains("onednn (plain): 100.0 GFLOP/s on 2 thread(s) [brg:avx512_core]; tuned "
                                             "/ vendor = 0.80x (0.75\u20130.90 over 3 rounds, interleaved)"));
  CHECK_THAT(text, Catch::Matchers::Contains("openblas (default): unavailable: OpenBLAS: not built in"));
  CHECK_THAT(text, Catch::Matchers::Contains("against the best vendor kernel, openblas (SkylakeX): tuned / vendor = "
                                             "0.53x (0.45\u20130.60 over 4 rounds, interleaved)"));
  CHECK(r.to_json()["throughput"]["best_vendor"]["ratio"].get<double>() == Approx(0.53));
}

TEST_CASE("vendor comparison: with no vendor available the best is null and the text says so", "[facade]") {
  vendor_comparison c;
  c.vendors.push_back(unavailable("onednn", "own layouts", "oneDNN: not built in"));
  c.vendors.push_back(unavailable("openblas", "default", "no BLAS equivalent of a convolution"));
  nlohmann::json best = "unset";
  auto list = detail::vendor_json(c, best);
  CHECK(best.is_null());
  CHECK(list[1]["note"] == "no BLAS equivalent of a convolution");
  run_report r;
  r.throughput = {{"task", "conv2d:1x3x9x9:8x3x3:s1:p0"},
                  {"flops", 1.0},
                  {"gflops", 50.0},
                  {"threads", 1},
                  {"vendors", list},
                  {"best_vendor", best}};
  auto text = r.to_text();
  CHECK_THAT(text, Catch::Matchers::Contains("onednn (own layouts): unavailable: oneDNN: not built in"));
  CHECK_THAT(text, Catch::Matchers::Contains("best vendor: none available"));
  CHECK(r.to_json()["throughput"]["best_vendor"].is_null());
}

TEST_CASE("vendor comparison: without a CPU backend to build the best configuration there is a note", "[facade]") {
  run_report r = with_best_of_1ms();
  auto throughput = detail::task_throughput("matmul:8x8x8", r, true, 1, nullptr);
  CHECK_THAT(throughput["vendor_note"].get<std::string>(), Catch::Matchers::Contains("no backend"));
  CHECK(throughput["vendors"].empty());
  CHECK(throughput["best_vendor"].is_null());
  r.throughput = throughput;
  auto text = r.to_text();
  CHECK_THAT(text, Catch::Matchers::Contains("vendor comparison: unavailable: no backend"));
  CHECK_THAT(text, Catch::Matchers::Contains("best vendor: none available"));
}
