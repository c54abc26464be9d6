#!/usr/bin/env bash
# Times the README's two commands on a fresh machine: a new container of a
# clean Debian 12 (debootstrap minbase, as tests/deploy/container_test.sh
# makes it) limited to 2 CPUs, holding a `git archive` of this checkout and
# a copy of ../shared and nothing else (no packages, no build).
#
#   bash tests/deploy/fresh_machine_times.sh            # (a) serve
#   bash tests/deploy/fresh_machine_times.sh --tests    # (b) the test suite
#   bash tests/deploy/fresh_machine_times.sh --serve --tests   # both
#
# (a) `bash deploy/serve.sh` from the start until `memplan health` (the
#     client serve.sh builds, run inside the container) says SERVING; then
#     the server gets SIGTERM. Some minutes.
# (b) `bash tests/run.sh` to its end, in a second fresh container, with
#     tests/run.sh's own phase times and ctest's summaries. 25+ minutes,
#     both cores busy: run it on a quiet machine.
#
# Options:
#   --serve        measure (a) (the default when neither is given)
#   --tests        measure (b)
#   --privileged   run (b)'s container with --privileged --network=host, so
#                  that the container test (deploy.container) can run
#                  podman inside it. Without it, that test makes its base
#                  with debootstrap (which works), finds that podman cannot
#                  run a container (no /dev/fuse, no /dev/net/tun) and exits
#                  77: ctest counts it as skipped, not failed (with CI=true
#                  it would fail). --privileged alone is not enough: the
#                  image build's apt then reaches no mirror. With the host's
#                  network the inner podman sets up its bridge and NAT
#                  rules on the host, as the host's own container test
#                  does: use it when no other container test runs here.
#   --cpus=LIST    the CPUs the container may use (podman --cpuset-cpus;
#                  default 0-1: two cores, and `nproc` inside says 2)
#
# MEMPLAN_SANITIZERS, MEMPLAN_FUZZ_SECONDS, MEMPLAN_SKIP_CONTAINER_TEST and
# CI, where set, are passed to (b) (tests/run.sh reads them).
#
# Prints each phase's wall time with the load averages `uptime` shows before,
# during (every 60 s) and after: on a shared machine the load says how much
# other work inflated the times. CPU seconds (user + system of everything
# the command ran) are printed too: they move much less with the load.
# Everything is logged in $MEMPLAN_FRESH_LOG_DIR (default a new
# /var/tmp/memplan-fresh-times.* directory, kept). Source changes not yet
# committed are measured too (`git stash create`), untracked files are not.
#
# Needs root, podman, runc and debootstrap (bash deploy/install-deps.sh
# installs them), and Debian's mirror (the one the host's apt uses) within
# reach. The debootstrap'd base is cached in $MEMPLAN_CACHE_DIR (default
# ${XDG_CACHE_HOME:-/var/cache}/memplan) under the same name
# container_test.sh gives it, so the two share it; podman's store and
# containers live in a temporary directory removed at the end.
set -euo pipefail

src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
shared="${MEMPLAN_SHARED_DIR:-$src/../shared}"
cache_dir="${MEMPLAN_CACHE_DIR:-${XDG_CACHE_HOME:-/var/cache}/memplan}"
serve=0 tests=0 privileged=0 cpus=0-1
for arg in "$@"; do
  case "$arg" in
    --serve) serve=1 ;;
    --tests) tests=1 ;;
    --privileged) privileged=1 ;;
    --cpus=*) cpus="${arg#--cpus=}" ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d'; exit 0 ;;
    *) echo "usage: $0 [--serve] [--tests] [--privileged] [--cpus=LIST]" >&2
       exit 2 ;;
  esac
done
((serve || tests)) || serve=1

log_dir="${MEMPLAN_FRESH_LOG_DIR:-$(mktemp -d /var/tmp/memplan-fresh-times.XXXXXX)}"
mkdir -p "$log_dir"
summary="$log_dir/summary.txt"
log() { echo "[fresh_machine_times ${SECONDS}s] $*" | tee -a "$summary" >&2; }
fail() { log "FAIL: $*"; exit 1; }
load() { echo "load average $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs)"; }

[[ "$(id -u)" == 0 ]] || fail "rootful podman needs root"
for tool in podman runc debootstrap git; do
  command -v "$tool" > /dev/null ||
    fail "$tool is not installed (bash deploy/install-deps.sh installs it)"
done
[[ -d "$shared" ]] || fail "no $shared beside the checkout"

work="$(mktemp -d /var/tmp/memplan-fresh-machine.XXXXXX)"
printf '%s\n' '[containers]' \
  'default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]' \
  '[engine]' 'runtime = "runc"' \
  '[network]' "network_config_dir = \"$work/networks\"" \
  > "$work/containers.conf"
export CONTAINERS_CONF="$work/containers.conf"
podman=(podman --root "$work/store" --runroot "$work/run")
sampler=
cleanup() {
  [[ -n "$sampler" ]] && kill "$sampler" 2> /dev/null
  "${podman[@]}" rm --all --force --time 0 > /dev/null 2>&1 || true
  "${podman[@]}" system reset --force > /dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# The base image, as container_test.sh makes it (same recipe, same cache
# name): debootstrap minbase bookworm from the mirror the host's apt uses,
# with bookworm-updates and the security suite as in Debian's own image.
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
    log "debootstrap minbase bookworm from $mirror (cache: $tarball; not timed)"
    [[ "$mirror$security" == *https://* ]] && include=(--include=ca-certificates)
    rootfs="$work/rootfs"
    debootstrap --variant=minbase "${include[@]}" bookworm "$rootfs" \
      "$mirror" > "$log_dir/debootstrap.log" 2>&1 ||
      { tail -n 30 "$log_dir/debootstrap.log"; fail "debootstrap failed"; }
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

# The sources: the checkout's HEAD plus its uncommitted changes to tracked
# files, as `git archive` writes them (no build/, no untracked files).
revision="$(git -C "$src" stash create || true)"
revision="${revision:-HEAD}"
git -C "$src" archive --format=tar --prefix=memplan/ "$revision" \
  > "$work/memplan.tar"
tar -C "$shared/.." -cf "$work/shared.tar" "$(basename "$shared")"
log "sources: $(git -C "$src" rev-parse --short HEAD)$(
  [[ "$revision" != HEAD ]] && echo ' with uncommitted changes'), shared: $shared"

base_image

# fresh NAME [PODMAN RUN OPTIONS...]: starts container NAME from the clean
# base with the checkout in /root/memplan and shared in /root/shared.
fresh() {
  local name="$1"
  shift
  "${podman[@]}" run -d --name "$name" --cpuset-cpus="$cpus" "$@" \
    localhost/debian:bookworm sleep infinity > /dev/null
  "${podman[@]}" exec -i "$name" tar -C /root -x < "$work/memplan.tar"
  "${podman[@]}" exec -i "$name" tar -C /root -x < "$work/shared.tar"
  [[ "$(basename "$shared")" == shared ]] ||
    "${podman[@]}" exec "$name" mv "/root/$(basename "$shared")" /root/shared
  log "container $name: $("${podman[@]}" exec "$name" nproc) CPUs" \
    "(--cpuset-cpus=$cpus), $("${podman[@]}" exec "$name" sh -c \
    '. /etc/os-release; echo "$PRETTY_NAME, $(dpkg-query -W | wc -l)"') packages"
}

# Prefixes each line of stdin with the seconds since $1 (date +%s).
stamp() {
  local start="$1" line
  while IFS= read -r line; do
    echo "[$(($(date +%s) - start))s] $line"
  done
}

# Logs the load average every 60 s until killed.
sample_load() {
  while sleep 60; do log "  ... $(load)"; done
}

# In the container: runs serve.sh, polls `memplan health` every 0.5 s until
# SERVING, prints the wall seconds, stops the server, prints CPU seconds.
serve_runner='
cd /root/memplan
start=$(date +%s.%N)
bash deploy/serve.sh &
pid=$!
until [[ -x build/client/memplan ]] &&
    build/client/memplan health --server=127.0.0.1:50051 --timeout=1s \
      > /dev/null 2>&1; do
  if ! kill -0 "$pid" 2> /dev/null; then
    wait "$pid" && rc=0 || rc=$?
    echo "RESULT serve.sh exited $rc before serving"; exit 1
  fi
  sleep 0.5
done
end=$(date +%s.%N)
echo "RESULT serving after $(echo "$start $end" | awk "{printf \"%.1f\", \$2 - \$1}") s"
kill -TERM "$pid"; wait "$pid" || true
times > /tmp/times
echo "RESULT cpu (user, system) $(tail -n 1 /tmp/times)"
'

# In the container: runs tests/run.sh, prints its wall seconds and status.
tests_runner='
cd /root/memplan
start=$(date +%s)
bash tests/run.sh && rc=0 || rc=$?
echo "RESULT tests/run.sh exited $rc after $(($(date +%s) - start)) s"
times > /tmp/times
echo "RESULT cpu (user, system) $(tail -n 1 /tmp/times)"
'

# measure NAME RUNNER [PODMAN RUN OPTIONS...]: runs RUNNER in a fresh
# container NAME, logging to $log_dir/NAME.log, and logs its results.
measure() {
  local name="$1" runner="$2" start rc=0
  shift 2
  fresh "$name" "$@"
  log "$name: start, $(load)"
  sample_load &
  sampler=$!
  start="$(date +%s)"
  "${podman[@]}" exec "${exec_env[@]}" "$name" bash -c "$runner" 2>&1 |
    stamp "$start" > "$log_dir/$name.log" || rc=$?
  kill "$sampler" 2> /dev/null; wait "$sampler" 2> /dev/null || true
  sampler=
  log "$name: end after $(($(date +%s) - start)) s, $(load)"
  grep -E 'RESULT|^\[[0-9]+s\] (deploy/serve.sh|tests/run.sh): |tests passed|\*\*\*(Skipped|Failed)|\(Skipped\)|\(Failed\)' \
    "$log_dir/$name.log" | sed 's/^/  /' | tee -a "$summary" >&2
  "${podman[@]}" rm --force --time 0 "$name" > /dev/null
  return "$rc"
}

status=0
exec_env=()
if ((serve)); then
  measure serve "$serve_runner" || status=1
fi
if ((tests)); then
  for var in MEMPLAN_SANITIZERS MEMPLAN_FUZZ_SECONDS \
      MEMPLAN_SKIP_CONTAINER_TEST CI; do
    [[ -n "${!var:-}" ]] && exec_env+=(--env "$var=${!var}")
  done
  options=(--shm-size=1g)
  ((privileged)) && options+=(--privileged --network=host)
  measure tests "$tests_runner" "${options[@]}" || status=1
fi
log "logs: $log_dir"
exit "$status"
