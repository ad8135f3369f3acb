// The vendor yardstick: the statistics of the per-round ratios, which vendor
// kernels each task is compared with, that the tuned kernel and each vendor
// kernel are timed alternately for the rounds asked, what a comparison says
// when a library or the worker is missing, and a clear refusal of a tuned
// kernel that does not exist or a bad request.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "kernel_fixtures.hpp"
#include "tune/kernels/subprocess.hpp"
#include "tune/kernels/task.hpp"
#include "tune/kernels/vendor_reference.hpp"

namespace {

using Catch::Matchers::Contains;

tune::vendor_options quick() {
  tune::vendor_options o;
  o.min_time_s = 0.0;
  o.timeout_s = 120.0;
  return o;
}

// A configuration of `task` built by the cpu backend, as the tuned kernel.
tune::tuned_kernel_ref some_tuned_kernel(const tune::task_spec& task, const tune::test::kernel_scratch& scratch) {
  auto backend = tune::make_task_backend(task, "cpu", scratch.options());
  tune::rng_type rng(7);
  auto [config, built] = tune::test::build_some(*backend, rng);
  INFO(built.message);
  REQUIRE(built.state == tune::status::ok);
  return tune::cpu_tuned_kernel(task, 1, *backend, config);
}

// Rounds in the order asked: each round's tuned burst, then its vendor burst,
// then the next round's tuned burst; the ratios' statistics are those of the
// rounds.
void check_interleaved(const tune::vendor_result& v, std::size_t rounds) {
  INFO(v.library << " " << v.variant);
  REQUIRE(v.rounds.size() == rounds);
  std::vector<double> ratios;
  for (std::size_t i = 0; i < v.rounds.size(); ++i) {
    const auto& r = v.rounds[i];
    CHECK(r.tuned_s > 0);
    CHECK(r.vendor_s > 0);
    // A burst lasts at least its median run (a warm-up and three runs at least).
    CHECK(r.vendor_at_s >= r.tuned_at_s + r.tuned_s);
    if (i + 1 < v.rounds.size()) CHECK(v.rounds[i + 1].tuned_at_s >= r.vendor_at_s + r.vendor_s);
    ratios.push_back(r.vendor_s / r.tuned_s);
    CHECK(r.ratio() == ratios.back());
  }
  auto s = tune::spread_of(ratios);
  CHECK(v.ratio.median == s.median);
  CHECK(v.ratio.min == s.min);
  CHECK(v.ratio.max == s.max);
  CHECK(v.ratio.min <= v.ratio.median);
  CHECK(v.ratio.median <= v.ratio.max);
  CHECK(v.vendor_gflops > 0);
  CHECK(v.tuned_gflops > 0);
  CHECK_FALSE(v.detail.empty());
  CHECK(v.note.empty());
}

}  // namespace

TEST_CASE("spread of ratios: median (middle two averaged), min and max", "[kernels]") {
  auto odd = tune::spread_of({1.10, 0.90, 1.30, 1.00, 1.05});
  CHECK(odd.median == 1.05);
  CHECK(odd.min == 0.90);
  CHECK(odd.max == 1.30);
  auto even = tune::spread_of({4.0, 1.0, 3.0, 2.0});
  CHECK(even.median == 2.5);
  CHECK(even.min == 1.0);
  CHECK(even.max == 4.0);
  auto one = tune::spread_of({0.8});
  CHECK((one.median == 0.8 && one.min == 0.8 && one.max == 0.8));
  auto none = tune::spread_of({});
  CHECK((none.median == 0 && none.min == 0 && none.max == 0));
  tune::vendor_round r;
  r.tuned_s = 0.002;
  r.vendor_s = 0.003;
  CHECK(r.ratio() == Approx(1.5));  // the tuned kernel 1.5 times as fast
}

TEST_CASE("a MatMul against oneDNN and OpenBLAS default and fastest core, interleaved for the rounds asked",
          "[kernels]") {
  tune::test::kernel_scratch scratch("vendor-mm");
  const auto task = tune::parse_task("bmm:2x16x8x24:tn");
  auto o = quick();
  o.rounds = 6;
  auto comparison = tune::compare_with_vendors(task, some_tuned_kernel(task, scratch), o);
  const auto& vendors = comparison.vendors;
  const bool fastest = !tune::openblas_fastest_coretype().empty();
  REQUIRE(vendors.size() == (fastest ? 3u : 2u));
  CHECK(vendors[0].library == "onednn");
  CHECK(vendors[0].variant == "plain");
  CHECK(vendors[1].library == "openblas");
  CHECK(vendors[1].variant == "default");
  if (fastest) CHECK(vendors[2].variant == tune::openblas_fastest_coretype());
  for (const auto& v : vendors) {
    INFO(v.library << " " << v.variant << ": " << v.note);
    // Rounds, or a note that says why not (a library this build lacks).
    if (v.available())
      check_interleaved(v, 6);
    else
      CHECK_THAT(v.note, Contains("not built in"));
  }
  // The OpenBLAS core it was given is the core it ran.
  if (fastest && vendors[2].available()) CHECK_THAT(vendors[2].detail, Contains(vendors[2].variant));
  const auto* best = comparison.best();
  for (const auto& v : vendors)
    if (v.available()) CHECK(best->ratio.median <= v.ratio.median);
  if (best) CHECK(comparison.tuned_gflops > 0);
}

TEST_CASE("a Conv2D against oneDNN in two layouts, and no BLAS", "[kernels]") {
  tune::test::kernel_scratch scratch("vendor-conv");
  const auto task = tune::parse_task("conv2d:1x3x9x9:8x3x3:s2:p1");
  auto comparison = tune::compare_with_vendors(task, some_tuned_kernel(task, scratch), quick());
  const auto& vendors = comparison.vendors;
  REQUIRE(vendors.size() == 3);
  CHECK(vendors[0].variant == "own layouts");
  CHECK(vendors[1].variant == "plain");
  CHECK(vendors[2].library == "openblas");
  CHECK_FALSE(vendors[2].available());
  CHECK_THAT(vendors[2].note, Contains("no BLAS equivalent"));
  for (int i = 0; i < 2; ++i) {
    INFO(vendors[i].note);
    if (vendors[i].available())
      check_interleaved(vendors[i], 5);
    else
      CHECK_THAT(vendors[i].note, Contains("oneDNN: not built in"));
  }
}

TEST_CASE("without the worker every vendor is unavailable with the path in the note", "[kernels]") {
  tune::test::kernel_scratch scratch("vendor-noworker");
  auto o = quick();
  o.worker_path = "/nonexistent/tune-vendor-worker";
  tune::tuned_kernel_ref tuned;
  tuned.library = scratch.write("kernel.so", "not loaded: the worker is missing");
  auto comparison = tune::compare_with_vendors(tune::parse_task("matmul:8x8x8"), tuned, o);
  REQUIRE_FALSE(comparison.vendors.empty());
  for (const auto& v : comparison.vendors) {
    CHECK_FALSE(v.available());
    CHECK_THAT(v.note, Contains("/nonexistent/tune-vendor-worker"));
  }
  CHECK(comparison.best() == nullptr);
  CHECK(comparison.tuned_gflops == 0);
}

TEST_CASE("a tuned kernel that does not exist or does not load is refused with a clear message", "[kernels]") {
  tune::test::kernel_scratch scratch("vendor-badtuned");
  const auto task = tune::parse_task("matmul:8x8x8");
  tune::tuned_kernel_ref tuned;
  CHECK_THROWS_WITH(tune::compare_with_vendors(task, tuned, quick()), Contains("no tuned kernel"));
  tuned.library = (scratch.path() / "missing.so").string();
  CHECK_THROWS_WITH(tune::compare_with_vendors(task, tuned, quick()),
                    Contains(tuned.library) && Contains("does not exist"));
  auto o = quick();
  o.rounds = 0;
  tuned.library = scratch.write("kernel.so", "not a shared object");
  CHECK_THROWS_WITH(tune::compare_with_vendors(task, tuned, o), Contains("rounds must be at least 1"));
  // A file that is no shared object: the worker says so for each vendor
  // kernel it has (one it lacks says that first).
  for (const auto& v : tune::compare_with_vendors(task, tuned, quick()).vendors) {
    INFO(v.note);
    CHECK_FALSE(v.available());
    CHECK_THAT(v.note, Contains("cannot load the tuned kernel") || Contains("not built in"));
  }
}

TEST_CASE("the vendor worker refuses a bad request with a reason", "[kernels]") {
  const auto worker = tune::vendor_worker_path(quick());
  const std::string matmul = R"("op": "matmul", "batch": 1, "n": 4, "k": 4, "m": 4, "transpose_a": false,
                                "transpose_b": false)";
  for (const auto& [request, expected] : std::vector<std::pair<std::string, std::string>>{
           {R"({"library": "mkl", "variant": "plain", "op": "matmul"})", "unknown library 'mkl'"},
           {R"({"library": "onednn", "variant": "blocked", )" + matmul + "}", "variant"},
           {R"({"library": "onednn", "variant": "plain", "rounds": 0, )" + matmul + "}", "rounds must be at least 1"},
           {R"({"library": "onednn", "variant": "plain", )" + matmul + "}", "no \"tuned\" kernel"},
           {"not json", "parse"}}) {
    auto result = tune::run_process({worker, request}, 60.0);
    INFO(request << "\n" << result.output);
    CHECK(result.exit_code == 1);
    auto reply = nlohmann::json::parse(result.output, nullptr, false);
    REQUIRE(reply.is_object());
    CHECK_THAT(reply.value("error", ""), Contains(expected));
  }
}
