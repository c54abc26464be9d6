// Planning one request that the service's caches could not answer: wire to
// core (the request resolved within the server's limits), the core (the
// strategy's planner under the call's deadline and the server's planning
// limit, then the independent validator), core to wire (the response).
#ifndef MEMPLAN_SERVER_REQUEST_PLANNER_H_
#define MEMPLAN_SERVER_REQUEST_PLANNER_H_

#include <string>

#include "absl/status/statusor.h"
#include "core/planner.h"
#include "memplan/v1/memory_planner.pb.h"
#include "proto/convert.h"
#include "server/call_record.h"
#include "server/metrics.h"
#include "server/phases.h"
#include "server/request_limits.h"

namespace memplan {

class RequestPlanner {
 public:
  // A plan made now: the response (`cache` unset) and whether it may be
  // stored under its graph hash.
  struct Planned {
    v1::PlanMemoryResponse response;
    // False for a plan of a strategy that searches until its time budget
    // ("optimal", "auto") whose caller's deadline came before the end of
    // the budget, unless it is proven optimal: the deadline may have cut
    // the search short, and the graph hash names the plan of the budget.
    bool storable = true;
  };

  // Plans within `limits`, counting each planner started in `metrics`
  // (not owned; must outlive this).
  RequestPlanner(const RequestLimits& limits, ServiceMetrics& metrics)
      : limits_(limits), metrics_(metrics) {}

  // Returns the first error of CheckRequestLimits (RESOURCE_EXHAUSTED) and
  // ResolveRequest (INVALID_ARGUMENT), or the resolved request with its
  // time budget lowered to limits.max_planning_time (before the graph hash
  // is taken: it names the budget searched).
  absl::StatusOr<ResolvedRequest> Resolve(
      const v1::PlanMemoryRequest& request) const;

  // Plans `resolved` (graph hash `graph_hash`, 32 hex characters) under
  // `call`: the strategy's planner (core/strategies.h) with its
  // search_deadline moved up to now + the time budget and its deadline up
  // to now + limits.max_planning_time, ValidatePlan (core/validator.h),
  // AddSymbolicPlan, PlanToResponse with stats and the graph hash; the
  // spans "plan STRATEGY" (with the planner's runs), validate and encode in
  // `phases`; planned, planning_time (the planner alone), planner,
  // total_pool_bytes and lower_bound_bytes in `record`.
  // Returns
  //   INVALID_ARGUMENT    a strategy this server has no planner for
  //                       ("strategy X is not available"), or a request the
  //                       strategy cannot honour (e.g. inductor with a
  //                       fixed_offset);
  //   RESOURCE_EXHAUSTED  from the planner, unchanged: no plan found fits
  //                       options.capacity_bytes (the message says by how
  //                       many bytes); planning that ran past
  //                       max_planning_time before the call's deadline;
  //   DEADLINE_EXCEEDED / CANCELLED  from `call`, before or while planning;
  //   INTERNAL            a plan that fails ValidatePlan (a planner bug).
  absl::StatusOr<Planned> PlanResolved(const ResolvedRequest& resolved,
                                       const std::string& graph_hash,
                                       const PlanContext& call,
                                       PhaseRecorder& phases,
                                       CallRecord& record) const;

 private:
  const RequestLimits limits_;
  ServiceMetrics& metrics_;
};

}  // namespace memplan

#endif  // MEMPLAN_SERVER_REQUEST_PLANNER_H_
