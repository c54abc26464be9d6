"""Python client of memplan-server, and a hook that plans Inductor's memory
through it (memplan.inductor).

The generated protobuf and gRPC modules (memplan.v1.memory_planner_pb2 and
memory_planner_pb2_grpc) are made by the build, not kept in the source tree:
import this package from build/client/python (see docs/python.md).
"""

from memplan.client import MemplanClient, MemplanError, pb

__all__ = ["MemplanClient", "MemplanError", "pb"]
