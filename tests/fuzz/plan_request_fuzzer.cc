// Fuzz target: bytes as a PlanMemory request, through the service's own
// path (decode, ResolveRequest's validation, every strategy's planner, the
// validator, the response), as MemoryPlannerService::PlanRequest runs it
// on a cache miss.
//
// Any input must give either a response or a clear error: the bytes parse
// or are refused (the server answers INVALID_ARGUMENT); a parsed request
// resolves or gets INVALID_ARGUMENT; every strategy then returns a plan or
// INVALID_ARGUMENT / RESOURCE_EXHAUSTED / DEADLINE_EXCEEDED. The target
// aborts (a finding) on anything else, INTERNAL included (a plan that
// failed the service's validation), and when a returned plan
//   - fails the independent validator (core/validator.h) after a round trip
//     through the wire form (ResponseToPlan),
//   - has a graph_hash other than the client's RequestGraphHash,
//   - has stats out of order (lower_bound <= mode_lower_bound <=
//     total_pool_bytes, lower_bound <= peak <= total, retained <= total;
//     per device 0 <= predicted_peak_lower_bound <= predicted_peak and
//     baseline_peak >= 0, the totals the devices' sums),
//   - or, for the strategies that search nothing (inductor, best_fit, and
//     partition where it plans), differs when planned again (the same
//     request gives the same bytes).
// Crashes, hangs (-timeout) and memory blow-ups (-rss_limit_mb) are
// findings too. Searches run under a small work budget (PlanContext::
// work_left), so one input costs milliseconds and runs deterministically.
//
// Built with libFuzzer (clang, MEMPLAN_FUZZ) or, elsewhere, with
// replay_main.cc, which runs given files once.
#include <google/protobuf/stubs/logging.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/planner.h"
#include "core/types.h"
#include "core/validator.h"
#include "memplan/v1/memory_planner.pb.h"
#include "proto/convert.h"
#include "proto/graph_hash.h"
#include "server/service.h"

namespace memplan {
namespace {

// Search steps (PlanContext::Check calls, each about 128 search nodes) one
// strategy may spend on one input.
constexpr int64_t kSearchWork = 8;

constexpr v1::Strategy kStrategies[] = {
    v1::STRATEGY_INDUCTOR, v1::STRATEGY_BEST_FIT, v1::STRATEGY_OPTIMAL,
    v1::STRATEGY_AUTO, v1::STRATEGY_PARTITION};

// Reports a finding and aborts (libFuzzer saves the input).
[[noreturn]] void Finding(const std::string& what,
                          const v1::PlanMemoryRequest& request) {
  std::fprintf(stderr, "FINDING: %s\nrequest: %s\n", what.c_str(),
               request.ShortDebugString().substr(0, 4000).c_str());
  std::abort();
}

const MemoryPlannerService& Service() {
  static const MemoryPlannerService* const service = [] {
    MemoryPlannerService::Options options;
    options.cache_bytes = 0;  // PlanRequest plans; the cache is not used
    options.worker_threads = 1;
    return new MemoryPlannerService(options);
  }();
  return *service;
}

// The codes a request may legitimately end with: bad input, no plan within
// the capacity, or a search whose budget ran out before any plan fitted.
bool Expected(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kDeadlineExceeded:
      return !status.message().empty();
    default:
      return false;
  }
}

// Returns `request` planned by the service under a small search budget.
absl::StatusOr<v1::PlanMemoryResponse> PlanBudgeted(
    const v1::PlanMemoryRequest& request) {
  int64_t work = kSearchWork;
  PlanContext call;
  call.work_left = &work;
  return Service().PlanRequest(request, call);
}

// Aborts unless `response` is a valid answer to `request`.
void CheckResponse(const v1::PlanMemoryRequest& request,
                   const v1::PlanMemoryResponse& response) {
  const absl::StatusOr<Problem> problem = RequestToProblem(request);
  if (!problem.ok()) {
    Finding(absl::StrCat("planned, but RequestToProblem fails: ",
                         problem.status().ToString()),
            request);
  }
  const absl::StatusOr<Plan> plan = ResponseToPlan(response);
  if (!plan.ok()) {
    Finding(absl::StrCat("the response does not convert back: ",
                         plan.status().ToString()),
            request);
  }
  if (absl::Status valid = ValidatePlan(*problem, *plan); !valid.ok()) {
    Finding(absl::StrCat("invalid plan: ", valid.ToString()), request);
  }
  const absl::StatusOr<std::string> hash = RequestGraphHash(request);
  if (!hash.ok() || *hash != response.graph_hash()) {
    Finding(absl::StrCat("graph_hash ", response.graph_hash(),
                         ", the client computes ",
                         hash.ok() ? *hash : hash.status().ToString()),
            request);
  }
  const v1::PlanStats& stats = response.stats();
  if (!(stats.lower_bound_bytes() <= stats.mode_lower_bound_bytes() &&
        stats.mode_lower_bound_bytes() <= stats.total_pool_bytes() &&
        stats.lower_bound_bytes() <= stats.peak_bytes() &&
        stats.peak_bytes() <= stats.total_pool_bytes() &&
        stats.retained_bytes() <= stats.total_pool_bytes() &&
        stats.lower_bound_bytes() >= 0)) {
    Finding(absl::StrCat("stats out of order: ", stats.ShortDebugString()),
            request);
  }
  // The whole-graph peaks: 0 <= lower bound <= predicted, baseline >= 0,
  // reserved bytes >= 0, allocations >= 0 (with pools at most the pools
  // plus default's, which include every unplanned one), per device and
  // summed over the devices.
  int64_t predicted = 0, baseline = 0, lower_bound = 0;
  int64_t predicted_reserved = 0, baseline_reserved = 0;
  int64_t predicted_allocations = 0, baseline_allocations = 0;
  for (const v1::DeviceStats& device : stats.devices()) {
    if (!(0 <= device.predicted_peak_lower_bound_bytes() &&
          device.predicted_peak_lower_bound_bytes() <=
              device.predicted_peak_bytes() &&
          device.baseline_peak_bytes() >= 0 &&
          device.predicted_reserved_bytes() >= 0 &&
          device.baseline_reserved_bytes() >= 0 &&
          device.predicted_allocations() >= 0 &&
          device.baseline_allocations() >= 0 &&
          device.predicted_allocations() <=
              response.pools_size() + device.baseline_allocations())) {
      Finding(absl::StrCat("whole-graph peaks out of order: ",
                           device.ShortDebugString()),
              request);
    }
    predicted += device.predicted_peak_bytes();
    baseline += device.baseline_peak_bytes();
    lower_bound += device.predicted_peak_lower_bound_bytes();
    predicted_reserved += device.predicted_reserved_bytes();
    baseline_reserved += device.baseline_reserved_bytes();
    predicted_allocations += device.predicted_allocations();
    baseline_allocations += device.baseline_allocations();
  }
  if (predicted != stats.predicted_peak_bytes() ||
      predicted_reserved != stats.predicted_reserved_bytes() ||
      baseline_reserved != stats.baseline_reserved_bytes() ||
      predicted_allocations != stats.predicted_allocations() ||
      baseline_allocations != stats.baseline_allocations() ||
      baseline != stats.baseline_peak_bytes() ||
      lower_bound != stats.predicted_peak_lower_bound_bytes()) {
    Finding(absl::StrCat("whole-graph peaks are not the devices' sums: ",
                         stats.ShortDebugString()),
            request);
  }
}

// Returns `response` serialized without its wall-clock time.
std::string WithoutTime(v1::PlanMemoryResponse response) {
  response.mutable_stats()->set_planning_micros(0);
  return response.SerializeAsString();
}

void FuzzOne(const uint8_t* data, size_t size) {
  // protobuf logs every string field that is not UTF-8 as an error; the
  // fuzzer makes them all the time.
  static const bool quiet = [] {
    google::protobuf::SetLogHandler([](google::protobuf::LogLevel, const char*,
                                       int, const std::string&) {});
    return true;
  }();
  (void)quiet;
  v1::PlanMemoryRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return;

  const absl::StatusOr<ResolvedRequest> resolved = ResolveRequest(request);
  if (!resolved.ok()) {
    if (resolved.status().code() != absl::StatusCode::kInvalidArgument ||
        resolved.status().message().empty()) {
      Finding(absl::StrCat("ResolveRequest: ", resolved.status().ToString()),
              request);
    }
    return;
  }
  for (const v1::Strategy strategy : kStrategies) {
    v1::PlanMemoryRequest variant = request;
    variant.mutable_options()->set_strategy(strategy);
    const absl::StatusOr<v1::PlanMemoryResponse> response =
        PlanBudgeted(variant);
    if (!response.ok()) {
      if (!Expected(response.status())) {
        Finding(absl::StrCat(v1::Strategy_Name(strategy), ": ",
                             response.status().ToString()),
                variant);
      }
      continue;
    }
    CheckResponse(variant, *response);
    // Partition searches nothing either (auto and partition fall back to
    // searches where it does not apply: stats.planner says which planned).
    if (strategy == v1::STRATEGY_INDUCTOR ||
        strategy == v1::STRATEGY_BEST_FIT ||
        response->stats().planner() == "partition") {
      const absl::StatusOr<v1::PlanMemoryResponse> again =
          PlanBudgeted(variant);
      if (!again.ok() || WithoutTime(*again) != WithoutTime(*response)) {
        Finding(absl::StrCat(v1::Strategy_Name(strategy),
                             ": planned twice, different answers"),
                variant);
      }
    }
  }
}

}  // namespace
}  // namespace memplan

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  memplan::FuzzOne(data, size);
  return 0;
}
