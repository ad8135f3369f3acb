#pragma once
// The address-space limit the kernel and IR workers put on themselves.

#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>

namespace tune::worker {

/// True when this program is built with AddressSanitizer or ThreadSanitizer,
/// which reserve terabytes of address space for their shadow memory at start.
constexpr bool sanitized_build() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

/// Bytes of address space this process has mapped now (/proc/self/statm);
/// 0 when it cannot be read.
inline std::uint64_t mapped_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t pages = 0;
  if (!(statm >> pages)) return 0;
  return pages * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
}

/// Limits this process's address space (RLIMIT_AS) to `bytes`. Under a
/// sanitizer the shadow memory reserved at start is already beyond any such
/// limit, and every later mapping would fail: there the limit is `bytes` on
/// top of what is mapped now, so an allocation without end still fails.
inline void limit_address_space(std::uint64_t bytes) {
  if (sanitized_build()) bytes += mapped_bytes();
  rlimit address_space{static_cast<rlim_t>(bytes), static_cast<rlim_t>(bytes)};
  setrlimit(RLIMIT_AS, &address_space);
}

}  // namespace tune::worker
