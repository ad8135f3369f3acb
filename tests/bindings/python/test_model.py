# tune_engine.read_model and tune_engine.tune_model: a model file read (its
# identical workloads merged), a replayed model tuned under one budget with
# its runs in the database, its events on one stream, and bad input raising
# ValueError with the fix.
import json
import os
import pathlib
import sqlite3
import subprocess

import pytest

import tune_engine


@pytest.fixture
def models(data_dir):
    return pathlib.Path(data_dir).parent / "examples" / "models"


def test_read_model_merges_identical_workloads(models):
    m = tune_engine.read_model(str(models / "resnet18.yaml"))
    assert m["name"] == "resnet18-b1"
    assert m["entries"] == 21
    assert len(m["tasks"]) == 12
    layer1 = m["tasks"][1]
    assert layer1["count"] == 4
    assert layer1["names"][:2] == ["layer1.0.conv1", "layer1.0.conv2"]
    assert layer1["task"] == "conv2d:1x64x56x56:64x3x3:s1:p1"
    assert layer1["dataset"] is None


def test_tune_model_spends_one_budget_over_the_tasks(models, tmp_path):
    db = tmp_path / "model.db"
    report = tune_engine.tune_model(str(models / "replayed_gpu.yaml"), budget=48, seed=9, time_scale=0.001,
                                    round_trials=6, db=str(db), scheduler="round_robin")
    assert report["model"] == "replayed-gpu-model"
    assert report["seed"] == "9"
    assert report["scheduler"] == "round_robin"
    assert report["trials"] >= 48
    assert sum(t["trials"] for t in report["tasks"]) == report["trials"]
    latency = sum(t["count"] * t["best_ms"] for t in report["tasks"])
    assert report["latency_ms"] == pytest.approx(latency, rel=1e-12)
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 5


def test_tune_model_through_one_pipeline(models, tmp_path):
    db = tmp_path / "one.db"
    report = tune_engine.tune_model(str(models / "replayed_gpu.yaml"), budget=48, seed=9, time_scale=0.001,
                                    round_trials=6, db=str(db), one_pipeline=True)
    assert report["one_pipeline"] is True
    assert report["trials"] == 48
    assert sum(t["trials"] for t in report["tasks"]) == 48
    assert len(report["device_busy"]) == 1
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 5
        assert c.execute("SELECT COUNT(*) FROM trials").fetchone()[0] == 48


def test_auto_prior_false_starts_every_task_cold(tmp_path, monkeypatch):
    # Two shapes of one operator (CPU tasks): the second starts from the first's runs.
    monkeypatch.setenv("TUNE_CACHE_DIR", str(tmp_path / "kernel-cache"))
    model = tmp_path / "two_shapes.yaml"
    model.write_text("tasks:\n  - {name: a, task: \"bmm:2x32x32x32\"}\n  - {name: b, task: \"bmm:4x32x32x32\"}\n")
    arguments = dict(budget=6, seed=2, round_trials=2)
    warm = tune_engine.tune_model(str(model), **arguments)
    assert [t["prior_from"] for t in warm["tasks"]] == [[], ["a"]]
    cold = tune_engine.tune_model(str(model), auto_prior=False, **arguments)
    assert [t["prior_from"] for t in cold["tasks"]] == [[], []]


@pytest.mark.parametrize("arguments, message", [
    ({"scheduler": "fifo"}, "scheduler 'fifo'"),
    ({"round_trials": 0}, "round_trials is 0"),
    ({"budget": 0}, "budget is 0"),
])
def test_bad_model_arguments_raise_value_error(models, arguments, message):
    with pytest.raises(ValueError, match=message):
        tune_engine.tune_model(str(models / "replayed_gpu.yaml"), **arguments)


def test_a_bad_model_file_names_the_field(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("tasks:\n  - task: matmul:8x8x8\n    count: -1\n")
    with pytest.raises(ValueError, match=r"bad.yaml: tasks\[0\].count: must be a number > 0"):
        tune_engine.read_model(str(bad))


def test_tune_model_publishes_its_rounds_on_one_stream(models, tmp_path):
    # `tune-engine watch --json` subscribes and prints every event as a line;
    # it ends on the model's last event.
    endpoint = "ipc://" + str(tmp_path / "events.ipc")
    watch = subprocess.Popen([os.environ["TUNE_CLI_PATH"], "watch", endpoint, "--json", "--timeout", "60"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        report = tune_engine.tune_model(str(models / "replayed_gpu.yaml"), budget=24, seed=3, time_scale=0.001,
                                        round_trials=6, publish=endpoint, publish_wait=1)
        out, err = watch.communicate(timeout=120)
    finally:
        watch.kill()
    assert watch.returncode == 0, err
    events = [json.loads(line) for line in out.splitlines() if line.strip()]
    progress = [e for e in events if e["type"] == "model_progress"]
    assert len(progress) == 6  # the start, four rounds, the end
    assert progress[-1] is events[-1] and progress[-1]["reason"] == "budget"
    assert progress[-1]["trials"] == report["trials"]
    assert all(e.get("model") == "replayed-gpu-model" for e in events)
    started = [e for e in events if e["type"] == "run_started"]
    assert len(started) >= 4
    assert len([e for e in events if e["type"] == "run_finished"]) == len(started)


def test_tune_model_refuses_a_stream_off_loopback_without_a_key(models):
    with pytest.raises(ValueError, match="publish"):
        tune_engine.tune_model(str(models / "replayed_gpu.yaml"), budget=6, time_scale=0.001,
                               publish="tcp://0.0.0.0:5998")
