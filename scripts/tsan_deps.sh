#!/usr/bin/env bash
# Builds ThreadSanitizer-instrumented copies of the libraries whose threads hand
# data to tune-engine's: CAF (libcaf_core, libcaf_io) and ZeroMQ (libzmq), from
# the Debian source packages of the versions installed, into build-tsan-deps/lib.
#   scripts/tsan_deps.sh
# scripts/test.sh --sanitize thread runs the tests with these copies in place of
# the packaged ones (LD_LIBRARY_PATH; the sonames are the packages'), so that
# ThreadSanitizer sees the atomics of CAF's mailboxes and ZeroMQ's queues. With
# Debian's uninstrumented builds every message handed from one actor's thread to
# another's is reported as a race (docs/hardening.md "Sanitizers").
#
# The sources come from Debian's archive through apt-get with an apt state of
# this folder's own (deb-src of the release this machine runs; the system's
# sources are not changed). Where the archive serves the upstream tarball but not
# Debian's patch set, the tarball is checked against the signed .dsc's SHA-256
# and built without the patches, with the headers of the installed package; the
# script says so. Exit status 3: the sources could not be fetched (no network,
# or the archive no longer serves this version); 1: anything else failed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
root=$PWD
out=$root/build-tsan-deps
jobs=${TUNE_JOBS:-$(nproc)}
mkdir -p "$out/apt/lists/partial" "$out/apt/cache/archives/partial" "$out/src" "$out/lib"

codename=$(. /etc/os-release && echo "${VERSION_CODENAME:?}")
echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $codename main" \
  >"$out/apt/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$out/apt/sources.list" -o "Dir::Etc::SourceParts=$out/apt/none"
  -o "Dir::State::Lists=$out/apt/lists" -o "Dir::Cache=$out/apt/cache" -o "APT::Sandbox::User=root" -qq)
apt-get "${apt_opts[@]}" update || {
  echo "tsan_deps: Debian's source index could not be fetched" >&2
  exit 3
}

# fetch SOURCE-PACKAGE BINARY-PACKAGE: downloads the source of the installed
# version of BINARY-PACKAGE and prints the folder it unpacked to.
fetch() {
  local src=$1 bin=$2 version dsc orig dir
  version=$(dpkg-query -W -f='${source:Version}' "$bin")
  dsc="${src}_${version#*:}.dsc"
  (cd "$out/src" && apt-get "${apt_opts[@]}" source --download-only "$src=$version" >&2) ||
    echo "tsan_deps: apt-get could not fetch all of $src $version; checking what it fetched" >&2
  [ -f "$out/src/$dsc" ] || {
    echo "tsan_deps: $dsc was not fetched from Debian's archive" >&2
    exit 3
  }
  # The upstream tarball's line of the .dsc's Checksums-Sha256 field: "SHA256 SIZE NAME".
  local want have
  read -r want orig < <(awk '/^Checksums-Sha256:/ {f = 1; next} /^[^ ]/ {f = 0}
    f && $3 ~ /\.orig\.tar\./ {print $1, $3}' "$out/src/$dsc")
  [ -n "${orig:-}" ] && [ -f "$out/src/$orig" ] || {
    echo "tsan_deps: the upstream tarball of $src $version was not fetched" >&2
    exit 3
  }
  have=$(sha256sum "$out/src/$orig" | cut -d' ' -f1)
  [ "$want" = "$have" ] || {
    echo "tsan_deps: $orig does not match the SHA-256 in $dsc" >&2
    exit 1
  }
  dir=$out/src/$src-$version
  if [ ! -d "$dir" ]; then
    mkdir -p "$dir"
    tar -xf "$out/src/$orig" -C "$dir" --strip-components=1
    local deb
    deb=$(ls "$out/src/${src}_${version#*:}".debian.tar.* 2>/dev/null | head -n1 || true)
    if [ -n "$deb" ]; then
      tar -xf "$deb" -C "$dir"
      if [ -f "$dir/debian/patches/series" ]; then
        while read -r p _; do
          case $p in '' | '#'*) continue ;; esac
          patch -d "$dir" -p1 -s <"$dir/debian/patches/$p"
        done <"$dir/debian/patches/series"
      fi
    else
      echo "tsan_deps: Debian's patch set of $src $version is not in the archive; building the upstream source" >&2
    fi
  fi
  echo "$dir"
}

# shellcheck source=scripts/sanitizers/common.sh
. scripts/sanitizers/common.sh
flags=$(sanitizer_flags thread)
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache); fi

caf=$(fetch actor-framework libcaf-dev)
# The library is built against the headers the package installed: every header
# the source and the package share is compared, and the installed one wins. With
# Debian's patch set applied they are equal; without it (the archive no longer
# serves CAF 0.17.6's) one differs, an include of <limits> that GCC 12 needs.
for f in $(cd "$caf" && find libcaf_core/caf libcaf_io/caf -name '*.hpp'); do
  installed=/usr/include/${f#*/}
  if [ -f "$installed" ] && ! cmp -s "$caf/$f" "$installed"; then
    echo "tsan_deps: $f taken from the installed package" >&2
    cp "$installed" "$caf/$f"
  fi
done
cmake -S "$caf" -B "$out/caf" -G Ninja -DCMAKE_BUILD_TYPE=None "${launcher[@]}" \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread \
  -DCAF_NO_EXAMPLES=yes -DCAF_NO_UNIT_TESTS=yes -DCAF_NO_OPENCL=yes -DCAF_NO_PYTHON=yes \
  -DCAF_NO_TOOLS=yes -DCAF_NO_OPENSSL=yes -DCAF_LOG_LEVEL=QUIET >/dev/null
# The instrumented library must be the one the headers describe: CAF writes its
# build options into build_config.hpp, which changes the layout of its types.
if ! cmp -s "$out/caf/libcaf_core/caf/detail/build_config.hpp" /usr/include/caf/detail/build_config.hpp; then
  echo "tsan_deps: CAF's build options differ from the installed headers':" >&2
  diff "$out/caf/libcaf_core/caf/detail/build_config.hpp" /usr/include/caf/detail/build_config.hpp >&2 || true
  exit 1
fi
cmake --build "$out/caf" -j "$jobs" --target libcaf_core_shared libcaf_io_shared

zmq=$(fetch zeromq3 libzmq3-dev)
cmake -S "$zmq" -B "$out/zmq" -G Ninja -DCMAKE_BUILD_TYPE=None "${launcher[@]}" \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread \
  -DBUILD_TESTS=OFF -DBUILD_STATIC=OFF -DWITH_DOCS=OFF -DWITH_PERF_TOOL=OFF -DENABLE_CURVE=ON -DWITH_LIBSODIUM=ON >/dev/null
cmake --build "$out/zmq" -j "$jobs" --target libzmq

for f in "$out"/caf/lib/libcaf_core.so.* "$out"/caf/lib/libcaf_io.so.* "$out"/zmq/lib/libzmq.so.5*; do
  cp -P "$f" "$out/lib/"
done
for soname in "${tsan_sonames[@]}"; do
  [ -e "$out/lib/$soname" ] || {
    echo "tsan_deps: $soname was not built" >&2
    exit 1
  }
done
echo "tsan_deps: instrumented CAF and ZeroMQ in $out/lib" >&2
