#include "server/request_planner.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/strategies.h"
#include "core/symbolic/symbolic_plan.h"
#include "core/validator.h"

namespace memplan {
absl::StatusOr<ResolvedRequest> RequestPlanner::Resolve(
    const v1::PlanMemoryRequest& request) const {
  if (absl::Status status = CheckRequestLimits(request, limits_);
      !status.ok()) {
    return status;
  }
  absl::StatusOr<ResolvedRequest> resolved = ResolveRequest(request);
  if (!resolved.ok()) return resolved.status();
  // Before the graph hash is taken: it names the budget searched.
  resolved->time_budget =
      std::min(resolved->time_budget, limits_.max_planning_time);
  return resolved;
}

absl::StatusOr<RequestPlanner::Planned> RequestPlanner::PlanResolved(
    const ResolvedRequest& resolved, const std::string& graph_hash,
    const PlanContext& call, PhaseRecorder& phases, CallRecord& record) const {
  const Planner* planner = FindPlanner(resolved.strategy);
  if (planner == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.strategy: strategy ", resolved.strategy,
                     " is not available on this server"));
  }
  if (absl::Status status = call.Check(); !status.ok()) return status;

  PhaseRecorder::Scope plan_span =
      phases.Span(absl::StrCat("plan ", resolved.strategy));
  const absl::Time start = absl::Now();
  PlanContext context = WithWrapperLines(resolved, call);
  // The budget counts from now; a caller's earlier search deadline stands.
  context.search_deadline =
      std::min(call.search_deadline, start + resolved.time_budget);
  const absl::Time limit = start + limits_.max_planning_time;
  context.deadline = std::min(call.deadline, limit);
  metrics_.RecordPlannerRun();
  absl::StatusOr<Plan> plan = planner->PlanProblem(resolved.problem, context);
  plan_span.End();
  record.planned = true;
  record.planning_time = plan_span.span().duration();
  if (!plan.ok()) {
    plan_span.AddArg("error", plan.status().ToString());
    if (plan.status().code() == absl::StatusCode::kDeadlineExceeded &&
        limit < call.deadline) {
      // This server's limit, not the caller's deadline, stopped it: asking
      // again with a longer deadline would not help.
      return absl::ResourceExhaustedError(
          absl::StrCat("planning took longer than this server's limit of ",
                       absl::FormatDuration(limits_.max_planning_time),
                       " (--max_planning_time); strategy ", resolved.strategy));
    }
    return plan.status();
  }
  // The runs inside: per device and strategy (auto's candidates too),
  // within the plan span (a copy: adding spans moves the recorder's).
  const PhaseSpan plan_bounds = plan_span.span();
  absl::flat_hash_set<absl::string_view> seen;
  std::vector<absl::string_view> devices;  // of the pools, in pool order
  for (const Pool& pool : plan->pools) {
    if (seen.insert(pool.device).second) devices.push_back(pool.device);
  }
  for (const PlannerRun& run : plan->runs) {
    phases.AddSpan(
        absl::StrCat(run.strategy, " ", run.device), run.start, run.end,
        {{"strategy", run.strategy}, {"device", run.device}}, &plan_bounds);
  }
  plan_span.AddArg("winner",
                   plan->planner.empty() ? resolved.strategy : plan->planner);
  plan_span.AddArg("devices", absl::StrJoin(devices, ","));
  plan_span.AddArg("pools", static_cast<int64_t>(plan->pools.size()));

  PhaseRecorder::Scope validate = phases.Span("validate");
  if (absl::Status status = ValidatePlan(resolved.problem, *plan);
      !status.ok()) {
    return absl::InternalError(absl::StrCat(
        "planner \"", resolved.strategy,
        "\" made a plan that fails validation: ", status.message()));
  }
  validate.End();

  // Under dynamic shapes: symbolic pool sizes and offsets for plans whose
  // planner did not give them (every strategy but inductor).
  if (absl::Status status = AddSymbolicPlan(resolved.problem, *plan);
      !status.ok()) {
    return status;
  }

  PhaseRecorder::Scope encode = phases.Span("encode");
  ResponseInfo info;
  info.graph_hash = graph_hash;
  info.planner = resolved.strategy;
  info.lines = resolved.events ? &resolved.lines : nullptr;
  info.timeline = &resolved.timeline;
  info.planning_time = record.planning_time;
  info.cache = v1::CACHE_STATUS_UNSPECIFIED;  // set per response
  absl::StatusOr<v1::PlanMemoryResponse> response =
      PlanToResponse(resolved.problem, *plan, info);
  encode.End();
  if (!response.ok()) return response.status();
  record.planner = response->stats().planner();
  record.total_pool_bytes = response->stats().total_pool_bytes();
  record.lower_bound_bytes = response->stats().lower_bound_bytes();
  Planned planned;
  planned.response = *std::move(response);
  // A search bounded by the caller's deadline rather than by its time
  // budget may have been cut short by it.
  planned.storable = call.deadline >= context.search_deadline ||
                     plan->proven_optimal ||
                     !planner->capabilities().searches_until_budget;
  return planned;
}

}  // namespace memplan
