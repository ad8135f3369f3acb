#!/usr/bin/env python3
"""A blocked transpose of a double matrix, tuned on the CPU the way Kernel
Tuner users tune one: a restriction written as a function, a string-valued
parameter that becomes a type in the code, bayes_opt with max_fevals, and
a metric computed from each time."""
import numpy
from tune_engine.kernel_tuner import tune_kernel

kernel_source = r"""
void transpose(double* out, const double* in, int rows, int cols) {
    for (index_type bi = 0; bi < rows; bi += block_rows)
        for (index_type bj = 0; bj < cols; bj += block_cols)
            for (index_type i = bi; i < bi + block_rows && i < rows; i++)
                for (index_type j = bj; j < bj + block_cols && j < cols; j++)
                    out[j * rows + i] = in[i * cols + j];
}
"""

rows, cols = 300, 200
matrix = numpy.random.rand(rows, cols)
transposed = numpy.zeros((cols, rows))

tune_params = {"block_rows": [4, 8, 16, 32, 64], "block_cols": [4, 8, 16, 32, 64], "index_type": ["int", "long"]}


def fits_in_cache(p):
    return p["block_rows"] * p["block_cols"] * 8 <= 16 * 1024


metrics = {"GB/s": lambda p: 2 * rows * cols * 8 / (p["time"] / 1e3) / 1e9}

results, env = tune_kernel("transpose", kernel_source, (rows, cols),
                           [transposed, matrix, numpy.int32(rows), numpy.int32(cols)], tune_params,
                           restrictions=[fits_in_cache], answer=[matrix.T.copy(), None, None, None], atol=0,
                           strategy="bayes_opt", strategy_options={"max_fevals": 12}, metrics=metrics, seed=7)
