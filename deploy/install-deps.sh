#!/usr/bin/env bash
# Installs the Debian 12 packages memplan builds and tests with, when any is
# missing: `apt-get update` once, then `apt-get install -y`. Run as root.
#
#   install-deps.sh          what building and testing need (the default)
#   install-deps.sh --build  only what building memplan-server and the
#                            memplan tool needs (the container image's build
#                            stage, deploy/Dockerfile)
set -euo pipefail

# Building: compilers, gRPC, protobuf, Abseil, GoogleTest (CMake's
# configure finds it for tests/), hiredis, xxHash, prometheus-cpp (metrics),
# libpng (configure finds it for the picture tests), jemalloc (the server's
# and the tool's allocator).
build_packages=(
  cmake g++ make pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libgtest-dev libgmock-dev grpc-proto libxxhash-dev
  libhiredis-dev prometheus-cpp-dev libpng-dev libjemalloc-dev
  # The sanitizer builds and the fuzzer (tests/run.sh): clang, its
  # sanitizer and libFuzzer runtimes, and llvm-symbolizer for their reports.
  clang libclang-rt-14-dev llvm
)
# Testing: Redis for the cache tests; openssl for the TLS tests' CA;
# chromium for the picture tests; podman, runc and debootstrap for the
# container test (tests/deploy/container_test.sh); Debian's python3 with
# PyYAML for the manifest test (tests/deploy/manifests_test.py) and gRPC,
# protobuf and sympy for the Python client's tests (sympy only for
# memplan.inductor's symbolic parsing).
test_packages=(
  redis-server openssl chromium
  podman runc debootstrap
  python3 python3-yaml python3-grpcio python3-protobuf python3-sympy
)

case "${1:-}" in
  "") packages=("${build_packages[@]}" "${test_packages[@]}") ;;
  --build) packages=("${build_packages[@]}") ;;
  *) echo "usage: $0 [--build]" >&2; exit 2 ;;
esac

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
