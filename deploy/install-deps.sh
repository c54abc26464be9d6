#!/usr/bin/env bash
# Installs the Debian 12 packages memplan builds and tests with, when any is
# missing: `apt-get update` once, then `apt-get install -y`. Run as root.
set -euo pipefail

packages=(
  cmake g++ make pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libgtest-dev libgmock-dev grpc-proto libxxhash-dev
  libhiredis-dev redis-server
  # The sanitizer builds and the fuzzer (tests/run.sh): clang, its
  # sanitizer and libFuzzer runtimes, and llvm-symbolizer for their reports.
  clang libclang-rt-14-dev llvm
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null |
      grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if ((${#missing[@]} > 0)); then
  echo "installing: ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update
  apt-get install -y "${missing[@]}"
fi
