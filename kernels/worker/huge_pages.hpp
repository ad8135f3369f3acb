#pragma once
// Pages of a trial's arrays. Transparent huge pages for the arrays every
// trial maps afresh or reads in full: the output arrays (each trial's child
// drops the resident process's copy-on-write share of them and maps fresh
// pages, own_output_pages) and the expected outputs (read by every check).
// Mapping BMM1's 63 MB output took 16-20 ms in 4 KiB pages and 5-6 ms in
// 2 MiB pages, and the child's fork and exit take less with fewer pages.
// Input arrays keep the pages a kernel would find in a program of its own; a
// trial's child reads one byte of each before its checked run (touch_pages).
//
// A kernel writing its output to huge pages runs a little faster (fewer
// address translations: BMM1's configurations about 1% faster), so
// tune-vendor-worker gives every output the same pages, the tuned kernel's
// and the vendor libraries' alike, and the comparison stays between kernels
// on equal terms.

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>

namespace tune::worker {

constexpr std::uintptr_t huge_page_bytes = std::uintptr_t(2) << 20;

/// The whole pages of `page_bytes` (a power of two) inside [data, data +
/// size): their first and last address (equal when there are none).
struct page_range {
  std::uintptr_t first = 0, last = 0;
};
inline page_range whole_pages(const void* data, std::size_t size, std::uintptr_t page_bytes) {
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const auto first = (begin + page_bytes - 1) & ~(page_bytes - 1);
  const auto last = (begin + size) & ~(page_bytes - 1);
  return last > first ? page_range{first, last} : page_range{first, first};
}

/// The whole 2 MiB pages inside [data, data + size).
inline page_range whole_huge_pages(const void* data, std::size_t size) {
  return whole_pages(data, size, huge_page_bytes);
}

/// Asks for transparent huge pages (MADV_HUGEPAGE) for the whole 2 MiB pages
/// inside [data, data + size); call it before they are first written. Nothing
/// changes where the system has them off
/// (/sys/kernel/mm/transparent_hugepage/enabled "never") or on for all
/// ("always"), or for a buffer that holds no whole 2 MiB page. True when the
/// system took the advice (or there was nothing to advise).
inline bool prefer_huge_pages(void* data, std::size_t size) {
  auto range = whole_huge_pages(data, size);
  if (range.last == range.first) return true;
  return ::madvise(reinterpret_cast<void*>(range.first), range.last - range.first, MADV_HUGEPAGE) == 0;
}

/// Reads one byte of every page of `page_bytes` (a power of two) that
/// [data, data + size) touches, the first and the last partial ones
/// included; returns how many pages it read. In a process forked from the one
/// that wrote the buffer, the first access to each inherited page can cost
/// far more than a cache miss: on a 2-core Zen 5 VM (Linux 6.18) 4.1-4.7 us
/// per 4 KiB page, with no page fault counted, against about 20 ns for the
/// next access (bench/fork_page_cost.c); MM1's 6 MB of inputs added about
/// 7 ms to a checked run of a 7 ms kernel. The measuring child reads its
/// inputs so before the checked run, whose time must be the kernel's.
inline std::size_t touch_pages(const void* data, std::size_t size, std::uintptr_t page_bytes) {
  if (size == 0) return 0;
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const auto end = begin + size;
  unsigned char sink = 0;
  std::size_t pages = 0;
  for (auto at = begin; at < end; at = (at & ~(page_bytes - 1)) + page_bytes, ++pages)
    sink ^= *reinterpret_cast<const volatile unsigned char*>(at);
  asm volatile("" : : "r"(sink));
  return pages;
}

/// `count` elements of `value` in a `Storage` (a std::vector with any
/// allocator) whose whole 2 MiB pages were advised before the first write.
template <class Storage>
Storage huge_page_storage(std::size_t count, typename Storage::value_type value = {}) {
  Storage storage;
  storage.reserve(count);
  prefer_huge_pages(storage.data(), count * sizeof(typename Storage::value_type));
  storage.assign(count, value);
  return storage;
}

}  // namespace tune::worker
