#!/usr/bin/env bash
# The layering of the sources (docs/DESIGN.md, "Layers"): dependencies run one
# way, core/ <- proto/ <- server/, client/. Fails, printing every offending
# #include line, when
#   - a file of core/ includes gRPC or protobuf (grpc/, grpcpp/,
#     google/protobuf/, any .pb.h), Abseil's flags, file or stream I/O
#     (<fstream>, <iostream>, <cstdio>, <filesystem>), or a project header
#     outside core/ (proto/, server/, client/, tests/);
#   - a file of proto/ includes a header of server/ or client/;
#   - a file of server/ includes a header of client/, or one of client/ a
#     header of server/.
#
#   tests/layout_test.sh [SOURCE_DIR]   checks SOURCE_DIR (default: this
#                                       checkout); ctest: layout.dependencies
#   tests/layout_test.sh --self-test    checks a made-up tree breaking each
#                                       rule once, and fails unless every
#                                       break is reported; ctest:
#                                       layout.catches_violations
set -euo pipefail

# check ROOT DIR PATTERN WHY: reports the #include lines of DIR's sources
# (under ROOT) whose header, as written between <> or "", starts with
# PATTERN (an extended regex); returns 1 if there are any.
check() {
  local root="$1" dir="$2" pattern="$3" why="$4" hits
  [[ -d "$root/$dir" ]] || return 0
  hits=$(cd "$root" && grep -rnE --include='*.h' --include='*.cc' \
    "^[[:space:]]*#[[:space:]]*include[[:space:]]*[<\"]($pattern)" "$dir" ||
    true)
  [[ -z "$hits" ]] && return 0
  echo "layout_test: $why:"
  echo "$hits"
  return 1
}

# check_tree ROOT: every rule over the tree at ROOT; returns 1 on a break.
check_tree() {
  local root="$1" failed=0
  check "$root" core 'grpc/|grpcpp/|google/protobuf/|[^">]*\.pb\.h' \
    "core/ includes gRPC or protobuf (core/ is Abseil only)" || failed=1
  check "$root" core 'absl/flags/|fstream>|iostream>|cstdio>|filesystem>' \
    "core/ includes flags or I/O (core/ has neither)" || failed=1
  check "$root" core '(proto|server|client|tests)/' \
    "core/ includes a project header outside core/" || failed=1
  check "$root" proto '(server|client)/' \
    "proto/ includes server/ or client/ (proto/ is below them)" || failed=1
  check "$root" server 'client/' "server/ includes client/" || failed=1
  check "$root" client 'server/' "client/ includes server/" || failed=1
  return "$failed"
}

if [[ "${1:-}" != "--self-test" ]]; then
  root="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
  check_tree "$root"
  echo "layout_test: $root: core <- proto <- server, client holds"
  exit 0
fi

# --self-test: one break of each rule, each in a file of its own; every
# file must be named in the report, and a clean tree must pass.
tree="$(mktemp -d)"
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree"/{core/placement,proto,server,client}
printf '#include "core/types.h"\n#include <vector>\n' > "$tree/core/clean.h"
printf '#include "core/types.h"\n' > "$tree/proto/clean.cc"
printf '#include "proto/convert.h"\n' > "$tree/server/clean.cc"
printf '#include "proto/convert.h"\n' > "$tree/client/clean.cc"
if ! check_tree "$tree" > /dev/null; then
  echo "layout_test --self-test: a clean tree was reported" >&2
  exit 1
fi
printf '#include <grpcpp/grpcpp.h>\n' > "$tree/core/uses_grpc.cc"
printf '#include "google/protobuf/message.h"\n' > "$tree/core/uses_protobuf.h"
printf '#include "memplan/v1/memory_planner.pb.h"\n' \
  > "$tree/core/placement/uses_messages.cc"
printf '#include "absl/flags/flag.h"\n' > "$tree/core/uses_flags.cc"
printf '#include <fstream>\n' > "$tree/core/reads_files.cc"
printf '#  include "proto/convert.h"\n' > "$tree/core/uses_proto.cc"
printf '#include "tests/core/random_problems.h"\n' > "$tree/core/uses_tests.h"
printf '#include "server/service.h"\n' > "$tree/proto/uses_server.cc"
printf '#include "client/client.h"\n' > "$tree/proto/uses_client.h"
printf '#include "client/client.h"\n' > "$tree/server/uses_client.cc"
printf '#include "server/server.h"\n' > "$tree/client/uses_server.h"
report="$(check_tree "$tree")" && {
  echo "layout_test --self-test: the breaks were not reported" >&2
  exit 1
}
missed=0
for file in core/uses_grpc.cc core/uses_protobuf.h \
    core/placement/uses_messages.cc core/uses_flags.cc core/reads_files.cc \
    core/uses_proto.cc core/uses_tests.h proto/uses_server.cc \
    proto/uses_client.h server/uses_client.cc client/uses_server.h; do
  if ! grep -q "^$file:" <<< "$report"; then
    echo "layout_test --self-test: $file breaks a rule, not reported" >&2
    missed=1
  fi
done
if grep -q 'clean' <<< "$report"; then
  echo "layout_test --self-test: a clean file was reported:" >&2
  grep 'clean' <<< "$report" >&2
  missed=1
fi
[[ "$missed" == 0 ]] && echo "layout_test --self-test: every break reported"
exit "$missed"
