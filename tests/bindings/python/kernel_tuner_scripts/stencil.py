#!/usr/bin/env python3
"""A C 3-point stencil tuned on the CPU the way Kernel Tuner users tune one:
restrictions as strings, a genetic algorithm stopped after max_fevals
configurations, the expected output as answer, and a cache file that a
second run resumes from. The function returns nothing, so the measurer
times it. STENCIL_CACHE names the cache, STENCIL_FEVALS the budget."""
import os

import numpy
from tune_engine.kernel_tuner import tune_kernel

kernel_source = r"""
void smooth(float* out, const float* in, int n) {
    out[0] = in[0];
    out[n - 1] = in[n - 1];
    for (int start = 1; start < n - 1; start += tile_size) {
        int end = start + tile_size < n - 1 ? start + tile_size : n - 1;
        int i = start;
        for (; i + unroll <= end; i += unroll)
            for (int u = 0; u < unroll; u++)
                out[i + u] = (in[i + u - 1] + in[i + u] + in[i + u + 1]) * (1.0f / 3.0f);
        for (; i < end; i++)
            out[i] = (in[i - 1] + in[i] + in[i + 1]) * (1.0f / 3.0f);
    }
}
"""

n = 1 << 16
signal = numpy.random.rand(n).astype(numpy.float32)
smoothed = numpy.zeros_like(signal)
reference = signal.copy()
reference[1:-1] = (signal[:-2] + signal[1:-1] + signal[2:]) * numpy.float32(1.0 / 3.0)

tune_params = {"tile_size": [16, 32, 64, 128, 256, 512, 1024], "unroll": [1, 2, 4, 8, 16]}
restrictions = ["tile_size % unroll == 0", "tile_size >= 4 * unroll"]

results, env = tune_kernel("smooth", kernel_source, n, [smoothed, signal, numpy.int32(n)], tune_params,
                           restrictions=restrictions, answer=[reference, None, None], atol=1e-5,
                           strategy="genetic_algorithm",
                           strategy_options={"max_fevals": int(os.environ.get("STENCIL_FEVALS", 10))},
                           cache=os.environ.get("STENCIL_CACHE", "smooth_cache.json"), iterations=5,
                           compiler_options=["-O2"])
