#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test with ctest.
#   scripts/test.sh [CTEST ARGS...]
#   scripts/test.sh --sanitize address,undefined [CTEST ARGS...]   -> build-asan/
#   scripts/test.sh --sanitize thread [CTEST ARGS...]              -> build-tsan/
#     (with CAF and ZeroMQ built under ThreadSanitizer by scripts/tsan_deps.sh)
# A sanitizer build is a Debug build at -O1 with the given -fsanitize list in
# its own folder, without the Python module and the benchmarks; it runs the
# suite except the package tests (those build projects of their own without
# the sanitizer). Reports stop the test that made them (halt_on_error); the
# suppressions in scripts/sanitizers/ name each one that is not a defect here.
# TUNE_TARGETS="a b" builds only those targets (e.g. test_actors).
set -euo pipefail
cd "$(dirname "$0")/.."
sanitize=""
if [ "${1:-}" = "--sanitize" ]; then
  [ $# -ge 2 ] || { echo "test.sh: --sanitize needs a list: address,undefined or thread" >&2; exit 2; }
  sanitize=$2
  shift 2
fi
if [ -z "$sanitize" ]; then
  bash scripts/build.sh
  # What only some tests need is installed here, not by setup.sh (the demo
  # does not need it); without it those tests are reported as skipped: the
  # dashboard's browser test drives headless Chromium, and the PostgreSQL
  # results store's tests start a throw-away server of their own
  # (tests/postgres_server.hpp; the build needs only libpq, from setup.sh).
  install_for_tests() {  # package, what it is for
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    echo "test: installing $1 for $2" >&2
    $sudo apt-get update -qq || true
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$1" >/dev/null ||
      echo "test: $1 could not be installed; $2 will be skipped" >&2
  }
  command -v chromium >/dev/null || install_for_tests chromium "the dashboard's browser test"
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 ||
    install_for_tests postgresql "the PostgreSQL results store's tests"
  cd build
  ctest --output-on-failure -j "${TUNE_JOBS:-$(nproc)}" "$@"
  exit
fi

case $sanitize in
  address | undefined | address,undefined | undefined,address) dir=build-asan ;;
  thread) dir=build-tsan ;;
  *) echo "test.sh: --sanitize takes address,undefined or thread, not '$sanitize'" >&2; exit 2 ;;
esac
bash scripts/setup.sh
jobs=${TUNE_JOBS:-$(nproc)}
# shellcheck source=scripts/sanitizers/common.sh
. scripts/sanitizers/common.sh
if [ "$sanitize" = thread ]; then
  # CAF and ZeroMQ hand messages between threads through atomics of their own:
  # ThreadSanitizer sees them only in instrumented builds of those libraries,
  # which replace the packaged ones at run time (same sonames).
  deps=$PWD/build-tsan-deps/lib
  built=yes
  for soname in "${tsan_sonames[@]}"; do [ -e "$deps/$soname" ] || built=no; done
  if [ "$built" = no ]; then
    echo "test: building CAF and ZeroMQ with ThreadSanitizer (scripts/tsan_deps.sh)" >&2
    bash scripts/tsan_deps.sh
  fi
  export LD_LIBRARY_PATH="$deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
flags=$(sanitizer_flags "$sanitize")
if [[ $sanitize == *undefined* ]]; then flags="$flags -fno-sanitize-recover=undefined"; fi
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug "${launcher[@]}" \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=$sanitize" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=$sanitize" \
  -DTUNE_BUILD_BENCH=OFF -DTUNE_BUILD_BINDINGS=OFF >/dev/null
# shellcheck disable=SC2086
cmake --build "$dir" -j "$jobs" ${TUNE_TARGETS:+--target $TUNE_TARGETS}

supp=$PWD/scripts/sanitizers
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:detect_stack_use_after_return=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$supp/ubsan.supp${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
cd "$dir"
# Test names are "AREA:NAME" (catch_discover_tests drops the space after the
# colon of its prefix): select with -R '^storage:', not '^storage: ', which
# matches nothing. A test executable that was not built (TUNE_TARGETS) stands
# in ctest as AREA_NOT_BUILT and is left out; a selection that matches no test
# is an error, not a pass.
ctest --output-on-failure --no-tests=error -j "$jobs" -E '^package\.|_NOT_BUILT' "$@"
