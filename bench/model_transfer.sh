#!/usr/bin/env bash
# What transfer between a model's tasks is worth: the same model tuned with
# each task's first round started from its family's runs (the default) and
# cold (`--no-auto-prior`), alternated per seed, each run with a fresh compile
# cache and database. Prints, per run, the model's latency (sum of count x
# best) after the warm-up rounds (every task's first round) and at the end
# (confirmed bests), and for each task its fastest time within its first
# --first trials; then, per task and for the model, the ratio with transfer /
# cold of each seed and their geometric mean (< 1: the transfer helped; the
# tasks that had no prior in either run show the run-to-run noise).
#
#   bench/model_transfer.sh [--model examples/models/bert_layer.yaml] [--budget 160] [--seeds "1 2 3"]
#                           [--round-trials 16] [--first 8] [--strategy bo] [--one-pipeline yes] [--out DIR]
#
# --one-pipeline yes runs every task through one pipeline: a task's first
# round then takes its family's trials measured so far in the run.
#
# The command is $TUNE_ENGINE, else build/cli/tune-engine; the demo's topology
# (one compile worker, device cpu0 on core 0). Run it on an idle machine.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/bench_lib.sh"
model=$here/../examples/models/bert_layer.yaml
budget=160
seeds="1 2 3"
round_trials=16
first=8
strategy=bo
one_pipeline=no
out=${TMPDIR:-/tmp}/model-transfer-$$
bench_options "$@"
engine=${TUNE_ENGINE:-$here/../build/cli/tune-engine}
[ -x "$engine" ] || { echo "$0: no $engine (build first, or set TUNE_ENGINE)" >&2; exit 2; }
[ -f "$model" ] || { echo "$0: --model $model: no such file" >&2; exit 2; }
case $one_pipeline in
  yes) pipeline_option=(--one-pipeline) ;;
  no) pipeline_option=() ;;
  *) echo "$0: --one-pipeline takes yes or no, not '$one_pipeline'" >&2; exit 2 ;;
esac
bench_setup "$out"

run() {  # name, then extra options
  local name=$1 seed=$2
  shift 2
  rm -rf "$out/cache-$name" "$out/$name.db"
  TUNE_CACHE_DIR=$out/cache-$name "$engine" tune --topology "$out/topology.yaml" --model "$model" \
    --budget "$budget" --round-trials "$round_trials" --strategy "$strategy" --seed "$seed" --quiet \
    --db "$out/$name.db" --summary-json "$out/$name.json" "${pipeline_option[@]}" "$@" >"$out/$name.log" 2>&1 ||
    { echo "$0: run $name failed, see $out/$name.log" >&2; exit 1; }
  python3 - "$out/$name.json" "$out/$name.db" "$name" "$seed" "$first" <<'PY'
import json, math, sqlite3, sys
summary, db, name, seed, first = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
j = json.load(open(summary))
con = sqlite3.connect(db)
tasks = {}
for t in j["tasks"]:
    times = [r[0] for r in con.execute(
        "SELECT time_ms FROM trials WHERE run_id = ? AND status = 'ok' AND seq < ? AND stopped_early = 0",
        (t["run_id"], first))]
    tasks[t["label"]] = {"count": t["count"], "prior_from": t.get("prior_from", []),
                         "first_best_ms": min(times) if times else None, "best_ms": t.get("best_ms")}
# The model's latency once every task has had its first round: the first
# trace entry with a finite latency.
warm = next((p for p in j["trace"] if p["latency_ms"] is not None and math.isfinite(p["latency_ms"])), None)
print(json.dumps({"name": name, "seed": seed, "trials": j["trials"], "wall_s": j.get("wall_s"),
                  "warm_trials": warm["trials"] if warm else None,
                  "warm_latency_ms": warm["latency_ms"] if warm else None,
                  "latency_ms": j["latency_ms"], "tasks": tasks}))
PY
}

for seed in $seeds; do
  # Alternate which goes first, so that a drift of the machine favours neither.
  if [ $((seed % 2)) -eq 1 ]; then
    run "transfer-$seed" "$seed"
    run "cold-$seed" "$seed" --no-auto-prior
  else
    run "cold-$seed" "$seed" --no-auto-prior
    run "transfer-$seed" "$seed"
  fi
done | tee "$out/runs.jsonl"

python3 - "$out/runs.jsonl" "$first" <<'PY'
import json, math, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
first = int(sys.argv[2])
by = {(r["name"].split("-")[0], r["seed"]): r for r in runs}
seeds = sorted({r["seed"] for r in runs})
def gmean(xs):
    xs = [x for x in xs if x is not None and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")
def ratio(a, b):
    return a / b if a and b else None
print(f"\nwith transfer / cold, per seed ({', '.join(map(str, seeds))}) and geometric mean:")
rows = {"model latency after the warm-up rounds": ("warm_latency_ms", None),
        "model latency at the end (confirmed)": ("latency_ms", None)}
for label, (key, _) in rows.items():
    rs = [ratio(by[("transfer", s)][key], by[("cold", s)][key]) for s in seeds]
    print(f"  {label}: " + "  ".join(f"{r:.3f}" if r else "-" for r in rs) + f"  | {gmean(rs):.3f}")
labels = by[("transfer", seeds[0])]["tasks"].keys()
for label in labels:
    prior = by[("transfer", seeds[0])]["tasks"][label]["prior_from"]
    rs = [ratio(by[("transfer", s)]["tasks"][label]["first_best_ms"], by[("cold", s)]["tasks"][label]["first_best_ms"])
          for s in seeds]
    # A task given no prior runs the same search both times: its ratio is the
    # noise floor the others' are to be read against.
    given = f"prior from {', '.join(prior)}" if prior else "no prior either way: the noise floor"
    print(f"  {label} ({given}), best of its first {first} trials: "
          + "  ".join(f"{r:.3f}" if r else "-" for r in rs) + f"  | {gmean(rs):.3f}")
PY
echo "runs: $out"
