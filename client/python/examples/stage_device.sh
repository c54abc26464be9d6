#!/usr/bin/env bash
# Gathers what gpu_run.sh and the GPU model suite (tests/gpu/run_suite.sh)
# need on a machine that has torch but not our build: memplan-server (debug info stripped) with every shared library it
# loads except glibc's, the built Python package (with its generated
# modules), this folder's scripts, the suite (in gpu/), and Debian's pure-Python protobuf runtime
# as a fallback for a protobuf there that cannot load our generated code.
#
#   bash client/python/examples/stage_device.sh BUILD_DIR OUT_DIR
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="${1:?usage: stage_device.sh BUILD_DIR OUT_DIR}"
out="${2:?usage: stage_device.sh BUILD_DIR OUT_DIR}"

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/python" "$out/debian-protobuf/google" \
  "$out/gpu"
cp "$build/server/memplan-server" "$out/bin/"
strip --strip-debug "$out/bin/memplan-server"
ldd "$build/server/memplan-server" | awk '$3 ~ /^\// {print $3}' |
  while read -r lib; do
    case "$(basename "$lib")" in
      libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*) ;;
      *) cp -L "$lib" "$out/lib/" ;;
    esac
  done
cp -r "$build/client/python/memplan" "$out/python/"
cp -r /usr/lib/python3/dist-packages/google/protobuf \
  "$out/debian-protobuf/google/"
find "$out" -name __pycache__ -type d -prune -exec rm -rf {} +
find "$out/debian-protobuf" -name '*.so' -delete
cp "$here/compile_with_memplan.py" "$here/gpu_run.sh" \
  "$here/check_workspaces.py" "$out/"
cp "$here/../../../tests/gpu/suite.py" "$here/../../../tests/gpu/run_suite.sh" \
  "$here/../../../tests/gpu/step_profile.py" \
  "$here/../../../tests/gpu/uninitialized_reads.py" \
  "$here/../../../tests/gpu/training_reservations.py" \
  "$here/../../../tests/gpu/private_pool_smoke.py" \
  "$out/gpu/"
du -sh "$out"
