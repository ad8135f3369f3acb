#!/usr/bin/python3
"""Per-trial overhead of a Python objective tuned through the actor pipeline,
against the same objective written in C++ (bench_objective_overhead).

    PYTHONPATH=build/bindings/python /usr/bin/python3 bench/bench_python_overhead.py \
        [--cxx build/bench/bench_objective_overhead] [--trials 3000] [--repeats 5]

Both run the random strategy on the same 10^6-configuration space with the
default topology, C++ and Python runs alternating; each figure is the median
over the repeats, in microseconds per trial: wall-clock, the engine's CPU, and
one objective call as the measurer times it. The difference is what calling
Python adds (the GIL, the configuration dict, the call).
"""
import argparse
import json
import pathlib
import statistics
import subprocess

import tune_engine

REPO = pathlib.Path(__file__).resolve().parents[1]


def python_run(trials, seed):
    """The report of a run without callbacks, and the median time of one
    objective call as the measurer sees it (from a second run with a trial
    callback), as bench_objective_overhead does."""
    space = tune_engine.Space({"x": list(range(1000)), "y": list(range(1000))})
    report = tune_engine.tune(lambda c: c["x"] / 1000.0 + c["y"], space=space, strategy="random", budget=trials,
                              seed=seed)
    run_us = []
    tune_engine.tune(lambda c: c["x"] / 1000.0 + c["y"], space=space, strategy="random", budget=trials, seed=seed,
                     on_trial=lambda t: run_us.append(t["run_s"] * 1e6))
    return report, statistics.median(run_us)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cxx", default=str(REPO / "build" / "bench" / "bench_objective_overhead"))
    parser.add_argument("--trials", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    # C++ and Python runs alternate, so that a change in the machine's load
    # falls on both.
    cxx_rows, py_rows = [], []
    for r in range(args.repeats):
        cxx_rows.append(json.loads(subprocess.run(
            [args.cxx, "--trials", str(args.trials), "--repeats", "1", "--seed", str(args.seed + r)],
            check=True, capture_output=True, text=True).stdout))
        report, call_us = python_run(args.trials, args.seed + r)
        assert report["reason"] == "budget", report["reason"]
        py_rows.append({"wall_us_per_trial": report["wall_s"] * 1e6 / report["new_trials"],
                        "engine_cpu_us_per_trial": report["engine_cpu_us_per_trial"], "call_us": call_us})
    keys = ("wall_us_per_trial", "engine_cpu_us_per_trial", "call_us")
    cxx = {key: statistics.median(row[key] for row in cxx_rows) for key in keys}
    py = {key: statistics.median(row[key] for row in py_rows) for key in keys}
    print(f"{args.trials} trials x {args.repeats} repeats, random strategy, default topology; medians, microseconds")
    print(f"{'':18}{'wall per trial':>16}{'engine CPU':>12}{'objective call':>16}")
    for label, row in (("C++ objective", cxx), ("Python objective", py)):
        print(f"{label:18}{row['wall_us_per_trial']:16.1f}{row['engine_cpu_us_per_trial']:12.1f}{row['call_us']:16.1f}")
    added = {key: py[key] - cxx[key] for key in keys}
    print(f"{'added by Python':18}{added['wall_us_per_trial']:16.1f}{added['engine_cpu_us_per_trial']:12.1f}"
          f"{added['call_us']:16.1f}   (aim: under 50 per trial)")


if __name__ == "__main__":
    main()
