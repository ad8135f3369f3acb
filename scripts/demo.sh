#!/usr/bin/env bash
# The default job: installs what is missing, builds, then tunes MatMul
# 512x1024x1024 (OpEvo's MM1) on this CPU with OpEvo through the actor
# pipeline, and compares the best kernel found with oneDNN and OpenBLAS on the same
# core and number of threads, each timed alternately with it (the last line:
# tuned / best vendor, median and range of the per-round ratios). Results go
# to demo-output/ (SQLite database, summary JSON, the report's text).
#
#   TUNE_DEMO_BUDGET=N   trials to measure (default 150, one to two minutes on 2 cores)
#   TUNE_DEMO_TASK=T     another built-in task, e.g. bmm:960x128x128x64:nn
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p demo-output

# The build (apt first, for what is missing) writes its whole output to
# demo-output/build.log and shows one status line: ninja's [N/M], rewritten in
# place on a terminal, else a line per tenth. A failed build prints the log's
# tail and stops the demo.
build_log=demo-output/build.log
show_build_progress() {
  local line shown=-1 step total percent
  while IFS= read -r line; do
    printf '%s\n' "$line" >>"$build_log"
    case $line in
      setup:*) [ -t 1 ] && [ "$shown" -ge 0 ] && printf '\n'; printf '%s (a few minutes)\n' "$line" ;;
    esac
    [[ $line =~ ^\[([0-9]+)/([0-9]+)\] ]] || continue
    step=${BASH_REMATCH[1]} total=${BASH_REMATCH[2]}
    percent=$((step * 100 / total))
    if [ -t 1 ]; then
      printf '\r\033[Kbuilding: %d/%d steps (%d%%)' "$step" "$total" "$percent"
      shown=$percent
    elif [ $((percent / 10)) -gt $((shown / 10)) ] || [ "$shown" -lt 0 ]; then
      printf 'building: %d/%d steps (%d%%)\n' "$step" "$total" "$percent"
      shown=$percent
    fi
  done
  if [ -t 1 ] && [ "$shown" -ge 0 ]; then printf '\n'; fi
}
: >"$build_log"
echo "building into ./build (log: $build_log)"
start=$SECONDS
if ! bash scripts/build.sh 2>&1 | show_build_progress; then
  echo "build failed; the end of $build_log:" >&2
  tail -n 30 "$build_log" >&2
  exit 1
fi
echo "built in $((SECONDS - start)) s"

budget=${TUNE_DEMO_BUDGET:-150}
task=${TUNE_DEMO_TASK:-matmul:512x1024x1024}
rm -f demo-output/demo.db demo-output/demo.db-wal demo-output/demo.db-shm

# One core measures (device 0 is pinned to core 0); the compiler workers get
# the others, so compiles do not disturb the timings (one worker on 1-2 cores),
# and the measuring core builds too, at idle priority, while it waits
# (background_builds, on by default).
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

echo "tuning $task on this CPU with opevo, $budget trials, ${workers} compile worker(s) and the measuring core's idle time (progress on the next line)"
./build/cli/tune-engine tune \
  --topology demo-output/topology.yaml \
  --task "$task" \
  --strategy opevo \
  --budget "$budget" \
  --seed 1 \
  --db demo-output/demo.db \
  --summary-json demo-output/summary.json \
  --compare-vendor | tee demo-output/report.txt
echo "results: demo-output/demo.db (tune-engine best --db demo-output/demo.db), summary: demo-output/summary.json"
# The last line: the best kernel found against the vendor kernel it is least
# ahead of, both timed alternately on the measuring core (median of the
# per-round ratios, and their range).
grep -E '^(against the best vendor kernel|best vendor: none|vendor comparison: unavailable)' demo-output/report.txt |
  tail -n 1 || true
