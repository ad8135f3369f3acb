// tune-engine devices: the CPU is always listed; without a GPU driver the
// CUDA line says so plainly, and the HIP line says whether it was built and
// that there is no AMD GPU; --json carries the same facts.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_process.hpp"
#include "tune/kernels/device_lease.hpp"

using Catch::Matchers::Contains;
using tune::test::cli_process;

namespace {

bool has_cuda_driver() {
  // The same probe the command makes; a test machine may have a GPU.
  cli_process p({"devices", "--json"});
  REQUIRE(p.wait() == 0);
  for (const auto& b : nlohmann::json::parse(p.out()))
    if (b["backend"] == "cuda") return b["message"].get<std::string>().find("libcuda.so.1") == std::string::npos;
  return false;
}

}  // namespace

TEST_CASE("tune-engine devices lists the CPU and says plainly when there is no CUDA driver", "[cli]") {
  cli_process p({"devices"});
  REQUIRE(p.wait() == 0);
  CHECK_THAT(p.out(), Contains("BACKEND"));
  CHECK_THAT(p.out(), Contains("cpu"));
  CHECK_THAT(p.out(), Contains("cores"));
  CHECK_THAT(p.out(), Contains("hip"));
  if (!has_cuda_driver()) CHECK_THAT(p.out(), Contains("no CUDA driver found (libcuda.so.1)"));
}

TEST_CASE("tune-engine devices --json gives one entry per backend", "[cli]") {
  cli_process p({"devices", "--json"});
  REQUIRE(p.wait() == 0);
  auto doc = nlohmann::json::parse(p.out());
  REQUIRE(doc.is_array());
  REQUIRE(doc.size() == 3);
  CHECK(doc[0]["backend"] == "cpu");
  CHECK(doc[0]["available"] == true);
  CHECK(std::stoi(doc[0]["devices"][0]["details"]["cores"].get<std::string>()) >= 1);
  CHECK(doc[1]["backend"] == "cuda");
  if (!has_cuda_driver()) {
    CHECK(doc[1]["available"] == false);
    CHECK_THAT(doc[1]["message"].get<std::string>(), Contains("no CUDA driver found (libcuda.so.1)"));
  }
  CHECK(doc[2]["backend"] == "hip");
  // Built when hipcc was there at build time; either way it says why nothing runs.
  if (doc[2]["built"] == false) {
    CHECK(doc[2]["available"] == false);
    CHECK_THAT(doc[2]["message"].get<std::string>(), Contains("HIP backend not built"));
  } else if (doc[2]["available"] == false) {
    CHECK_THAT(doc[2]["message"].get<std::string>(), Contains("no AMD GPU found"));
  }
}

TEST_CASE("tune-engine devices rejects unknown options with exit code 2", "[cli]") {
  cli_process p({"devices", "--gpu"});
  CHECK(p.wait() == 2);
}

TEST_CASE("tune-engine devices names the leases other runs hold, and who holds them", "[cli]") {
  {
    cli_process p({"devices"});
    REQUIRE(p.wait() == 0);
    CHECK_THAT(p.out(), Contains("leases: none held now (" + tune::lease_dir() + ")"));
  }
  // This process holds core 1 and GPU 0, as a run would.
  auto held = tune::try_lease({"cpu-core-1", "cuda-0"});
  REQUIRE(held);
  const std::string holder = "pid " + std::to_string(::getpid()) + " (test_cli";
  cli_process p({"devices"});
  REQUIRE(p.wait() == 0);
  CHECK_THAT(p.out(), Contains("leases held now (" + tune::lease_dir() + "):"));
  CHECK_THAT(p.out(), Contains("cpu-core-1   " + holder));
  CHECK_THAT(p.out(), Contains("cuda-0       " + holder));
  cli_process j({"devices", "--json"});
  REQUIRE(j.wait() == 0);
  auto doc = nlohmann::json::parse(j.out());
  REQUIRE(doc[0]["leases"].size() == 1);
  CHECK(doc[0]["leases"][0]["resource"] == "cpu-core-1");
  CHECK(doc[0]["leases"][0]["pid"] == ::getpid());
  CHECK(doc[0]["leases"][0]["since"].get<double>() > 0);
  REQUIRE(doc[1]["leases"].size() == 1);
  CHECK(doc[1]["leases"][0]["resource"] == "cuda-0");
  CHECK(doc[2]["leases"].empty());
  held->release();
  CHECK(tune::held_leases().empty());
}
