"""MemplanClient: calls memplan-server's MemoryPlanner and health services.

    from memplan import MemplanClient, pb

    with MemplanClient("127.0.0.1:50051", timeout=5.0) as client:
        response = client.plan(
            buffers=[pb.Buffer(names=["buf0"], size_bytes=256,
                               live_range=pb.LiveRange(begin=0, end=3))],
            options=pb.PlanOptions(strategy=pb.STRATEGY_INDUCTOR))
        print(response.pools, response.assignments, response.graph_hash)

Every call has a deadline (`timeout`, seconds, for the whole call including
its retries). A call that fails with UNAVAILABLE (the server cannot be
reached, or is shutting down) is sent again after an exponential backoff with
jitter, at most `retries` more times and never past the deadline; every other
failure (INVALID_ARGUMENT, NOT_FOUND, DEADLINE_EXCEEDED, ...) is raised at once
as MemplanError, which carries the gRPC code and the server's message. No
attempt is sent once the deadline has passed: retries that run out of time end
with the last attempt's UNAVAILABLE, or with DEADLINE_EXCEEDED when the
deadline passes while an attempt is in flight.
"""

import random
import time

import grpc

from memplan.v1 import memory_planner_pb2 as pb
from memplan.v1 import memory_planner_pb2_grpc as pb_grpc

__all__ = ["MemplanClient", "MemplanError", "pb", "strategy", "pool_mode"]


class MemplanError(Exception):
    """A call that failed.

    Attributes:
      method: the RPC, e.g. "PlanMemory".
      code: the grpc.StatusCode of the last attempt.
      details: the server's (or gRPC's) message, e.g.
        'buffers[3] ("buf7"): size_bytes must be in [0, 1099511627776], got -5'.
      attempts: how many times the call was sent (1 when it was not retried).
    """

    def __init__(self, method, code, details, attempts):
        self.method = method
        self.code = code
        self.details = details
        self.attempts = attempts
        tries = f" (after {attempts} attempts)" if attempts > 1 else ""
        super().__init__(f"{method}: {code.name}: {details}{tries}")


def strategy(name):
    """Returns the pb.Strategy number of `name` ("auto", "inductor",
    "best_fit", "optimal", "reuse", "nnc", "partition"; "" or None:
    STRATEGY_UNSPECIFIED, the server's default). Raises ValueError for an
    unknown name."""
    return _enum_value(pb.Strategy, "STRATEGY_", name)


def pool_mode(name):
    """Returns the pb.PoolMode number of `name` (Inductor's config.memory_pool
    values: "none", "intermediates", "outputs", "combined"; "" or None:
    POOL_MODE_UNSPECIFIED, i.e. intermediates). Raises ValueError for an
    unknown name."""
    return _enum_value(pb.PoolMode, "POOL_MODE_", name)


def _enum_value(enum, prefix, name):
    key = prefix + (name or "unspecified").upper()
    if key not in enum.keys():
        known = ", ".join(k[len(prefix):].lower() for k in enum.keys())
        raise ValueError(f"unknown {prefix.rstrip('_').lower()} {name!r}; "
                         f"known: {known}")
    return enum.Value(key)


class MemplanClient:
    """A client of one memplan-server (or a load balancer in front of many).

    Args:
      target: "HOST:PORT" or any gRPC target name.
      timeout: default deadline of a call in seconds, retries included.
      retries: how many times a call that failed with UNAVAILABLE is sent
        again (0: never).
      backoff: seconds before the first retry; the n-th retry waits
        backoff * 2**(n-1), at most max_backoff, scaled by a random factor in
        [0.5, 1] (jitter, so that many clients do not retry in step), or less
        once the channel has reconnected. The channel's own reconnection
        backoff is set to the same bounds, so a retry finds a server that
        came up meanwhile.
      max_backoff: the longest wait between two attempts, in seconds.
      credentials: grpc.ChannelCredentials for TLS; None: plaintext.
      channel: a ready grpc.Channel to use instead of making one from
        target (the client then does not close it).
      options: more gRPC channel options, as (name, value) pairs.
    """

    def __init__(self, target=None, *, timeout=30.0, retries=3, backoff=0.1,
                 max_backoff=2.0, credentials=None, channel=None,
                 options=()):
        if timeout <= 0 or retries < 0 or backoff <= 0 or max_backoff <= 0:
            raise ValueError("timeout, backoff and max_backoff must be "
                             "positive and retries non-negative")
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self._sleep = self._wait_for_channel  # tests may replace it
        self._owns_channel = channel is None
        if channel is None:
            if target is None:
                raise ValueError("give a target or a channel")
            channel = _make_channel(target, credentials, backoff,
                                    max_backoff, options)
        self._channel = channel
        self._planner = pb_grpc.MemoryPlannerStub(channel)
        self._health = None  # made on first use: see health()

    def plan(self, request=None, *, timeout=None, **fields):
        """Calls MemoryPlanner.PlanMemory and returns its PlanMemoryResponse.

        Give a pb.PlanMemoryRequest, or its fields as keyword arguments
        (buffers=[...], events=[...], output_names=[...], options=...;
        messages may be given as dicts). timeout: seconds, this call's
        deadline (default: the client's). Raises MemplanError (e.g.
        INVALID_ARGUMENT naming the buffer and field, RESOURCE_EXHAUSTED,
        DEADLINE_EXCEEDED, UNAVAILABLE after the retries), TypeError when
        both a request and fields are given.
        """
        if request is None:
            request = pb.PlanMemoryRequest(**fields)
        elif fields:
            raise TypeError("give a request or its fields, not both")
        return self._call("PlanMemory", self._planner.PlanMemory, request,
                          timeout)

    def get_plan(self, graph_hash, *, timeout=None):
        """Calls MemoryPlanner.GetPlan: the cached PlanMemoryResponse of
        `graph_hash` (32 hex characters, a response's graph_hash). Raises
        MemplanError: NOT_FOUND when the server holds no such plan,
        INVALID_ARGUMENT for a malformed hash, ..."""
        return self._call("GetPlan", self._planner.GetPlan,
                          pb.GetPlanRequest(graph_hash=graph_hash), timeout)

    def health(self, service="", *, timeout=None):
        """Calls grpc.health.v1.Health/Check and returns the serving status's
        name: "SERVING", "NOT_SERVING", "UNKNOWN" or "SERVICE_UNKNOWN".
        service: "" (the whole server) or "memplan.v1.MemoryPlanner". Raises
        MemplanError (NOT_FOUND for a service the server does not know)."""
        if self._health is None:
            self._health = _HealthStub(self._channel)
        response = self._call("Health/Check", self._health.stub.Check,
                              self._health.messages.HealthCheckRequest(
                                  service=service), timeout)
        return self._health.messages.HealthCheckResponse.ServingStatus.Name(
            response.status)

    def close(self):
        """Closes the channel, unless it was handed in."""
        if self._owns_channel:
            self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _call(self, method, rpc, request, timeout):
        deadline = time.monotonic() + (self.timeout if timeout is None
                                       else timeout)
        attempt = 0
        remaining = max(deadline - time.monotonic(), 0.0)
        while True:
            attempt += 1
            try:
                return rpc(request, timeout=remaining)
            except grpc.RpcError as error:
                code, details = error.code(), error.details()
            if code != grpc.StatusCode.UNAVAILABLE or attempt > self.retries:
                raise MemplanError(method, code, details, attempt)
            delay = self._backoff_delay(attempt)
            if time.monotonic() + delay >= deadline:
                raise MemplanError(method, code, details, attempt)
            self._sleep(delay)
            # A sleep may overrun on a loaded machine: an attempt with no time
            # left could only end in DEADLINE_EXCEEDED, hiding the cause.
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise MemplanError(method, code, details, attempt)

    def _wait_for_channel(self, seconds):
        """Waits `seconds` before a retry, or less once the channel has
        connected again. Watching the channel is also what makes gRPC Python
        attempt the reconnection: with no call in flight and no watcher, a
        channel in backoff does not try again until the next call."""
        ready = grpc.channel_ready_future(self._channel)
        try:
            ready.result(timeout=seconds)
        except grpc.FutureTimeoutError:
            ready.cancel()

    def _backoff_delay(self, retry):
        """Seconds to wait before retry number `retry` (1, 2, ...)."""
        ceiling = min(self.max_backoff, self.backoff * 2 ** (retry - 1))
        return ceiling * random.uniform(0.5, 1.0)


def _make_channel(target, credentials, backoff, max_backoff, options):
    backoff_ms = max(1, int(backoff * 1000))
    settings = [
        # Plans of large graphs exceed gRPC's default 4 MiB.
        ("grpc.max_receive_message_length", -1),
        ("grpc.max_send_message_length", -1),
        # Reconnect on our retry schedule rather than gRPC's default (1 s,
        # growing to 2 min), so that a retry can reach a restarted server.
        # (Not grpc.min_reconnect_backoff_ms: gRPC uses it as the connect
        # timeout, which must stay long enough for a loaded machine.)
        ("grpc.initial_reconnect_backoff_ms", backoff_ms),
        ("grpc.max_reconnect_backoff_ms",
         max(backoff_ms, int(max_backoff * 1000))),
        *options,
    ]
    if credentials is not None:
        return grpc.secure_channel(target, credentials, settings)
    return grpc.insecure_channel(target, settings)


class _HealthStub:
    """grpc.health.v1 messages and stub: from gRPC's own grpcio-health-checking
    package when it is installed, else the ones this build generated from
    Debian's grpc-proto (memplan.health.v1; same wire names). Preferring the
    package avoids registering grpc.health.v1 twice in one process."""

    def __init__(self, channel):
        try:
            from grpc_health.v1 import health_pb2, health_pb2_grpc
        except ImportError:
            from memplan.health.v1 import health_pb2, health_pb2_grpc
        self.messages = health_pb2
        self.stub = health_pb2_grpc.HealthStub(channel)
