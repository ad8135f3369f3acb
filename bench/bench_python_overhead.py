#!/usr/bin/python3
"""Per-trial overhead of a Python objective tuned through the actor pipeline,
against the same objective written in C++ (bench_objective_overhead).

    PYTHONPATH=build/bindings/python /usr/bin/python3 bench/bench_python_overhead.py \
        [--cxx build/bench/bench_objective_overhead] [--trials 3000] [--repeats 5]

Both run the random strategy on the same 10^6-configuration space with the
default topology; each figure is the median over the repeats of wall-clock
microseconds per trial. The difference is what calling Python adds (GIL,
the configuration dict, the call).
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

    cxx = json.loads(subprocess.run([args.cxx, "--trials", str(args.trials), "--repeats", str(args.repeats), "--seed",
                                     str(args.seed)], check=True, capture_output=True, text=True).stdout)
    wall, engine, call = [], [], []
    for r in range(args.repeats):
        report, call_us = python_run(args.trials, args.seed + r)
        assert report["reason"] == "budget", report["reason"]
        wall.append(report["wall_s"] * 1e6 / report["new_trials"])
        engine.append(report["engine_cpu_us_per_trial"])
        call.append(call_us)
    py = {"wall_us_per_trial": statistics.median(wall), "engine_cpu_us_per_trial": statistics.median(engine),
          "call_us": statistics.median(call)}
    print(f"{args.trials} trials x {args.repeats} repeats, random strategy, default topology; medians, microseconds")
    print(f"{'':18}{'wall per trial':>16}{'engine CPU':>12}{'objective call':>16}")
    for label, row in (("C++ objective", cxx), ("Python objective", py)):
        print(f"{label:18}{row['wall_us_per_trial']:16.1f}{row['engine_cpu_us_per_trial']:12.1f}{row['call_us']:16.1f}")
    added = {key: py[key] - cxx[key] for key in py}
    print(f"{'added by Python':18}{added['wall_us_per_trial']:16.1f}{added['engine_cpu_us_per_trial']:12.1f}"
          f"{added['call_us']:16.1f}   (aim: under 50 per trial)")


if __name__ == "__main__":
    main()
