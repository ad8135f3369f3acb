#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
# The dashboard's browser test drives headless Chromium. It is installed here,
# not by setup.sh: the demo does not need a browser. Without it that test is
# reported as skipped.
if ! command -v chromium >/dev/null; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "test: installing chromium for the dashboard's browser test" >&2
  $sudo apt-get update -qq || true
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null ||
    echo "test: chromium could not be installed; the browser test will be skipped" >&2
fi
cd build
ctest --output-on-failure -j "${TUNE_JOBS:-$(nproc)}" "$@"
