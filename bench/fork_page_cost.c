/* What a forked process pays for its first access to each page it inherited,
 * and for a fresh page: the cost the measuring child's checked run would pay
 * for its inputs and for a kernel's first allocations (docs/pipeline.md,
 * "The checked run on a machine of dear pages").
 *
 *   cc -O2 -o fork_page_cost bench/fork_page_cost.c && ./fork_page_cost [MiB]
 *
 * Prints, for 3 children of a process holding MiB (64) of written memory in
 * 4 KiB pages and then on transparent huge pages (MADV_HUGEPAGE): the child's
 * first pass reading one byte a page, its second pass, the minor faults of the
 * first pass, and the time to allocate and write 4 MiB of fresh memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static long minor_faults(void) {
  struct rusage r;
  getrusage(RUSAGE_SELF, &r);
  return r.ru_minflt;
}

__attribute__((noinline)) static long pass(const volatile char* p, size_t n) {
  long s = 0;
  for (size_t i = 0; i < n; i += 4096) s += p[i];
  return s;
}

int main(int argc, char** argv) {
  const size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
  const size_t size = mib << 20, huge = 2u << 20;
  if (mib == 0) {
    fprintf(stderr, "usage: %s [MiB > 0]\n", argv[0]);
    return 2;
  }
  for (int huge_pages = 0; huge_pages <= 1; ++huge_pages) {
    char* parent = aligned_alloc(huge, size);
    if (!parent) return 1;
    if (huge_pages) madvise(parent, size, MADV_HUGEPAGE);
    memset(parent, 1, size);
    for (int k = 0; k < 3; ++k) {
      pid_t child = fork();
      if (child < 0) return 1;
      if (child == 0) {
        long f0 = minor_faults();
        double t0 = now_ms();
        long s = pass(parent, size);
        double t1 = now_ms();
        long f1 = minor_faults();
        s += pass(parent, size);
        double t2 = now_ms();
        char* fresh = aligned_alloc(64, 4u << 20);
        if (fresh) memset(fresh, 2, 4u << 20);
        double t3 = now_ms();
        printf(
            "%s pages, child %d: first pass over %zu MiB %.2f ms (%.2f us a 4 KiB page, %ld faults), "
            "second %.2f ms; 4 MiB fresh %.2f ms [%ld]\n",
            huge_pages ? "huge" : "4 KiB", k, mib, t1 - t0, (t1 - t0) * 1e3 / (size / 4096.0), f1 - f0, t2 - t1,
            t3 - t2, s + (fresh ? fresh[7] : 0));
        fflush(stdout);
        _exit(0);
      }
      waitpid(child, NULL, 0);
    }
    free(parent);
  }
  return 0;
}
