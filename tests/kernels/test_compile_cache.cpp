#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
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

/// A process number that no process has now: a child's, once it has exited
/// and been waited for.
pid_t exited_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  REQUIRE(child > 0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

/// A file written `age` ago.
void plant(const fs::path& file, std::chrono::seconds age) {
  std::ofstream(file) << "left behind";
  fs::last_write_time(file, fs::file_time_type::clock::now() - age);
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

TEST_CASE("compile cache: what a killed build left is removed once old, never a live build's", "[kernels]") {
  using namespace std::chrono_literals;
  tune::test::kernel_scratch scratch("compile-cache-stale");
  const fs::path dir = scratch.path() / "cuda";
  fs::create_directories(dir);
  const auto dead = std::to_string(exited_pid()), self = std::to_string(::getpid()),
             parent = std::to_string(::getppid());
  const std::string hash = "0123456789abcdef0123456789abcdef";
  // Left by a killed build: its temporary cubin and the source beside it.
  plant(dir / (hash + ".cubin.tmp" + dead + "-77"), 2h);
  plant(dir / (hash + ".cubin.tmp" + dead + "-77.cu"), 2h);
  // Kept: too young to be judged (a build in progress on another machine
  // sharing the folder), this process's own, a running process's, an
  // artifact, and names that only look alike.
  const std::vector<std::string> kept = {hash + ".cubin.tmp" + dead + "-78",
                                         hash + ".cubin.tmp" + self + "-1",
                                         hash + ".cubin.tmp" + parent + "-1",
                                         hash + ".cubin",
                                         hash + ".cubin.tmpfile",
                                         hash + ".cubin.tmp-5"};
  plant(dir / kept[0], 10min);
  for (std::size_t i = 1; i < kept.size(); ++i) plant(dir / kept[i], 2h);

  CHECK(compile_cache::remove_stale_temporaries(dir) == 2);
  for (const auto& name : kept) {
    INFO(name);
    CHECK(fs::exists(dir / name));
  }
  CHECK(files_in(dir).size() == kept.size());
  // A younger limit takes the ten-minute-old one too; a folder that does not
  // exist has nothing to remove.
  CHECK(compile_cache::remove_stale_temporaries(dir, 5min) == 1);
  CHECK(compile_cache::remove_stale_temporaries(scratch.path() / "none") == 0);

  // A process's first fetch in a folder sweeps it.
  const fs::path other = scratch.path() / "cpu";
  fs::create_directories(other);
  plant(other / ("feed.so.tmp" + dead + "-3"), 3h);
  compile_cache cache(other, ".so");
  auto built = cache.fetch({"kernel"}, [](const fs::path& file) {
    std::ofstream(file) << "whole";
    return build_result{status::ok, {}, 0.1, {}};
  });
  CHECK(built.state == status::ok);
  CHECK(files_in(other) == std::vector<fs::path>{built.artifact});
}
