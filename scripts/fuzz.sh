#!/usr/bin/env bash
# Fuzzes the parsers of shared files with libFuzzer under AddressSanitizer and
# UndefinedBehaviorSanitizer: builds fuzz/ into ./build-fuzz with clang, runs
# each target (or the TARGETs named) for SECONDS (default 60) on a corpus
# seeded from data/ and the tests' inputs, prints the executions per target and
# in total, and keeps any crashing input in build-fuzz/findings/TARGET/. Inputs
# kept by earlier runs are run again first; those that pass now move to
# build-fuzz/fixed/TARGET/. Exit status 1 when a target found something or an
# earlier finding still fails.
#   scripts/fuzz.sh [SECONDS [TARGET...]]
# TUNE_FUZZ_PARALLEL=N runs N targets at once (default 1).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
all_targets=(fuzz_space_json fuzz_list_expr fuzz_constraint fuzz_replay_dataset fuzz_task fuzz_topology fuzz_event
  fuzz_results_db)
targets=("${@:-${all_targets[@]}}")
for t in "${targets[@]}"; do
  [[ " ${all_targets[*]} " == *" $t "* ]] || { echo "fuzz: no target '$t'; one of ${all_targets[*]}" >&2; exit 2; }
done
bash scripts/setup.sh
if ! dpkg-query -W -f='${Status}' clang libclang-rt-dev 2>/dev/null | grep -q "install ok installed"; then
  echo "fuzz: installing clang and libclang-rt-dev (libFuzzer)" >&2
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get install -y -qq --no-install-recommends clang libclang-rt-dev >/dev/null
fi
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1"
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DTUNE_ENGINE_ONLY=ON -DTUNE_BUILD_TESTS=OFF -DTUNE_BUILD_BENCH=OFF -DTUNE_FUZZ=ON >/dev/null
cmake --build build-fuzz -j "${TUNE_JOBS:-$(nproc)}" --target "${targets[@]}" make_results_db

# Seed corpora: the project's own spaces, slices of its datasets, its
# topologies and events, and the inputs its tests use (fuzz/make_seeds.py).
seed() {
  local target=$1 dir=build-fuzz/corpus/$1
  mkdir -p "$dir"
  case $target in
    fuzz_space_json)
      cp data/specs/*.json "$dir"/ 2>/dev/null || true
      cp examples/*/space*.json "$dir"/ 2>/dev/null || true ;;
    fuzz_list_expr)
      printf '%s' '[2**i for i in range(0, 6)]' >"$dir/pow"
      printf '%s' '[1, 2, 4] + [i * 8 for i in range(1, 5) if i % 2 == 0]' >"$dir/concat"
      printf '%s' '["a", "b"]' >"$dir/strings" ;;
    fuzz_constraint)
      printf '%s' 'x % (y + 1) == 0' >"$dir/mod"
      printf '%s' '32 <= x * t_0 <= 1024 and not (z == "a" and y == 1)' >"$dir/chain"
      printf '%s' 'x // 2 ** y > t_1' >"$dir/pow" ;;
    fuzz_results_db)
      build-fuzz/fuzz/make_results_db "$dir/seed.db" ;;
    *)
      /usr/bin/python3 fuzz/make_seeds.py "$target" "$dir" ;;
  esac
}

# One target: its log holds libFuzzer's final statistics, its rc file the
# fuzzer's exit status.
run_target() {
  local t=$1
  set +e
  ASAN_OPTIONS=detect_leaks=1 "build-fuzz/fuzz/$t" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="build-fuzz/findings/$t/" "build-fuzz/corpus/$t" >"build-fuzz/$t.log" 2>&1
  echo $? >"build-fuzz/$t.rc"
}

# Inputs an earlier run kept are run again on the current build first: one that
# still fails stays (an open finding, counted below); one that passes now is
# moved to build-fuzz/fixed/TARGET/ and no longer counted.
recheck() {
  local t=$1 f
  for f in "build-fuzz/findings/$t"/*; do
    [ -f "$f" ] || continue
    case $(basename "$f") in slow-unit-*) continue ;; esac
    if ASAN_OPTIONS=detect_leaks=1 "build-fuzz/fuzz/$t" -timeout=30 -rss_limit_mb=2048 "$f" >/dev/null 2>&1; then
      mkdir -p "build-fuzz/fixed/$t"
      mv "$f" "build-fuzz/fixed/$t/"
      echo "fuzz: $t: $(basename "$f") from an earlier run passes now (moved to build-fuzz/fixed/$t/)" >&2
    fi
  done
}

# TUNE_FUZZ_PARALLEL=N runs N targets at a time (default 1).
parallel=${TUNE_FUZZ_PARALLEL:-1}
for t in "${targets[@]}"; do
  seed "$t"
  mkdir -p "build-fuzz/findings/$t"
  recheck "$t"
  while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n || true; done
  run_target "$t" &
done
wait

status=0
total=0
printf '%-20s %14s %10s\n' target executions findings
for t in "${targets[@]}"; do
  log="build-fuzz/$t.log"
  rc=$(cat "build-fuzz/$t.rc")
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  # A slow unit (over 10 s, kept as slow-unit-*) is not a finding: on a
  # loaded machine ordinary inputs take that long. A timeout (30 s) is.
  found=$(find "build-fuzz/findings/$t" -type f ! -name 'slow-unit-*' | wc -l)
  total=$((total + ${execs:-0}))
  printf '%-20s %14s %10s\n' "$t" "${execs:-0}" "$found"
  if [ "$rc" -ne 0 ] || [ "$found" -ne 0 ]; then
    status=1
    echo "  $t: see $log and build-fuzz/findings/$t/" >&2
  fi
done
printf '%-20s %14s\n' total "$total"
exit $status
