# Sourced by the replay benchmark scripts: replay_bench PROGRAM ARGS… builds
# bench/PROGRAM (Release, ./build or $BUILD_DIR) and runs it from the
# repository root with ARGS and then the vendored datasets (five Kernel Tuner
# caches and the KTT file; pnpoly with its kind-override file).
replay_bench() {
  local program=$1
  shift
  local root build
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  build="${BUILD_DIR:-$root/build}"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j2 --target "$program"
  cd "$root"
  "$build/bench/$program" "$@" \
    data/datasets/gemm_clblast/RTX_3090.json.gz \
    data/datasets/convolution/A100.json.gz \
    data/datasets/convolution_v1_rtx/RTX_2080_Ti.json.gz \
    --kinds data/datasets/pnpoly/kinds.json data/datasets/pnpoly/RTX_3090.json.gz \
    data/datasets/dedispersion/MI250X.json.gz \
    data/datasets/ktt/coulomb3d_RTX_2080_Ti_KTT_profiling.json.gz
}
