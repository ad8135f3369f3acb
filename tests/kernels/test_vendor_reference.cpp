// The vendor yardstick: which kernels each task is compared with, what a
// figure says when its library or the worker is missing, and the worker's
// answer to a bad request.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tune/kernels/subprocess.hpp"
#include "tune/kernels/task.hpp"
#include "tune/kernels/vendor_reference.hpp"

namespace {

tune::vendor_options quick() {
  tune::vendor_options o;
  o.min_time_s = 0.0;
  o.timeout_s = 120.0;
  return o;
}

}  // namespace

TEST_CASE("vendor figures of a MatMul: oneDNN and OpenBLAS default and fastest core", "[kernels]") {
  auto figures = tune::vendor_figures(tune::parse_task("bmm:2x16x8x24:tn"), quick());
  const bool fastest = !tune::openblas_fastest_coretype().empty();
  REQUIRE(figures.size() == (fastest ? 3u : 2u));
  CHECK(figures[0].library == "onednn");
  CHECK(figures[0].variant == "plain");
  CHECK(figures[1].library == "openblas");
  CHECK(figures[1].variant == "default");
  if (fastest) CHECK(figures[2].variant == tune::openblas_fastest_coretype());
  for (const auto& f : figures) {
    INFO(f.library << " " << f.variant << ": " << f.note);
    // A figure, or a note that says why not (a library this build lacks).
    if (f.available()) {
      CHECK_FALSE(f.detail.empty());
      CHECK(f.note.empty());
    } else {
      CHECK_THAT(f.note, Catch::Matchers::Contains("not built in"));
    }
  }
  // The OpenBLAS core it was given is the core it ran.
  if (fastest && figures[2].available()) CHECK_THAT(figures[2].detail, Catch::Matchers::Contains(figures[2].variant));
  const auto* best = tune::best_vendor(figures);
  for (const auto& f : figures)
    if (f.available()) CHECK(best->gflops >= f.gflops);
}

TEST_CASE("vendor figures of a Conv2D: oneDNN in two layouts and no BLAS", "[kernels]") {
  auto figures = tune::vendor_figures(tune::parse_task("conv2d:1x3x9x9:8x3x3:s2:p1"), quick());
  REQUIRE(figures.size() == 3);
  CHECK(figures[0].variant == "own layouts");
  CHECK(figures[1].variant == "plain");
  CHECK(figures[2].library == "openblas");
  CHECK_FALSE(figures[2].available());
  CHECK_THAT(figures[2].note, Catch::Matchers::Contains("no BLAS equivalent"));
  for (int i = 0; i < 2; ++i) {
    INFO(figures[i].note);
    if (!figures[i].available()) CHECK_THAT(figures[i].note, Catch::Matchers::Contains("oneDNN: not built in"));
  }
}

TEST_CASE("without the worker every vendor is unavailable with the path in the note", "[kernels]") {
  auto o = quick();
  o.worker_path = "/nonexistent/tune-vendor-worker";
  auto figures = tune::vendor_figures(tune::parse_task("matmul:8x8x8"), o);
  REQUIRE_FALSE(figures.empty());
  for (const auto& f : figures) {
    CHECK_FALSE(f.available());
    CHECK_THAT(f.note, Catch::Matchers::Contains("/nonexistent/tune-vendor-worker"));
  }
  CHECK(tune::best_vendor(figures) == nullptr);
}

TEST_CASE("the vendor worker refuses a bad request with a reason", "[kernels]") {
  const auto worker = tune::vendor_worker_path(quick());
  for (const auto& [request, expected] : std::vector<std::pair<std::string, std::string>>{
           {R"({"library": "mkl", "variant": "plain", "op": "matmul"})", "unknown library 'mkl'"},
           {R"({"library": "onednn", "variant": "blocked", "op": "matmul", "batch": 1, "n": 4, "k": 4, "m": 4,
                "transpose_a": false, "transpose_b": false, "flops": 128})",
            "variant"},
           {"not json", "parse"}}) {
    auto result = tune::run_process({worker, request}, 60.0);
    INFO(result.output);
    CHECK(result.exit_code == 1);
    auto reply = nlohmann::json::parse(result.output, nullptr, false);
    REQUIRE(reply.is_object());
    CHECK_THAT(reply.value("error", ""), Catch::Matchers::Contains(expected));
  }
}
