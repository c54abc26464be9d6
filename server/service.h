// The MemoryPlanner gRPC service: a thin handler from wire to core and back,
// behind a plan cache keyed by the graph hash (proto/graph_hash.h).
//
// A PlanMemory call goes, shortest path first (each step a span of the
// call's trace, server/plan_trace.h):
//   1. alias_lookup, on gRPC's thread: the XXH3-128 digest of the request's
//      bytes, looked up as an alias (server/plan_cache.h) and then the plan
//      it names: a byte-identical request seen before is answered without
//      parsing (cache LOCAL);
//   2. otherwise queue: it waits for a worker thread (server/worker_pool.h),
//      where decode parses and resolves the request (ResolveRequest: every
//      check of it), hash computes the graph hash and records the alias,
//      and cache_lookup looks the plan up (LOCAL); single_flight joins the
//      flight of the hash (server/single_flight.h): if another call is
//      planning it, the call is left with the flight, holding no thread, to
//      be answered with its plan (LOCAL, or REDIS if it came from there);
//      else it leads: redis asks Redis (REDIS), else "plan STRATEGY" runs
//      the planner, validate checks the plan (core/validator.h) and encode
//      makes and serializes the response (MISS); the plan is stored locally
//      and queued for Redis.
// Every response carries the stored bytes of the plan's response, `cache`
// and `trace_json` unset, followed by the `cache` field (field 5) and, when
// the request asked for a trace, the `trace_json` field (field 6): exactly
// how the whole message serializes, fields in number order. A hit is byte
// for byte the miss that planned it except for `cache` (and the trace);
// stats.planning_micros is the time the plan took when it was made.
//
// Traces are never stored (in the cache or in Redis), and a request that
// asks for one is never recorded as an alias: it is always parsed, so that
// its trace describes its own call and the plan it gets (from the planner
// or, on a hit, from the stored response). include_trace does not change
// the graph hash.
//
// A plan of a strategy that searches until its time budget ("optimal",
// "auto") is stored only if the caller's deadline was not earlier than the
// end of the budget, or the plan is proven optimal: otherwise the caller's
// deadline may have cut the search short, and the graph hash names the plan
// of the full budget. Identical calls waiting for such a plan plan again.
//
// Every call, PlanMemory and GetPlan, ends in one place (Call::Reply or
// Call::Fail), where it is counted, measured (server/metrics.h) and logged
// (server/call_log.h) exactly once: hits answered on gRPC's thread,
// followers answered on the leader's thread and failures alike.
#ifndef MEMPLAN_SERVER_SERVICE_H_
#define MEMPLAN_SERVER_SERVICE_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "core/planner.h"
#include "memplan/v1/memory_planner.grpc.pb.h"
#include "proto/convert.h"
#include "server/auth.h"
#include "server/call_log.h"
#include "server/call_record.h"
#include "server/metrics.h"
#include "server/phases.h"
#include "server/plan_cache.h"
#include "server/redis_cache.h"
#include "server/request_limits.h"
#include "server/single_flight.h"
#include "server/trace_dir.h"
#include "server/worker_pool.h"

namespace memplan {

// What the service did since it started; a snapshot. The cache statuses
// count PlanMemory responses.
struct ServiceCounters {
  int64_t calls = 0;             // PlanMemory calls received
  int64_t planner_runs = 0;      // planners run (PlanMemory and PlanRequest)
  int64_t cache_miss = 0;        // PlanMemory responses with cache MISS
  int64_t cache_local = 0;       // ... LOCAL
  int64_t cache_redis = 0;       // ... REDIS
  int64_t flight_followers = 0;  // calls that waited for an identical one
  // Calls (PlanMemory and GetPlan) answered UNAVAILABLE unprocessed because
  // the service was draining (StartDraining); their PlanMemory calls are
  // in `calls` too.
  int64_t refused_draining = 0;
  PlanCacheCounters cache;       // the in-process cache
  std::optional<RedisCounters> redis;  // the Redis cache, when configured

  // Returns every field as "name=value", the caches' after "cache:" and
  // "redis:".
  std::string ToString() const;
};

class MemoryPlannerService final
    : public v1::MemoryPlanner::WithRawCallbackMethod_PlanMemory<
          v1::MemoryPlanner::WithRawCallbackMethod_GetPlan<
              v1::MemoryPlanner::Service>> {
 public:
  struct Options {
    // Bytes the in-process cache may hold (server/plan_cache.h); 0: none
    // (single flight still merges identical calls in flight).
    int64_t cache_bytes = int64_t{256} << 20;
    // Threads that parse, plan and ask Redis (cache misses); work beyond
    // them waits in order. Calls waiting for an identical call's plan hold
    // none. At least 1.
    int worker_threads = 2;
    // The shared Redis cache; unset: none.
    std::optional<RedisOptions> redis;
    // Per-request limits (server/request_limits.h).
    RequestLimits limits;
    // Bearer tokens memplan.v1 calls must present (server/auth.h); null:
    // none needed.
    std::shared_ptr<const TokenAuthenticator> auth;
    // Where calls are reported. Each may be null (not reported); none is
    // owned, and each must outlive the service.
    ServiceMetrics* metrics = nullptr;  // every call; the cache's counters
    CallLog* log = nullptr;             // one line per call
    // The trace of every plan the service gets as a leader (planned, or
    // from Redis), by graph hash.
    TraceDirectory* traces = nullptr;
  };

  MemoryPlannerService() : MemoryPlannerService(Options()) {}
  explicit MemoryPlannerService(Options options);
  // Requires that no call is in progress (the server has shut down).
  ~MemoryPlannerService() override;

  // Answers one PlanMemory call as the file comment says; with
  // options.include_trace, trace_json is the call's trace
  // (server/plan_trace.h). Errors, converted by ToGrpcStatus
  // (proto/grpc_status.h): UNAUTHENTICATED without an accepted bearer token
  // (when options.auth is set), INVALID_ARGUMENT for bytes that do not
  // parse as a PlanMemoryRequest, PlanRequest's, DEADLINE_EXCEEDED when the
  // call's deadline passes while it waits for an identical call's plan, and
  // INTERNAL when a trace asked for cannot be built. Every INVALID_ARGUMENT
  // whose message names a field carries a google.rpc.BadRequest naming it
  // (proto/status_details.h).
  grpc::ServerUnaryReactor* PlanMemory(grpc::CallbackServerContext* context,
                                       const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response) override;

  // Answers one GetPlan call (UNAUTHENTICATED as PlanMemory's): the stored
  // response of the graph hash with
  // cache LOCAL, else (with Redis, on a worker thread, bounded by the call's
  // deadline) Redis's with cache REDIS (then also stored locally). Returns
  // INVALID_ARGUMENT naming graph_hash when it is not 32 hex characters,
  // NOT_FOUND when neither holds the plan (or Redis cannot answer in time).
  grpc::ServerUnaryReactor* GetPlan(grpc::CallbackServerContext* context,
                                    const grpc::ByteBuffer* request,
                                    grpc::ByteBuffer* response) override;

  // Returns the response to `request`, planned now (no cache, no trace):
  // CheckRequestLimits and ResolveRequest (proto/convert.h), the time budget
  // (default 100 ms) lowered to options.limits.max_planning_time, the
  // strategy's planner (core/planners.h) under `call` with its
  // search_deadline moved up to now + the time budget and its deadline up
  // to now + max_planning_time, ValidatePlan
  // (core/validator.h), PlanToResponse with stats, the graph hash
  // (proto/graph_hash.h) and cache status MISS. planning_micros is the
  // wall time of the planner alone, in microseconds.
  // Returns
  //   INVALID_ARGUMENT    a malformed request (ResolveRequest's errors),
  //                       a strategy this server has no planner for ("strategy
  //                       X is not available"), or a request the strategy
  //                       cannot honour (e.g. inductor with a fixed_offset);
  //   RESOURCE_EXHAUSTED  from the planner, unchanged: no plan found fits
  //                       options.capacity_bytes (the message says by how
  //                       many bytes); a request over a count limit
  //                       (CheckRequestLimits); planning that ran past
  //                       max_planning_time before the call's deadline;
  //   DEADLINE_EXCEEDED / CANCELLED  from `call`, before or while planning;
  //   INTERNAL            a plan that fails ValidatePlan (a planner bug).
  absl::StatusOr<v1::PlanMemoryResponse> PlanRequest(
      const v1::PlanMemoryRequest& request, const PlanContext& call) const;

  // Returns the number of PlanMemory calls being handled right now (counted
  // until they end, as the metrics' memplan_calls_in_flight).
  int64_t calls_in_flight() const {
    return calls_in_flight_.load(std::memory_order_relaxed);
  }

  ServiceCounters counters() const;

  // Starts the lame-duck phase of a shutdown: from now on every PlanMemory
  // and GetPlan call is answered UNAVAILABLE ("the server is shutting
  // down") before anything of it is read, so a client may retry it on
  // another replica; calls already taken on are finished as usual. Health
  // checks are the server's (server/server.h sets them NOT_SERVING).
  // Cannot be undone.
  void StartDraining() { draining_.store(true, std::memory_order_release); }

  // Returns the calls refused since StartDraining (counters().
  // refused_draining, without the caches' counters).
  int64_t refused_draining() const {
    return refused_draining_.load(std::memory_order_relaxed);
  }

 private:
  class Call;

  // A plan made now: the response (cache unset) and whether it may be
  // stored (see the file comment).
  struct Planned {
    v1::PlanMemoryResponse response;
    bool storable = true;
  };
  // A parsed request the cache did not answer: what its call needs to
  // lead or follow a flight.
  struct Miss {
    ResolvedRequest resolved;
    std::string graph_hash;  // 32 hex characters
    Digest key;              // the graph hash's digest
  };

  // Returns the first error of CheckRequestLimits and ResolveRequest, or
  // the resolved request with its time budget lowered to the limit.
  absl::StatusOr<ResolvedRequest> Resolve(
      const v1::PlanMemoryRequest& request) const;
  // Plans `resolved` (graph hash `graph_hash`) under `call`: the spans
  // "plan STRATEGY", validate and encode in `phases`, the planning facts in
  // `record`. PlanRequest's errors but INVALID_ARGUMENT for the request
  // itself.
  absl::StatusOr<Planned> PlanNow(const ResolvedRequest& resolved,
                                  const std::string& graph_hash,
                                  const PlanContext& call,
                                  PhaseRecorder& phases,
                                  CallRecord& record) const;
  // PlanMemory's slow path, on a worker thread: parse, resolve, hash,
  // record the alias, then Pursue.
  void Answer(Call* call, const grpc::ByteBuffer& request, Digest digest);
  // On a worker thread: answers `call` from the cache, or follows the
  // flight of its graph (the landing answers it), or leads it: Redis, else
  // the planner.
  void Pursue(Call* call, std::shared_ptr<const Miss> miss);
  // On the leader's thread: answers follower `call` with `outcome` (on a
  // worker thread when it asked for a trace), or sends it back to Pursue
  // when the outcome says to retry.
  void Follow(Call* call, std::shared_ptr<const Miss> miss,
              const FlightOutcome& outcome);
  // Leads the flight of `miss` for `call`: Redis, else the planner; stores
  // the plan.
  FlightOutcome Lead(const Miss& miss, Call& call);
  // Answers `call` with `stored` (the stored response of `miss`'s graph)
  // and status `cache`, with the call's trace when it asked for one. A
  // `leader` also writes the trace to the trace directory, if any.
  void ReplyWithPlan(Call* call, const Miss& miss,
                     std::shared_ptr<const std::string> stored,
                     v1::CacheStatus cache, bool leader);
  // Reports the start and the end of a call to the counters, the metrics
  // and the log.
  void CallStarted(const char* method);
  void CallFinished(const CallRecord& record);
  // Answers `call` UNAVAILABLE and returns true when the service is
  // draining (StartDraining); returns false otherwise.
  bool RefuseWhileDraining(Call* call);
  // Counts a PlanMemory response of `cache` status.
  void Count(v1::CacheStatus cache);

  const RequestLimits limits_;
  const std::shared_ptr<const TokenAuthenticator> auth_;  // null: open
  ServiceMetrics* const metrics_;  // may be null, as the observers below
  CallLog* const log_;
  TraceDirectory* const traces_;
  // Whether the log writes a line for a call that succeeds: then a hit
  // reads what the line says of its plan from the stored response.
  const bool logs_every_call_;
  PlanCache cache_;
  SingleFlight flights_;
  std::unique_ptr<RedisCache> redis_;  // null: no Redis

  std::atomic<int64_t> calls_in_flight_{0};
  std::atomic<int64_t> calls_{0};
  mutable std::atomic<int64_t> planner_runs_{0};
  std::atomic<int64_t> cache_miss_{0};
  std::atomic<int64_t> cache_local_{0};
  std::atomic<int64_t> cache_redis_{0};
  std::atomic<int64_t> flight_followers_{0};
  std::atomic<int64_t> refused_draining_{0};
  std::atomic<bool> draining_{false};

  // Declared last, so destroyed first: its threads finish the queued work
  // and stop before the caches they use go.
  WorkerPool workers_;
};

}  // namespace memplan

#endif  // MEMPLAN_SERVER_SERVICE_H_
