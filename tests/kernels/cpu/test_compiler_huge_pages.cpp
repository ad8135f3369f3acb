// kernels/src/cpu/compiler_huge_pages.hpp: the compiler's large mappings on
// transparent huge pages through a preload library built in the cache, its
// environment merged with the caller's, and a build's output unchanged by it.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "../../../kernels/src/cpu/compiler_huge_pages.hpp"
#include "../kernel_fixtures.hpp"
#include "skip.hpp"
#include "tune/kernels/compile_cache.hpp"
#include "tune/kernels/subprocess.hpp"
#include "tune/kernels/task.hpp"

namespace {

using tune::test::file_bytes;

// A program that maps 4 MiB of anonymous memory through the C library's mmap
// and prints the VmFlags of that mapping from its own smaps.
const char* mapping_flags_source = R"(#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
int main(void) {
  char* p = mmap(0, 4u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return 1;
  p[0] = 1;
  FILE* smaps = fopen("/proc/self/smaps", "r");
  char line[512];
  int inside = 0;
  while (smaps && fgets(line, sizeof line, smaps)) {
    unsigned long begin, end;
    if (sscanf(line, "%lx-%lx ", &begin, &end) == 2) inside = begin <= (unsigned long)p && (unsigned long)p < end;
    else if (inside && strncmp(line, "VmFlags:", 8) == 0) fputs(line, stdout);
  }
  return 0;
}
)";

bool marked_huge(const std::string& flags_line) { return (flags_line + " ").find(" hg ") != std::string::npos; }

}  // namespace

TEST_CASE("the compiler's environment names the preload first and asks glibc's malloc for huge pages", "[kernels]") {
  using tune::huge_pages_environment;
  using list = std::vector<std::string>;
  CHECK(huge_pages_environment("/c/p.so", nullptr, nullptr) ==
        list{"LD_PRELOAD=/c/p.so", "GLIBC_TUNABLES=glibc.malloc.hugetlb=1"});
  CHECK(huge_pages_environment("/c/p.so", "", "") ==
        list{"LD_PRELOAD=/c/p.so", "GLIBC_TUNABLES=glibc.malloc.hugetlb=1"});
  // What the caller preloads and tunes is kept, after ours.
  CHECK(huge_pages_environment("/c/p.so", "/x/libasan.so", "glibc.malloc.arena_max=2") ==
        list{"LD_PRELOAD=/c/p.so:/x/libasan.so", "GLIBC_TUNABLES=glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1"});
  // A caller's own hugetlb choice stands.
  CHECK(huge_pages_environment("/c/p.so", nullptr, "glibc.malloc.hugetlb=0") ==
        list{"LD_PRELOAD=/c/p.so", "GLIBC_TUNABLES=glibc.malloc.hugetlb=0"});
  // No library, or a path LD_PRELOAD would split: nothing.
  CHECK(huge_pages_environment("", nullptr, nullptr).empty());
  CHECK(huge_pages_environment("/home/a b/p.so", nullptr, nullptr).empty());
  CHECK(huge_pages_environment("/c:d/p.so", nullptr, nullptr).empty());
}

TEST_CASE("the preload library is built once per cache and compiler, and a compiler that cannot build it gives none",
          "[kernels]") {
  tune::test::kernel_scratch scratch("huge-pages-preload");
  tune::compile_cache cache(scratch.path() / "one", ".so");
  auto library = tune::huge_pages_preload(cache, "c++", "c++ identity", 120.0);
  REQUIRE_FALSE(library.empty());
  CHECK(std::filesystem::is_regular_file(library));
  CHECK(library.rfind((scratch.path() / "one").string(), 0) == 0);
  // Looked up once: removing it does not make the process build it again.
  std::filesystem::remove(library);
  CHECK(tune::huge_pages_preload(cache, "c++", "c++ identity", 120.0) == library);
  // Another folder builds its own.
  tune::compile_cache other(scratch.path() / "two", ".so");
  auto second = tune::huge_pages_preload(other, "c++", "c++ identity", 120.0);
  CHECK(std::filesystem::is_regular_file(second));
  CHECK(second != library);
  // A compiler that fails: no library, and none for that compiler afterwards.
  tune::compile_cache third(scratch.path() / "three", ".so");
  CHECK(tune::huge_pages_preload(third, "false", "false identity", 120.0).empty());
  CHECK(tune::huge_pages_preload(third, "false", "false identity", 120.0).empty());
}

TEST_CASE("while one thread builds the preload library, the others' builds go on without it", "[kernels]") {
  tune::test::kernel_scratch scratch("huge-pages-waiting");
  // A compiler that records its start and never ends.
  auto started = scratch.path() / "started";
  auto compiler = scratch.write("hangs", "#!/bin/sh\necho $$ >'" + started.string() + "'\nexec sleep 300\n");
  std::filesystem::permissions(compiler, std::filesystem::perms::owner_all);
  tune::compile_cache cache(scratch.path() / "cache", ".so");
  std::string first = "not returned";
  std::thread builder([&] { first = tune::huge_pages_preload(cache, compiler, "hangs identity", 3.0); });
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!std::filesystem::exists(started) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const bool compiler_started = std::filesystem::exists(started);
  auto asked = std::chrono::steady_clock::now();
  auto second = tune::huge_pages_preload(cache, compiler, "hangs identity", 3.0);
  auto waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
  builder.join();
  REQUIRE(compiler_started);
  CHECK(second.empty());
  CHECK(waited < 2.0);   // not the 3 s the hanging build lasts
  CHECK(first.empty());  // its compiler was killed at the limit
}

TEST_CASE("under the preload a program's large anonymous mapping asks for huge pages", "[kernels]") {
  if (!std::filesystem::exists("/sys/kernel/mm/transparent_hugepage"))
    SKIP_TEST("this kernel has no transparent huge pages (no /sys/kernel/mm/transparent_hugepage)");
  tune::test::kernel_scratch scratch("huge-pages-mapping");
  auto source = scratch.write("flags.c", mapping_flags_source);
  auto program = (scratch.path() / "flags").string();
  auto built = tune::run_process({"c++", "-x", "c", "-O1", "-o", program, source}, 120.0);
  REQUIRE(built.ok());
  tune::compile_cache cache(scratch.path() / "cache", ".so");
  auto library = tune::huge_pages_preload(cache, "c++", "c++ identity", 120.0);
  REQUIRE_FALSE(library.empty());

  auto plain = tune::run_process({program}, 30.0);
  auto preloaded =
      tune::run_process({program}, 30.0, 1 << 20, {}, tune::huge_pages_environment(library, nullptr, nullptr));
  INFO("without: " << plain.output << "with: " << preloaded.output);
  REQUIRE(plain.ok());
  REQUIRE(preloaded.ok());
  REQUIRE(plain.output.rfind("VmFlags:", 0) == 0);
  REQUIRE(preloaded.output.rfind("VmFlags:", 0) == 0);
  CHECK_FALSE(marked_huge(plain.output));
  CHECK(marked_huge(preloaded.output));
}

TEST_CASE("a kernel built with the compiler on huge pages is the same file as one built without", "[kernels]") {
  tune::test::kernel_scratch scratch("huge-pages-same");
  auto with = scratch.options();
  auto without = scratch.options();
  without.cache_dir = (scratch.path() / "cache-plain").string();
  without.compiler_huge_pages = false;
  auto on = tune::make_task_backend(tune::test::small_matmul_task, "cpu", with);
  auto off = tune::make_task_backend(tune::test::small_matmul_task, "cpu", without);
  auto config = tune::test::packed_matmul(*on->space());
  auto a = on->build(config, 120.0);
  auto b = off->build(config, 120.0);
  REQUIRE(a.state == tune::status::ok);
  REQUIRE(b.state == tune::status::ok);
  CHECK(a.artifact != b.artifact);
  CHECK(file_bytes(a.artifact) == file_bytes(b.artifact));
  // The library was built beside the kernel with it on, and not without.
  auto preloads = [](const std::string& dir) {
    int n = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir))
      if (entry.path().extension() == ".c") ++n;
    return n;
  };
  CHECK(preloads((scratch.path() / "cache" / "cpu").string()) == 1);
  CHECK(preloads((scratch.path() / "cache-plain" / "cpu").string()) == 0);
}
