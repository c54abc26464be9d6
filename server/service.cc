#include "server/service.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/planners.h"
#include "core/validator.h"
#include "proto/convert.h"
#include "proto/graph_hash.h"
#include "proto/grpc_status.h"

namespace memplan {
namespace {

// Returns the call's deadline; gRPC reports "none" as time_point::max().
absl::Time DeadlineOf(const grpc::ServerContext& context) {
  const std::chrono::system_clock::time_point deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) {
    return absl::InfiniteFuture();
  }
  return absl::FromChrono(deadline);
}

}  // namespace

grpc::Status MemoryPlannerService::PlanMemory(
    grpc::ServerContext* context, const v1::PlanMemoryRequest* request,
    v1::PlanMemoryResponse* response) {
  calls_in_flight_.fetch_add(1, std::memory_order_relaxed);
  PlanContext plan_context;
  plan_context.deadline = DeadlineOf(*context);
  absl::StatusOr<v1::PlanMemoryResponse> result =
      PlanRequest(*request, plan_context);
  calls_in_flight_.fetch_sub(1, std::memory_order_relaxed);
  if (!result.ok()) return ToGrpcStatus(result.status());
  *response = *std::move(result);
  return grpc::Status::OK;
}

absl::StatusOr<v1::PlanMemoryResponse> MemoryPlannerService::PlanRequest(
    const v1::PlanMemoryRequest& request, const PlanContext& call) const {
  PoolLines lines;
  absl::StatusOr<Problem> problem = RequestToProblem(request, &lines);
  if (!problem.ok()) return problem.status();
  absl::StatusOr<std::string> strategy =
      StrategyName(request.options().strategy());
  if (!strategy.ok()) return strategy.status();
  absl::StatusOr<absl::Duration> budget = TimeBudget(request.options());
  if (!budget.ok()) return budget.status();
  const Planner* planner = FindPlanner(*strategy);
  if (planner == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "options.strategy: strategy ", *strategy,
        " is not available on this server"));
  }
  if (absl::Status status = call.Check(); !status.ok()) return status;

  const absl::Time start = absl::Now();
  PlanContext context = call;
  // The budget counts from now; a caller's earlier search deadline stands.
  context.search_deadline = std::min(call.search_deadline, start + *budget);
  absl::StatusOr<Plan> plan = planner->PlanProblem(*problem, context);
  const absl::Duration planning_time = absl::Now() - start;
  if (!plan.ok()) return plan.status();

  if (absl::Status status = ValidatePlan(*problem, *plan); !status.ok()) {
    return absl::InternalError(
        absl::StrCat("planner \"", *strategy,
                     "\" made a plan that fails validation: ",
                     status.message()));
  }
  ResponseInfo info;
  const PoolLines* event_lines =
      request.events_size() > 0 ? &lines : nullptr;
  info.graph_hash = GraphHash(*problem, *strategy, *budget, event_lines);
  info.lines = event_lines;
  info.planner = *strategy;
  info.planning_time = planning_time;
  info.cache = v1::CACHE_STATUS_MISS;
  return PlanToResponse(*problem, *plan, info);
}

}  // namespace memplan
