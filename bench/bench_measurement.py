#!/usr/bin/env python3
"""Where a real tuning run's time goes, for two builds of tune-engine side by side.

Runs the demo's job (a built-in CPU task, one compile worker, one measuring
core, 150 trials) with each strategy given, alternating the two builds round
by round (old, new, then new, old, ...), each run with a fresh results
database and a fresh compile cache so that every build and every measurement
is real. Prints per run: wall time, trials per second, best GFLOP/s, and
where the measuring core's time went; then the median of each build and the
ratio new / old.

    python3 bench/bench_measurement.py --old OLD/build/cli/tune-engine \\
        --new build/cli/tune-engine [--task matmul:512x1024x1024] [--budget 150] \\
        [--strategies opevo,bo] [--rounds 2] [--seed 1] [--out DIR]

The measuring core's time, from each run's results database (both schemas):
  timeouts   run_s of trials killed at the run timeout
  too slow   run_s of trials stopped as too slow (new builds)
  slow       run_s of ok trials measured while their time was over 1.5x the
             best so far (what early stopping is for)
  overhead   run_s - kernel_s of ok trials (new builds record kernel_s)
The compile worker's: the sum of compile_s and the rest of the wall time.
Last, per strategy, the new / old time of the configurations both builds
timed in full in the same round (with `--strategies random` both runs of a
round propose the same configurations): how a change in the measuring moved
the figures themselves; and the new / old build seconds of the
configurations both builds compiled: how a change in the builds moved them.
"""
import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

TOPOLOGY = """compile_workers: 1
compile_timeout_s: 60
run_timeout_s: 10
devices:
  - {backend: cpu, id: 0, name: cpu0, prefetch: 1}
"""


def breakdown(db_path):
    con = sqlite3.connect(db_path)
    cols = {row[1] for row in con.execute("PRAGMA table_info(trials)")}
    has_kernel = "kernel_s" in cols
    has_early = "stopped_early" in cols
    query = "SELECT seq, status, time_ms, run_s, compile_s, reused_from_run" + (
        ", kernel_s" if has_kernel else ", 0") + (", stopped_early" if has_early else ", 0") + (
            " FROM trials ORDER BY seq")
    out = {"measuring_s": 0.0, "timeouts_s": 0.0, "too_slow_s": 0.0, "slow_s": 0.0, "overhead_s": None,
           "stopped_early": 0, "build_s": 0.0, "trials": 0}
    best = None
    overhead = 0.0
    for seq, status, time_ms, run_s, compile_s, reused, kernel_s, early in con.execute(query):
        if reused is not None:
            continue
        out["trials"] += 1
        out["measuring_s"] += run_s
        out["build_s"] += compile_s
        if status == "run_timeout":
            out["timeouts_s"] += run_s
        elif status == "too_slow":
            out["too_slow_s"] += run_s
        elif status == "ok":
            if best is not None and time_ms > 1.5 * best:
                out["slow_s"] += run_s
            if not early and (best is None or time_ms < best):
                best = time_ms
            out["stopped_early"] += 1 if early else 0
            overhead += run_s - kernel_s
    if has_kernel:
        out["overhead_s"] = overhead
    con.close()
    return out


def full_times(db_path):
    """Each configuration's time_ms where its trial was ok and timed in full."""
    con = sqlite3.connect(db_path)
    cols = {row[1] for row in con.execute("PRAGMA table_info(trials)")}
    early = ", stopped_early" if "stopped_early" in cols else ", 0"
    out = {config: time_ms
           for config, time_ms, status, stopped in con.execute("SELECT config, time_ms, status" + early +
                                                               " FROM trials WHERE reused_from_run IS NULL")
           if status == "ok" and time_ms is not None and not stopped}
    con.close()
    return out


def build_seconds(db_path):
    """compile_s of each configuration built in the run (not taken from the compile cache or the database)."""
    con = sqlite3.connect(db_path)
    out = {config: compile_s
           for config, compile_s in con.execute("SELECT config, compile_s FROM trials WHERE reused_from_run IS NULL "
                                                "AND compile_s > 0")}
    con.close()
    return out


def same_builds(root, strategy, rounds):
    """new / old compile_s of the configurations both builds compiled, over all rounds (each configuration's
    median per build): a change in how candidates are built shows here, through the noise of builds that share
    the cores with measurements and with each other."""
    seconds = {"old": {}, "new": {}}
    for name in seconds:
        for r in range(rounds):
            for config, s in build_seconds(os.path.join(root, f"{strategy}-{name}-{r}", "run.db")).items():
                seconds[name].setdefault(config, []).append(s)
    old, new = seconds["old"], seconds["new"]
    return sorted(statistics.median(new[c]) / statistics.median(old[c]) for c in old if c in new)


def same_configurations(root, strategy, rounds):
    """new / old time of the configurations both builds timed in full in the same round: a change in how
    candidates are measured shows here (with a strategy whose proposals do not depend on the times, such as
    random, the two runs of a round propose the same configurations)."""
    ratios = []
    for r in range(rounds):
        old = full_times(os.path.join(root, f"{strategy}-old-{r}", "run.db"))
        new = full_times(os.path.join(root, f"{strategy}-new-{r}", "run.db"))
        ratios += [new[c] / old[c] for c in old if c in new]
    return sorted(ratios)


def run_once(binary, task, budget, seed, strategy, workdir, extra):
    os.makedirs(workdir, exist_ok=True)
    topology = os.path.join(workdir, "topology.yaml")
    with open(topology, "w") as f:
        f.write(TOPOLOGY)
    db = os.path.join(workdir, "run.db")
    if os.path.exists(db):
        # A database with runs in it lets the run reuse their results.
        sys.exit(f"{db} exists: give --out an empty folder")
    summary = os.path.join(workdir, "summary.json")
    cache = os.path.join(workdir, "cache")
    env = dict(os.environ, TUNE_CACHE_DIR=cache)
    args = [binary, "tune", "--topology", topology, "--task", task, "--strategy", strategy, "--budget",
            str(budget), "--seed", str(seed), "--db", db, "--summary-json", summary, "--quiet"] + extra
    started = time.monotonic()
    done = subprocess.run(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.monotonic() - started
    if done.returncode != 0:
        sys.exit(f"{binary} failed ({done.returncode}):\n{done.stdout}")
    with open(summary) as f:
        report = json.load(f)
    b = breakdown(db)
    gflops = report.get("throughput", {}).get("gflops")
    shutil.rmtree(cache, ignore_errors=True)
    return {"wall_s": wall, "trials": report["trials"], "trials_per_s": report["trials"] / wall, "gflops": gflops,
            "best_ms": report["best"]["time_ms"], **b}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--old", required=True, help="tune-engine of the build to compare against")
    p.add_argument("--new", required=True, help="tune-engine of this build")
    p.add_argument("--task", default="matmul:512x1024x1024")
    p.add_argument("--budget", type=int, default=150)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--strategies", default="opevo,bo")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--new-args", default="", help="extra arguments for the new build's tune, space-separated")
    p.add_argument("--out", default="", help="keep the runs' folders here (default: a temporary folder)")
    a = p.parse_args()
    root = a.out or tempfile.mkdtemp(prefix="bench-measurement-")
    rows = []
    for r in range(a.rounds):
        for strategy in a.strategies.split(","):
            order = [("old", a.old), ("new", a.new)] if r % 2 == 0 else [("new", a.new), ("old", a.old)]
            for name, binary in order:
                extra = a.new_args.split() if name == "new" and a.new_args else []
                res = run_once(binary, a.task, a.budget, a.seed, strategy,
                               os.path.join(root, f"{strategy}-{name}-{r}"), extra)
                res.update({"build": name, "strategy": strategy, "round": r})
                rows.append(res)
                ov = "-" if res["overhead_s"] is None else f"{res['overhead_s']:.1f}"
                print(f"{strategy:6} {name:3} round {r}: {res['wall_s']:6.1f} s wall, {res['trials_per_s']:5.2f} "
                      f"trials/s, best {res['gflops']:.1f} GFLOP/s; measuring {res['measuring_s']:.1f} s "
                      f"(timeouts {res['timeouts_s']:.1f}, too slow {res['too_slow_s']:.1f}, slow {res['slow_s']:.1f}, "
                      f"overhead {ov}, stopped early {res['stopped_early']}); building {res['build_s']:.1f} s",
                      flush=True)
    print(f"\nmedians over {a.rounds} rounds ({a.task}, {a.budget} trials, seed {a.seed}; runs in {root}):")
    for strategy in a.strategies.split(","):
        med = {}
        for name in ("old", "new"):
            sel = [x for x in rows if x["strategy"] == strategy and x["build"] == name]
            med[name] = {k: statistics.median(x[k] for x in sel)
                         for k in ("wall_s", "trials_per_s", "gflops", "measuring_s", "timeouts_s", "slow_s",
                                   "build_s")}
        o, n = med["old"], med["new"]
        print(f"{strategy:6} old {o['wall_s']:.1f} s, {o['trials_per_s']:.2f} trials/s, {o['gflops']:.1f} GFLOP/s | "
              f"new {n['wall_s']:.1f} s, {n['trials_per_s']:.2f} trials/s, {n['gflops']:.1f} GFLOP/s | "
              f"trials/s x{n['trials_per_s'] / o['trials_per_s']:.2f}, GFLOP/s x{n['gflops'] / o['gflops']:.3f}")
        same = same_configurations(root, strategy, a.rounds)
        if same:
            print(f"{strategy:6} the {len(same)} configurations both builds timed in full in a round: new / old time "
                  f"median {statistics.median(same):.4f} (quartiles {same[len(same) // 4]:.4f}–"
                  f"{same[3 * len(same) // 4]:.4f})")
        builds = same_builds(root, strategy, a.rounds)
        if builds:
            print(f"{strategy:6} the {len(builds)} configurations both builds compiled: new / old build seconds "
                  f"median {statistics.median(builds):.4f} (quartiles {builds[len(builds) // 4]:.4f}–"
                  f"{builds[3 * len(builds) // 4]:.4f})")
    with open(os.path.join(root, "runs.json"), "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
