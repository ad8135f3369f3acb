#!/usr/bin/python3
"""Strategies against one baseline in the OpEvo and NoSE papers' terms: the best
found relative to the optimum (f = optimum / best found) after a number of
evaluations, mean and standard deviation over the runs, read from the
strategies.csv that bench_strategies writes.

    python3 bench/compare_to_baseline.py CSV RUNS [--baseline xgb] [--strategies opevo,nose]

Prints a Markdown table, one row per dataset and evaluation count: each
strategy's mean f ± sd, and its difference from the baseline with that
difference's standard error (sd / sqrt(RUNS) of both, combined); a difference
larger than twice its standard error is marked ahead (+) or behind (−),
anything smaller even (=). Then, per strategy and evaluation count, on how
many datasets it is ahead, even and behind.
"""
import argparse
import csv
import math
from collections import defaultdict

CHECKPOINTS = (20, 50, 100, 200, 500)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("csv")
    parser.add_argument("runs", type=int)
    parser.add_argument("--baseline", default="xgb")
    parser.add_argument("--strategies", default="opevo,nose")
    args = parser.parse_args()
    others = args.strategies.split(",")
    cells = {}  # (dataset, strategy, evals) -> (mean, sd)
    datasets = []
    with open(args.csv, newline="") as f:
        for row in csv.DictReader(f):
            evals = int(row["evals"])
            if evals not in CHECKPOINTS:
                continue
            if row["dataset"] not in datasets:
                datasets.append(row["dataset"])
            cells[(row["dataset"], row["strategy"], evals)] = (float(row["mean_f"]), float(row["std_f"]))
    header = ["dataset", "evals", args.baseline] + [f"{s} (Δ ± se)" for s in others]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    tally = defaultdict(lambda: {"+": 0, "=": 0, "−": 0})  # (strategy, evals)
    for dataset in datasets:
        for evals in CHECKPOINTS:
            base = cells.get((dataset, args.baseline, evals))
            if base is None:
                continue
            row = [dataset, str(evals), f"{base[0]:.3f} ± {base[1]:.3f}"]
            for s in others:
                mean, sd = cells[(dataset, s, evals)]
                diff = mean - base[0]
                se = math.sqrt((sd * sd + base[1] * base[1]) / args.runs)
                mark = "+" if diff > 2 * se else "−" if diff < -2 * se else "="
                tally[(s, evals)][mark] += 1
                row.append(f"{mean:.3f} ± {sd:.3f} ({diff:+.3f} ± {se:.3f} {mark})")
            print("| " + " | ".join(row) + " |")
    print()
    for s in others:
        counts = []
        for evals in CHECKPOINTS:
            t = tally[(s, evals)]
            counts.append(f"{evals}: {t['+']} / {t['=']} / {t['−']}")
        print(f"- {s} against {args.baseline}, datasets ahead / even / behind at " + ", ".join(counts))


if __name__ == "__main__":
    main()
