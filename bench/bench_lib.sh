# Shared by the shell benchmarks that run the demo's job under a load
# (drift_load.sh, vendor_noise.sh, winners_curse.sh); sourced, not run.

# Each --name VALUE sets the variable `name` (dashes as underscores) that the
# script declared with its default; anything else goes, in order, to the
# array ARGS. --help prints the script's leading comment; an option the
# script did not declare is an error (exit 2).
bench_options() {
  ARGS=()
  while [ $# -gt 0 ]; do
    case $1 in
      -h | --help)
        awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
        exit 0
        ;;
      --*)
        local name=${1#--}
        name=${name//-/_}
        if ! declare -p "$name" >/dev/null 2>&1; then
          echo "$0: unknown option $1 (see --help)" >&2
          exit 2
        fi
        [ $# -ge 2 ] || { echo "$0: $1 needs a value (see --help)" >&2; exit 2; }
        printf -v "$name" '%s' "$2"
        shift 2
        ;;
      *)
        ARGS+=("$1")
        shift
        ;;
    esac
  done
}

# Makes DIR with the load program (stream_load: reads one 128 MiB half of an
# array and writes the other, forever) and the demo's topology on two cores
# (scripts/demo.sh: one compile worker, device cpu0 on core 0).
bench_setup() {
  local dir=$1
  mkdir -p "$dir"
  cc -O2 -o "$dir/stream_load" "$(dirname "${BASH_SOURCE[0]}")/stream_load.c"
  printf '%s\n' 'compile_workers: 1' 'compile_timeout_s: 60' 'run_timeout_s: 10' \
    'devices: [{backend: cpu, id: 0, name: cpu0, prefetch: 1}]' >"$dir/topology.yaml"
  LOAD_PID=
  trap load_stop EXIT
}

# Starts the load of bench_setup's DIR on core CORE (load_stop ends it; so
# does the script's exit).
load_start() {
  local dir=$1 core=$2
  taskset -c "$core" "$dir/stream_load" &
  LOAD_PID=$!
}

load_stop() {
  if [ -n "${LOAD_PID:-}" ]; then
    kill "$LOAD_PID" 2>/dev/null || true
    wait "$LOAD_PID" 2>/dev/null || true
  fi
  LOAD_PID=
}
