#!/usr/bin/env python3
"""Live plot of a tuning run: best time and trials/s against elapsed time, from its event stream."""

import argparse
import json
import sys

import zmq

SCHEMA = 1  # the event schema this script reads (docs/events.md)
TITLE_TASK_CHARS = 45  # a longer task name is cut in the title


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("endpoint", nargs="?", default="tcp://127.0.0.1:5556",
                        help="event stream of 'tune-engine tune' (default: %(default)s)")
    parser.add_argument("--save", metavar="FILE.png",
                        help="no window: collect until run_finished, then write the plot to FILE.png")
    parser.add_argument("--timeout", type=float, default=0,
                        help="with --save: give up after this many seconds without an event (0: never)")
    parser.add_argument("--server-key", metavar="FILE|KEY",
                        help="the publisher's CURVE public key (events.pub of 'tune-engine keys', or the key), "
                             "for a stream off loopback")
    return parser.parse_args()


def read_server_key(text_or_file):
    """The 40-character Z85 CURVE key in a file's first line, or given as is; ValueError otherwise."""
    try:
        with open(text_or_file, encoding="ascii") as f:
            key = f.readline().strip()
        where = f"{text_or_file}: the first line"
    except OSError:
        key, where = text_or_file, f"'{text_or_file}'"
    z85 = set("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#")
    if len(key) != 40 or not set(key) <= z85:
        raise ValueError(f"{where} is not a CURVE key (40 characters of Z85 text); "
                         "use events.pub written by 'tune-engine keys --out DIR'")
    return key


class run_history:
    """What the plot shows, updated one event at a time."""

    def __init__(self):
        self.title = "run (its start was not seen)"
        self.best_t, self.best_ms = [], []
        self.rate_t, self.rate = [], []
        self.last_elapsed = 0.0
        self.finished = False

    def add(self, event):
        kind = event["type"]
        if isinstance(event.get("elapsed_s"), (int, float)):
            self.last_elapsed = max(self.last_elapsed, event["elapsed_s"])
        if kind == "run_started":
            task = shorten(event["task"], TITLE_TASK_CHARS)
            self.title = f"run {event['run_id']}: {task} ({event['strategy']}, seed {event['seed']})"
        elif kind == "new_best":
            self.best_t.append(event["elapsed_s"])
            self.best_ms.append(event["time_ms"])
        elif kind == "progress":
            self.rate_t.append(event["elapsed_s"])
            self.rate.append(event["trials_per_s"])
        elif kind == "run_finished":
            self.finished = True
            self.title += f"\nfinished ({event['reason']}), {event['trials']} trials"
            # Extend the step line to the last event's time. Not to wall_s: that is
            # the process's wall clock, while elapsed_s is simulated time when a
            # replay scales time, so wall_s can lie before the last best.
            if self.best_t and self.last_elapsed > self.best_t[-1]:
                self.best_t.append(self.last_elapsed)
                self.best_ms.append(self.best_ms[-1])


def shorten(text, limit):
    """text, or its first limit - 1 characters and an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def subscribe(context, endpoint, server_key=None):
    """A SUB socket on endpoint; with the publisher's CURVE public key, encrypted (a key pair of its own)."""
    socket = context.socket(zmq.SUB)
    if server_key:
        public, secret = zmq.curve_keypair()
        socket.curve_serverkey = server_key.encode("ascii")
        socket.curve_publickey = public
        socket.curve_secretkey = secret
    socket.setsockopt(zmq.SUBSCRIBE, b"")
    socket.connect(endpoint)
    return socket


def decode(message):
    """The event in a message, or None (with a warning) when it is not one this script reads."""
    try:
        event = json.loads(message)
    except ValueError:
        print("dashboard: skipped a message that is not JSON", file=sys.stderr)
        return None
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        print("dashboard: skipped a message without a type", file=sys.stderr)
        return None
    if event.get("schema") != SCHEMA:
        print(f"dashboard: skipped a {event['type']} event of schema {event.get('schema')}", file=sys.stderr)
        return None
    return event


def receive(socket, history, wait_ms):
    """Takes every queued event, waiting up to wait_ms for the first; True if any arrived."""
    got = False
    while socket.poll(wait_ms if not got else 0):
        event = decode(socket.recv())
        got = True
        if event is not None:
            try:
                history.add(event)
            except (KeyError, TypeError):
                print(f"dashboard: skipped a malformed {event['type']} event", file=sys.stderr)
    return got


def draw(figure, history):
    best_axes, rate_axes = figure.axes
    best_axes.clear()
    rate_axes.clear()
    figure.suptitle(history.title)
    best_axes.step(history.best_t, history.best_ms, where="post", color="tab:blue")
    best_axes.set_ylabel("best time (ms)")
    rate_axes.plot(history.rate_t, history.rate, color="tab:orange")
    rate_axes.set_ylabel("trials/s")
    rate_axes.set_xlabel("elapsed (s)")
    for axes in figure.axes:
        axes.grid(True, alpha=0.3)


def main():
    args = parse_args()
    if args.save:
        import matplotlib
        matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt

    server_key = None
    if args.server_key:
        try:
            server_key = read_server_key(args.server_key)
        except ValueError as e:
            print(f"dashboard: --server-key {e}", file=sys.stderr)
            return 2

    context = zmq.Context()
    socket = subscribe(context, args.endpoint, server_key)

    history = run_history()
    figure, _ = plt.subplots(2, 1, sharex=True, figsize=(8, 6))
    try:
        if args.save:
            quiet_ms = 0
            while not history.finished:
                if receive(socket, history, 200):
                    quiet_ms = 0
                else:
                    quiet_ms += 200
                    if args.timeout and quiet_ms >= args.timeout * 1000:
                        print(f"dashboard: no event for {args.timeout:g} s; giving up", file=sys.stderr)
                        return 1
            draw(figure, history)
            figure.savefig(args.save)
            print(f"dashboard: wrote {args.save}")
        else:
            plt.ion()
            plt.show()
            while plt.fignum_exists(figure.number):
                if receive(socket, history, 100):
                    draw(figure, history)
                plt.pause(0.2)
    except KeyboardInterrupt:
        pass
    finally:
        socket.close(linger=0)
        context.term()
    return 0


if __name__ == "__main__":
    sys.exit(main())
