#!/usr/bin/env bash
# Builds and runs the strategy benchmark on the vendored datasets (five Kernel
# Tuner caches and the KTT file; pnpoly with its kind-override file):
# writes bench/results/strategies.md, strategies.csv and one SVG plot per dataset.
#   scripts/bench_strategies.sh [--runs R] [--budget N] [--seed S] [--strategies a,b] [--hyper strategy:name=value]
set -euo pipefail
source "$(dirname "$0")/replay_bench.sh"
replay_bench bench_strategies --runs 50 --budget 500 --seed 1 --out bench/results "$@"
