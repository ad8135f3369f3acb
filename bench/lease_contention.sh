#!/usr/bin/env bash
# Two tuning runs started at once with the same topology (the demo's: one
# compile worker, device cpu0 on core 0), with device leases (the default:
# the second waits for the first's lease of core 0) and without (--no-lease:
# both measure on core 0 at once, each timing the other's kernels too),
# against one run alone; the same task and seed every time, the three cases
# alternated --rounds times in one session. Prints per run, for the
# configurations it measured in full that the run alone measured in
# full too, their times over the times alone (median, min-max); its best
# (confirmed) time and its wall time; and per case the ranges.
#
#   bench/lease_contention.sh [--task matmul:256x512x512] [--trials 60] [--rounds 2] [--out DIR]
#
# The command is $TUNE_ENGINE, else build/cli/tune-engine. Databases,
# summaries, logs, the compile cache and results.txt go to --out (default
# $TMPDIR/lease-contention-PID).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/bench_lib.sh"
task=matmul:256x512x512
trials=60
rounds=2
out=${TMPDIR:-/tmp}/lease-contention-$$
bench_options "$@"
engine=${TUNE_ENGINE:-$here/../build/cli/tune-engine}
[ -x "$engine" ] || { echo "$0: no $engine (build first, or set TUNE_ENGINE)" >&2; exit 2; }
bench_setup "$out"
export TUNE_CACHE_DIR=$out/cache
rm -f "$out"/*.db "$out"/*.json "$out"/*.log

run() {  # name, then extra options
  local name=$1
  shift
  "$engine" tune --topology "$out/topology.yaml" --task "$task" --budget "$trials" --seed 1 --quiet \
    --db "$out/$name.db" --summary-json "$out/$name.json" "$@" >"$out/$name.log" 2>&1
}

for ((r = 1; r <= rounds; ++r)); do
  run "alone-$r"
  run "leased-a-$r" &
  a=$!
  run "leased-b-$r" &
  wait "$a" $!
  run "unleased-a-$r" --no-lease &
  a=$!
  run "unleased-b-$r" --no-lease &
  wait "$a" $!
done

python3 - "$out" "$rounds" "$task" "$trials" <<'PY' | tee "$out/results.txt"
import json, sqlite3, statistics, sys
out, rounds, task, trials = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def figures(name):
    db = sqlite3.connect(f"{out}/{name}.db")
    times = dict(db.execute(
        "SELECT config, time_ms FROM trials WHERE status = 'ok' AND stopped_early = 0 AND time_ms IS NOT NULL"))
    s = json.load(open(f"{out}/{name}.json"))
    return times, s["best"]["time_ms"], s["wall_s"]
print(f"{task}, {trials} trials, seed 1, device cpu0 on core 0, one compile worker")
print("per run: its best (confirmed) time, and the configurations it measured in full that the run alone of the")
print("same round measured in full too, with the median (min-max) of their time over the time alone")
print(f"{'run':14} {'best ms':>9} {'wall s':>7} {'same':>5}  time / alone")
summary = {"leased": [], "unleased": []}
for r in range(1, rounds + 1):
    alone, alone_best, alone_wall = figures(f"alone-{r}")
    print(f"{'alone-' + str(r):14} {alone_best:9.3f} {alone_wall:7.1f} {len(alone):5d}")
    for case in ("leased", "unleased"):
        for side in ("a", "b"):
            times, best, wall = figures(f"{case}-{side}-{r}")
            ratios = sorted(times[c] / alone[c] for c in times if c in alone)
            med = statistics.median(ratios) if ratios else float("nan")
            summary[case].append((med, best / alone_best))
            spread = f"{med:.2f}x ({ratios[0]:.2f}-{ratios[-1]:.2f})" if ratios else "-"
            print(f"{case + '-' + side + '-' + str(r):14} {best:9.3f} {wall:7.1f} {len(ratios):5d}  {spread}")
for case, rs in summary.items():
    meds = [m for m, _ in rs]
    bests = [b for _, b in rs]
    print(f"{case}: the same configurations' times {min(meds):.2f}-{max(meds):.2f}x (median per run) the run alone's; "
          f"best time {min(bests):.3f}-{max(bests):.3f}x")
PY
