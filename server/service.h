// The MemoryPlanner gRPC service: a thin handler from wire to core and back.
#ifndef MEMPLAN_SERVER_SERVICE_H_
#define MEMPLAN_SERVER_SERVICE_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>

#include "absl/status/statusor.h"
#include "core/planner.h"
#include "memplan/v1/memory_planner.grpc.pb.h"

namespace memplan {

class MemoryPlannerService final : public v1::MemoryPlanner::Service {
 public:
  // Answers one PlanMemory call: PlanRequest under the call's deadline, its
  // status converted by ToGrpcStatus (proto/grpc_status.h).
  grpc::Status PlanMemory(grpc::ServerContext* context,
                          const v1::PlanMemoryRequest* request,
                          v1::PlanMemoryResponse* response) override;

  // Returns the response to `request`: RequestToProblem (proto/convert.h),
  // the strategy's planner (core/planners.h) under `call` with its
  // search_deadline moved up to now + TimeBudget(request.options())
  // (default 100 ms), ValidatePlan (core/validator.h), PlanToResponse with
  // stats, the graph hash (proto/graph_hash.h) and cache status MISS.
  // planning_micros is the wall time of the planner alone, in microseconds.
  // Returns
  //   INVALID_ARGUMENT    a malformed request (RequestToProblem's errors),
  //                       a strategy this server has no planner for ("strategy
  //                       X is not available"), or a request the strategy
  //                       cannot honour (e.g. inductor with a fixed_offset);
  //   RESOURCE_EXHAUSTED  from the planner, unchanged: no plan found fits
  //                       options.capacity_bytes (the message says by how
  //                       many bytes);
  //   DEADLINE_EXCEEDED / CANCELLED  from `call`, before or while planning;
  //   INTERNAL            a plan that fails ValidatePlan (a planner bug).
  absl::StatusOr<v1::PlanMemoryResponse> PlanRequest(
      const v1::PlanMemoryRequest& request, const PlanContext& call) const;

  // Returns the number of PlanMemory calls being handled right now.
  int64_t calls_in_flight() const {
    return calls_in_flight_.load(std::memory_order_relaxed);
  }

 private:
  std::atomic<int64_t> calls_in_flight_{0};
};

}  // namespace memplan

#endif  // MEMPLAN_SERVER_SERVICE_H_
