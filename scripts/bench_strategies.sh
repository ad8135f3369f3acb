#!/usr/bin/env bash
# Builds and runs the strategy benchmark on the vendored datasets (five Kernel
# Tuner caches and the KTT file; pnpoly with its kind-override file):
# writes bench/results/strategies.md, strategies.csv and one SVG plot per dataset.
#   scripts/bench_strategies.sh [--runs R] [--budget N] [--seed S] [--strategies a,b] [--hyper strategy:name=value]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j2 --target bench_strategies
cd "$root"
"$build/bench/bench_strategies" --runs 50 --budget 500 --seed 1 --out bench/results "$@" \
  data/datasets/gemm_clblast/RTX_3090.json.gz \
  data/datasets/convolution/A100.json.gz \
  data/datasets/convolution_v1_rtx/RTX_2080_Ti.json.gz \
  --kinds data/datasets/pnpoly/kinds.json data/datasets/pnpoly/RTX_3090.json.gz \
  data/datasets/dedispersion/MI250X.json.gz \
  data/datasets/ktt/coulomb3d_RTX_2080_Ti_KTT_profiling.json.gz
