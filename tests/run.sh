#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (ctest).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/deploy/build.sh"
cd "$root/build"
ctest --output-on-failure -j "$(nproc)" --timeout 600
