#!/usr/bin/env bash
# Does the drift probe see a machine that changes under a run? One run of the
# demo's job (MatMul 512x1024x1024, opevo, seed 1, one compile worker, device
# cpu0 on core 0) with a drift probe every EVERY trials; a load (a loop that
# streams through a 256 MiB array) is switched on on core LOAD_CORE ON seconds
# after the start and off again OFF seconds after it. Prints the summary's
# drift line, which trials were measured while the load ran (from each
# trial's finished_at in the results database), and which the probe flagged.
#
#   bench/drift_load.sh [--budget 150] [--every 10] [--on 10] [--off 25] [--load-core 0] [--out DIR] BIN
#
# e.g. bench/drift_load.sh build/cli/tune-engine
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
budget=150 every=10 on=10 off=25 load_core=0 out=${TMPDIR:-/tmp}/drift-load-$$
bench_options "$@"
[ ${#ARGS[@]} -eq 1 ] || { echo "usage: $0 [--budget N] [--every N] [--on S] [--off S] [--load-core C] [--out DIR] BIN" >&2; exit 2; }
bin=${ARGS[0]}
bench_setup "$out"
rm -f "$out/run.db"*
"$bin" tune --topology "$out/topology.yaml" --task matmul:512x1024x1024 --strategy opevo --budget "$budget" \
  --seed 1 --db "$out/run.db" --summary-json "$out/summary.json" --drift-every "$every" --quiet >"$out/log.txt" 2>&1 &
run_pid=$!
sleep "$on"
load_on=$(date +%s.%N)
load_start "$out" "$load_core"
sleep $((off - on))
load_stop
load_off=$(date +%s.%N)
wait "$run_pid" || { echo "the run failed; its log:" >&2; cat "$out/log.txt" >&2; exit 1; }
grep "drift probe" "$out/log.txt" || true
python3 - "$out/run.db" "$load_on" "$load_off" <<'PY'
import sqlite3, sys
db, on, off = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
con = sqlite3.connect(db)
rows = con.execute("SELECT seq, finished_at, run_s, drift_flagged FROM trials ORDER BY seq").fetchall()
# A trial ran under the load when any part of its measurement did.
loaded = [s for s, fin, run_s, _ in rows if fin - run_s <= off and fin >= on]
flagged = [s for s, _, _, f in rows if f]
def ranges(seqs):
    out, start, prev = [], None, None
    for s in seqs:
        if start is None: start = prev = s
        elif s == prev + 1: prev = s
        else: out.append((start, prev)); start = prev = s
    if start is not None: out.append((start, prev))
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in out) or "none"
both = set(loaded) & set(flagged)
print(f"trials {len(rows)}; measured under the load: {ranges(loaded)} ({len(loaded)})")
print(f"flagged by the probe: {ranges(flagged)} ({len(flagged)}); of the loaded ones flagged: {len(both)} of {len(loaded)}; "
      f"flagged but not loaded: {len(set(flagged) - set(loaded))}")
PY
