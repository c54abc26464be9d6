#!/usr/bin/env bash
# The container test: builds deploy/Dockerfile with rootful podman from a
# Debian 12 base made with debootstrap (no registry needed), runs it and
# calls it from the host:
#   1. the container runs as uid 10001 and serves on 0.0.0.0:50051; the
#      image's HEALTHCHECK (grpc.health.v1 through `memplan health`) passes;
#   2. health, reflection list, PlanMemory on a corpus file equal to
#      Inductor's plan, a bad request refused (container_calls_test);
#   3. SIGTERM drains: `podman stop` while a multi-second PlanMemory is in
#      flight; the call completes after the stop began, and the container
#      exits 0 (podman inspect's ExitCode);
#   4. deploy/compose.yaml's wiring: its redis and two memplan replicas
#      with its commands, users, read-only roots and health checks on one
#      network; a plan made by one replica is a REDIS hit on the other.
# Run by ctest (deploy.container) with MEMPLAN_SOURCE_DIR, MEMPLAN_CLI,
# MEMPLAN_CONTAINER_CALLS_TEST and MEMPLAN_CORPUS_DIR set; by hand from a
# built checkout it finds them under build/.
#
# Exits 77 (ctest: skipped), saying why, where containers cannot run here
# (not root, podman/runc/debootstrap missing, podman cannot start a
# container) or MEMPLAN_SKIP_CONTAINER_TEST=1; with CI=true each of those
# fails instead. Exits 1 on any failure.
#
# The debootstrap'd base is cached as a tarball in $MEMPLAN_CACHE_DIR
# (default ${XDG_CACHE_HOME:-/var/cache}/memplan), one per day and mirror;
# everything else (podman's store, networks, containers) lives in a
# temporary directory removed at the end, so the host's podman is left as
# it was. Follows the recipe of issue 7: storage as --root/--runroot flags
# (a storage.conf made every run stall 20 s), nofile/nproc ulimits and runc
# in a containers.conf.
set -euo pipefail

src="${MEMPLAN_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
cli="${MEMPLAN_CLI:-$src/build/client/memplan}"
calls_test="${MEMPLAN_CONTAINER_CALLS_TEST:-$src/build/tests/deploy/container_calls_test}"
corpus="${MEMPLAN_CORPUS_DIR:-$src/../shared/corpus/inductor}"
cache_dir="${MEMPLAN_CACHE_DIR:-${XDG_CACHE_HOME:-/var/cache}/memplan}"

log() { echo "[container_test ${SECONDS}s] $*"; }
fail() { echo "container_test: FAIL: $*" >&2; exit 1; }
# Skips (77), or fails on CI, where containers cannot run.
skip() {
  if [[ "${CI:-}" == true ]]; then fail "on CI, yet $*"; fi
  echo "container_test: SKIPPED: $*"
  exit 77
}

if [[ "${MEMPLAN_SKIP_CONTAINER_TEST:-}" == 1 ]]; then
  skip "MEMPLAN_SKIP_CONTAINER_TEST=1"
fi
[[ "$(id -u)" == 0 ]] || skip "rootful podman needs root"
for tool in podman runc debootstrap; do
  command -v "$tool" > /dev/null ||
    skip "$tool is not installed (bash deploy/install-deps.sh installs it)"
done
for file in "$cli" "$calls_test"; do
  [[ -x "$file" ]] || fail "$file is not built"
done
corpus_file="$corpus/resnet18_infer.inference.intermediates.json"
long_file="$corpus/mobilenet_v3_large_train.backward.intermediates.json"
[[ -f "$corpus_file" && -f "$long_file" ]] ||
  fail "the corpus is missing under $corpus"

work="$(mktemp -d /var/tmp/memplan-container-test.XXXXXX)"
printf '%s\n' '[containers]' \
  'default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]' \
  '[engine]' 'runtime = "runc"' \
  '[network]' "network_config_dir = \"$work/networks\"" \
  > "$work/containers.conf"
export CONTAINERS_CONF="$work/containers.conf"
podman=(podman --root "$work/store" --runroot "$work/run")
image=localhost/memplan:test
cleanup() {
  local start=$SECONDS
  "${podman[@]}" rm --all --force --time 0 > /dev/null 2>&1 || true
  "${podman[@]}" network prune --force > /dev/null 2>&1 || true
  "${podman[@]}" system reset --force > /dev/null 2>&1 || true
  rm -rf "$work"
  log "cleaned up in $((SECONDS - start)) s"
}
trap cleanup EXIT

# Prints the URI of the first enabled apt source of Debian suite $1, from
# /etc/apt/sources.list(.d/*.list) and deb822 /etc/apt/sources.list.d/*.sources.
apt_source_uri() {
  local suite="$1"
  {
    cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
      sed -E 's/\[[^]]*\]//' |
      awk -v suite="$suite" '$1 == "deb" && $3 == suite {print $2}'
    cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
      awk -v suite="$suite" 'BEGIN {RS = ""; FS = "\n"} {
        types = ""; uris = ""; suites = ""; enabled = 1
        for (i = 1; i <= NF; i++) {
          if ($i ~ /^Types:/) types = $i " "
          else if ($i ~ /^URIs:/) uris = $i
          else if ($i ~ /^Suites:/) suites = $i " "
          else if ($i ~ /^Enabled:[[:space:]]*no/) enabled = 0
        }
        if (enabled && types ~ /[[:space:]]deb[[:space:]]/ &&
            suites ~ ("[[:space:]]" suite "[[:space:]]")) {
          split(uris, words, /[[:space:]]+/); print words[2]
        }
      }'
  } | grep -E '^https?://' | head -n 1
}

# The base image: debootstrap minbase bookworm from the mirror apt uses,
# with bookworm-updates and the security suite as in Debian's own image.
base_image() {
  local mirror security key tarball rootfs include=()
  mirror="$(apt_source_uri bookworm || true)"
  mirror="${mirror:-http://deb.debian.org/debian}"
  security="$(apt_source_uri bookworm-security || true)"
  security="${security:-http://deb.debian.org/debian-security}"
  key="$(date -u +%Y%m%d)-$(printf '%s %s' "$mirror" "$security" |
    sha256sum | cut -c1-12)"
  tarball="$cache_dir/debian-bookworm-minbase-$key.tar"
  if [[ ! -f "$tarball" ]]; then
    log "debootstrap minbase bookworm from $mirror (cache: $tarball)"
    [[ "$mirror$security" == *https://* ]] && include=(--include=ca-certificates)
    rootfs="$work/rootfs"
    debootstrap --variant=minbase "${include[@]}" bookworm "$rootfs" \
      "$mirror" > "$work/debootstrap.log" 2>&1 ||
      { tail -n 30 "$work/debootstrap.log"; fail "debootstrap failed"; }
    printf 'deb %s bookworm main\ndeb %s bookworm-updates main\ndeb %s bookworm-security main\n' \
      "$mirror" "$mirror" "$security" > "$rootfs/etc/apt/sources.list"
    rm -f "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*_*
    if mkdir -p "$cache_dir" 2>/dev/null &&
        tar -C "$rootfs" -cf "$tarball.$$" . 2>/dev/null; then
      mv "$tarball.$$" "$tarball"
      find "$cache_dir" -name 'debian-bookworm-minbase-*.tar' \
        ! -name "${tarball##*/}" -delete
    else
      rm -f "$tarball.$$"
      tarball="$work/base.tar"
      tar -C "$rootfs" -cf "$tarball" .
    fi
    rm -rf "$rootfs"
  else
    log "base image from the cache: $tarball"
  fi
  "${podman[@]}" import --quiet "$tarball" localhost/debian:bookworm > /dev/null
}

# Waits up to 60 s for the gRPC health check of `address` ($2) to pass, while
# container $1 runs.
wait_serving() {
  local name="$1" address="$2"
  for _ in $(seq 300); do
    "$cli" health --server="$address" --timeout=1s > /dev/null 2>&1 && return 0
    if [[ "$("${podman[@]}" inspect --format '{{.State.Running}}' "$name")" != true ]]; then
      "${podman[@]}" logs "$name" >&2 || true
      fail "container $name exited before serving"
    fi
    sleep 0.2
  done
  "${podman[@]}" logs "$name" >&2 || true
  fail "container $name is not SERVING on $address after 60 s"
}

# Prints the host address (127.0.0.1:PORT) podman published port $2 of
# container $1 on.
published() { "${podman[@]}" port "$1" "$2/tcp" | head -n 1; }

base_image
log "podman can run a container?"
if ! out="$("${podman[@]}" run --rm localhost/debian:bookworm true 2>&1)"; then
  skip "podman cannot run a container here: $out"
fi

# Prefixes each line of stdin with the test's elapsed seconds.
stamp() { while IFS= read -r line; do echo "[${SECONDS}s] $line"; done; }

log "building the image (deploy/Dockerfile, build stage: memplan-server and memplan)"
if ! "${podman[@]}" build --format docker --layers=false \
    --build-arg BASE=localhost/debian:bookworm \
    -f "$src/deploy/Dockerfile" -t "$image" "$src" 2>&1 |
    stamp > "$work/build.log"; then
  tail -n 60 "$work/build.log"
  fail "podman build failed"
fi
# When each step began (where the minutes go).
grep -E '^\[[0-9]+s\] \[[0-9]/[0-9]\] STEP' "$work/build.log" | cut -c1-110
log "image built: $("${podman[@]}" image inspect --format '{{.Size}}' "$image") bytes"

# 1. One container, as docs/operations.md runs it. The image's health
# check runs below by hand (no systemd timer).
"${podman[@]}" run -d --init --name memplan --health-interval=disable \
  -p 127.0.0.1::50051 -p 127.0.0.1::9090 "$image" --shutdown_grace=30s \
  > /dev/null
address="$(published memplan 50051)"
metrics_address="$(published memplan 9090)"
log "memplan container on $address"
wait_serving memplan "$address"
uid="$("${podman[@]}" exec memplan id -u)"
[[ "$uid" == 10001 ]] || fail "the container runs as uid $uid, not 10001"
# Read whole before grep: grep -q stops at the first match, and podman's
# SIGPIPE would then fail the pipeline (pipefail).
server_log="$("${podman[@]}" logs memplan 2>&1)"
grep -q 'listening on 0.0.0.0:50051' <<< "$server_log" ||
  fail "the server does not listen on 0.0.0.0:50051: $server_log"
"${podman[@]}" healthcheck run memplan ||
  fail "the image's HEALTHCHECK failed"
log "uid 10001, 0.0.0.0:50051, HEALTHCHECK passes"

# 2. Calls from the host.
MEMPLAN_CONTAINER_ADDRESS="$address" "$calls_test" --gtest_brief=1 ||
  fail "calls into the container failed"
log "health, reflection, PlanMemory checked"
# The image serves Prometheus metrics on 9090; the calls above are counted.
metrics="$(/usr/bin/python3 -c 'import sys, urllib.request
print(urllib.request.urlopen("http://" + sys.argv[1] + "/metrics",
                             timeout=10).read().decode())' "$metrics_address")" ||
  fail "no metrics on $metrics_address"
grep -q '^memplan_requests_total{.*method="PlanMemory"' <<< "$metrics" ||
  fail "the metrics on $metrics_address count no PlanMemory call: $metrics"
log "metrics on $metrics_address count the calls"

# 3. SIGTERM drains: an optimal search of several seconds (its work
# budget ends it; the 10 s time budget bounds it by the clock) is in
# flight when `podman stop` sends SIGTERM.
(
  rc=0
  "$cli" plan --server="$address" --strategy=optimal --pool_mode=combined \
    --time_budget=10s --timeout=60s --output=json "$long_file" \
    > "$work/long.json" 2> "$work/long.err" || rc=$?
  date +%s%N > "$work/long.end"
  echo "$rc" > "$work/long.rc"
) &
client=$!
sleep 1
stop_start="$(date +%s%N)"
"${podman[@]}" stop --time 40 memplan > /dev/null
wait "$client" || true
[[ "$(cat "$work/long.rc")" == 0 ]] ||
  fail "the call in flight at SIGTERM failed: $(cat "$work/long.err")"
grep -q '"assignments"' "$work/long.json" ||
  fail "the call in flight at SIGTERM returned no plan"
(($(cat "$work/long.end") > stop_start)) ||
  fail "the call finished before SIGTERM; it was not in flight"
exit_code="$("${podman[@]}" inspect --format '{{.State.ExitCode}}' memplan)"
[[ "$exit_code" == 0 ]] ||
  fail "the container exited $exit_code after SIGTERM: $("${podman[@]}" logs memplan 2>&1)"
server_log="$("${podman[@]}" logs memplan 2>&1)"
grep -q 'SIGTERM' <<< "$server_log" ||
  fail "the server did not see SIGTERM: $server_log"
log "SIGTERM: the call in flight completed $(( ($(cat "$work/long.end") - stop_start) / 1000000 )) ms after the stop began; exit code 0"

# 4. The compose wiring: deploy/compose.yaml's services redis and memplan
# with its own settings (command, user, read-only root, capabilities, health
# checks: tests/deploy/compose_args.py), on one network where
# --redis=redis:6379 finds Redis by its service name; two memplan replicas.
# Redis is Debian's redis-server in an image made here (no registry),
# without an ENTRYPOINT, so compose's command runs as it would in redis:7.
compose_args() {
  /usr/bin/python3 "$src/tests/deploy/compose_args.py" \
    "$src/deploy/compose.yaml" "$@"
}
mapfile -d '' redis_options < <(compose_args redis options)
mapfile -d '' redis_command < <(compose_args redis command)
mapfile -d '' memplan_options < <(compose_args memplan options)
mapfile -d '' memplan_command < <(compose_args memplan command)
((${#redis_command[@]} > 0 && ${#memplan_command[@]} > 0)) ||
  fail "compose_args.py read no command from deploy/compose.yaml"
mkdir -p "$work/redis"
printf '%s\n' 'ARG BASE' 'FROM $BASE' \
  'RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends redis-server && rm -rf /var/lib/apt/lists/*' \
  'USER redis' 'WORKDIR /var/lib/redis' 'CMD ["redis-server"]' \
  > "$work/redis/Containerfile"
"${podman[@]}" build --format docker --layers=false \
  --build-arg BASE=localhost/debian:bookworm -t localhost/memplan-redis:test \
  "$work/redis" > "$work/redis.log" 2>&1 ||
  { tail -n 30 "$work/redis.log"; fail "building the Redis image failed"; }
"${podman[@]}" network create memplan-test > /dev/null
"${podman[@]}" run -d --name redis --network memplan-test "${redis_options[@]}" \
  localhost/memplan-redis:test "${redis_command[@]}" > /dev/null
# depends_on: condition: service_healthy.
for _ in $(seq 100); do
  "${podman[@]}" healthcheck run redis > /dev/null 2>&1 && break
  sleep 0.2
done
"${podman[@]}" healthcheck run redis > /dev/null ||
  fail "Redis is not healthy: $("${podman[@]}" logs redis 2>&1)"
for replica in a b; do
  "${podman[@]}" run -d --name "memplan-$replica" --network memplan-test \
    "${memplan_options[@]}" -p 127.0.0.1::50051 "$image" \
    "${memplan_command[@]}" > /dev/null
done
address_a="$(published memplan-a 50051)"
address_b="$(published memplan-b 50051)"
wait_serving memplan-a "$address_a"
wait_serving memplan-b "$address_b"
for name in memplan-a memplan-b; do
  "${podman[@]}" healthcheck run "$name" > /dev/null ||
    fail "compose's health check of $name failed"
done
# Prints the cache status of planning the corpus file on $1.
cache_status() {
  "$cli" plan --server="$1" --strategy=inductor --output=json "$corpus_file" |
    grep -o '"cache":"[A-Z_]*"'
}
status_a="$(cache_status "$address_a" || true)"
[[ "$status_a" == '"cache":"CACHE_STATUS_MISS"' ]] ||
  fail "replica a: $status_a, expected a MISS"
# Replica a writes the plan to Redis behind the call.
keys=0
for _ in $(seq 100); do
  keys="$("${podman[@]}" exec redis redis-cli DBSIZE || echo 0)"
  ((keys >= 1)) && break
  sleep 0.1
done
((keys >= 1)) || fail "replica a wrote nothing to Redis"
status_b="$(cache_status "$address_b" || true)"
[[ "$status_b" == '"cache":"CACHE_STATUS_REDIS"' ]] ||
  fail "replica b: $status_b, expected the plan from Redis"
log "compose wiring: health checks pass, two replicas share Redis (MISS on a, REDIS on b)"

log "passed"
