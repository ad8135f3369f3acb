#!/usr/bin/env bash
# Installs every Debian package tune-engine needs. Idempotent: fast when all is present.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libcaf-dev libssl-dev openssl libzmq3-dev cppzmq-dev catch2
  libboost-dev libboost-filesystem-dev libjs-chart.js
  nlohmann-json3-dev libcli11-dev libspdlog-dev libfmt-dev
  libyaml-cpp-dev libsqlite3-dev libmuparser-dev zlib1g-dev
  libnanoflann-dev libopenblas-dev libdnnl-dev libbenchmark-dev libxgboost-dev
  python3 python3-zmq python3-matplotlib
  pybind11-dev python3-dev python3-pytest
  hipcc libamdhip64-dev
  llvm-14-dev clang-14
  libonnx-dev libprotobuf-dev python3-onnx
  libpq-dev
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "setup: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo="sudo"
fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
