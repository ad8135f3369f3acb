#!/usr/bin/env bash
# Builds and runs the time-to-solution benchmark on the vendored datasets (five
# Kernel Tuner caches and the KTT file; pnpoly with its kind-override file):
# writes bench/results/time_to_solution.md and time_to_solution.csv.
#   scripts/bench_time_to_solution.sh [--runs R] [--seed S] [--budget N] [--strategy NAME] [--topology FILE]
#                                     [--prefetch P] [--batch B] [--out DIR]
set -euo pipefail
source "$(dirname "$0")/replay_bench.sh"
replay_bench bench_time_to_solution --runs 30 --budget 500 --seed 1 --out bench/results "$@"
