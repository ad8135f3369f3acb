#!/usr/bin/python3
"""The same Kernel Tuner script through tune_engine.kernel_tuner and, with
--peer, through Kernel Tuner itself: wall time against the time compiling and
measuring one configuration after the other takes.

    PYTHONPATH=build/bindings/python /usr/bin/python3 bench/bench_kernel_tuner.py [--repeats 3] [--topology FILE]
    PYTHONPATH=<kernel_tuner>:<constraint>:<site> /usr/bin/python3 bench/bench_kernel_tuner.py --peer

The kernel is a blocked C matrix transpose (float, 512 x 512, OpenMP) with 100
configurations (block_rows x block_cols x unroll, no restriction), tuned
brute_force, iterations=7; it times itself (omp_get_wtime) and returns
milliseconds, the way Kernel Tuner times C functions, so both tools take the
same number as the time. For each run the script prints one JSON line:
wall_s (the tune_kernel call), sequential_s (the sum over the results of
compile_time + benchmark_time, what compiling and measuring them one after the
other takes), their ratio, the number of results and the best configuration.
Each tune-engine run starts from an empty cache (TUNE_CACHE_DIR), so every
configuration is compiled.
"""
import argparse
import json
import os
import shutil
import statistics
import tempfile
import time

import numpy

SOURCE = r"""
#include <omp.h>

extern "C" float transpose(float* out, const float* in, int n) {
    double t0 = omp_get_wtime();
    for (int bi = 0; bi < n; bi += block_rows)
        for (int bj = 0; bj < n; bj += block_cols)
            for (int i = bi; i < bi + block_rows; i++) {
                int j = bj;
                for (; j + unroll <= bj + block_cols; j += unroll)
                    for (int u = 0; u < unroll; u++)
                        out[(j + u) * n + i] = in[i * n + j + u];
            }
    return (float)((omp_get_wtime() - t0) * 1e3);
}
"""

N = 512
TUNE_PARAMS = {"block_rows": [1, 2, 4, 8, 16], "block_cols": [8, 16, 32, 64, 128], "unroll": [1, 2, 4, 8]}


def one_run(tune_kernel, seed, extra):
    matrix = numpy.random.default_rng(seed).random((N, N), dtype=numpy.float32)
    arguments = [numpy.zeros_like(matrix), matrix, numpy.int32(N)]
    # A fresh tune-engine cache: every configuration is compiled, none reused
    # from an earlier run (Kernel Tuner keeps no builds).
    os.environ["TUNE_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench_kernel_tuner_")
    start = time.perf_counter()
    results, env = tune_kernel("transpose", SOURCE, (N, N), arguments, dict(TUNE_PARAMS),
                               answer=[matrix.T.copy(), None, None], strategy="brute_force", iterations=7,
                               compiler_options=["-O3", "-fopenmp"], quiet=True, **extra)
    wall = time.perf_counter() - start
    shutil.rmtree(os.environ.pop("TUNE_CACHE_DIR"), ignore_errors=True)
    timed = [r for r in results if isinstance(r["time"], float)]
    sequential = sum(r["compile_time"] + r["benchmark_time"] for r in results) / 1e3
    best = min(timed, key=lambda r: r["time"])
    return {"wall_s": round(wall, 3), "sequential_s": round(sequential, 3),
            "sequential_over_wall": round(sequential / wall, 3), "results": len(results), "timed": len(timed),
            "compile_s": round(sum(r["compile_time"] for r in results) / 1e3, 3),
            "benchmark_s": round(sum(r["benchmark_time"] for r in results) / 1e3, 3),
            "best": {k: best[k] for k in TUNE_PARAMS}, "best_ms": best["time"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peer", action="store_true", help="run Kernel Tuner's own tune_kernel")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--topology", help="tune-engine only: a topology file (default: this machine's)")
    args = parser.parse_args()
    if args.peer:
        from kernel_tuner import tune_kernel
        tool = "kernel_tuner"
    else:
        from tune_engine.kernel_tuner import tune_kernel
        tool = "tune_engine.kernel_tuner"
    runs = []
    for repeat in range(args.repeats):
        run = one_run(tune_kernel, repeat, {"topology": args.topology} if args.topology else {})
        run["tool"] = tool
        run["topology"] = args.topology
        print(json.dumps(run), flush=True)
        runs.append(run)
    print(json.dumps({"tool": tool, "median_wall_s": statistics.median(r["wall_s"] for r in runs),
                      "median_sequential_s": statistics.median(r["sequential_s"] for r in runs),
                      "median_sequential_over_wall": statistics.median(r["sequential_over_wall"] for r in runs)}))


if __name__ == "__main__":
    main()
