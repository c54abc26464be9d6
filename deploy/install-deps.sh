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
# configure finds it for tests/), hiredis, xxHash.
build_packages=(
  cmake g++ make pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libgtest-dev libgmock-dev grpc-proto libxxhash-dev
  libhiredis-dev
)
# Testing: Redis for the cache tests; podman, runc and debootstrap for the
# container test (tests/deploy/container_test.sh); Debian's python3 and
# PyYAML for the manifest test (tests/deploy/manifests_test.py).
test_packages=(
  redis-server
  podman runc debootstrap
  python3 python3-yaml
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
