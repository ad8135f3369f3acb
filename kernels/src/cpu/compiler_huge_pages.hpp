#pragma once
// Transparent huge pages for the compiler's memory.
//
// A build's compiler maps a few megabytes of fresh memory (GCC's garbage-
// collected heap comes in 2 MiB chunks from mmap, its other allocations from
// malloc), and every 4 KiB page of it costs a page fault on first touch: about
// 4,800 faults a MatMul build, a quarter of its time on a VM where a fault of a
// fresh page costs 11 us (docs/kernels.md, "Huge pages for the compiler"). With
// the kernel's transparent huge pages on "madvise" (Debian's default) a
// program gets huge pages only where it asks for them, and compilers do not
// ask. So the CPU backend runs its compilers with a small preload library of
// its own, built once per compile cache and compiler, that asks
// (madvise(MADV_HUGEPAGE)) for every anonymous mapping of 2 MiB or more the
// compiler makes, and with glibc's malloc asked to do the same
// (GLIBC_TUNABLES glibc.malloc.hugetlb=1). The compiler's output is the same
// bytes either way; only its page faults change. Where the kernel has no
// transparent huge pages, or "never", the requests do nothing.

#include <string>
#include <string_view>
#include <vector>

namespace tune {

class compile_cache;

/// The preload library's source (C): an `mmap` that calls the kernel's and
/// asks for huge pages on anonymous mappings of 2 MiB or more. On a target
/// without a 64-bit `mmap` system call it defines nothing.
std::string_view huge_pages_preload_source();

/// The NAME=VALUE entries a compiler runs with to use the preload library
/// `preload` (LD_PRELOAD, ahead of what `ld_preload` held, and
/// GLIBC_TUNABLES with glibc.malloc.hugetlb=1 after what `tunables` held,
/// unless that already sets it); either of those may be null (not set).
/// Empty when `preload` is empty or holds a space or a colon (LD_PRELOAD's
/// separators: a path with one cannot be named there).
std::vector<std::string> huge_pages_environment(const std::string& preload, const char* ld_preload,
                                                const char* tunables);

/// The preload library for `compiler` in `cache` (built there on first use
/// with `compiler`, which must compile C with -x c, within `timeout_s` and at
/// most 30 s; looked up once per process, cache folder and compiler): its
/// path, or empty when it could not be built (the compiler then runs without
/// it) or while another thread is building it (that thread's build goes on,
/// this one does not wait).
std::string huge_pages_preload(const compile_cache& cache, const std::string& compiler,
                               const std::string& compiler_identity, double timeout_s);

}  // namespace tune
