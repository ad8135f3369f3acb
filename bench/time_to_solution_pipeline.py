#!/usr/bin/env python3
"""The actor pipeline's own time to solution on a replayed dataset, to check
bench_time_to_solution's virtual clock against it.

Runs `tune-engine tune --dataset FILE --topology T --time-scale X` once per
seed (real threads, sleeping X times the recorded durations) and reads the
run's best-so-far trace from --summary-json: simulated seconds at which
f = optimum / best found first reached 0.90, 0.95, 0.99, and the run's
simulated length. The engine's own time and the sleeps' overshoot count at
1 / X, so the numbers carry the machine's load; a larger X makes them smaller.

  bench/time_to_solution_pipeline.py --dataset FILE [--strategy bo] [--seeds 1-5]
      [--budget 500] [--time-scale 0.05] [--topology data/topologies/replay_8x4.yaml]
      [--mode steady|generational] [--kinds FILE] [--cli build/cli/tune-engine] [--csv OUT]
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile

TARGETS = (0.90, 0.95, 0.99)


def seeds_of(text):
    out = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def optimum_ms(cli, dataset, kinds):
    cmd = [cli, "replay", "--dataset", dataset, "--strategy", "random", "--budget", "1", "--runs", "1", "--seed", "1", "--json"]
    if kinds:
        cmd += ["--kinds", kinds]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)["optimum_ms"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--kinds")
    ap.add_argument("--strategy", default="bo")
    ap.add_argument("--seeds", default="1-5")
    ap.add_argument("--budget", type=int, default=500)
    ap.add_argument("--time-scale", type=float, default=0.05)
    ap.add_argument("--topology", default="data/topologies/replay_8x4.yaml")
    ap.add_argument("--mode", default="steady", choices=["steady", "generational"])
    ap.add_argument("--cli", default="build/cli/tune-engine")
    ap.add_argument("--csv")
    args = ap.parse_args()

    best = optimum_ms(args.cli, args.dataset, args.kinds)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in seeds_of(args.seeds):
            summary = os.path.join(tmp, f"summary_{seed}.json")
            cmd = [args.cli, "tune", "--dataset", args.dataset, "--topology", args.topology,
                   "--time-scale", str(args.time_scale), "--strategy", args.strategy,
                   "--budget", str(args.budget), "--seed", str(seed), "--mode", args.mode, "--quiet",
                   "--db", os.path.join(tmp, f"run_{seed}.db"), "--summary-json", summary]
            if args.kinds:
                cmd += ["--kinds", args.kinds]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            with open(summary) as f:
                s = json.load(f)
            # trace: [simulated s, trials, best ms] at each new best.
            row = {"seed": seed, "sim_s": s["sim_s"], "wall_s": s["wall_s"]}
            for t in TARGETS:
                hit = next((p for p in s["trace"] if best / p[2] >= t), None)
                row[f"evals_to_{t:.2f}"] = hit[1] if hit else None
                row[f"time_to_{t:.2f}_s"] = hit[0] if hit else None
            rows.append(row)
            print(" ".join(f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()),
                  file=sys.stderr)
    print(f"{args.dataset}: {args.strategy}, {args.mode}, {args.topology}, time scale {args.time_scale}, "
          f"seeds {args.seeds}, {args.budget} evaluations")
    for t in TARGETS:
        times = [r[f"time_to_{t:.2f}_s"] for r in rows]
        got = [x for x in times if x is not None]
        # Not reached counts as slower than every run that did.
        ordered = sorted(got) + [float("inf")] * (len(times) - len(got))
        median = statistics.median(ordered) if ordered else float("nan")
        print(f"  f >= {t:.2f}: median {median:.3g} s, reached by {len(got)} of {len(times)}: "
              + " ".join("n.r." if x is None else f"{x:.3g}" for x in times))
    print(f"  run length: median {statistics.median(r['sim_s'] for r in rows):.4g} s simulated")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            w.writeheader()
            w.writerows(rows)


if __name__ == "__main__":
    main()
