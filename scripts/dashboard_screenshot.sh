#!/usr/bin/env bash
# Writes docs/dashboard.png, the README's picture of the dashboard, from a real
# tuning run: tunes MatMul 256x256x256 on this CPU (OpEvo, 60 trials, seed 1:
# real compiles and measurements, one to three minutes on 2 cores) into a fresh
# results database, publishing its events; `tune-engine dashboard` serves the
# run's stream and database, and once two thirds of the trials are in, headless
# Chromium (Debian's chromium) takes the page: the live run with its charts,
# busy bars and trials in flight, and the run in the runs table.
#
#   bash scripts/dashboard_screenshot.sh [OUT.png]      (default docs/dashboard.png)
#   TUNE_SCREENSHOT_TASK=T     another built-in task (default matmul:256x256x256)
#   TUNE_SCREENSHOT_BUDGET=N   trials (default 60)
#   TUNE_CHROMIUM=PATH         the browser (default: chromium on PATH)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/dashboard.png}
task=${TUNE_SCREENSHOT_TASK:-matmul:256x256x256}
budget=${TUNE_SCREENSHOT_BUDGET:-60}
engine=build/cli/tune-engine
if [ ! -x "$engine" ]; then
  echo "dashboard_screenshot: $engine is missing: run bash scripts/build.sh first" >&2
  exit 1
fi
chromium=${TUNE_CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [ -z "$chromium" ]; then
  echo "dashboard_screenshot: no chromium: apt-get install -y chromium" >&2
  exit 1
fi

work=$(mktemp -d)
tune_pid=
dashboard_pid=
stop() {
  if [ -n "$1" ]; then
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
  fi
}
cleanup() {
  stop "$tune_pid"
  stop "$dashboard_pid"
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "dashboard_screenshot: $1" >&2
  for log in "$work"/*.log; do
    [ -s "$log" ] && { echo "--- $log" >&2; tail -n 20 "$log" >&2; }
  done
  exit 1
}

db=$work/runs.db
events=ipc://$work/events.ipc
shot_at=$((budget * 2 / 3))
echo "tuning $task on this CPU, $budget trials (seed 1); the picture is taken at $shot_at"
# --publish-wait 1: the run waits (up to 10 s) for the dashboard's subscriber,
# so the dashboard sees the run start.
"$engine" tune --task "$task" --strategy opevo --budget "$budget" --seed 1 --db "$db" \
  --publish "$events" --publish-wait 1 --quiet >"$work/tune.log" 2>&1 &
tune_pid=$!

# The run creates its database before it waits for a subscriber; the
# dashboard needs the file to open.
for _ in $(seq 100); do
  [ -s "$db" ] && break
  kill -0 "$tune_pid" 2>/dev/null || fail "the run ended before it made its database"
  sleep 0.1
done
[ -s "$db" ] || fail "the run made no database in 10 s"
: >"$work/dashboard.log"
"$engine" dashboard --db "$db" --events "$events" --listen 127.0.0.1:0 2>"$work/dashboard.log" &
dashboard_pid=$!
url=
for _ in $(seq 100); do
  url=$(sed -n 's/^dashboard: serving \(http[^ ]*\).*/\1/p' "$work/dashboard.log" || true)
  [ -n "$url" ] && break
  kill -0 "$dashboard_pid" 2>/dev/null || fail "the dashboard ended"
  sleep 0.1
done
[ -n "$url" ] || fail "the dashboard printed no address"

# Two thirds of the trials in (or the run over: the page then shows it ended).
while kill -0 "$tune_pid" 2>/dev/null; do
  trials=$(curl -sf "${url}api/runs" | grep -o '"trials":[0-9]*' | head -n 1 | cut -d: -f2 || true)
  [ "${trials:-0}" -ge "$shot_at" ] && break
  sleep 0.5
done

# Chromium writes the file itself; it goes to $work first so a failed take
# leaves the old picture in place.
"$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync --disable-dev-shm-usage \
  --user-data-dir="$work/profile" --window-size=1400,1500 --hide-scrollbars --virtual-time-budget=5000 \
  --screenshot="$work/dashboard.png" "$url" >/dev/null 2>&1 || true
[ -s "$work/dashboard.png" ] || fail "chromium wrote no screenshot"

wait "$tune_pid" || fail "the run failed"
tune_pid=
grep -v '^$' "$work/tune.log" | head -n 2
cp "$work/dashboard.png" "$out"
echo "wrote $out ($(stat -c %s "$out") bytes)"
