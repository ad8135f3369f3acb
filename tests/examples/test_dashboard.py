# Tests of examples/dashboard/dashboard.py's event handling: what the plot is
# drawn from, without a display or a run.
import importlib.util
import pathlib

import pytest

SCRIPT = pathlib.Path(__file__).parents[2] / "examples" / "dashboard" / "dashboard.py"


@pytest.fixture(scope="module")
def dashboard():
    spec = importlib.util.spec_from_file_location("dashboard", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def event(kind, **fields):
    return {"type": kind, "schema": 1, **fields}


def test_best_line_ends_at_the_last_event_not_at_the_wall_clock(dashboard):
    # A replay with --time-scale 0.1: elapsed_s is simulated (115 s), wall_s is real (11.6 s).
    h = dashboard.run_history()
    h.add(event("new_best", elapsed_s=5.0, time_ms=19.0))
    h.add(event("new_best", elapsed_s=60.8, time_ms=5.7))
    h.add(event("progress", elapsed_s=115.3, trials_per_s=1.7))
    h.add(event("run_finished", trials=200, best_time_ms=5.7, wall_s=11.6, reason="budget"))
    assert h.best_t == [5.0, 60.8, 115.3]
    assert h.best_ms == [19.0, 5.7, 5.7]
    assert h.best_t == sorted(h.best_t)


def test_no_extra_point_when_the_last_best_is_the_last_event(dashboard):
    h = dashboard.run_history()
    h.add(event("new_best", elapsed_s=3.0, time_ms=2.0))
    h.add(event("run_finished", trials=10, best_time_ms=2.0, wall_s=99.0, reason="budget"))
    assert h.best_t == [3.0]
    assert h.finished


def test_a_long_task_name_is_cut_in_the_title(dashboard):
    h = dashboard.run_history()
    task = "replay:Xgemm:[4096,4096]:" + ",".join(f"PARAM{i}" for i in range(40))
    h.add(event("run_started", run_id=3, task=task, strategy="bo", seed=1))
    first_line = h.title.split("\n")[0]
    assert len(first_line) < 80
    assert first_line.startswith("run 3: replay:Xgemm")
    assert "\u2026" in first_line and first_line.endswith("(bo, seed 1)")
    h.add(event("run_finished", trials=5, best_time_ms=1.0, wall_s=1.0, reason="budget"))
    assert h.title.split("\n")[1] == "finished (budget), 5 trials"


def test_a_short_task_name_is_kept_whole(dashboard):
    assert dashboard.shorten("matmul:512x1024x1024", 45) == "matmul:512x1024x1024"
    assert dashboard.shorten("x" * 46, 45) == "x" * 44 + "\u2026"


def test_messages_that_are_not_events_are_skipped(dashboard, capsys):
    assert dashboard.decode(b"not json") is None
    assert dashboard.decode(b"[1, 2]") is None
    assert dashboard.decode(b'{"type": "progress", "schema": 2}') is None
    assert dashboard.decode(b'{"type": "progress", "schema": 1}') == {"type": "progress", "schema": 1}
    assert "skipped" in capsys.readouterr().err


def test_a_server_key_is_read_from_a_file_or_given_as_is(dashboard, tmp_path):
    key = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"
    pub = tmp_path / "events.pub"
    pub.write_text(key + "\n")
    assert dashboard.read_server_key(str(pub)) == key
    assert dashboard.read_server_key(key) == key
    bad = tmp_path / "bad.pub"
    bad.write_text("not a key\n")
    with pytest.raises(ValueError, match="first line is not a CURVE key"):
        dashboard.read_server_key(str(bad))
    with pytest.raises(ValueError, match="not a CURVE key"):
        dashboard.read_server_key("short")


def test_the_dashboard_reads_a_curve_stream_with_the_server_key(dashboard):
    import zmq

    public, secret = zmq.curve_keypair()
    context = zmq.Context()
    pub = context.socket(zmq.PUB)
    pub.curve_server = True
    pub.curve_secretkey = secret
    port = pub.bind_to_random_port("tcp://127.0.0.1")
    sub = dashboard.subscribe(context, f"tcp://127.0.0.1:{port}", dashboard.read_server_key(public.decode("ascii")))
    plain = dashboard.subscribe(context, f"tcp://127.0.0.1:{port}")  # without the key: nothing arrives
    plain_history = dashboard.run_history()
    history = dashboard.run_history()
    import time

    deadline = time.time() + 10
    while not history.best_t and time.time() < deadline:
        pub.send(b'{"type": "new_best", "schema": 1, "elapsed_s": 1.0, "time_ms": 2.0}')
        dashboard.receive(sub, history, 100)
    dashboard.receive(plain, plain_history, 200)
    plain.close(linger=0)
    sub.close(linger=0)
    pub.close(linger=0)
    context.term()
    assert history.best_ms and history.best_ms[0] == 2.0
    assert not plain_history.best_ms
