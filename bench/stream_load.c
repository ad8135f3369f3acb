/* A memory-bandwidth load for the noise benchmarks (bench/vendor_noise.sh,
 * bench/drift_load.sh): reads one 128 MiB half of a 256 MiB array and writes
 * the other, forever. */
#include <stdlib.h>
int main(void) {
  const size_t n = (256u << 20) / sizeof(float) / 2;
  float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
  if (!a || !b) return 1;
  for (size_t i = 0; i < n; ++i) a[i] = 1.0f, b[i] = 0.0f;
  for (;;) {
    for (size_t i = 0; i < n; ++i) b[i] = 0.999f * a[i] + 1e-6f;
    float *t = a;
    a = b;
    b = t;
  }
}
