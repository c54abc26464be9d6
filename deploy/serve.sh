#!/usr/bin/env bash
# Installs what building the server needs, when missing (install-deps.sh
# --build: not the test tool chain), builds only memplan-server and the
# memplan tool, and runs memplan-server in the foreground on
# 127.0.0.1:50051 (extra arguments go to the server, e.g.
# --listen=0.0.0.0:50051). Ctrl-C drains in-flight calls and exits 0.
#
# The build is build/, the one tests/run.sh uses: where build/ is not
# configured yet, serve.sh configures it without the tests
# (-DMEMPLAN_TESTS=OFF: GoogleTest and libpng not needed); a later
# tests/run.sh (deploy/build.sh) turns them on in the same build/ and
# compiles only what serve.sh did not. Where build/ is configured already,
# serve.sh leaves its settings alone and builds the two targets, which is
# nothing when they are up to date.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build"

# timed NAME COMMAND...: runs COMMAND, then prints how long it took.
timed() {
  local name="$1" start="$SECONDS"
  shift
  "$@"
  echo "deploy/serve.sh: $name: $((SECONDS - start)) s" >&2
}

# Configures build/ where it has no build system yet (a configure that
# failed or was interrupted leaves none), then builds the two targets.
build_server() {
  if [[ ! -f "$build/CMakeCache.txt" ||
        ! ( -f "$build/Makefile" || -f "$build/build.ninja" ) ]]; then
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DMEMPLAN_TESTS=OFF
  fi
  cmake --build "$build" --target memplan-server memplan -j "$(nproc)"
}

timed "install check (install-deps.sh --build)" \
  bash "$root/deploy/install-deps.sh" --build
timed "configure and build (memplan-server, memplan)" build_server
exec "$build/server/memplan-server" --listen=127.0.0.1:50051 "$@"
