#!/usr/bin/env bash
# The default job: installs what is missing, builds, then tunes MatMul
# 512x1024x1024 (OpEvo's MM1) on this CPU with OpEvo through the actor
# pipeline, and compares the best kernel found with OpenBLAS sgemm on the same
# number of threads. Results go to demo-output/ (SQLite database, summary JSON).
#
#   TUNE_DEMO_BUDGET=N   trials to measure (default 150, a few minutes on 2 cores)
#   TUNE_DEMO_TASK=T     another built-in task, e.g. bmm:960x128x128x64:nn
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >/dev/null

budget=${TUNE_DEMO_BUDGET:-150}
task=${TUNE_DEMO_TASK:-matmul:512x1024x1024}
mkdir -p demo-output
rm -f demo-output/demo.db demo-output/demo.db-wal demo-output/demo.db-shm

echo "tuning $task on this CPU with opevo, $budget trials (progress on the next line)"
./build/cli/tune-engine tune \
  --topology examples/topology-cpu.yaml \
  --task "$task" \
  --strategy opevo \
  --budget "$budget" \
  --seed 1 \
  --db demo-output/demo.db \
  --summary-json demo-output/summary.json \
  --compare-blas
echo "results: demo-output/demo.db (tune-engine best --db demo-output/demo.db), summary: demo-output/summary.json"
