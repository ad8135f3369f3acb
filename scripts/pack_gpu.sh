#!/usr/bin/env bash
# Packs a build of tune-engine into one folder that runs on a GPU machine
# (Ubuntu 24.04 with a CUDA 13 driver, no Debian libraries): the programs, the
# measuring worker, the kernel tests, and every shared library they link
# (found with ldd) except the C library itself, the CUDA driver and NVRTC,
# which the GPU machine's CUDA 13 provides (TUNE_PACK_NVRTC=1 carries NVRTC
# and its dlopen'ed builtins library too, 105 MB more). The GPU machine needs a C++ compiler (`c++`) too: the
# naive reference that checks every kernel's output is compiled there once.
#
#   scripts/pack_gpu.sh [BUILD_DIR] [OUT_DIR]      (defaults: build, tune-engine-gpu)
#
# It first builds what it packs (configuring BUILD_DIR as scripts/build.sh does
# when it is not configured yet), so a clean clone packs in one command; the
# build must have NVRTC (a CUDA 13 toolkit at configure time).
#
# On the GPU machine:
#   cd tune-engine-gpu && ./run.sh devices
#   ./run-gpu-tests.sh [RESULTS_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-tune-engine-gpu}
jobs=${TUNE_JOBS:-$(nproc)}

if [[ ! -f "$build/build.ninja" ]]; then
  bash scripts/setup.sh
  launcher=()
  if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >/dev/null
fi
if ! grep -q 'TUNE_WITH_NVRTC=1' "$build/build.ninja"; then
  echo "pack_gpu.sh: $build has no NVRTC (no CUDA toolkit found at configure time): nothing to run on a GPU" >&2
  exit 2
fi
# Only what the bundle holds (the bench is optional: TUNE_BUILD_BENCH=OFF leaves it out).
targets=(tune-engine tune-kernel-worker test_kernels)
if cmake --build "$build" --target help | grep -q '^bench_cpu_kernels:'; then targets+=(bench_cpu_kernels); fi
echo "pack_gpu.sh: building ${targets[*]} in $build" >&2
cmake --build "$build" -j "$jobs" --target "${targets[@]}"

programs=()
for p in cli/tune-engine kernels/tune-kernel-worker tests/test_kernels bench/bench_cpu_kernels; do
  if [[ -x "$build/$p" ]]; then programs+=("$build/$p"); fi
done

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/examples"
cp "${programs[@]}" "$out/bin/"
cp -r examples/user-kernel "$out/examples/"

# The C runtime and the driver must come from the GPU machine itself. NVRTC
# (105 MB of the bundle) comes from the GPU machine's CUDA toolkit too, which
# must then be of the same major version (13) as the one built against; set
# TUNE_PACK_NVRTC=1 to carry it anyway.
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread\.so|libdl\.so|librt\.so|libresolv\.so|libutil\.so|libcuda\.so)'
if [[ "${TUNE_PACK_NVRTC:-0}" != 1 ]]; then
  skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread\.so|libdl\.so|librt\.so|libresolv\.so|libutil\.so|libcuda\.so|libnvrtc)'
fi
for p in "${programs[@]}"; do
  ldd "$p" | awk '/=> \// { print $1, $3 }' | while read -r name path; do
    if [[ ! "$name" =~ $skip ]]; then cp -L "$path" "$out/lib/$name"; fi
  done
done
nvrtc=$(ldd "$build/tests/test_kernels" 2>/dev/null | awk '/libnvrtc\.so/ { print $3 }' || true)
if [[ -n "$nvrtc" && "${TUNE_PACK_NVRTC:-0}" == 1 ]]; then
  for builtins in "$(dirname "$nvrtc")"/libnvrtc-builtins.so*; do cp -L "$builtins" "$out/lib/"; done
fi

cat > "$out/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs tune-engine with the packed libraries.
here=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$here/lib:${CUDA_HOME:-/usr/local/cuda}/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TUNE_KERNEL_WORKER="$here/bin/tune-kernel-worker"
exec "$here/bin/tune-engine" "$@"
RUN
cat > "$out/run-gpu-tests.sh" <<'RUN'
#!/usr/bin/env bash
# The GPU checks, everything written into one folder (RESULTS_DIR, default
# results/<UTC time>): the machine (nvidia-smi), the devices as the backends
# see them, then every CUDA test ([cuda]: each template compiled, the small
# tasks compiled, random configurations measured and verified on device 0),
# one process per test with its log, reported as Passed, Failed or Skipped
# (a test that cannot run here, such as the on-GPU check without a GPU, prints
# "SKIPPED: why"); then, when the GPU check ran, tuning runs of MM1, BMM1 and
# C1 through the pipeline on device 0 with the default strategy and 15
# compile workers (TUNE_GPU_BUDGET trials each, default 200). Exit code 1 when
# a test or a tuning run failed.
#   ./run-gpu-tests.sh [RESULTS_DIR]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
results=${1:-$here/results/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$results/tests" "$results/tune"
results=$(cd "$results" && pwd)
export LD_LIBRARY_PATH="$here/lib:${CUDA_HOME:-/usr/local/cuda}/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TUNE_KERNEL_WORKER="$here/bin/tune-kernel-worker"
export TUNE_CACHE_DIR="${TUNE_CACHE_DIR:-$here/cache}"
summary=$results/summary.txt
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }
failed=0

{
  date -u
  uname -a
  nvidia-smi 2>&1 || echo "nvidia-smi: not found"
} >"$results/machine.txt"
"$here/bin/tune-engine" devices >"$results/devices.txt" 2>&1
say "devices:"
sed 's/^/  /' "$results/devices.txt" | tee -a "$summary"

# One process per test, as ctest runs them, so that a skipped test is told
# from a passed one. Catch reads ',' '[' ']' '*' '\' in a name as syntax: escaped.
mapfile -t names < <("$here/bin/test_kernels" '[cuda]' --list-test-names-only | sed '/^$/d')
mapfile -t on_gpu < <("$here/bin/test_kernels" '[cuda][gpu]' --list-test-names-only | sed '/^$/d')
if [[ ${#names[@]} -eq 0 ]]; then
  say "tests: test_kernels lists no [cuda] test (is this build without NVRTC?)"
  failed=1
fi
passed=() skipped=() failures=()
gpu_checked=no
for i in "${!names[@]}"; do
  name=${names[$i]}
  log=$results/tests/$(printf '%02d' $((i + 1))).log
  spec=$(printf '%s' "$name" | sed 's/[][\\,*]/\\&/g')
  "$here/bin/test_kernels" "$spec" --durations yes >"$log" 2>&1
  rc=$?
  if grep -q '^SKIPPED: ' "$log"; then
    skipped+=("$name ($(grep -m1 '^SKIPPED: ' "$log" | cut -c10-))")
    verdict=Skipped
  elif [[ $rc -eq 0 ]]; then
    passed+=("$name")
    verdict=Passed
    for g in "${on_gpu[@]}"; do if [[ "$name" == "$g" ]]; then gpu_checked=yes; fi; done
  else
    failures+=("$name")
    verdict="***Failed"
  fi
  say "test $((i + 1))/${#names[@]}: $name ... $verdict  ($(basename "$log"))"
done
say "tests: ${#passed[@]} passed, ${#skipped[@]} skipped, ${#failures[@]} failed of ${#names[@]}"
for s in "${skipped[@]}"; do say "  skipped: $s"; done
for f in "${failures[@]}"; do say "  FAILED: $f"; done
if [[ ${#failures[@]} -gt 0 ]]; then failed=1; fi

# Tuning runs through the pipeline (the tasks of docs/kernels.md), each into
# the one database with its summary JSON, its printed summary (.txt) and its
# progress and errors (.log); left out without a GPU.
budget=${TUNE_GPU_BUDGET:-200}
cat >"$results/tune/topology.yaml" <<'YAML'
compile_workers: 15
compile_timeout_s: 60
run_timeout_s: 10
devices:
  - backend: cuda
    id: 0
    name: gpu0
    prefetch: 2
YAML
if [[ $gpu_checked != yes ]]; then
  say "tuning runs: Skipped (no on-GPU test passed here)"
else
  for pair in MM1=matmul:512x1024x1024 BMM1=bmm:960x128x128x64:nn C1=conv2d:512x3x227x227:64x11x11:s4:p0; do
    label=${pair%%=*} task=${pair#*=}
    start=$(date +%s)
    "$here/bin/tune-engine" tune --topology "$results/tune/topology.yaml" --task "$task" --budget "$budget" --seed 1 \
      --db "$results/tune/runs.db" --summary-json "$results/tune/$label.json" >"$results/tune/$label.txt" \
      2>"$results/tune/$label.log"
    rc=$?
    if [[ $rc -ne 0 ]]; then failed=1; fi
    say "tuning run $label ($task, $budget trials, default strategy, 15 compile workers): exit $rc in" \
      "$(($(date +%s) - start)) s"
    sed 's/^/  /' "$results/tune/$label.txt" | tee -a "$summary"
    if grep -q '^best: none' "$results/tune/$label.txt"; then
      say "  FAILED: no trial of $label succeeded on the GPU (the errors are in $label.log and runs.db)"
      failed=1
    fi
  done
fi
say "vendor timings (cuBLAS, cuDNN): not part of this bundle"
say "results: $results"
exit "$failed"
RUN
chmod +x "$out/run.sh" "$out/run-gpu-tests.sh"
echo "packed $(ls "$out/bin" | wc -l) programs and $(ls "$out/lib" | wc -l) libraries into $out ($(du -sh "$out" | cut -f1))"
echo "on the GPU machine: cd $out && ./run-gpu-tests.sh"
