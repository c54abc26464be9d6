#!/usr/bin/env bash
# Installs the Debian 12 packages memplan builds and tests with, when any is
# missing: `apt-get update` once, then `apt-get install -y`. Run as root.
#
#   install-deps.sh          what building and testing need (the default;
#                            tests/run.sh, through deploy/build.sh)
#   install-deps.sh --build  only what configuring with -DMEMPLAN_TESTS=OFF
#                            and building memplan-server and the memplan
#                            tool need (deploy/serve.sh, and the container
#                            image's build stage, deploy/Dockerfile),
#                            without apt's recommended packages
set -euo pipefail

# Building memplan-server and memplan (core/, proto/, server/, client/):
# compilers; CMake with make (the Dockerfile's generator) and Ninja
# (deploy/serve.sh's: it keeps both cores busy to the end, where make
# waits for each library before compiling those that link it, and builds
# the two targets one after the other); pkg-config (gRPC's
# CMake config finds re2 with it); gRPC with its protoc plugins
# (client/python's configure needs grpc_python_plugin, from the same
# package), protobuf, Abseil, grpc-proto (health.proto), xxHash (graph
# hashes), hiredis (the Redis cache), prometheus-cpp (metrics) and jemalloc
# (the two binaries' allocator).
build_packages=(
  cmake g++ make ninja-build pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev grpc-proto libxxhash-dev
  libhiredis-dev prometheus-cpp-dev libjemalloc-dev
)
# Building and running the tests and benchmarks (tests/, MEMPLAN_TESTS=ON)
# as well: GoogleTest and GoogleMock; libpng (the picture tests decode
# screenshots) and zlib (the whole-graph test reads gzip); clang-format (the
# sources' style, tests/format_test.sh); clang, its sanitizer and libFuzzer runtimes and
# llvm-symbolizer for their reports (the sanitizer builds and the fuzzer);
# Redis for the cache tests; openssl for the TLS tests' CA; chromium for the
# picture tests; podman, runc and debootstrap for the container test
# (tests/deploy/container_test.sh); Debian's python3 with PyYAML for the
# manifest test (tests/deploy/manifests_test.py) and gRPC, protobuf and
# sympy for the Python client's tests (sympy only for memplan.inductor's
# symbolic parsing).
test_packages=(
  libgtest-dev libgmock-dev libpng-dev zlib1g-dev
  clang clang-format libclang-rt-14-dev llvm
  redis-server openssl chromium
  podman runc debootstrap
  python3 python3-yaml python3-grpcio python3-protobuf python3-sympy
)

apt_options=(-y)
case "${1:-}" in
  "") packages=("${build_packages[@]}" "${test_packages[@]}") ;;
  --build)
    packages=("${build_packages[@]}")
    apt_options+=(--no-install-recommends)
    ;;
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
  apt-get install "${apt_options[@]}" "${missing[@]}"
fi
