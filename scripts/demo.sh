#!/usr/bin/env bash
# The default job: installs what is missing, builds, then tunes MatMul
# 512x1024x1024 (OpEvo's MM1) on this CPU with OpEvo through the actor
# pipeline, and compares the best kernel found with oneDNN and OpenBLAS on the same
# number of threads. Results go to demo-output/ (SQLite database, summary JSON).
#
#   TUNE_DEMO_BUDGET=N   trials to measure (default 150, one to two minutes on 2 cores)
#   TUNE_DEMO_TASK=T     another built-in task, e.g. bmm:960x128x128x64:nn
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >/dev/null

budget=${TUNE_DEMO_BUDGET:-150}
task=${TUNE_DEMO_TASK:-matmul:512x1024x1024}
mkdir -p demo-output
rm -f demo-output/demo.db demo-output/demo.db-wal demo-output/demo.db-shm

# One core measures (device 0 is pinned to core 0); the compiler workers get
# the others, so compiles do not disturb the timings (one worker on 1-2 cores).
cores=$(nproc)
workers=$((cores > 2 ? cores - 1 : 1))
cat > demo-output/topology.yaml <<YAML
# Written by scripts/demo.sh: ${workers} compile worker(s), one CPU device.
compile_workers: ${workers}
compile_timeout_s: 60
run_timeout_s: 10
devices:
  - backend: cpu
    id: 0
    name: cpu0
    prefetch: 1
YAML

echo "tuning $task on this CPU with opevo, $budget trials, ${workers} compile worker(s) (progress on the next line)"
./build/cli/tune-engine tune \
  --topology demo-output/topology.yaml \
  --task "$task" \
  --strategy opevo \
  --budget "$budget" \
  --seed 1 \
  --db demo-output/demo.db \
  --summary-json demo-output/summary.json \
  --compare-vendor
echo "results: demo-output/demo.db (tune-engine best --db demo-output/demo.db), summary: demo-output/summary.json"
