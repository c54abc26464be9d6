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
//      check of it), hash computes the graph hash (its digest, and the hex
//      from it) and records the alias, and cache_lookup looks the plan up
//      (LOCAL); single_flight joins the
//      flight of the hash (server/single_flight.h): if another call is
//      planning it, the call is left with the flight, holding no thread, to
//      be answered with its plan (LOCAL, or REDIS if it came from there);
//      else it leads: redis asks Redis (REDIS), else "plan STRATEGY" runs
//      the planner, validate checks the plan (core/validator.h) and encode
//      makes the response (server/request_planner.h), serialize serializes
//      it with its summary (MISS); the plan is stored locally and queued
//      for Redis.
// Before any of this, a call is admitted (Admit, both methods): refused
// UNAVAILABLE while draining, then UNAUTHENTICATED without an accepted
// token.
// Every response carries the stored bytes of the plan's response, `cache`
// and `trace_json` unset, followed by the `cache` field (field 5) and, when
// the request asked for a trace, the `trace_json` field (field 6)
// (server/wire_bytes.h ResponseBytes): exactly how the whole message
// serializes, fields in number order. A hit is byte for byte the miss that
// planned it except for `cache` (and the trace); stats.planning_micros is
// the time the plan took when it was made. What a hit's log line says of
// its plan comes from the summary stored beside it (server/stored_plan.h).
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
// Every call, PlanMemory and GetPlan, ends in one place (server/call.h:
// Call::Reply or Call::Fail), where it is counted, measured
// (server/metrics.h, the service's one set of counters) and logged
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
#include <utility>

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
#include "server/request_planner.h"
#include "server/single_flight.h"
#include "server/stored_plan.h"
#include "server/trace_dir.h"
#include "server/worker_pool.h"

namespace memplan {

class Call;  // server/call.h

// The fewest worker threads a service runs: one search running for its
// whole time budget (up to max_planning_time) must not hold every other
// miss, GetPlan's Redis lookups and traced followers behind it.
inline constexpr int kMinWorkerThreads = 2;

// Returns the default worker thread count: the hardware threads, at least
// kMinWorkerThreads (planning is CPU-bound; waiting calls hold no thread).
int DefaultWorkerThreads();

class MemoryPlannerService final
    : public v1::MemoryPlanner::WithRawCallbackMethod_PlanMemory<
          v1::MemoryPlanner::WithRawCallbackMethod_GetPlan<
              v1::MemoryPlanner::Service>> {
 public:
  struct Options {
    // Bytes the in-process cache may hold (server/plan_cache.h), >= 0; 0:
    // none (single flight still merges identical calls in flight).
    int64_t cache_bytes = int64_t{256} << 20;
    // Threads that parse, plan and ask Redis (cache misses); work beyond
    // them waits in order. Calls waiting for an identical call's plan hold
    // none. At least kMinWorkerThreads. Planning is CPU-bound: threads
    // beyond the cores only share them.
    int worker_threads = DefaultWorkerThreads();
    // The shared Redis cache (server/redis_cache.h: its address, TTL,
    // timeout, and the planner version its keys carry); unset: none.
    std::optional<RedisOptions> redis;
    // Per-request limits (server/request_limits.h).
    RequestLimits limits;
  };

  // What the service checks calls with and reports them to. None but
  // `auth` is owned; each must outlive the service.
  struct Hooks {
    // Bearer tokens memplan.v1 calls must present (server/auth.h); null:
    // none needed.
    std::shared_ptr<const TokenAuthenticator> auth;
    // Every call, and the cache's gauges; null: the service's own.
    ServiceMetrics* metrics = nullptr;
    CallLog* log = nullptr;  // one line per call; null: none
    // The trace of every plan the service gets as a leader (planned, or
    // from Redis), by graph hash; null: none.
    TraceDirectory* traces = nullptr;
  };

  // Returns OK for options a service may run with; INVALID_ARGUMENT naming
  // the option otherwise: worker_threads below kMinWorkerThreads, a
  // negative cache_bytes, limits out of range (ValidateRequestLimits),
  // Redis options without a host, with a port outside [1, 65535] or a TTL
  // or timeout that is not > 0.
  static absl::Status Validate(const Options& options);

  // Requires Validate(options) to be OK.
  MemoryPlannerService(Options options, Hooks hooks);
  explicit MemoryPlannerService(Options options)
      : MemoryPlannerService(std::move(options), Hooks()) {}
  MemoryPlannerService() : MemoryPlannerService(Options(), Hooks()) {}
  // Requires that no call is in progress (the server has shut down).
  ~MemoryPlannerService() override;

  // Answers one PlanMemory call as the file comment says; with
  // options.include_trace, trace_json is the call's trace
  // (server/plan_trace.h). Errors, converted by ToGrpcStatus
  // (proto/grpc_status.h): UNAVAILABLE while draining (StartDraining),
  // UNAUTHENTICATED without an accepted bearer token (when hooks.auth is
  // set), INVALID_ARGUMENT for bytes that do not parse as a
  // PlanMemoryRequest, PlanRequest's, DEADLINE_EXCEEDED when the call's
  // deadline passes while it waits for an identical call's plan, and
  // INTERNAL when a trace asked for cannot be built. Every INVALID_ARGUMENT
  // whose message names a field carries a google.rpc.BadRequest naming it
  // (proto/status_details.h).
  grpc::ServerUnaryReactor* PlanMemory(grpc::CallbackServerContext* context,
                                       const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response) override;

  // Answers one GetPlan call (UNAVAILABLE and UNAUTHENTICATED as
  // PlanMemory's): the stored response of the graph hash with cache LOCAL,
  // else (with Redis, on a worker thread, bounded by the call's deadline)
  // Redis's with cache REDIS (then also stored locally). Returns
  // INVALID_ARGUMENT naming graph_hash when it is not 32 hex characters,
  // NOT_FOUND when neither holds the plan (or Redis cannot answer in time).
  grpc::ServerUnaryReactor* GetPlan(grpc::CallbackServerContext* context,
                                    const grpc::ByteBuffer* request,
                                    grpc::ByteBuffer* response) override;

  // Returns the response to `request`, planned now (no cache, no trace):
  // RequestPlanner's Resolve (CheckRequestLimits, ResolveRequest, the time
  // budget, default 100 ms, lowered to options.limits.max_planning_time),
  // then its PlanResolved under `call` (server/request_planner.h), with the
  // graph hash (proto/graph_hash.h) and cache status MISS. planning_micros
  // is the wall time of the planner alone, in microseconds.
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

  // Starts the lame-duck phase of a shutdown: from now on every PlanMemory
  // and GetPlan call is answered UNAVAILABLE ("the server is shutting
  // down") before anything of it is read, so a client may retry it on
  // another replica, and counted (ServiceMetrics::refused_draining); calls
  // already taken on are finished as usual. Health checks are the server's
  // (server/server.h sets them NOT_SERVING). Cannot be undone.
  void StartDraining() { draining_.store(true, std::memory_order_release); }

  // Returns the metrics every call is counted in (hooks.metrics, or the
  // service's own).
  ServiceMetrics& metrics() const { return *metrics_; }

  // Returns the in-process plan cache (for its counters).
  const PlanCache& cache() const { return cache_; }

  // Returns the shared Redis cache (for its state and counters), or null
  // without one.
  const RedisCache* redis() const { return redis_.get(); }

 private:
  // A parsed request the cache did not answer: what its call needs to
  // lead or follow a flight.
  struct Miss {
    ResolvedRequest resolved;
    Digest key;              // the graph hash's digest
    std::string graph_hash;  // its 32 hex characters
  };

  // Admits `call` (either method): fails it UNAVAILABLE while draining,
  // then UNAUTHENTICATED without an accepted token (`context`'s metadata),
  // and returns false; returns true when it may go on.
  bool Admit(Call& call, const grpc::CallbackServerContext& context);
  // PlanMemory's slow path, on a worker thread: parse, resolve, hash,
  // record the alias, then Pursue.
  void Decode(Call* call, const grpc::ByteBuffer& request, Digest digest);
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
  // Returns Redis's plan of `graph_hash` (digest `key`), stored locally
  // too, within `deadline`; RedisCache::Get's errors, and DATA_LOSS for a
  // value that does not parse (logged).
  absl::StatusOr<std::shared_ptr<const StoredPlan>> ReadRedis(
      const std::string& graph_hash, Digest key, absl::Time deadline);
  // Answers `call` with `plan` (the stored plan of `miss`'s graph) and
  // status `cache`, with the call's trace when it asked for one. A
  // `leader` also writes the trace to the trace directory, if any.
  void ReplyWithPlan(Call* call, const Miss& miss,
                     std::shared_ptr<const StoredPlan> plan,
                     v1::CacheStatus cache, bool leader);

  const std::shared_ptr<const TokenAuthenticator> auth_;  // null: open
  std::unique_ptr<ServiceMetrics> own_metrics_;  // null with hooks.metrics
  ServiceMetrics* const metrics_;                // never null
  const RequestPlanner planner_;
  CallLog* const log_;  // may be null, as traces_
  TraceDirectory* const traces_;
  PlanCache cache_;
  SingleFlight flights_;
  std::unique_ptr<RedisCache> redis_;  // null: no Redis
  std::atomic<bool> draining_{false};

  // Declared last, so destroyed first: its threads finish the queued work
  // and stop before the caches they use go.
  WorkerPool workers_;
};

}  // namespace memplan

#endif  // MEMPLAN_SERVER_SERVICE_H_
