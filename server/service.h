// The MemoryPlanner gRPC service: a thin handler from wire to core and back.
#ifndef MEMPLAN_SERVER_SERVICE_H_
#define MEMPLAN_SERVER_SERVICE_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>

#include "absl/status/statusor.h"
#include "core/planner.h"
#include "memplan/v1/memory_planner.grpc.pb.h"
#include "server/call_log.h"
#include "server/call_record.h"
#include "server/metrics.h"
#include "server/phases.h"
#include "server/trace_dir.h"

namespace memplan {

class MemoryPlannerService final : public v1::MemoryPlanner::Service {
 public:
  // Where the service reports its calls. Each may be null (not reported);
  // none is owned, and each must outlive the service.
  struct Observers {
    ServiceMetrics* metrics = nullptr;     // counts every call
    CallLog* log = nullptr;                // one line per call
    TraceDirectory* traces = nullptr;      // the trace of every plan
  };

  MemoryPlannerService() = default;
  explicit MemoryPlannerService(Observers observers) : observers_(observers) {}

  // Answers one PlanMemory call: PlanRequest under the call's deadline, its
  // status converted by ToGrpcStatus (proto/grpc_status.h); then reports
  // the call to the observers (metrics, log line).
  grpc::Status PlanMemory(grpc::ServerContext* context,
                          const v1::PlanMemoryRequest* request,
                          v1::PlanMemoryResponse* response) override;

  // Returns the response to `request`, timing each phase as a span of
  // `phases` (server/plan_trace.h lists them) and filling `record`:
  //   decode         RequestToProblem (proto/convert.h: wire to core, with
  //                  every check of the request), the strategy and the
  //                  time budget;
  //   hash           the graph hash (proto/graph_hash.h);
  //   cache_lookup   the plan cache (none yet: every request is a MISS);
  //   plan STRATEGY  the strategy's planner (core/planners.h) under `call`
  //                  with its search_deadline moved up to now +
  //                  TimeBudget(request.options()) (default 100 ms); one
  //                  span for all devices, as core plans them in one run
  //                  (args: winner, devices, pools);
  //   validate       ValidatePlan (core/validator.h): the independent check
  //                  of the plan before it is returned;
  //   encode         PlanToResponse with stats, the graph hash and cache
  //                  status MISS; planning_micros is the plan span's
  //                  duration in whole microseconds.
  // Then ends `phases`' root span and, when options.include_trace is set
  // or the service has a trace directory, builds the trace
  // (server/plan_trace.h): into response.trace_json when asked, and into
  // the directory (a failure to write it is logged as a warning, not
  // returned).
  // Returns
  //   INVALID_ARGUMENT    a malformed request (RequestToProblem's errors),
  //                       a strategy this server has no planner for ("strategy
  //                       X is not available"), or a request the strategy
  //                       cannot honour (e.g. inductor with a fixed_offset);
  //   RESOURCE_EXHAUSTED  from the planner, unchanged: no plan found fits
  //                       options.capacity_bytes (the message says by how
  //                       many bytes);
  //   DEADLINE_EXCEEDED / CANCELLED  from `call`, before or while planning;
  //   INTERNAL            a plan that fails ValidatePlan (a planner bug), or
  //                       a trace that cannot be built.
  absl::StatusOr<v1::PlanMemoryResponse> PlanRequest(
      const v1::PlanMemoryRequest& request, const PlanContext& call,
      PhaseRecorder& phases, CallRecord& record) const;

  // As above, with spans and record thrown away.
  absl::StatusOr<v1::PlanMemoryResponse> PlanRequest(
      const v1::PlanMemoryRequest& request, const PlanContext& call) const;

  // Returns the number of PlanMemory calls being handled right now.
  int64_t calls_in_flight() const {
    return calls_in_flight_.load(std::memory_order_relaxed);
  }

 private:
  // Adds the trace of a successful plan to `response` and/or the trace
  // directory, as PlanRequest says.
  absl::Status Trace(const Problem& problem, const Plan& plan,
                     const std::string& strategy, PhaseRecorder& phases,
                     bool include_trace,
                     v1::PlanMemoryResponse& response) const;

  const Observers observers_;
  std::atomic<int64_t> calls_in_flight_{0};
};

}  // namespace memplan

#endif  // MEMPLAN_SERVER_SERVICE_H_
