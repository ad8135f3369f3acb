#!/usr/bin/env bash
# Packs a build of tune-engine into one folder that runs on a GPU machine
# (Ubuntu 24.04 with a CUDA 13 driver, no Debian libraries), and that folder
# into one archive (OUT_DIR.tar.xz, about 12 MB) to carry there: the programs,
# the measuring worker, the kernel tests, bench/gpu_vendor.py, and every shared
# library they link (found with ldd) except the C library itself, the CUDA
# driver and NVRTC, which the GPU machine's CUDA 13 provides
# (TUNE_PACK_NVRTC=1 carries NVRTC and its dlopen'ed builtins library too,
# 105 MB more). The GPU machine needs a C++ compiler too (`c++`, else g++ or
# clang++): the naive reference that checks every kernel's output is compiled
# there once per task.
#
#   scripts/pack_gpu.sh [BUILD_DIR] [OUT_DIR]      (defaults: build-gpu, tune-engine-gpu)
#
# It first builds what it packs, configuring BUILD_DIR when it is not
# configured yet without program-edit evolution (TUNE_WITH_IR=OFF: LLVM 14 and
# the libraries it pulls in are 140 MB) and without the benchmarks, so a clean
# clone packs in one command; the build must have NVRTC (a CUDA 13 toolkit at
# configure time).
#
# On the GPU machine:
#   python3 -c 'import tarfile; tarfile.open("tune-engine-gpu.tar.xz").extractall()'
#   cd tune-engine-gpu && ./run.sh devices
#   ./run-gpu-tests.sh [RESULTS_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-gpu}
out=${2:-tune-engine-gpu}
jobs=${TUNE_JOBS:-$(nproc)}

if [[ ! -f "$build/build.ninja" ]]; then
  bash scripts/setup.sh
  launcher=()
  if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTUNE_WITH_IR=OFF -DTUNE_BUILD_BENCH=OFF \
    "${launcher[@]}" >/dev/null
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
cp bench/gpu_vendor.py "$out/bin/"
cp -r examples/user-kernel "$out/examples/"

# The C runtime and the driver must come from the GPU machine itself. NVRTC
# (105 MB of the bundle) comes from the GPU machine's CUDA toolkit too, which
# must then be of the same major version (13) as the one built against; set
# TUNE_PACK_NVRTC=1 to carry it anyway.
# The C++ runtime, zlib and OpenSSL come from the GPU machine too: its own
# are newer and backward compatible, and the compiler and Python there load
# them (an older libstdc++ first in the library path breaks PyTorch).
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread\.so|libdl\.so|librt\.so|libresolv\.so|libutil\.so|libcuda\.so|libstdc\+\+\.so|libgcc_s\.so|libz\.so|libssl\.so|libcrypto\.so)'
if [[ "${TUNE_PACK_NVRTC:-0}" != 1 ]]; then skip="${skip%)}|libnvrtc)"; fi
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
# The GPU machine's topology: device 0, 15 NVRTC compile workers (of 16 cores).
cat > "$out/gpu-topology.yaml" <<'YAML'
compile_workers: 15
compile_timeout_s: 60
run_timeout_s: 10
devices:
  - backend: cuda
    id: 0
    name: gpu0
    prefetch: 2
YAML
cat > "$out/run-gpu-tests.sh" <<'RUN'
#!/usr/bin/env bash
# The GPU checks, everything written into one folder (RESULTS_DIR, default
# results/<UTC time>), in an order that puts first what matters most:
#  1. the machine (nvidia-smi), the devices as the backends see them;
#  2. every CUDA test ([cuda]: each template compiled, the small tasks
#     compiled, random configurations measured and verified on device 0, a
#     planted error found, a faulting and a hanging kernel as statuses), one
#     process per test with its log, reported as Passed, Failed or Skipped (a
#     test that cannot run here prints "SKIPPED: why");
#  3. when the on-GPU test passed, tuning runs through the pipeline on device 0
#     with the default strategy and 15 compile workers: MM1, BMM1 and C1
#     (TUNE_GPU_BUDGET trials each, default 300, at most TUNE_GPU_RUN_S
#     seconds each, default 75), then MM2, MM3, BMM2, BMM3 and C2 while the
#     tuning has used less than TUNE_GPU_TUNE_S seconds (default 330);
#     TUNE_GPU_TASKS="BMM3 C2" tunes those alone, TUNE_GPU_TESTS='[cuda][gpu]'
#     runs those tests alone (a Catch test spec);
#  4. the tuned kernels against cuBLAS / cuDNN through PyTorch, timed
#     interleaved (gpu_vendor.py: vendor.md, vendor.json), with the pipeline's
#     figures of each run.
# Exit code 1 when a test, a tuning run or a vendor comparison failed.
#   ./run-gpu-tests.sh [RESULTS_DIR]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
results=${1:-$here/results/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$results/tests" "$results/tune" "$results/vendor"
results=$(cd "$results" && pwd)
export LD_LIBRARY_PATH="$here/lib:${CUDA_HOME:-/usr/local/cuda}/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TUNE_KERNEL_WORKER="$here/bin/tune-kernel-worker"
export TUNE_CACHE_DIR="${TUNE_CACHE_DIR:-$here/cache}"
summary=$results/summary.txt
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }
failed=0
began=$(date +%s)

# The reference that checks every kernel's output is compiled with `c++`;
# where the machine has only g++ or clang++, that one stands in.
if ! command -v c++ >/dev/null; then
  for compiler in g++ clang++ $(compgen -c g++- | sort -u) $(compgen -c clang++- | sort -u); do
    if command -v "$compiler" >/dev/null; then
      mkdir -p "$here/shim" && ln -sf "$(command -v "$compiler")" "$here/shim/c++"
      export PATH="$here/shim:$PATH"
      say "c++: not found; $compiler stands in for it"
      break
    fi
  done
fi
command -v c++ >/dev/null || say "c++: no C++ compiler on this machine; every kernel's reference check will fail"

{
  date -u
  uname -a
  nvidia-smi 2>&1 || echo "nvidia-smi: not found"
  c++ --version 2>&1 | head -1
  env -u LD_LIBRARY_PATH python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1 | tail -1
} >"$results/machine.txt"
"$here/bin/tune-engine" devices >"$results/devices.txt" 2>&1
say "devices:"
sed 's/^/  /' "$results/devices.txt" | tee -a "$summary"

# One process per test, as ctest runs them, so that a skipped test is told
# from a passed one. Catch reads ',' '[' ']' '*' '\' in a name as syntax: escaped.
mapfile -t names < <("$here/bin/test_kernels" "${TUNE_GPU_TESTS:-[cuda]}" --list-test-names-only | sed '/^$/d')
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
  timeout 300 "$here/bin/test_kernels" "$spec" --durations yes >"$log" 2>&1
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
    verdict="***Failed (exit $rc)"
  fi
  say "test $((i + 1))/${#names[@]}: $name ... $verdict  ($(basename "$log"))"
done
say "tests: ${#passed[@]} passed, ${#skipped[@]} skipped, ${#failures[@]} failed of ${#names[@]} ($(($(date +%s) - began)) s)"
for s in "${skipped[@]}"; do say "  skipped: $s"; done
for f in "${failures[@]}"; do say "  FAILED: $f"; done
if [[ ${#failures[@]} -gt 0 ]]; then failed=1; fi

# Tuning runs through the pipeline (the tasks of docs/kernels.md), each into
# the one database with its summary JSON, its printed summary (.txt) and its
# progress and errors (.log); left out without a GPU.
budget=${TUNE_GPU_BUDGET:-300}
run_s=${TUNE_GPU_RUN_S:-75}
tune_s=${TUNE_GPU_TUNE_S:-330}
cp "$here/gpu-topology.yaml" "$results/tune/topology.yaml"
tuned=()
if [[ $gpu_checked != yes ]]; then
  say "tuning runs: Skipped (no on-GPU test passed here)"
else
  tune_began=$(date +%s)
  for pair in MM1=matmul:512x1024x1024 BMM1=bmm:960x128x128x64:nn C1=conv2d:512x3x227x227:64x11x11:s4:p0 \
    MM2=matmul:512x1024x4096 MM3=matmul:512x4096x1024 BMM2=bmm:960x128x128x64:tn BMM3=bmm:960x128x64x128:nt \
    C2=conv2d:512x64x27x27:192x5x5:s1:p2; do
    label=${pair%%=*} task=${pair#*=}
    if [[ -n "${TUNE_GPU_TASKS:-}" && " $TUNE_GPU_TASKS " != *" $label "* ]]; then continue; fi
    case $label in
      MM1 | BMM1 | C1) ;;
      *)
        if (($(date +%s) - tune_began >= tune_s)); then
          say "tuning run $label ($task): left out (the tuning runs have had their ${tune_s} s)"
          continue
        fi
        ;;
    esac
    start=$(date +%s)
    timeout $((run_s + 240)) "$here/bin/tune-engine" tune --topology "$results/tune/topology.yaml" --task "$task" \
      --budget "$budget" --time-budget "$run_s" --seed 1 --db "$results/tune/runs.db" \
      --summary-json "$results/tune/$label.json" >"$results/tune/$label.txt" 2>"$results/tune/$label.log"
    rc=$?
    if [[ $rc -ne 0 ]]; then failed=1; fi
    say "tuning run $label ($task, at most $budget trials or $run_s s, default strategy, 15 compile workers):" \
      "exit $rc in $(($(date +%s) - start)) s"
    sed 's/^/  /' "$results/tune/$label.txt" | tee -a "$summary"
    if [[ $rc -ne 0 ]]; then
      # A crash after the run (its summary JSON written, its text lost with stdout's buffer) is told apart
      # from a run in which nothing succeeded.
      if ((rc > 128)); then why="killed by signal $((rc - 128))"; else why="exit $rc"; fi
      say "  FAILED: tune-engine ended with $why; the end of $label.log:"
      tr '\r' '\n' <"$results/tune/$label.log" | grep -v '^ *trials [0-9]' | tail -5 | sed 's/^/  /' | tee -a "$summary"
    elif grep -q '^best: none' "$results/tune/$label.txt" || [[ ! -s "$results/tune/$label.txt" ]]; then
      say "  FAILED: no trial of $label succeeded on the GPU (the errors are in $label.log and runs.db)"
      tr '\r' '\n' <"$results/tune/$label.log" | grep -v '^ *trials [0-9]' | tail -5 | sed 's/^/  /' | tee -a "$summary"
      failed=1
    else
      tuned+=("$label=$task")
    fi
  done
fi

# The vendor's kernels on the same GPU, interleaved with the tuned ones.
if [[ ${#tuned[@]} -eq 0 ]]; then
  say "vendor timings (cuBLAS, cuDNN): Skipped (no task tuned here)"
else
  # PyTorch with the machine's own libraries; tune-engine (emit) through run.sh with the bundle's.
  timeout 300 env -u LD_LIBRARY_PATH PYTHONUNBUFFERED=1 python3 "$here/bin/gpu_vendor.py" --tune-engine "$here/run.sh" \
    --db "$results/tune/runs.db" --summaries "$results/tune" --out "$results/vendor" "${tuned[@]}" >"$results/vendor/vendor.txt" 2>&1
  rc=$?
  say "vendor timings (cuBLAS, cuDNN through PyTorch): exit $rc"
  sed 's/^/  /' "$results/vendor/vendor.txt" | tee -a "$summary"
  if [[ $rc -ne 0 ]]; then failed=1; fi
fi
say "all in $(($(date +%s) - began)) s; results: $results"
exit "$failed"
RUN
chmod +x "$out/run.sh" "$out/run-gpu-tests.sh"
tar -cf - "$out" | xz -T"$jobs" -6 >"$out.tar.xz"
echo "packed $(ls "$out/bin" | wc -l) programs and $(ls "$out/lib" | wc -l) libraries into $out ($(du -sh "$out" | cut -f1)) and $out.tar.xz ($(du -sh "$out.tar.xz" | cut -f1))"
echo "on the GPU machine: unpack $out.tar.xz, then cd $out && ./run-gpu-tests.sh"
