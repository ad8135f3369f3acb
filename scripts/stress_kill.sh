#!/usr/bin/env bash
# Stress run of crash-safety: kills `tune-engine tune` with SIGKILL N times
# (default 200) at random moments, resuming each time, and checks that the
# results database holds every finished trial exactly once.
#   bash scripts/stress_kill.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >/dev/null
TUNE_KILLS="${1:-200}" ./build/tests/test_actors "tune: killed at random moments and resumed*"
