#!/usr/bin/env bash
# Installs what is missing, builds, and runs memplan-server in the
# foreground on 127.0.0.1:50051 (extra arguments go to the server, e.g.
# --listen=0.0.0.0:50051). Ctrl-C drains in-flight calls and exits 0.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/deploy/build.sh"
exec "$root/build/server/memplan-server" --listen=127.0.0.1:50051 "$@"
