# Sourced by scripts/test.sh and scripts/tsan_deps.sh: what a sanitizer build of
# tune-engine and the instrumented copies of its libraries must agree on.

# sanitizer_flags LIST: the compile flags of a build with -fsanitize=LIST.
sanitizer_flags() { echo "-O1 -g -fno-omit-frame-pointer -fsanitize=$1"; }

# The libraries scripts/tsan_deps.sh builds under ThreadSanitizer into
# build-tsan-deps/lib, by the sonames of the installed packages (which they
# replace at run time).
tsan_sonames=(libcaf_core.so.0.17.6 libcaf_io.so.0.17.6 libzmq.so.5)
