#!/usr/bin/env bash
# The PostgreSQL results store under the loads it is for, on a throw-away
# server this script starts (initdb into --out, 127.0.0.1, a free port) and
# stops:
#   1. many writers: --coordinators replayed GEMM runs (RTX 3090 dataset, 4
#      simulated devices each, --budget trials, --resume) write to one store at
#      once; --kills of them are SIGKILLed at random moments and started again
#      with the same command. Checked afterwards in SQL: every run finished by
#      its budget, every trial recorded once (seq 0..n-1, no configuration twice).
#   2. machine B reusing machine A: a run (device names a0..a3) records into
#      the shared store, then the same task and budget with another seed on
#      "machine B" (devices b0..b3, same device kind) in the shared store
#      against a fresh one: how many of B's trials came from A's measurements
#      and B's best.
#   3. commit cost per trial: build/bench/bench_results_db --postgres URI
#      (SQLite file and PostgreSQL alternated, one run).
#
#   bench/postgres_store.sh [--coordinators 8] [--kills 3] [--budget 300] [--time-scale 0.05] [--out DIR]
#
# Needs Debian's postgresql (initdb, pg_ctl, createdb, psql); as root the
# server runs as the postgres user. The command is $TUNE_ENGINE, else
# build/cli/tune-engine.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/bench_lib.sh"
coordinators=8
kills=3
budget=300
time_scale=0.05
out=${TMPDIR:-/tmp}/postgres-store-$$
bench_options "$@"
engine=${TUNE_ENGINE:-$here/../build/cli/tune-engine}
bench=$(dirname "$engine")/../bench/bench_results_db
dataset=$here/../data/datasets/gemm_clblast/RTX_3090.json.gz
[ -x "$engine" ] || { echo "$0: no $engine (build first, or set TUNE_ENGINE)" >&2; exit 2; }
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$bin" ] || { echo "$0: no PostgreSQL server installed (Debian: postgresql)" >&2; exit 2; }
[ "$kills" -le "$coordinators" ] || { echo "$0: --kills must not exceed --coordinators" >&2; exit 2; }

mkdir -p "$out"
rm -rf "$out/pg" "$out"/*.log "$out"/*.json "$out"/*.yaml
mkdir -p "$out/pg"
as_pg=()
if [ "$(id -u)" = 0 ]; then
  chown postgres "$out/pg"
  as_pg=(runuser -u postgres --)
fi
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"${as_pg[@]}" "$bin/initdb" -D "$out/pg/data" -A trust -U postgres -E UTF8 >"$out/initdb.log" 2>&1
"${as_pg[@]}" "$bin/pg_ctl" -D "$out/pg/data" -l "$out/pg/server.log" -w \
  -o "-p $port -k $out/pg -c listen_addresses=127.0.0.1 -c max_connections=100" start >/dev/null
trap '"${as_pg[@]}" "$bin/pg_ctl" -D "$out/pg/data" -m fast -w stop >/dev/null 2>&1 || true' EXIT
psql_q() { "$bin/psql" -X -q -A -t -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres -d "$1" -c "$2"; }
for db in team shared fresh; do "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres "$db"; done
uri() { echo "postgresql://postgres@127.0.0.1:$port/$1"; }
echo "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port (data in $out/pg)"

topology() {  # name prefix -> a topology of 4 replay devices and 4 compile workers
  printf 'compile_workers: 4\ncompile_timeout_s: 60\nrun_timeout_s: 10\ndevices:\n  - backend: replay\n    id: 0\n    name: %s\n    prefetch: 2\n    count: 4\n' "$1" >"$out/$1.yaml"
  echo "$out/$1.yaml"
}
run_args() {  # seed db devices
  echo "tune --dataset $dataset --topology $(topology "$3") --strategy random --budget $budget --seed $1 --db $2 \
--time-scale $time_scale --resume --quiet --confirm-top 0"
}

echo "== 1. $coordinators coordinators on one store, $kills killed at random moments and resumed"
start=$(date +%s.%N)
declare -A pids
for i in $(seq 1 "$coordinators"); do
  # shellcheck disable=SC2046
  "$engine" $(run_args "$i" "$(uri team)" "c${i}_") >"$out/c$i.log" 2>&1 &
  pids[$i]=$!
done
victims=$(shuf -i 1-"$coordinators" -n "$kills" --random-source=<(yes))
killed=()
for v in $victims; do
  sleep "$(python3 -c "import random; random.seed($v); print(round(random.uniform(0.5, 3.0), 2))")"
  if kill -9 "${pids[$v]}" 2>/dev/null; then
    killed+=("$v")
    echo "killed coordinator $v (pid ${pids[$v]}) after $(psql_q team "SELECT count(*) FROM trials t JOIN runs r \
ON r.id = t.run_id WHERE r.seed = '$v'" 2>/dev/null || echo 0) trials, its run $(psql_q team "SELECT status FROM runs \
WHERE seed = '$v'" 2>/dev/null || echo 'not made yet')"
  else
    echo "coordinator $v had ended before its kill: make the runs longer (--budget, --time-scale)"
  fi
done
for v in "${killed[@]}"; do
  wait "${pids[$v]}" 2>/dev/null || true
  # shellcheck disable=SC2046
  "$engine" $(run_args "$v" "$(uri team)" "c${v}_") >>"$out/c$v.log" 2>&1 &
  pids[$v]=$!
done
failed=0
for i in $(seq 1 "$coordinators"); do wait "${pids[$i]}" || { echo "coordinator $i failed: $(tail -2 "$out/c$i.log")"; failed=1; }; done
echo "all coordinators ended in $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s"
psql_q team "SELECT r.seed, r.status, count(t.id), count(DISTINCT t.config), COALESCE(max(t.seq) + 1, 0)
  FROM runs r LEFT JOIN trials t ON t.run_id = r.id GROUP BY r.id ORDER BY r.seed::bigint" |
  awk -F'|' -v budget="$budget" '
    { ok = ($2 == "budget" && $3 == budget && $4 == budget && $5 == budget); bad += !ok
      printf "  run seed %s: %s, %s trials, %s distinct configurations, seqs 0..%d %s\n", $1, $2, $3, $4, $5 - 1, ok ? "ok" : "WRONG" }
    END { runs = NR; printf "%d runs, %d wrong\n", runs, bad; exit bad > 0 }' || failed=1
# A killed run that was still running is continued by its restart (one run
# per coordinator); one that had ended just before the kill is not, and
# --resume starts a second run of that seed, as it does for any ended run.
runs=$(psql_q team 'SELECT count(*) FROM runs')
seeds=$(psql_q team 'SELECT count(DISTINCT seed) FROM runs')
second=$(psql_q team "SELECT count(*) FROM runs r WHERE EXISTS (SELECT 1 FROM runs o WHERE o.seed = r.seed AND o.id < r.id)")
echo "runs in the store: $runs for $seeds coordinators ($second second runs, of coordinators killed after their run had ended)"
[ "$seeds" = "$coordinators" ] || failed=1

echo "== 2. machine B reusing machine A's measurements from the shared store"
# shellcheck disable=SC2046
"$engine" $(run_args 101 "$(uri shared)" a) --summary-json "$out/a.json" >"$out/a.log" 2>&1
echo "  machine A (devices a0..a3, seed 101): $(python3 -c "import json; s = json.load(open('$out/a.json')); \
print(f\"{s['trials']} trials, best {s['best']['time_ms']:.4f} ms, {s['wall_s']:.2f} s\")")"
for seed in 101 202; do
  for store in shared fresh; do
    [ "$store" = fresh ] && psql_q fresh "DROP TABLE IF EXISTS confirmations, trials, runs, schema_version" >/dev/null 2>&1
    # shellcheck disable=SC2046
    "$engine" $(run_args "$seed" "$(uri $store)" b) --summary-json "$out/b-$seed-$store.json" >"$out/b-$seed-$store.log" 2>&1
    reused=$(psql_q "$store" "SELECT count(*) FROM trials WHERE reused_from_run IS NOT NULL AND run_id = \
(SELECT max(id) FROM runs)")
    python3 - "$out/b-$seed-$store.json" "$store" "$reused" "$seed" <<'EOF2'
import json, sys
s = json.load(open(sys.argv[1]))
reused = int(sys.argv[3])
print(f"  machine B (devices b0..b3, seed {sys.argv[4]}), {sys.argv[2]} store: {s['trials']} trials, {reused} reused "
      f"from machine A's measurements, {s['trials'] - reused} measured; best {s['best']['time_ms']:.4f} ms; "
      f"{s['wall_s']:.2f} s")
EOF2
  done
done

echo "== 3. commit cost per trial, SQLite file against PostgreSQL (alternated)"
if [ -x "$bench" ]; then "$bench" --postgres "$(uri team)" --only-commits; else echo "  (no $bench: build target bench_results_db)"; fi
exit $failed
