#!/usr/bin/env bash
# Real CPU kernels over two node processes on loopback against the same run on
# this machine alone, and with a node's compile workers (artifacts as bytes).
# Usage: scripts/bench_nodes_cpu.sh [TASK] [BUDGET]   (build/ must hold tune-engine)
# Each variant gets a fresh compile cache, so every kernel is compiled in every run.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
te="$root/build/cli/tune-engine"
task="${1:-matmul:128x128x128}"
budget="${2:-40}"
work="$(mktemp -d /tmp/tune-bench-nodes-cpu.XXXXXX)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

cat >"$work/node.yaml" <<YAML
devices: [{backend: cpu, id: 0, name: core, count: 2}]
network: {heartbeat_s: 0.5, connection_timeout_s: 2}
YAML
cat >"$work/node-builders.yaml" <<YAML
compile_workers: 2
devices: [{backend: cpu, id: 0, name: core, count: 2}]
network: {heartbeat_s: 0.5, connection_timeout_s: 2}
YAML
cat >"$work/local.yaml" <<YAML
compile_workers: 2
devices: [{backend: cpu, id: 0, name: core, count: 2}]
YAML

start_node() {  # cache topology; sets $port
  TUNE_CACHE_DIR="$1" "$te" node --listen 127.0.0.1:0 --topology "$2" >/dev/null 2>"$1.log" &
  pids+=($!)
  port=""
  for _ in $(seq 300); do
    port=$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$1.log" 2>/dev/null | head -1)
    [ -n "$port" ] && return 0
    sleep 0.1
  done
  echo "node did not start: $(cat "$1.log")" >&2
  exit 1
}

run() {  # name topology cache
  local start end
  start=$(date +%s.%N)
  TUNE_CACHE_DIR="$3" "$te" tune --topology "$2" --task "$task" --budget "$budget" --seed 1 --strategy random \
    --db "$work/$1.db" --quiet >"$work/$1.out" 2>"$work/$1.err"
  end=$(date +%s.%N)
  /usr/bin/python3 - "$1" "$work/$1.db" "$start" "$end" "$budget" <<'PY'
import sqlite3, sys
name, db, start, end, budget = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
c = sqlite3.connect(db)
statuses = " ".join(f"{s} {n}" for s, n in c.execute("SELECT status, COUNT(*) FROM trials GROUP BY status"))
distinct = c.execute("SELECT COUNT(DISTINCT config) FROM trials").fetchone()[0]
devices = " ".join(f"{d}:{n}" for d, n in c.execute("SELECT device, COUNT(*) FROM trials GROUP BY device"))
print(f"{name:24s} {end - start:6.1f} s  {budget / (end - start):6.3f} trials/s  distinct {distinct}  {statuses}  [{devices}]")
PY
}

echo "task $task, budget $budget, strategy random, seed 1, fresh compile cache per run ($(nproc) cores)"
run "local-2-cores" "$work/local.yaml" "$work/cache-local"

two_nodes() {  # name topology-of-node-a topology-of-node-b: device 0 of a, device 1 of b
  local a b
  start_node "$work/cache-$1-a" "$2"
  a=$port
  start_node "$work/cache-$1-b" "$3"
  b=$port
  cat >"$work/$1.yaml" <<YAML
compile_workers: 1
nodes:
  - {host: 127.0.0.1, port: $a, devices: [0]}
  - {host: 127.0.0.1, port: $b, devices: [1]}
YAML
  run "$1" "$work/$1.yaml" "$work/cache-$1-coordinator"
  kill "${pids[@]}"
  wait "${pids[@]}" 2>/dev/null || true
  pids=()
}

two_nodes "2-nodes-build-on-node" "$work/node.yaml" "$work/node.yaml"
two_nodes "2-nodes-a-compiles" "$work/node-builders.yaml" "$work/node.yaml"
received=0; bytes=0
for dir in "$work/cache-2-nodes-a-compiles-a/received" "$work/cache-2-nodes-a-compiles-b/received"; do
  [ -d "$dir" ] || continue
  received=$((received + $(find "$dir" -name '*.so' | wc -l)))
  bytes=$((bytes + $(find "$dir" -name '*.so' -printf '%s\n' | awk '{s+=$1} END {print s+0}')))
done
echo "artifacts received as bytes: $received, $bytes bytes, $((received ? bytes / received : 0)) bytes per artifact"
echo "(results in $work)"
