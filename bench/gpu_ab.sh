#!/usr/bin/env bash
# Two GPU bundles of scripts/pack_gpu.sh, a baseline and a change, tuning the
# same tasks on the same GPU one after the other (the order alternating from
# task to task), and each run's device time side by side: for a change to the
# GPU measuring path, measured in one call on the GPU machine.
#
#   bench/gpu_ab.sh BEFORE_DIR AFTER_DIR RESULTS_DIR LABEL=TASK...
#
# BEFORE_DIR and AFTER_DIR are unpacked bundles (their run.sh is used). Each
# run: the default strategy, seed 1, TUNE_GPU_BUDGET trials (default 150) or
# TUNE_GPU_RUN_S seconds (default 90), AFTER_DIR's gpu-topology.yaml (15
# compile workers, device 0; a bundle before 2026-11-27 had none), its own database
# and summary (RESULTS_DIR/LABEL-before.json, …-after.json). The compile cache
# is shared, and so are the reference outputs: a task named in TUNE_GPU_WARM
# ("C1 BMM3") first gets a 2-trial run of AFTER, so that neither side pays for
# computing them on the CPU (a minute for C1). Prints, per run: trials, wall
# time, trials per second, the measured trials and the device's per-trial
# overhead (its time outside timed kernel runs), the time lost to timeouts,
# the end-of-run confirmation and the best time; then the after/before ratios.
set -uo pipefail
if [[ $# -lt 4 ]]; then
  sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
before=$(cd "$1" && pwd) after=$(cd "$2" && pwd) out=$3
shift 3
mkdir -p "$out"
out=$(cd "$out" && pwd)
export TUNE_CACHE_DIR=$out/cache
budget=${TUNE_GPU_BUDGET:-150}
run_s=${TUNE_GPU_RUN_S:-90}
# Both sides with the topology of the change's bundle (15 compile workers, device 0).
cp "$after/gpu-topology.yaml" "$out/topology.yaml" || exit 2

tune() {  # bundle label task side budget
  "$1/run.sh" tune --topology "$out/topology.yaml" --task "$3" --budget "$5" --time-budget "$run_s" --seed 1 \
    --db "$out/$2-$4.db" --summary-json "$out/$2-$4.json" >"$out/$2-$4.txt" 2>"$out/$2-$4.log"
}

report() {  # label side
  python3 - "$out/$1-$2.json" "$1" "$2" <<'PY'
import json, sys
path, label, side = sys.argv[1:]
try:
    s = json.load(open(path))
except (OSError, ValueError) as e:
    print(f"{label:5} {side:6} no summary ({e})")
    sys.exit(0)
d = next(iter(s["time"]["devices"].values()))
n = max(d.get("trials", 0), 1)
best = s.get("best") or {}
print(f"{label:5} {side:6} {s['new_trials']:4d} trials in {s['wall_s']:6.1f} s "
      f"({s['new_trials'] / max(s['wall_s'], 1e-9):6.2f}/s, steady {s.get('steady_trials_per_s', 0):6.2f}/s); "
      f"measured {d.get('trials', 0):3d}, overhead {d['overhead_s']:6.2f} s ({1e3 * d['overhead_s'] / n:6.1f} ms each), "
      f"timeouts {d['timeout_s']:5.2f} s, confirmation {s['time'].get('confirmation_s', 0):5.2f} s; "
      f"best {best.get('time_ms', float('nan')):.4g} ms")
PY
}

ratio() {  # label
  python3 - "$out/$1-before.json" "$out/$1-after.json" "$1" <<'PY'
import json, sys
try:
    b, a = (json.load(open(p)) for p in sys.argv[1:3])
except (OSError, ValueError):
    sys.exit(0)
def each(s):
    d = next(iter(s["time"]["devices"].values()))
    return 1e3 * d["overhead_s"] / max(d.get("trials", 0), 1)
def rate(s):
    return s["new_trials"] / max(s["wall_s"], 1e-9)
print(f"{sys.argv[3]:5} after/before: overhead per measured trial {each(a) / max(each(b), 1e-9):.2f}x, "
      f"trials per second {rate(a) / max(rate(b), 1e-9):.2f}x, "
      f"best {a['best']['time_ms'] / b['best']['time_ms']:.3f}x")
PY
}

for pair in ${TUNE_GPU_WARM:-}; do
  for arg in "$@"; do
    if [[ ${arg%%=*} == "$pair" ]]; then
      start=$(date +%s)
      tune "$after" "$pair" "${arg#*=}" warm 2
      echo "warm-up $pair (reference outputs): exit $? in $(($(date +%s) - start)) s"
    fi
  done
done
k=0
for arg in "$@"; do
  label=${arg%%=*} task=${arg#*=}
  sides=(before after)
  if ((k % 2)); then sides=(after before); fi
  for side in "${sides[@]}"; do
    bundle=$before
    if [[ $side == after ]]; then bundle=$after; fi
    tune "$bundle" "$label" "$task" "$side" "$budget"
    rc=$?
    if [[ $rc -ne 0 ]]; then echo "$label $side: exit $rc ($(tail -1 "$out/$label-$side.log"))"; fi
    report "$label" "$side"
  done
  ratio "$label"
  k=$((k + 1))
done
