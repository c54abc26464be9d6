// Conversion between the wire API (memplan.v1, proto/memplan/v1/
// memory_planner.proto) and the planning core (core/types.h).
//
// RequestToProblem is the one place a request is validated: the checks that
// only the wire can fail (a missing field, an unknown enum number, a negative
// alignment), then the core's ValidateProblem. Every message names the
// offending buffer by index and first name, and the field in the wire's
// spelling:
//   buffers[3] ("buf7"): size_bytes is missing
#ifndef MEMPLAN_PROTO_CONVERT_H_
#define MEMPLAN_PROTO_CONVERT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/types.h"
#include "memplan/v1/memory_planner.pb.h"

namespace memplan {

// The strategy a request without one gets.
inline constexpr absl::string_view kDefaultStrategy = "inductor";

// Returns the core problem described by `request`: buffers in the request's
// order (sizes in bytes, live ranges half-open in timesteps), the pool mode
// (POOL_MODE_UNSPECIFIED: intermediates) and the alignment in bytes (0: 64).
// Returns INVALID_ARGUMENT, naming the buffer (index and first name) and the
// field, when
//   - a buffer has no size_bytes or no live_range;
//   - options.strategy or options.pool_mode is a number the enum does not
//     define (proto3 enums are open, so the wire can carry any number);
//   - options.alignment is negative;
//   - core ValidateProblem (core/problem.h) fails: no buffers, a missing or
//     duplicate name (within one buffer or across buffers), a size outside
//     [0, 2^40], begin > end or outside [0, 2^53], an alignment that is not a
//     power of two in [1, 2^30].
absl::StatusOr<Problem> RequestToProblem(const v1::PlanMemoryRequest& request);

// Returns the planner name (core/planners.h FindPlanner) for `strategy`:
// "inductor" for STRATEGY_UNSPECIFIED and STRATEGY_INDUCTOR. Returns
// INVALID_ARGUMENT for a number the enum does not define.
absl::StatusOr<std::string> StrategyName(v1::Strategy strategy);

// Returns the core pool mode for `mode` (POOL_MODE_UNSPECIFIED:
// kIntermediates). Returns INVALID_ARGUMENT for a number the enum does not
// define.
absl::StatusOr<PoolMode> PoolModeFromProto(v1::PoolMode mode);

// Returns the wire value of `mode` (never POOL_MODE_UNSPECIFIED).
v1::PoolMode PoolModeToProto(PoolMode mode);

// Returns a request describing `problem` with `strategy` (the inverse of
// RequestToProblem; alignment always explicit). For tests and benchmarks
// that build core problems.
v1::PlanMemoryRequest ProblemToRequest(
    const Problem& problem,
    v1::Strategy strategy = v1::STRATEGY_UNSPECIFIED);

// What a response says beyond the plan itself.
struct ResponseInfo {
  std::string graph_hash;  // 32 hex characters (proto/graph_hash.h)
  std::string planner;     // the strategy's name, e.g. "inductor"
  absl::Duration planning_time;  // wall time of the planner alone
  v1::CacheStatus cache = v1::CACHE_STATUS_MISS;
};

// Returns the response for `plan`, a plan of `problem` (assignments parallel
// to problem.buffers): pools in plan order (name, device, size in bytes),
// assignments as (pool name, offset in bytes), and stats as DESIGN.md
// "Stats" from core/stats.h (lower_bound_bytes = LowerBound, total_pool_bytes
// = TotalPoolBytes, peak_bytes = PeakPoolBytes, all in bytes summed over
// devices; planning_micros = info.planning_time in whole microseconds).
// Returns INTERNAL when `plan` does not fit `problem` (assignment count, a
// pool index out of range): a planner bug.
absl::StatusOr<v1::PlanMemoryResponse> PlanToResponse(
    const Problem& problem, const Plan& plan, const ResponseInfo& info);

// Returns the core plan in `response`: pools in order, each assignment's
// pool name resolved to its index. Returns INVALID_ARGUMENT when a pool name
// repeats or an assignment names no pool of the response.
absl::StatusOr<Plan> ResponseToPlan(const v1::PlanMemoryResponse& response);

}  // namespace memplan

#endif  // MEMPLAN_PROTO_CONVERT_H_
