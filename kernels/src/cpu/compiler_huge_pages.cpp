// Transparent huge pages for the compiler's memory (compiler_huge_pages.hpp).
#include "compiler_huge_pages.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>

#include "tune/kernels/compile_cache.hpp"
#include "tune/kernels/subprocess.hpp"

namespace tune {

namespace fs = std::filesystem;

namespace {

// A few lines of C build in well under a second; a compiler that takes
// longer does not hold up the build that asked for the library for long.
constexpr double preload_build_limit_s = 30.0;

}  // namespace

std::string_view huge_pages_preload_source() {
  return R"(/* Built by tune-engine: run with its compilers (LD_PRELOAD) to ask for
   transparent huge pages on their large anonymous mappings. */
#define _GNU_SOURCE
#include <stddef.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>
#if defined(__linux__) && defined(__LP64__) && defined(SYS_mmap) && defined(MADV_HUGEPAGE)
void* mmap(void* address, size_t length, int protection, int flags, int fd, off_t offset) {
  void* mapped = (void*)syscall(SYS_mmap, address, length, protection, flags, fd, offset);
  if (mapped != MAP_FAILED && (flags & MAP_ANONYMOUS) && length >= ((size_t)2 << 20))
    madvise(mapped, length, MADV_HUGEPAGE);
  return mapped;
}
void* mmap64(void* address, size_t length, int protection, int flags, int fd, off_t offset)
    __attribute__((alias("mmap")));
#endif
)";
}

std::vector<std::string> huge_pages_environment(const std::string& preload, const char* ld_preload,
                                                const char* tunables) {
  if (preload.empty() || preload.find_first_of(" :") != std::string::npos) return {};
  std::string libraries = "LD_PRELOAD=" + preload;
  if (ld_preload && *ld_preload) libraries += std::string(":") + ld_preload;
  std::string tuned = "GLIBC_TUNABLES=";
  if (tunables && *tunables) tuned += std::string(tunables);
  if (!tunables || !std::strstr(tunables, "glibc.malloc.hugetlb="))
    tuned += std::string(tunables && *tunables ? ":" : "") + "glibc.malloc.hugetlb=1";
  return {libraries, tuned};
}

std::string huge_pages_preload(const compile_cache& cache, const std::string& compiler,
                               const std::string& compiler_identity, double timeout_s) {
  // Per folder and compiler: the library (empty when it could not be built),
  // or absent while a thread builds it; the other threads' builds do not wait.
  static std::mutex mutex;
  static std::map<std::string, std::optional<std::string>> known;
  const std::string key = cache.dir().string() + '\n' + compiler_identity;
  {
    std::lock_guard lock(mutex);
    auto [it, first] = known.try_emplace(key);
    if (!first) return it->second.value_or(std::string());
  }
  const std::vector<std::string> key_parts{std::string(huge_pages_preload_source()), compiler_identity,
                                           "huge pages preload"};
  fs::path source = fs::path(cache.artifact_path(key_parts)).replace_extension(".c");
  auto built = cache.fetch(key_parts, [&](const fs::path& library) {
    build_result out{status::compile_error, {}, 0.0, {}};
    if (auto problem = compile_cache::write_file(source, huge_pages_preload_source()); !problem.empty()) {
      out.message = problem;
      return out;
    }
    auto result = run_process(
        {compiler, "-x", "c", "-O2", "-fPIC", "-shared", "-nostdlib", "-o", library.string(), source.string()},
        std::min(timeout_s, preload_build_limit_s), 64 * 1024);
    out.compile_s = result.seconds;
    out.message = result.ok() ? std::string() : result.error + result.output;
    if (result.ok()) out.state = status::ok;
    return out;
  });
  std::string library = built.state == status::ok ? built.artifact : std::string();
  std::lock_guard lock(mutex);
  known[key] = library;
  return library;
}

}  // namespace tune
