#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (ctest), in three
# builds of the same sources:
#   build/       RelWithDebInfo (g++), the shipped build: every test;
#   build-asan/  clang, -O1, AddressSanitizer + UndefinedBehaviorSanitizer,
#                with the libFuzzer target: every test, and fuzz.session
#                (a short fuzz session, MEMPLAN_FUZZ_SECONDS, default 30);
#   build-tsan/  clang, -O1, ThreadSanitizer: every test but those of the
#                planning core alone (MEMPLAN_CORE_TESTS=OFF: core/ starts
#                threads only in the best-fit portfolio, whose test stays;
#                the server tests drive the core from the server's threads).
# The sanitizer builds leave out the benchmark programs, and their ctest
# runs leave out the soak (its rate and memory mean nothing under a
# sanitizer) and the container test. Every sanitizer finding fails its test.
#
# MEMPLAN_SANITIZERS=0 skips the two sanitizer builds (a quick local run);
# the default, and CI, runs all three. Each phase prints its wall time.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jobs="$(nproc)"
sanitizers="${MEMPLAN_SANITIZERS:-1}"
fuzz_seconds="${MEMPLAN_FUZZ_SECONDS:-30}"

# timed NAME COMMAND...: runs COMMAND, then prints how long it took.
timed() {
  local name="$1" start="$SECONDS"
  shift
  "$@"
  echo "tests/run.sh: $name: $((SECONDS - start)) s" >&2
}

# run_ctest DIR ARGS...: every test of build DIR (ARGS narrow it).
run_ctest() {
  local dir="$1"
  shift
  (cd "$dir" && ctest --output-on-failure -j "$jobs" --timeout 600 "$@")
}

# sanitizer_build DIR CMAKE_ARGS...: configures and builds DIR with clang.
sanitizer_build() {
  local dir="$1"
  shift
  CC=clang CXX=clang++ cmake -S "$root" -B "$dir" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" \
    -DMEMPLAN_BENCHMARKS=OFF "$@"
  cmake --build "$dir" -j "$jobs"
}

timed "install and build (build/)" bash "$root/deploy/build.sh"
timed "tests (build/)" run_ctest "$root/build"

if [[ "$sanitizers" == 0 ]]; then
  echo "tests/run.sh: MEMPLAN_SANITIZERS=0: sanitizer builds skipped" >&2
  exit 0
fi

# Sanitizer reports go to stderr, symbolized by llvm-symbolizer; the TSan
# and LSan suppressions name third-party code only (see the files).
export ASAN_OPTIONS="detect_leaks=1"
export LSAN_OPTIONS="suppressions=$root/tests/sanitizers/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1:suppressions=$root/tests/sanitizers/tsan.supp"
not_under_sanitizers="container|soak"

timed "build (build-asan/)" sanitizer_build "$root/build-asan" \
  -DMEMPLAN_SANITIZE=address,undefined -DMEMPLAN_FUZZ=ON \
  -DMEMPLAN_FUZZ_SECONDS="$fuzz_seconds"
timed "tests and fuzz session (build-asan/)" \
  run_ctest "$root/build-asan" -E "$not_under_sanitizers"

timed "build (build-tsan/)" sanitizer_build "$root/build-tsan" \
  -DMEMPLAN_SANITIZE=thread -DMEMPLAN_CORE_TESTS=OFF
timed "tests (build-tsan/)" \
  run_ctest "$root/build-tsan" -E "$not_under_sanitizers"
