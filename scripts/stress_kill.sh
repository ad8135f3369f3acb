#!/usr/bin/env bash
# Stress run of crash-safety: kills `tune-engine tune` with SIGKILL N times
# (default 200) at random moments, resuming each time, and checks that the
# results database holds every finished trial exactly once. Prints the kills,
# the trials recorded, and the trials lost and duplicated (both must be 0).
#   bash scripts/stress_kill.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ! -f build/build.ninja ]]; then
  bash scripts/setup.sh
  launcher=()
  if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >/dev/null
fi
# Only what the test needs: the command (with its kernel worker) and the test program.
cmake --build build -j "${TUNE_JOBS:-$(nproc)}" -- tune-engine test_cli >/dev/null
TUNE_KILLS="${1:-200}" ./build/tests/test_cli "tune: killed at random moments and resumed*"
