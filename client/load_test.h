// A load test of MemoryPlanner.PlanMemory: an asynchronous gRPC client
// (one CompletionQueue) that keeps a fixed number of calls in flight for a
// set time or a set count, checks every status and every response, and
// measures throughput and latency.
#ifndef MEMPLAN_CLIENT_LOAD_TEST_H_
#define MEMPLAN_CLIENT_LOAD_TEST_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "memplan/v1/memory_planner.pb.h"

namespace memplan {

struct LoadTestOptions {
  // Calls kept in flight at once; at least 1.
  int in_flight = 16;
  // > 0: the run ends after this many calls (warm-up calls not counted).
  // 0: the run ends once `duration` has passed (calls in flight then still
  // complete and count).
  int64_t calls = 0;
  // How long new calls are started when `calls` is 0.
  absl::Duration duration = absl::Seconds(10);
  // How many distinct requests the calls cycle through: call i sends
  // request i % distinct, which is the base request with buffers[0]'s
  // size_bytes increased by i % distinct bytes (so every one has its own
  // graph hash). At least 1.
  int64_t distinct = 1;
  // Calls made before the measured run (not counted, but checked), e.g. to
  // fill the server's cache.
  int64_t warmup_calls = 0;
  // Deadline of each call.
  absl::Duration timeout = absl::Seconds(10);
  // Sent as "authorization: Bearer TOKEN" on every call; empty: none.
  std::string auth_token;
  // > 0: calls start at this rate (calls per second), evenly spaced from
  // the start of each phase (warm-up and run), an open loop as a fleet of
  // clients makes; a call that falls due while `in_flight` calls are in
  // flight starts when one completes. 0: each completed call is replaced
  // at once (a closed loop: the most the server does with `in_flight`).
  double rate = 0;
};

// What a run measured. Latencies are wall time from starting a call to its
// completion, in microseconds.
struct LoadTestReport {
  int64_t calls = 0;     // completed calls (warm-up excluded)
  int64_t failures = 0;  // calls with a non-OK status or a wrong response
  // Failures by code: the call's status code, or for a wrong response the
  // check's (DATA_LOSS: does not parse; INTERNAL: a wrong hash or plan).
  std::map<absl::StatusCode, int64_t> failures_by_code;
  std::string first_failure;  // what the first failure was, or ""
  absl::Duration elapsed;     // from the first call started to the last done
  double calls_per_second = 0;
  double p50_us = 0, p90_us = 0, p99_us = 0, max_us = 0;
  // CPU time (user + system) this process spent in the measured run, per
  // call, in microseconds: the client's share of the machine.
  double client_cpu_us_per_call = 0;
  // Responses by where the plan came from (PlanMemoryResponse.cache).
  int64_t cache_miss = 0, cache_local = 0, cache_redis = 0;

  // Returns the report as lines of text: calls, failures (by code when
  // any), throughput, latency percentiles, the client's CPU per call and
  // cache statuses.
  std::string ToString() const;
};

// Returns a channel to `target` (HOST:PORT) for load tests: any response
// size, and no gRPC retries (on by default, they keep a copy of every
// request in case it must be sent again: client CPU the server's throughput
// should not be measured with).
std::shared_ptr<grpc::Channel> CreateLoadTestChannel(const std::string& target);

// As above, through TLS or mutual TLS as `options` say (client/client.h
// ChannelCredentialsFor, with its errors).
absl::StatusOr<std::shared_ptr<grpc::Channel>> CreateLoadTestChannel(
    const std::string& target, const ChannelOptions& options);

// Runs the load test against `channel` with `base` (a valid request) and
// `options`. Every response is checked: status OK, and either byte-identical
// to an earlier response to the same request that passed the full check, or
// passing the full check itself: it parses, its graph_hash equals the
// client's own GraphHash of the request (proto/graph_hash.h), its cache
// status is MISS, LOCAL or REDIS, and its plan passes the independent
// validator (core/validator.h). Requests are serialized once each (for
// `distinct` up to 4096; beyond, once per call).
// Returns INVALID_ARGUMENT for bad options or a `base` that RequestToProblem
// rejects; failed calls are counted in the report, not returned.
absl::StatusOr<LoadTestReport> RunLoadTest(
    const std::shared_ptr<grpc::Channel>& channel,
    const v1::PlanMemoryRequest& base, const LoadTestOptions& options);

}  // namespace memplan

#endif  // MEMPLAN_CLIENT_LOAD_TEST_H_
