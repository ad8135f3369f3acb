#!/usr/bin/env python3
"""A C vector addition tuned on the CPU, written the way Kernel Tuner's C
examples are: switching from Kernel Tuner takes only the import line.

The kernel times itself (omp_get_wtime) and returns milliseconds, which
Kernel Tuner, and tune-engine with it, take as the configuration's time.
VECTOR_ADD_SIZE sets the number of elements (default 1 Mi)."""
import os

import numpy
from tune_engine.kernel_tuner import tune_kernel  # was: from kernel_tuner import tune_kernel

kernel_source = r"""
#include <omp.h>

typedef float floatv __attribute__((vector_size(vecsize * sizeof(float))));

extern "C" float vector_add(floatv* c, floatv* a, floatv* b, int n) {
    double t0 = omp_get_wtime();
    int per_thread = n / (vecsize * nthreads);
    #pragma omp parallel num_threads(nthreads)
    {
        int first = omp_get_thread_num() * per_thread;
        for (int i = first; i < first + per_thread; i++)
            c[i] = a[i] + b[i];
    }
    return (float)((omp_get_wtime() - t0) * 1000.0);
}
"""

n_elements = int(os.environ.get("VECTOR_ADD_SIZE", 1 << 20))
x = numpy.random.randn(n_elements).astype(numpy.float32)
y = numpy.random.randn(n_elements).astype(numpy.float32)
total = numpy.zeros_like(x)
arguments = [total, x, y, numpy.int32(n_elements)]

tune_params = dict()
tune_params["nthreads"] = [1, 2, 4, 8]
tune_params["vecsize"] = [1, 2, 4, 8, 16]

expected = [x + y, None, None, None]

results, env = tune_kernel("vector_add", kernel_source, n_elements, arguments, tune_params, answer=expected,
                           compiler_options=["-fopenmp", "-O3"])
