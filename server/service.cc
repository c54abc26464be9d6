#include "server/service.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/planners.h"
#include "core/validator.h"
#include "proto/convert.h"
#include "proto/graph_hash.h"
#include "proto/grpc_status.h"
#include "server/plan_trace.h"

namespace memplan {
namespace {

constexpr char kPlanMemory[] = "PlanMemory";

// Returns the call's deadline; gRPC reports "none" as time_point::max().
absl::Time DeadlineOf(const grpc::ServerContext& context) {
  const std::chrono::system_clock::time_point deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) {
    return absl::InfiniteFuture();
  }
  return absl::FromChrono(deadline);
}

// Returns the devices of `plan`'s pools, each once, in pool order.
std::vector<std::string> PoolDevices(const Plan& plan) {
  std::vector<std::string> devices;
  absl::flat_hash_set<std::string> seen;
  for (const Pool& pool : plan.pools) {
    if (seen.insert(pool.device).second) devices.push_back(pool.device);
  }
  return devices;
}

}  // namespace

grpc::Status MemoryPlannerService::PlanMemory(
    grpc::ServerContext* context, const v1::PlanMemoryRequest* request,
    v1::PlanMemoryResponse* response) {
  calls_in_flight_.fetch_add(1, std::memory_order_relaxed);
  if (observers_.metrics != nullptr) {
    observers_.metrics->CallStarted(kPlanMemory);
  }
  PhaseRecorder phases(kPlanMemory);
  CallRecord record;
  record.method = kPlanMemory;
  PlanContext plan_context;
  plan_context.deadline = DeadlineOf(*context);
  absl::StatusOr<v1::PlanMemoryResponse> result =
      PlanRequest(*request, plan_context, phases, record);
  record.duration = phases.Elapsed();
  record.code = result.status().code();
  record.message = std::string(result.status().message());
  if (observers_.metrics != nullptr) observers_.metrics->CallFinished(record);
  if (observers_.log != nullptr) observers_.log->LogCall(record);
  calls_in_flight_.fetch_sub(1, std::memory_order_relaxed);
  if (!result.ok()) return ToGrpcStatus(result.status());
  *response = *std::move(result);
  return grpc::Status::OK;
}

absl::StatusOr<v1::PlanMemoryResponse> MemoryPlannerService::PlanRequest(
    const v1::PlanMemoryRequest& request, const PlanContext& call) const {
  PhaseRecorder phases(kPlanMemory);
  CallRecord record;
  return PlanRequest(request, call, phases, record);
}

absl::StatusOr<v1::PlanMemoryResponse> MemoryPlannerService::PlanRequest(
    const v1::PlanMemoryRequest& request, const PlanContext& call,
    PhaseRecorder& phases, CallRecord& record) const {
  PhaseRecorder::Scope decode = phases.Span("decode");
  absl::StatusOr<Problem> problem = RequestToProblem(request);
  if (!problem.ok()) return problem.status();
  absl::StatusOr<std::string> strategy =
      StrategyName(request.options().strategy());
  if (!strategy.ok()) return strategy.status();
  absl::StatusOr<absl::Duration> budget = TimeBudget(request.options());
  if (!budget.ok()) return budget.status();
  record.buffers = static_cast<int64_t>(problem->buffers.size());
  absl::flat_hash_set<absl::string_view> devices;
  for (const Buffer& buffer : problem->buffers) devices.insert(buffer.device);
  record.devices = static_cast<int64_t>(devices.size());
  record.strategy = *strategy;
  decode.AddArg("buffers", record.buffers);
  decode.AddArg("request_bytes", static_cast<int64_t>(request.ByteSizeLong()));
  decode.End();

  const Planner* planner = FindPlanner(*strategy);
  if (planner == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "options.strategy: strategy ", *strategy,
        " is not available on this server"));
  }
  if (absl::Status status = call.Check(); !status.ok()) return status;

  PhaseRecorder::Scope hash = phases.Span("hash");
  record.graph_hash = GraphHash(*problem, *strategy, *budget);
  hash.End();

  // The plan cache (issue 4) looks the hash up here; until it exists every
  // request is planned.
  PhaseRecorder::Scope cache_lookup = phases.Span("cache_lookup");
  record.cache = v1::CACHE_STATUS_MISS;
  cache_lookup.AddArg("status", "MISS");
  cache_lookup.End();

  PhaseRecorder::Scope plan_span =
      phases.Span(absl::StrCat("plan ", *strategy));
  PlanContext context = call;
  // The budget counts from now; a caller's earlier search deadline stands.
  context.search_deadline =
      std::min(call.search_deadline, absl::Now() + *budget);
  absl::StatusOr<Plan> plan = planner->PlanProblem(*problem, context);
  plan_span.End();
  record.planned = true;
  record.planning_time = plan_span.span().duration();
  if (!plan.ok()) {
    plan_span.AddArg("error", plan.status().ToString());
    return plan.status();
  }
  plan_span.AddArg("winner", plan->planner.empty() ? *strategy : plan->planner);
  plan_span.AddArg("devices", absl::StrJoin(PoolDevices(*plan), ","));
  plan_span.AddArg("pools", static_cast<int64_t>(plan->pools.size()));

  PhaseRecorder::Scope validate = phases.Span("validate");
  if (absl::Status status = ValidatePlan(*problem, *plan); !status.ok()) {
    return absl::InternalError(
        absl::StrCat("planner \"", *strategy,
                     "\" made a plan that fails validation: ",
                     status.message()));
  }
  validate.End();

  PhaseRecorder::Scope encode = phases.Span("encode");
  ResponseInfo info;
  info.graph_hash = record.graph_hash;
  info.planner = *strategy;
  info.planning_time = record.planning_time;
  info.cache = record.cache;
  absl::StatusOr<v1::PlanMemoryResponse> response =
      PlanToResponse(*problem, *plan, info);
  encode.End();
  if (!response.ok()) return response.status();
  record.planner = response->stats().planner();
  record.total_pool_bytes = response->stats().total_pool_bytes();
  record.lower_bound_bytes = response->stats().lower_bound_bytes();

  phases.Finish();
  if (absl::Status status =
          Trace(*problem, *plan, *strategy, phases,
                request.options().include_trace(), *response);
      !status.ok()) {
    return status;
  }
  return response;
}

absl::Status MemoryPlannerService::Trace(
    const Problem& problem, const Plan& plan, const std::string& strategy,
    PhaseRecorder& phases, bool include_trace,
    v1::PlanMemoryResponse& response) const {
  if (!include_trace && observers_.traces == nullptr) return absl::OkStatus();
  TraceInfo info;
  info.graph_hash = response.graph_hash();
  info.strategy = strategy;
  info.planner = response.stats().planner();
  absl::StatusOr<std::string> trace =
      PlanTraceJson(problem, plan, phases.spans(), info);
  if (!trace.ok()) return trace.status();
  if (observers_.traces != nullptr) {
    const absl::Status written =
        observers_.traces->Write(response.graph_hash(), *trace);
    if (!written.ok() && observers_.log != nullptr) {
      observers_.log->Log(LogLevel::kWarning,
                          absl::StrCat("trace not written: ",
                                       written.ToString()));
    }
  }
  if (include_trace) response.set_trace_json(*std::move(trace));
  return absl::OkStatus();
}

}  // namespace memplan
