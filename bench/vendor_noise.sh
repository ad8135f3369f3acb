#!/usr/bin/env bash
# How much the demo's vendor ratio moves on a noisy machine: for each
# tune-engine binary given, the demo's command (scripts/demo.sh: MatMul
# 512x1024x1024, opevo, seed 1, one compile worker, device cpu0 on core 0,
# --compare-vendor) RUNS times idle, then RUNS times while a memory-bandwidth
# load streams through a 256 MiB array on core LOAD_CORE, the binaries taking
# turns run by run; prints each run's tuned / best vendor ratio (summary JSON:
# throughput.best_vendor.ratio, the median of the interleaved rounds where the
# build has them) and every run's distance from the idle median of the same
# binary.
#
#   bench/vendor_noise.sh [--runs 5] [--budget 60] [--load-core 1] [--out DIR] BIN [BIN …]
#
# e.g. bench/vendor_noise.sh /work/wt/base/build/cli/tune-engine build/cli/tune-engine
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
runs=5 budget=60 load_core=1 out=${TMPDIR:-/tmp}/vendor-noise-$$
bench_options "$@"
[ ${#ARGS[@]} -gt 0 ] || { echo "usage: $0 [--runs N] [--budget N] [--load-core C] [--out DIR] BIN [BIN …]" >&2; exit 2; }
bins=("${ARGS[@]}")
bench_setup "$out"

# One run of the demo's command; prints its ratio (or "none").
one_run() {
  local bin=$1 tag=$2
  rm -f "$out/$tag.db" "$out/$tag.db-wal" "$out/$tag.db-shm"
  "$bin" tune --topology "$out/topology.yaml" --task matmul:512x1024x1024 --strategy opevo --budget "$budget" \
    --seed 1 --db "$out/$tag.db" --summary-json "$out/$tag.json" --compare-vendor --quiet >"$out/$tag.txt" 2>&1 || true
  python3 - "$out/$tag.json" <<'PY'
import json, sys
try:
    t = json.load(open(sys.argv[1]))["throughput"]
    b = t["best_vendor"]
    extra = f" ({b['ratio_min']:.3f}-{b['ratio_max']:.3f} over {b['rounds']} rounds)" if "ratio_min" in b else ""
    print(f"{b['ratio']:.4f} {b['library']}/{b['variant']} search {t['gflops']:.1f} vendor {b['gflops']:.1f} GFLOP/s{extra}")
except Exception as e:
    print(f"none ({e})")
PY
}

# The binaries take turns run by run, so that a change in the machine's other
# load over the minutes weighs on each of them alike.
for condition in idle load; do
  for r in $(seq 1 "$runs"); do
    for i in "${!bins[@]}"; do
      bin=${bins[$i]}
      if [ "$condition" = load ]; then
        load_start "$out" "$load_core"
        sleep 1
      fi
      line=$(one_run "$bin" "b$i-$condition-$r")
      load_stop
      echo "$bin $condition $r $line" | tee -a "$out/runs.txt"
    done
  done
done

echo
echo "ratios against the idle median of the same binary (aim: every run within ±5%)"
python3 - "$out/runs.txt" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
for bin in dict.fromkeys(r[0] for r in rows):
    mine = [r for r in rows if r[0] == bin and r[3] != "none"]
    idle = [float(r[3]) for r in mine if r[1] == "idle"]
    if not idle:
        print(f"{bin}: no idle ratio"); continue
    m = statistics.median(idle)
    print(f"{bin}: idle median {m:.3f}")
    for cond in ("idle", "load"):
        vals = [float(r[3]) for r in mine if r[1] == cond]
        if not vals: continue
        dev = [100 * (v / m - 1) for v in vals]
        inside = sum(abs(d) <= 5 for d in dev)
        print(f"  {cond}: " + " ".join(f"{v:.3f}" for v in vals) + f"  | off the idle median: "
              + " ".join(f"{d:+.1f}%" for d in dev) + f"  | {inside}/{len(vals)} within ±5%, spread {min(vals):.3f}-{max(vals):.3f}")
PY
echo "runs and summaries: $out"
