#include <atomic>
#include <catch2/catch.hpp>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "kernel_fixtures.hpp"
#include "tune/kernels/compile_cache.hpp"

namespace fs = std::filesystem;
using tune::build_result;
using tune::compile_cache;
using tune::status;

namespace {

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(dir)) out.push_back(entry.path());
  return out;
}

constexpr std::size_t artifact_bytes = 1 << 20;

/// Writes the artifact in 64 chunks, yielding between them, so a reader of a
/// file written in place would catch it half written.
build_result write_slowly(const fs::path& file, char fill) {
  std::ofstream out(file, std::ios::binary);
  const std::string chunk(artifact_bytes / 64, fill);
  for (int i = 0; i < 64; ++i) {
    out.write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    out.flush();
    std::this_thread::yield();
  }
  return {status::ok, {}, 0.5, "built"};
}

}  // namespace

TEST_CASE("compile cache: cache keys change with every part", "[kernels]") {
  auto base = tune::cache_hash({"source", "flags"});
  CHECK(base.size() == 32);
  CHECK(base == tune::cache_hash({"source", "flags"}));
  CHECK(base != tune::cache_hash({"source ", "flags"}));
  CHECK(base != tune::cache_hash({"sourcef", "lags"}));
  CHECK(base != tune::cache_hash({"source", "flags", ""}));
}

TEST_CASE("compile cache: the first fetch builds, the next one finds the artifact", "[kernels]") {
  tune::test::kernel_scratch scratch("compile-cache");
  compile_cache cache(scratch.path() / "cpu", ".so");
  int builds = 0;
  auto build = [&](const fs::path& file) {
    ++builds;
    std::ofstream(file) << "artifact";
    return build_result{status::ok, {}, 0.25, "compiled"};
  };
  auto first = cache.fetch({"source", "flags"}, build);
  CHECK(first.state == status::ok);
  CHECK(first.message == "compiled");
  CHECK(first.compile_s == 0.25);
  CHECK(first.artifact == cache.artifact_path({"source", "flags"}).string());
  CHECK(fs::path(first.artifact).extension() == ".so");
  CHECK(read_file(first.artifact) == "artifact");

  auto second = cache.fetch({"source", "flags"}, build);
  CHECK(second.state == status::ok);
  CHECK(second.message == "cached");
  CHECK(second.compile_s == 0.0);
  CHECK(second.artifact == first.artifact);
  CHECK(builds == 1);

  cache.fetch({"source", "other flags"}, build);
  CHECK(builds == 2);
  CHECK(files_in(cache.dir()).size() == 2);
}

TEST_CASE("compile cache: a failed or throwing build leaves no file behind, torn or whole", "[kernels]") {
  tune::test::kernel_scratch scratch("compile-cache-fail");
  compile_cache cache(scratch.path() / "cuda", ".cubin");
  auto failed = cache.fetch({"broken"}, [](const fs::path& file) {
    std::ofstream(file) << "half a cub";
    return build_result{status::compile_error_device, {}, 0.1, "error: expected ';'"};
  });
  CHECK(failed.state == status::compile_error_device);
  CHECK(failed.message == "error: expected ';'");
  CHECK_FALSE(fs::exists(failed.artifact));

  CHECK_THROWS_AS(cache.fetch({"throws"},
                              [](const fs::path& file) -> build_result {
                                std::ofstream(file) << "half";
                                throw std::runtime_error("compiler crashed");
                              }),
                  std::runtime_error);
  CHECK(files_in(cache.dir()).empty());

  // The next fetch of the failed key builds again (failures are not cached).
  auto again = cache.fetch({"broken"}, [](const fs::path& file) {
    std::ofstream(file) << "whole";
    return build_result{status::ok, {}, 0.1, {}};
  });
  CHECK(again.state == status::ok);
  CHECK(read_file(again.artifact) == "whole");
}

TEST_CASE("compile cache: concurrent writers of one key, and a reader never sees a torn artifact", "[kernels]") {
  tune::test::kernel_scratch scratch("compile-cache-race");
  compile_cache cache(scratch.path() / "hip", ".co");
  const std::vector<std::string> key{"the same source", "gfx90a"};
  const auto artifact = cache.artifact_path(key);

  std::atomic<bool> writing{true};
  std::atomic<int> seen_whole{0}, seen_torn{0};
  std::thread reader([&] {
    while (writing) {
      std::error_code ec;
      if (!fs::exists(artifact, ec)) continue;
      auto bytes = read_file(artifact);
      bool whole = bytes.size() == artifact_bytes && bytes.find_first_not_of(bytes.front()) == std::string::npos;
      (whole ? seen_whole : seen_torn)++;
    }
  });
  std::vector<std::thread> writers;
  std::vector<build_result> results(6);
  for (int w = 0; w < 6; ++w)
    writers.emplace_back([&, w] {
      results[w] = cache.fetch(key, [w](const fs::path& file) { return write_slowly(file, char('a' + w)); });
    });
  for (auto& t : writers) t.join();
  writing = false;
  reader.join();

  CHECK(seen_torn == 0);
  for (const auto& r : results) {
    CHECK(r.state == status::ok);
    CHECK(r.artifact == artifact.string());
  }
  auto bytes = read_file(artifact);
  REQUIRE(bytes.size() == artifact_bytes);
  CHECK(bytes.find_first_not_of(bytes.front()) == std::string::npos);
  // Only the artifact is left: every writer's temporary is gone.
  CHECK(files_in(cache.dir()) == std::vector<fs::path>{artifact});
}

TEST_CASE("compile cache: write_file replaces a file whole and reports an unwritable place", "[kernels]") {
  tune::test::kernel_scratch scratch("compile-cache-write");
  auto file = scratch.path() / "kernel.cpp";
  CHECK(compile_cache::write_file(file, "int x;").empty());
  CHECK(compile_cache::write_file(file, "int y;").empty());
  CHECK(read_file(file) == "int y;");
  CHECK(files_in(scratch.path()).size() == 1);
  auto problem = compile_cache::write_file(scratch.path() / "missing" / "kernel.cpp", "int z;");
  CHECK(problem.find("missing") != std::string::npos);
}
