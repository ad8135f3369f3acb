#!/usr/bin/env bash
# The winner's curse of a tuning run: how much faster the reported best is
# than the same configuration measured again later, under the same load. For
# each task, seed and condition (idle; a memory-bandwidth load streaming
# through 256 MiB on core LOAD_CORE, started and stopped by this script), the
# demo's topology (one compile worker, device cpu0 on core 0) tunes BUDGET
# trials three ways, taking turns:
#   raw      --confirm-top 0 --duel-rounds 0: the search's fastest figure
#   confirm  --duel-rounds 0: the end-of-run confirmation alone
#   duel     the defaults: duels during the run and the confirmation
#   long     the defaults with --confirm-rounds LONG_ROUNDS: a confirmation
#            whose rounds span seconds instead of a fraction of one (not a
#            default mode)
# then build/bench/bench_retime measures the reported best RETIME_ROUNDS
# times in full (still under the load) and prints retimed / reported − 1 ("optimism": > 0
# when the run promised more than the configuration gives). Ends with a table
# per task, mode and condition: median and largest optimism, and the run's
# extra measuring (duels, confirmation) as a share of its wall time.
#
# --statistic min times every configuration by the least of its runs (the
# topology's measurement.statistic, and bench_retime's), instead of the median.
#
#   bench/winners_curse.sh [--seeds "1 2 3"] [--budget 100] [--tasks "T …"] [--conditions "idle load"]
#                          [--modes "raw confirm duel"] [--statistic median] [--load-core 1]
#                          [--retime-rounds 5] [--long-rounds 40] [--out DIR] BIN RETIME
#
# e.g. bench/winners_curse.sh build/cli/tune-engine build/bench/bench_retime
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
seeds="1 2 3" budget=100 load_core=1 out=${TMPDIR:-/tmp}/winners-curse-$$
tasks="matmul:512x1024x1024 conv2d:8x64x27x27:192x5x5:s1:p2 bmm:960x128x128x64:nn"
conditions="idle load" modes="raw confirm duel" statistic=median retime_rounds=5 long_rounds=40
bench_options "$@"
[ ${#ARGS[@]} -eq 2 ] || { echo "usage: $0 [options] BIN RETIME (see --help)" >&2; exit 2; }
bin=${ARGS[0]} retime=${ARGS[1]}
declare -A flags=([raw]="--confirm-top 0 --duel-rounds 0" [confirm]="--duel-rounds 0" [duel]=""
  [long]="--confirm-rounds $long_rounds")
for mode in $modes; do
  [ -n "${flags[$mode]+set}" ] || { echo "$0: --modes: unknown mode $mode (raw, confirm, duel, long)" >&2; exit 2; }
done
bench_setup "$out"
[ "$statistic" = median ] || echo "measurement: {statistic: $statistic}" >>"$out/topology.yaml"

: >"$out/runs.jsonl"
for condition in $conditions; do
  for seed in $seeds; do
    for task in $tasks; do
      for mode in $modes; do
        tag="$condition-$seed-${task//[:x]/_}-$mode"
        rm -f "$out/$tag.db"*
        if [ "$condition" = load ]; then
          load_start "$out" "$load_core"
          sleep 1
        fi
        # shellcheck disable=SC2086
        "$bin" tune --topology "$out/topology.yaml" --task "$task" --budget "$budget" --seed "$seed" \
          --db "$out/$tag.db" --summary-json "$out/$tag.json" --quiet ${flags[$mode]} >"$out/$tag.txt" 2>&1 || true
        retimed=$("$retime" --db "$out/$tag.db" --task "$task" --statistic "$statistic" \
          --rounds "$retime_rounds" 2>>"$out/$tag.txt" || echo null)
        load_stop
        python3 - "$out/$tag.json" "$condition" "$seed" "$task" "$mode" "$retimed" "$statistic" >>"$out/runs.jsonl" <<'PY'
import json, sys
summary, condition, seed, task, mode, retimed, statistic = sys.argv[1:]
try:
    s = json.load(open(summary))
except Exception:
    s = {}
devices = s.get("time", {}).get("devices", {})
duel_s = sum(d.get("duel_s", 0.0) for d in devices.values())
extra_s = duel_s + s.get("time", {}).get("confirmation_s", 0.0)
wall = s.get("wall_s", 0.0) + s.get("time", {}).get("confirmation_s", 0.0)
print(json.dumps({"condition": condition, "seed": int(seed), "task": task, "mode": mode, "statistic": statistic,
                  "wall_s": wall, "extra_s": extra_s, "duels": s.get("duels"),
                  "retime": json.loads(retimed) if retimed != "null" else None}))
PY
        tail -n 1 "$out/runs.jsonl"
      done
    done
  done
done

python3 - "$out/runs.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("\ntask | mode | condition | runs | optimism median | optimism max | largest miss | extra measuring / wall")
print("--- | --- | --- | --- | --- | --- | --- | ---")
keys = []
for r in rows:
    k = (r["task"], r["mode"], r["condition"])
    if k not in keys:
        keys.append(k)
for k in sorted(keys):
    sel = [r for r in rows if (r["task"], r["mode"], r["condition"]) == k]
    opt = [r["retime"]["optimism"] for r in sel if r["retime"]]
    share = [r["extra_s"] / r["wall_s"] for r in sel if r["wall_s"] > 0]
    if not opt:
        print(f"{k[0]} | {k[1]} | {k[2]} | {len(sel)} | – | – | – | –")
        continue
    print(f"{k[0]} | {k[1]} | {k[2]} | {len(opt)} | {100*statistics.median(opt):+.1f}% | "
          f"{100*max(opt):+.1f}% | {100*max(abs(o) for o in opt):.1f}% | {100*statistics.median(share):.1f}%")
PY
echo "runs: $out/runs.jsonl"
