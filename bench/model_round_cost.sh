#!/usr/bin/env bash
# What a model run's rounds cost: the same task and trials tuned as one run
# (`tune --task`) and as a one-task model (`tune --model`, rounds of
# --round-trials), alternated --rounds times, each with a fresh compile cache
# and database; no end-of-run confirmation in either. Prints each run's wall
# time and trials, and per pair the model's extra wall time per round.
#
#   bench/model_round_cost.sh [--task matmul:128x256x256] [--trials 64] [--round-trials 16] [--rounds 3] [--out DIR]
#
# The command is $TUNE_ENGINE, else build/cli/tune-engine; the demo's topology
# (one compile worker, device cpu0 on core 0).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/bench_lib.sh"
task=matmul:128x256x256
trials=64
round_trials=16
rounds=3
out=${TMPDIR:-/tmp}/model-round-cost-$$
bench_options "$@"
engine=${TUNE_ENGINE:-$here/../build/cli/tune-engine}
[ -x "$engine" ] || { echo "$0: no $engine (build first, or set TUNE_ENGINE)" >&2; exit 2; }
bench_setup "$out"
printf 'name: one-task\ntasks:\n  - task: %s\n' "$task" >"$out/model.yaml"

run() {  # name, then the target's options
  local name=$1
  shift
  rm -rf "$out/cache-$name" "$out/$name.db"
  local start end
  start=$(date +%s.%N)
  TUNE_CACHE_DIR=$out/cache-$name "$engine" tune --topology "$out/topology.yaml" --budget "$trials" --seed 1 --quiet \
    --confirm-top 0 --db "$out/$name.db" --summary-json "$out/$name.json" "$@" >"$out/$name.log" 2>&1
  end=$(date +%s.%N)
  python3 -c "import json,sys; j=json.load(open('$out/$name.json')); print('%s %.2f %d' % ('$name', $end - $start, j['trials']))"
}

{
  for ((r = 1; r <= rounds; ++r)); do
    run "run-$r" --task "$task"
    run "model-$r" --model "$out/model.yaml" --round-trials "$round_trials"
  done
} | tee "$out/walls.txt"
python3 - "$out/walls.txt" "$trials" "$round_trials" <<'PY'
import math, sys
rows = [l.split() for l in open(sys.argv[1])]
trials, per_round = int(sys.argv[2]), int(sys.argv[3])
runs = [(float(w), int(t)) for n, w, t in rows if n.startswith("run-")]
models = [(float(w), int(t)) for n, w, t in rows if n.startswith("model-")]
for (rw, rt), (mw, mt) in zip(runs, models):
    rounds = math.ceil(trials / per_round) + 1  # the rounds and the end
    print(f"run {rw:.2f} s ({rt} trials), model {mw:.2f} s ({mt} trials): "
          f"{mw / rw:.2f}x, {(mw - rw) / rounds:.2f} s more per round ({rounds} sessions)")
PY
