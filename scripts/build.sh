#!/usr/bin/env bash
# Configures and builds tune-engine into ./build (Release). Used by test.sh and demo.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs=${TUNE_JOBS:-$(nproc)}
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >/dev/null
cmake --build build -j "$jobs"
