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
# On the GPU machine:
#   cd tune-engine-gpu && ./run.sh devices
#   ./run-gpu-tests.sh
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-tune-engine-gpu}

programs=()
for p in cli/tune-engine kernels/tune-kernel-worker tests/test_kernels bench/bench_cpu_kernels; do
  if [[ -x "$build/$p" ]]; then programs+=("$build/$p"); fi
done
if [[ ${#programs[@]} -eq 0 ]]; then
  echo "pack_gpu.sh: no programs under $build; build first (scripts/build.sh)" >&2
  exit 2
fi

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
# The GPU checks: devices as the backends see them, every CUDA template
# compiled, and random configurations measured and verified on device 0.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$here/lib:${CUDA_HOME:-/usr/local/cuda}/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TUNE_KERNEL_WORKER="$here/bin/tune-kernel-worker"
export TUNE_CACHE_DIR="${TUNE_CACHE_DIR:-$here/cache}"
"$here/bin/tune-engine" devices
"$here/bin/test_kernels" "*CUDA*,*NVRTC*,*cuda*" --durations yes
RUN
chmod +x "$out/run.sh" "$out/run-gpu-tests.sh"
echo "packed $(ls "$out/bin" | wc -l) programs and $(ls "$out/lib" | wc -l) libraries into $out ($(du -sh "$out" | cut -f1))"
echo "on the GPU machine: cd $out && ./run-gpu-tests.sh"
