#!/usr/bin/env bash
# The sources are in the style of .clang-format (Google's): fails, naming
# every C++ source, header and proto under core/, proto/, server/, client/
# and tests/ that clang-format would change (proto/google/ is Google's own
# files, kept as published). Fix with `clang-format -i FILE`.
#
#   tests/format_test.sh [SOURCE_DIR]   ctest: layout.format
set -euo pipefail
root="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
tool="$(command -v clang-format || command -v clang-format-14 || true)"
if [[ -z "$tool" ]]; then
  echo "clang-format is missing (bash deploy/install-deps.sh installs it)" >&2
  exit 1
fi
cd "$root"
mapfile -t files < <(find core proto server client tests \
  \( -name '*.cc' -o -name '*.h' -o -name '*.proto' \) \
  -not -path 'proto/google/*' | sort)
unformatted=$("$tool" --dry-run "${files[@]}" 2>&1 |
  sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: warning: code should be clang-formatted.*/\1/p' |
  sort -u)
if [[ -n "$unformatted" ]]; then
  echo "not in .clang-format's style (clang-format -i FILE):"
  echo "$unformatted"
  exit 1
fi
echo "${#files[@]} files in .clang-format's style"
