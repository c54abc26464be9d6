#!/usr/bin/env bash
# Runs the GPU model suite (tests/gpu/suite.py) from a folder that
# client/python/examples/stage_device.sh made, on a machine with a GPU,
# torch, torchvision, transformers and grpcio (nothing else of ours):
#
#   bash CARRY_DIR/gpu/run_suite.sh --out DIR [suite.py flags...]
#
# memplan-server finds its libraries in CARRY_DIR/lib (for the server only).
# When the protobuf there cannot load the generated modules, Debian's
# pure-Python protobuf runtime is used.
set -uo pipefail
carry="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PYTHONUNBUFFERED=1
export PYTHONPATH="$carry/python${PYTHONPATH:+:$PYTHONPATH}"
python="${PYTHON:-python3}"

if ! "$python" -c "import memplan.v1.memory_planner_pb2" 2>/tmp/memplan_import.err; then
  echo "the local protobuf cannot load the generated modules:"
  tail -3 /tmp/memplan_import.err
  echo "using Debian's pure-Python protobuf runtime instead"
  export PYTHONPATH="$carry/python:$carry/debian-protobuf${PYTHONPATH#$carry/python}"
  export PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python
fi

exec "$python" "$carry/gpu/suite.py" \
  --server "$carry/bin/memplan-server" --server-libs "$carry/lib" "$@"
