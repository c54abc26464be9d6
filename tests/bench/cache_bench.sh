#!/usr/bin/env bash
# The plan cache's benchmarks (docs/benchmarks.md, "Service targets"):
# memplan-server and the `memplan loadtest` client on one machine, over
# loopback TCP. Prints each
# load test's report, the server's CPU time per call and its peak resident
# memory. Not a test: it prints numbers.
#
#   [MEMPLAN_LOG_LEVEL=warning] tests/bench/cache_bench.sh [hits|cold|distinct|all] [SECONDS]
#
#   hits      cache hits: a 293-buffer corpus graph, 16 calls in flight,
#             SECONDS (default 10) after 1,000 warm-up calls;
#   cold      cold graphs, strategy inductor, one call at a time, 300
#             distinct graphs each (every call a MISS): 986 buffers made of
#             three corpus training graphs one after the other in time
#             (resnet50 forward and backward, vit_b_16 backward), idealloc's
#             trace somas_tensors_resnet50 (1,042 buffers), and the largest
#             corpus graph (392 buffers); then memplan-miss-bench's
#             split of a miss's time on those graphs;
#   distinct  1,000,000 distinct small graphs (21 buffers) through a 64 MiB
#             cache, 16 in flight: every call a MISS, the cache evicting;
#   cold_ab   cold misses of two builds side by side, for a machine whose
#             speed drifts between runs: the server of $MEMPLAN_BASE_BUILD_DIR
#             and this build's, both without a cache (every call a MISS),
#             take turns of 100 calls (SECONDS turns each, default 10) on
#             the 986-buffer graph and on somas_tensors_resnet50; prints
#             each turn's p50 and the medians.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${MEMPLAN_BUILD_DIR:-$root/build}"
corpus="$root/../shared/corpus/inductor"
benchmarks="$root/../shared/benchmarks"
which="${1:-all}"
seconds="${2:-10}"

server_pid=""    # the server started last
server_pids=()   # every server running
stop_server() {
  local pid
  for pid in "${server_pids[@]}"; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  server_pids=()
  server_pid=""
}
trap stop_server EXIT

# start_server_of BUILD FLAGS...: starts BUILD's memplan-server on a free
# port, logging at $MEMPLAN_LOG_LEVEL, by default info, the server's default
# (a line per call: docs/operations.md, "Log"); sets $server_pid and $address.
start_server_of() {
  local of="$1" log
  shift
  log="$(mktemp)"
  ${MEMPLAN_PRELOAD:+env LD_PRELOAD=$MEMPLAN_PRELOAD} "$of/server/memplan-server" --listen=127.0.0.1:0 \
    --log_level="${MEMPLAN_LOG_LEVEL:-info}" "$@" 2>"$log" &
  server_pid=$!
  server_pids+=("$server_pid")
  for _ in $(seq 300); do
    if grep -q "listening on" "$log"; then break; fi
    sleep 0.1
  done
  address="$(sed -n 's/^memplan-server listening on //p' "$log")"
  [[ -n "$address" ]] || { cat "$log" >&2; exit 1; }
}

# start_server FLAGS...: start_server_of this build.
start_server() { start_server_of "$build" "$@"; }

# cpu_seconds PID: user + system CPU seconds the process has used.
cpu_seconds() {
  awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$1/stat"
}

# report_server CALLS CPU_BEFORE: the server's CPU per call and peak RSS.
report_server() {
  local calls="$1" before="$2" after
  after="$(cpu_seconds "$server_pid")"
  awk -v a="$after" -v b="$before" -v n="$calls" \
    'BEGIN {printf "server CPU   %.1f us per call\n", (a - b) * 1e6 / n}'
  grep -E '^(VmHWM|VmRSS)' "/proc/$server_pid/status" |
    awk '{printf "server %s %.1f MiB\n", $1, $2 / 1024}'
}

# calls_of REPORT: the measured call count of a loadtest report.
calls_of() { awk '/^calls/ {print $2}' <<<"$1"; }

run_hits() {
  echo "== cache hits: 293 buffers, 16 in flight, ${seconds}s"
  start_server
  local before out
  "$build/client/memplan" loadtest --server="$address" --calls=1000 \
    "$corpus/mobilenet_v3_large_train.backward.intermediates.json" >/dev/null
  before="$(cpu_seconds "$server_pid")"
  out="$("$build/client/memplan" loadtest --server="$address" --in_flight=16 \
    --duration="${seconds}s" \
    "$corpus/mobilenet_v3_large_train.backward.intermediates.json")"
  echo "$out"
  report_server "$(calls_of "$out")" "$before"
  stop_server
}

# corpus_concat OUT FILE...: writes the corpus graphs FILE... one after the
# other in time as one MiniMalloc CSV (id,lower,upper,size).
corpus_concat() {
  local out="$1"
  shift
  /usr/bin/python3 - "$out" "$@" <<'PYTHON'
import json, sys
rows, offset = [], 0
for path in sys.argv[2:]:
    buffers = json.load(open(path))["buffers"]
    for b in buffers:
        rows.append((len(rows), b["begin"] + offset, b["end"] + offset, b["size"]))
    offset += max(b["end"] for b in buffers) + 1
with open(sys.argv[1], "w") as out:
    out.write("id,lower,upper,size\n")
    out.writelines("%d,%d,%d,%d\n" % row for row in rows)
PYTHON
}

# three_graphs OUT: the cold benchmarks' 986-buffer graph, three corpus
# training graphs one after the other in time, as a CSV at OUT.
three_graphs() {
  corpus_concat "$1" \
    "$corpus/resnet50_train.forward.intermediates.json" \
    "$corpus/resnet50_train.backward.intermediates.json" \
    "$corpus/vit_b_16_train.backward.intermediates.json"
}

run_cold() {
  echo "== cold graphs: strategy inductor, 1 in flight, every call a miss"
  local concatenated
  concatenated="$(mktemp --suffix=.csv)"
  three_graphs "$concatenated"
  start_server
  local file out before
  for file in "$concatenated" \
      "$benchmarks/idealloc/somas_tensors_resnet50.csv" \
      "$corpus/resnet50_train.forward.intermediates.json"; do
    before="$(cpu_seconds "$server_pid")"
    out="$("$build/client/memplan" loadtest --server="$address" \
      --strategy=inductor --in_flight=1 --calls=300 --distinct=300 "$file")"
    echo "$out"
    report_server "$(calls_of "$out")" "$before"
  done
  stop_server
  echo "== where a miss's time goes, in process"
  "$build/tests/bench/memplan-miss-bench" "$concatenated" \
    "$benchmarks/idealloc/somas_tensors_resnet50.csv" \
    "$corpus/resnet50_train.forward.intermediates.json" \
    "$corpus/resnet50_train.backward.intermediates.json" \
    "$corpus/vit_b_16_train.backward.intermediates.json"
}

run_distinct() {
  echo "== 1,000,000 distinct small graphs through a 64 MiB cache"
  start_server --cache_bytes=$((64 << 20))
  local before out
  before="$(cpu_seconds "$server_pid")"
  out="$("$build/client/memplan" loadtest --server="$address" --in_flight=16 \
    --calls=1000000 --distinct=1000000 \
    "$corpus/resnet18_infer.inference.intermediates.json")"
  echo "$out"
  report_server "$(calls_of "$out")" "$before"
  stop_server
}

# p50_of ADDRESS FILE: the p50 (us) of 100 cold calls of FILE.
p50_of() {
  "$build/client/memplan" loadtest --server="$1" --strategy=inductor \
    --in_flight=1 --calls=100 --distinct=100 "$2" | awk '/^latency/ {print $4}'
}

run_cold_ab() {
  local base="${MEMPLAN_BASE_BUILD_DIR:?set MEMPLAN_BASE_BUILD_DIR}"
  local concatenated file address_a address_b turn line results
  concatenated="$(mktemp --suffix=.csv)"
  three_graphs "$concatenated"
  MEMPLAN_LOG_LEVEL=warning start_server_of "$base" --cache_bytes=0
  address_a="$address"
  MEMPLAN_LOG_LEVEL=warning start_server_of "$build" --cache_bytes=0
  address_b="$address"
  for file in "$concatenated" "$benchmarks/idealloc/somas_tensors_resnet50.csv"; do
    echo "== $(basename "$file"): p50 us per turn, $base then $build"
    results=""
    for turn in $(seq "$seconds"); do
      line="$(p50_of "$address_a" "$file") $(p50_of "$address_b" "$file")"
      echo "turn $turn: $line"
      results+="$line"$'\n'
    done
    echo "median: base $(median 1 <<<"$results") us," \
      "this build $(median 2 <<<"$results") us"
  done
  stop_server
}

# median COLUMN: the median of that column of stdin's lines.
median() {
  local values
  values="$(awk -v c="$1" 'NF {print $c}' | sort -n)"
  sed -n "$(( ($(wc -l <<<"$values") + 1) / 2 ))p" <<<"$values"
}

case "$which" in
  hits) run_hits ;;
  cold) run_cold ;;
  cold_ab) run_cold_ab ;;
  distinct) run_distinct ;;
  all) run_hits; run_cold; run_distinct ;;
  *) echo "usage: $0 [hits|cold|cold_ab|distinct|all] [SECONDS]" >&2; exit 2 ;;
esac
