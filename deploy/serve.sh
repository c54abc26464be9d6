#!/usr/bin/env bash
# Installs what building the server needs, when missing (install-deps.sh
# --build: not the test tool chain), builds only memplan-server and the
# memplan tool, and runs memplan-server in the foreground on
# 127.0.0.1:50051 (extra arguments go to the server, e.g.
# --listen=0.0.0.0:50051). Ctrl-C drains in-flight calls and exits 0.
#
# The build is build/, the one tests/run.sh uses. Where build/ is not
# configured yet, serve.sh configures it for the quickest first serve:
# without the tests (-DMEMPLAN_TESTS=OFF: no GoogleTest or libpng), with
# Ninja, and with the container image's flags (RelWithDebInfo's -O2
# without -g, which compiles faster). A later tests/run.sh
# (deploy/build.sh) turns the tests on in the same build/ and restores -g
# (recompiling what serve.sh compiled, as it did before). Where build/ is
# configured already, serve.sh leaves its settings alone and builds the two
# targets: nothing when they are up to date.
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

# Configures build/ where it is not configured yet (see above), or again
# with its own settings where a configure failed or was interrupted (no
# build system then), and builds the two targets.
build_server() {
  if [[ ! -f "$build/CMakeCache.txt" ]]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG" -DMEMPLAN_TESTS=OFF
  elif [[ ! -f "$build/build.ninja" && ! -f "$build/Makefile" ]]; then
    cmake -S "$root" -B "$build"
  fi
  cmake --build "$build" --target memplan-server memplan -j "$(nproc)"
}

timed "install check (install-deps.sh --build)" \
  bash "$root/deploy/install-deps.sh" --build
timed "configure and build (memplan-server, memplan)" build_server
exec "$build/server/memplan-server" --listen=127.0.0.1:50051 "$@"
