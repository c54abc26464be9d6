#!/usr/bin/env bash
# Installs what is missing (everything, the test tool chain included) and
# builds all of memplan into build/ (RelWithDebInfo): the server, the tools,
# the Python client, the tests and the benchmarks. MEMPLAN_TESTS=ON and
# RelWithDebInfo's flags (CMake's defaults, -O2 -g) are explicit because
# deploy/serve.sh may have configured build/ without the tests and without
# -g.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/deploy/install-deps.sh"
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g -DNDEBUG" -DMEMPLAN_TESTS=ON
cmake --build "$root/build" -j "$(nproc)"
