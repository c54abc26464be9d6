"""MemplanClient against a real memplan-server process."""

import threading
import time
import unittest

import grpc

from memplan import MemplanClient, MemplanError, pb
from memplan.client import pool_mode, strategy
from server_process import (ServerProcess, closed_target, corpus_buffers,
                            free_port, load_corpus)

RESNET18 = "resnet18_infer.inference.intermediates"


class ClientTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess().start()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def setUp(self):
        self.client = MemplanClient(self.server.target, timeout=10.0)

    def tearDown(self):
        self.client.close()

    def plan_corpus(self, name):
        corpus = load_corpus(name)
        response = self.client.plan(
            buffers=corpus_buffers(corpus),
            options={"strategy": strategy("inductor"),
                     "pool_mode": pool_mode(corpus["source"]["memory_pool"])})
        return corpus, response

    def test_plan_of_a_corpus_file_is_inductors_plan(self):
        corpus, response = self.plan_corpus(RESNET18)
        expected = corpus["expected_inductor_plan"]
        self.assertEqual([(p.name, p.device, p.size_bytes)
                          for p in response.pools],
                         [(p["name"], p["device"], p["size"])
                          for p in expected["pools"]])
        self.assertEqual([(a.pool, a.offset) for a in response.assignments],
                         [(a["pool"], a["offset"])
                          for a in expected["assignments"]])
        self.assertEqual(response.stats.planner, "inductor")
        self.assertRegex(response.graph_hash, "^[0-9a-f]{32}$")

    def test_get_plan_returns_the_plan_by_its_hash(self):
        _, planned = self.plan_corpus(RESNET18)
        cached = self.client.get_plan(planned.graph_hash)
        self.assertEqual(cached.cache, pb.CACHE_STATUS_LOCAL)
        cached.ClearField("cache")
        planned.ClearField("cache")
        self.assertEqual(cached, planned)

    def test_get_plan_of_an_unknown_hash_is_not_found(self):
        with self.assertRaises(MemplanError) as caught:
            self.client.get_plan("0" * 32)
        self.assertEqual(caught.exception.code, grpc.StatusCode.NOT_FOUND)
        self.assertIn("0" * 32, caught.exception.details)
        self.assertEqual(caught.exception.attempts, 1)

    def test_health(self):
        self.assertEqual(self.client.health(), "SERVING")
        self.assertEqual(self.client.health("memplan.v1.MemoryPlanner"),
                         "SERVING")
        with self.assertRaises(MemplanError) as caught:
            self.client.health("no.such.Service")
        self.assertEqual(caught.exception.code, grpc.StatusCode.NOT_FOUND)

    def test_invalid_argument_is_raised_with_its_message_and_not_retried(self):
        with self.assertRaises(MemplanError) as caught:
            self.client.plan(buffers=[{
                "names": ["buf7"], "size_bytes": -5,
                "live_range": {"begin": 0, "end": 1}}])
        error = caught.exception
        self.assertEqual(error.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn('buffers[0] ("buf7"): size_bytes', error.details)
        self.assertEqual(error.attempts, 1)
        self.assertIn("INVALID_ARGUMENT", str(error))

    def test_deadline_exceeded_is_raised_and_not_retried(self):
        with self.assertRaises(MemplanError) as caught:
            self.plan_corpus_with_timeout(1e-6)
        self.assertEqual(caught.exception.code,
                         grpc.StatusCode.DEADLINE_EXCEEDED)
        self.assertEqual(caught.exception.attempts, 1)

    def plan_corpus_with_timeout(self, timeout):
        corpus = load_corpus(RESNET18)
        return self.client.plan(buffers=corpus_buffers(corpus),
                                timeout=timeout)

    def test_events_are_grouped_by_the_service(self):
        kind = pb.EventKind.Value
        events = [
            {"kind": kind("EVENT_KIND_ALLOCATE"), "name": "buf0",
             "size_bytes": 256, "device": "cuda:0"},
            {"kind": kind("EVENT_KIND_ALLOCATE"), "name": "buf1",
             "size_bytes": 128, "device": "cuda:0"},
            {"kind": kind("EVENT_KIND_OTHER")},
            {"kind": kind("EVENT_KIND_REUSE"), "name": "buf0",
             "reused_as": "buf2"},
            {"kind": kind("EVENT_KIND_OTHER")},
            {"kind": kind("EVENT_KIND_FREE_IF_NOT_REUSED"), "name": "buf2"},
            {"kind": kind("EVENT_KIND_ALLOCATE"), "name": "buf3",
             "size_bytes": 256, "device": "cuda:0"},
            {"kind": kind("EVENT_KIND_OTHER")},
            {"kind": kind("EVENT_KIND_FREE_IF_NOT_REUSED"), "name": "buf3"},
        ]
        response = self.client.plan(
            events=events, output_names=["buf1"],
            options={"strategy": strategy("inductor")})
        self.assertEqual([a.allocation_event for a in response.assignments],
                         [0, 1, 6])
        # buf3 takes buf0's (and buf2's) bytes: their ranges do not overlap.
        self.assertEqual(response.assignments[0].pool,
                         response.assignments[2].pool)
        self.assertEqual(response.assignments[0].offset,
                         response.assignments[2].offset)

    def test_request_and_fields_together_are_refused(self):
        with self.assertRaises(TypeError):
            self.client.plan(pb.PlanMemoryRequest(), buffers=[])

    def test_unknown_names_are_refused(self):
        with self.assertRaises(ValueError):
            strategy("fastest")
        with self.assertRaises(ValueError):
            pool_mode("everything")
        self.assertEqual(strategy("best_fit"), pb.STRATEGY_BEST_FIT)
        self.assertEqual(pool_mode(None), pb.POOL_MODE_UNSPECIFIED)


class RetryTest(unittest.TestCase):

    def test_unavailable_is_retried_with_growing_backoff_then_raised(self):
        delays = []
        client = MemplanClient(closed_target(), timeout=30.0, retries=3,
                               backoff=0.01, max_backoff=0.025)
        client._sleep = lambda seconds: (delays.append(seconds),
                                         time.sleep(seconds))
        with client, self.assertRaises(MemplanError) as caught:
            client.health()
        self.assertEqual(caught.exception.code, grpc.StatusCode.UNAVAILABLE)
        self.assertEqual(caught.exception.attempts, 4)
        self.assertEqual(len(delays), 3)
        # Ceilings 0.01, 0.02, then capped at 0.025; jitter in [0.5, 1].
        for delay, ceiling in zip(delays, [0.01, 0.02, 0.025]):
            self.assertGreaterEqual(delay, ceiling * 0.5)
            self.assertLessEqual(delay, ceiling)

    def test_no_retries_means_one_attempt(self):
        with MemplanClient(closed_target(), retries=0) as client:
            with self.assertRaises(MemplanError) as caught:
                client.get_plan("0" * 32)
        self.assertEqual(caught.exception.code, grpc.StatusCode.UNAVAILABLE)
        self.assertEqual(caught.exception.attempts, 1)

    def test_retries_stop_at_the_deadline(self):
        with MemplanClient(closed_target(), timeout=0.5, retries=1000,
                           backoff=0.05, max_backoff=0.1) as client:
            start = time.monotonic()
            with self.assertRaises(MemplanError) as caught:
                client.health()
            elapsed = time.monotonic() - start
        # UNAVAILABLE from the last attempt, or DEADLINE_EXCEEDED when the
        # deadline passed while that attempt waited for the connection (a
        # loaded machine): either way, the call ends at its deadline.
        self.assertIn(caught.exception.code, (grpc.StatusCode.UNAVAILABLE,
                                              grpc.StatusCode.DEADLINE_EXCEEDED))
        self.assertGreater(caught.exception.attempts, 1)
        self.assertLess(caught.exception.attempts, 1000)
        self.assertLess(elapsed, 2.0)

    def test_no_attempt_is_sent_after_a_sleep_past_the_deadline(self):
        # A backoff that overruns the deadline (as on a loaded machine) ends
        # the call with the cause, not with an attempt that had no time.
        client = MemplanClient(closed_target(), timeout=0.3, retries=5,
                               backoff=0.01, max_backoff=0.01)
        client._sleep = lambda seconds: time.sleep(0.4)
        with client, self.assertRaises(MemplanError) as caught:
            client.health()
        self.assertEqual(caught.exception.code, grpc.StatusCode.UNAVAILABLE)
        self.assertEqual(caught.exception.attempts, 1)

    def test_a_retry_reaches_a_server_that_starts_late(self):
        port = free_port()
        server = ServerProcess(port)
        starter = threading.Timer(0.5, server.start)
        sleeps = []
        client = MemplanClient(f"127.0.0.1:{port}", timeout=20.0, retries=50,
                               backoff=0.05, max_backoff=0.2)
        wait = client._sleep
        client._sleep = lambda seconds: (sleeps.append(seconds), wait(seconds))
        starter.start()
        try:
            with client:
                self.assertEqual(client.health(), "SERVING")
        finally:
            starter.join()
            server.stop()
        self.assertGreater(len(sleeps), 0)


if __name__ == "__main__":
    unittest.main()
