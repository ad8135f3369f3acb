# tune_engine.tune / Session: a Python objective tuned through the actor
# pipeline; exceptions in the objective become failed trials; stop(), a
# KeyboardInterrupt in a callback and Ctrl-C end the run "stopped"; a run
# without a seed reports the one drawn, which repeats it; a run publishes its
# events; bad arguments raise ValueError naming the argument.
import json
import os
import signal
import sqlite3
import subprocess
import threading
import time

import pytest

import tune_engine

SPACE = {"x": [1, 2, 3, 4, 5, 6, 7, 8], "y": ["a", "b", "c"]}  # 24 configurations


def cost(config):
    return abs(config["x"] - 5) + (0.0 if config["y"] == "b" else 1.5) + 1.0


def big_space():
    return tune_engine.Space({"x": list(range(1000)), "y": list(range(1000))})


def test_a_python_objective_is_tuned_through_the_pipeline(tmp_path):
    trials = []
    bests = []
    report = tune_engine.tune(
        cost,
        space=SPACE,
        strategy="random",
        budget=24,
        seed=3,
        db=tmp_path / "run.db",
        on_trial=trials.append,
        on_new_best=bests.append,
    )
    assert report["reason"] == "budget"
    assert report["trials"] == 24
    assert report["best"]["config"] == {"x": 5, "y": "b"}
    assert report["best"]["time_ms"] == 1.0
    assert len(trials) == 24
    assert sorted((t["config"]["x"], t["config"]["y"]) for t in trials) == sorted(
        (x, y) for x in SPACE["x"] for y in SPACE["y"]
    )
    assert all(t["status"] == "ok" for t in trials)
    assert [t["seq"] for t in trials] == list(range(24))
    assert all(t["reused_from_run"] is None for t in trials)
    assert "id" not in trials[0] and "reused" not in trials[0]
    assert bests and bests[-1]["config"] == {"x": 5, "y": "b"}
    assert report["seed"] == 3
    assert (tmp_path / "run.db").exists()


def test_a_second_run_on_the_database_reuses_the_measurements(tmp_path):
    first = tune_engine.tune(cost, space=SPACE, strategy="random", budget=24, seed=3, db=tmp_path / "run.db")
    trials = []
    second = tune_engine.tune(cost, space=SPACE, strategy="random", budget=24, seed=4, db=tmp_path / "run.db",
                              on_trial=trials.append)
    assert second["run_id"] != first["run_id"]
    assert len(trials) == 24
    assert all(t["reused_from_run"] == first["run_id"] for t in trials)


def test_a_run_without_a_seed_reports_the_drawn_one_which_repeats_it():
    def configurations(**arguments):
        seen = []
        report = tune_engine.tune(cost, space=SPACE, strategy="random", budget=12,
                                  on_trial=lambda t: seen.append(t["config"]), **arguments)
        assert report["trials"] == 12 and len(seen) == 12
        return report, seen

    drawn, first = configurations()
    assert isinstance(drawn["seed"], int) and drawn["seed"] >= 0
    again, repeated = configurations(seed=drawn["seed"])
    assert again["seed"] == drawn["seed"]
    assert repeated == first
    other, _ = configurations(seed=None)
    assert other["seed"] != drawn["seed"]

    session = tune_engine.Session(cost, space=SPACE, strategy="random", budget=12)
    assert session.run()["seed"] == session.seed
    assert tune_engine.Session(cost, space=SPACE, seed=7).seed == 7


def test_budget_none_is_the_targets_default():
    assert tune_engine.Session(cost, space=SPACE).budget == 100
    assert tune_engine.Session(cost, space=SPACE, budget=None).budget == 100
    assert tune_engine.Session(cost, space=SPACE, budget=5).budget == 5


def test_an_exception_in_the_objective_fails_the_trial_and_the_run_goes_on():
    def objective(config):
        if config["x"] == 8:
            raise ValueError(f"x={config['x']} does not fit")
        if config["x"] == 7:
            return "fast"
        return cost(config)

    trials = []
    report = tune_engine.tune(objective, space=SPACE, strategy="random", budget=24, seed=1, on_trial=trials.append)
    assert report["reason"] == "budget"
    assert report["trials"] == 24
    failed = [t for t in trials if t["status"] != "ok"]
    assert len(failed) == 6
    raised = [t for t in failed if t["config"]["x"] == 8]
    assert len(raised) == 3
    assert all("ValueError: x=8 does not fit" in t["message"] for t in raised)
    returned = [t for t in failed if t["config"]["x"] == 7]
    assert all("returned 'fast'" in t["message"] for t in returned)
    assert report["best"]["config"] == {"x": 5, "y": "b"}


def test_stop_from_a_callback_ends_the_run_stopped():
    holder = {}
    seen = []

    def on_trial(trial):
        seen.append(trial)
        if len(seen) == 3:
            holder["session"].stop()

    session = tune_engine.Session(cost, space=big_space(), strategy="random", budget=100000, seed=1, on_trial=on_trial)
    holder["session"] = session
    report = session.run()
    assert report["reason"] == "stopped"
    assert 3 <= report["trials"] < 100000
    with pytest.raises(RuntimeError, match="has run already"):
        session.run()


def test_keyboard_interrupt_in_a_callback_or_the_objective_ends_the_run_stopped():
    def on_trial(trial):
        if trial["seq"] >= 3:
            raise KeyboardInterrupt

    report = tune_engine.tune(cost, space=big_space(), strategy="random", budget=100000, seed=1, on_trial=on_trial)
    assert report["reason"] == "stopped"
    assert report["trials"] < 100000

    def objective(config):
        raise KeyboardInterrupt

    report = tune_engine.tune(objective, space=big_space(), strategy="random", budget=100000, seed=1)
    assert report["reason"] == "stopped"


def test_ctrl_c_ends_the_run_stopped():
    sent = threading.Event()

    def objective(config):
        if not sent.is_set():
            sent.set()
            os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.002)  # the budget cannot be spent before the signal is seen
        return cost(config)

    report = tune_engine.tune(objective, space=big_space(), strategy="random", budget=100000, seed=1)
    assert sent.is_set()
    assert report["reason"] == "stopped"
    assert report["trials"] < 100000


def test_stop_from_another_thread_while_run_holds_no_gil():
    measuring = threading.Event()

    def objective(config):
        measuring.set()
        time.sleep(0.001)  # a millisecond of work
        return 1.0

    session = tune_engine.Session(objective, space=big_space(), strategy="random", budget=100000, seed=1)
    # The stop comes once the run is measuring, however fast the machine.
    stopper = threading.Thread(target=lambda: (measuring.wait(60), session.stop()))
    stopper.start()
    report = session.run()
    stopper.join()
    assert measuring.is_set()
    assert report["reason"] == "stopped"


def test_another_exception_in_a_callback_stops_the_run_and_is_raised_again():
    def on_trial(trial):
        raise LookupError("the callback broke")

    with pytest.raises(LookupError, match="the callback broke"):
        tune_engine.tune(cost, space=big_space(), strategy="random", budget=100000, seed=1, on_trial=on_trial)


@pytest.mark.parametrize(
    "arguments, message",
    [
        (dict(objective=42, space=SPACE), "objective is 42, which is not callable"),
        (dict(objective=cost, space=SPACE, on_trial="print"), "on_trial is 'print', which is not callable"),
        (dict(objective=cost, space=SPACE, strategy="nope"), "unknown strategy 'nope'"),
        (dict(objective=cost, space=SPACE, strategy="opevo", hyper={"bogus": 1}), "bogus"),
        (dict(objective=cost, space=SPACE, hyper={"q": "high"}), "'q' is 'high'"),
        (dict(objective=cost, space=SPACE, budget=-1), "budget is -1; it must be an int >= 0"),
        (dict(objective=cost, space=SPACE, budget=0), "budget is 0; give at least 1 trial, or None"),
        (dict(objective=cost, space=SPACE, time_budget_s=-1.0), "time_budget_s: must be >= 0"),
        (dict(objective=cost, space=SPACE, seed=1.5), "seed is 1.5"),
        (dict(objective=cost, space=SPACE, mode="fast"), "mode 'fast'"),
        (dict(objective=cost, space=SPACE, device_wait="later"), "device_wait is 'later'; use \"wait\""),
        (dict(objective=cost, space="/no/such/space.json"), "/no/such/space.json"),
        (dict(objective=cost, space=SPACE, topology="/no/such/topology.yaml"), "/no/such/topology.yaml"),
        (dict(objective=cost, space=3), "space"),
        (dict(objective=cost, space={"x": 3}), "parameter 'x'"),
    ],
)
def test_bad_arguments_raise_value_error(arguments, message):
    with pytest.raises(ValueError, match=message):
        tune_engine.Session(**arguments)


def test_a_space_file_and_a_replayed_dataset_are_tuned_too(data_dir):
    seen = []
    report = tune_engine.tune(lambda c: float(c["K"][0]), space=data_dir / "specs" / "opevo_mm_N512K1024M1024_search_space.json",
                              strategy="random", budget=5, seed=2, on_trial=lambda t: seen.append(t["config"]))
    assert report["trials"] == 5 and len(seen) == 5
    assert set(seen[0]) == {"K", "X", "Y"} and len(seen[0]["K"]) == 3

    report = tune_engine.tune(dataset=data_dir / "replay" / "conv_a100_slice.json.gz", strategy="random", budget=30,
                              seed=1, time_scale=0.001)
    assert report["reason"] == "budget"
    assert report["trials"] == 30
    assert report["best"]["time_ms"] > 0


def test_session_exposes_its_space_and_refuses_two_things_to_tune(data_dir):
    session = tune_engine.Session(cost, space=SPACE, budget=1)
    assert session.space.names == ["x", "y"]
    with pytest.raises(ValueError):
        tune_engine.Session(cost, space=SPACE, dataset=data_dir / "replay" / "conv_a100_slice.json.gz")


def test_start_configurations_are_measured_first():
    seen = []
    tune_engine.tune(cost, space=SPACE, strategy="bo", budget=4, seed=3, start=[{"x": 2, "y": "c"}],
                     on_trial=lambda t: seen.append((t["seq"], t["config"])))
    assert len(seen) == 4 and min(seen)[1] == {"x": 2, "y": "c"}
    with pytest.raises(TypeError, match=r"Session: start is a dict; give a list of configuration dicts"):
        tune_engine.Session(cost, space=SPACE, start={"x": 2, "y": "c"})
    with pytest.raises(TypeError, match=r"Session: start\[0\] is a list; give a dict of the parameters' values"):
        tune_engine.Session(cost, space=SPACE, start=[[2, "c"]])
    with pytest.raises(ValueError, match=r"start: "):
        tune_engine.Session(cost, space=SPACE, start=[{"x": 9, "y": "c"}])


def test_the_measurement_protocol_is_checked():
    with pytest.raises(ValueError, match=r'Session: measurement\["repeats"\]: unknown field; the fields are'):
        tune_engine.Session(lambda c: 1.0, space={"x": [1, 2]}, measurement={"repeats": 3})
    with pytest.raises(ValueError, match=r"Session: measurement: max_repeats must be from min_repeats"):
        tune_engine.Session(lambda c: 1.0, space={"x": [1, 2]}, measurement={"min_repeats": 5, "max_repeats": 2})
    with pytest.raises(ValueError, match=r"Session: measurement is \[7\]; give a dict"):
        tune_engine.Session(lambda c: 1.0, space={"x": [1, 2]}, measurement=[7])
    with pytest.raises(ValueError, match=r"Session: measurement\[\"statistic\"\] is 'mean'; give 'median' or 'min'"):
        tune_engine.Session(lambda c: 1.0, space={"x": [1, 2]}, measurement={"statistic": "mean"})
    tune_engine.Session(lambda c: 1.0, space={"x": [1, 2]}, measurement={"statistic": "min"})


def test_early_stop_takes_true_false_or_the_rules_numbers_and_the_run_records_them(tmp_path):
    def recorded(name, early_stop):
        db = tmp_path / (name + ".db")
        tune_engine.tune(cost, space=SPACE, strategy="random", budget=2, seed=1, db=db, early_stop=early_stop)
        with sqlite3.connect(db) as c:
            return json.loads(c.execute("select options from runs").fetchone()[0])["early_stop"]

    on = recorded("on", True)
    assert on["slow_factor"] == 4 and on["build_factor"] == 10 and on["min_build_s"] == 5
    off = recorded("off", False)
    assert off["slow_factor"] == 0 and off["build_factor"] == 0 and off["margin"] == 0
    numbers = recorded("numbers", {"slow_factor": 6, "build_factor": 0})
    assert numbers["slow_factor"] == 6 and numbers["build_factor"] == 0 and numbers["margin"] == on["margin"]

    with pytest.raises(ValueError, match=r"Session: early_stop build_limit=3: 'build_limit' is not an early-stop "
                                         r"setting; known: slow_factor, "):
        tune_engine.Session(cost, space=SPACE, early_stop={"build_limit": 3})
    with pytest.raises(ValueError, match=r"Session: early_stop margin=-1: must be 0"):
        tune_engine.Session(cost, space=SPACE, early_stop={"margin": -1})
    with pytest.raises(ValueError, match=r"Session: early_stop\[\"margin\"\] is 'x'; give a number"):
        tune_engine.Session(cost, space=SPACE, early_stop={"margin": "x"})
    with pytest.raises(ValueError, match=r"Session: early_stop is 'yes'; give True, False or a dict"):
        tune_engine.Session(cost, space=SPACE, early_stop="yes")


def test_export_run_writes_a_recorded_run_as_kernel_tuner_and_t4(tmp_path):
    db = tmp_path / "runs.db"
    tune_engine.tune(cost, space=SPACE, strategy="random", budget=4, seed=3, db=db)
    cache = tune_engine.export_run(db)
    assert cache["tune_params_keys"] == ["x", "y"] and len(cache["cache"]) == 4
    assert all(isinstance(e["time"], float) for e in cache["cache"].values())
    assert len(tune_engine.export_run(db, 1, "t4")["results"]) == 4
    with pytest.raises(ValueError, match=r"export_run: format 'csv' is not one of t4, kernel-tuner"):
        tune_engine.export_run(db, format="csv")


def test_a_run_publishes_its_events(data_dir, tmp_path):
    # `tune-engine watch --json` subscribes and prints every event as a line;
    # it ends with the run.
    endpoint = "ipc://" + str(tmp_path / "events.ipc")
    watch = subprocess.Popen([os.environ["TUNE_CLI_PATH"], "watch", endpoint, "--json", "--timeout", "60"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        report = tune_engine.tune(dataset=data_dir / "replay" / "conv_a100_slice.json.gz", strategy="random",
                                  budget=12, seed=1, time_scale=0.001, publish=endpoint, publish_wait=1)
        out, err = watch.communicate(timeout=120)
    finally:
        watch.kill()
    assert watch.returncode == 0, err
    events = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert events[0]["type"] == "run_started" and events[0]["seed"] == report["seed"]
    assert events[-1]["type"] == "run_finished" and events[-1]["reason"] == "budget"
    assert len([e for e in events if e["type"] == "trial_finished"]) == 12
    assert "model" not in events[0]
    with pytest.raises(ValueError, match="publish"):
        tune_engine.Session(cost, space=SPACE, publish="tcp://0.0.0.0:5997").run()
