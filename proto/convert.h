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
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/entry_state.h"
#include "core/graph_memory.h"
#include "core/inductor/wrapper_lines.h"
#include "core/planner.h"
#include "core/types.h"
#include "memplan/v1/memory_planner.pb.h"

namespace memplan {

// The strategy a request without one gets.
inline constexpr absl::string_view kDefaultStrategy = "auto";

// How long a search strategy may run when options.time_budget is unset.
inline constexpr absl::Duration kDefaultTimeBudget = absl::Milliseconds(100);

// The longest options.time_budget accepted.
inline constexpr absl::Duration kMaxTimeBudget = absl::Hours(1);

// Returns the core problem described by `request`: buffers in the request's
// order (sizes in bytes, live ranges half-open in timesteps, per-buffer
// alignment in bytes (0: the problem's), fixed_offset in bytes (unset:
// nullopt, free)), the pool mode (POOL_MODE_UNSPECIFIED: intermediates), the
// alignment in bytes (0: 64) and the per-device capacity in bytes (0: none).
// Returns INVALID_ARGUMENT, naming the buffer (index and first name) and the
// field, when
//   - a buffer has no size_bytes or no live_range;
//   - options.strategy or options.pool_mode is a number the enum does not
//     define (proto3 enums are open, so the wire can carry any number);
//   - options.alignment or a buffer's fixed_offset is negative;
//   - options.time_budget is not a valid duration (TimeBudget);
//   - core ValidateProblem (core/problem.h) fails: no buffers, a missing or
//     duplicate name (within one buffer or across buffers), a size outside
//     [0, 2^40], begin > end or outside [0, 2^53], an alignment that is not
//     a power of two in [1, 2^30] (a buffer's may also be 0), a
//     fixed_offset above 2^40 or not a multiple of the buffer's effective
//     alignment, a negative options.capacity_bytes, a symbolic_size that
//     does not parse (the message gives the 0-based position in it and what
//     was expected) or is a constant other than size_bytes.
// A request with events (instead of buffers) gets the buffer groups core
// GroupWrapperLines derives from them (core/inductor/wrapper_lines.h), `*lines`
// (when not null) their mapping to events and `*program` (when not null)
// the events as wrapper lines (a FREE_IF_NOT_REUSED with size_bytes has
// has_allocation); then INVALID_ARGUMENT also names
// an event (`events[i] ("name")`) with an undefined kind, an ALLOCATE
// without size_bytes or with a malformed symbolic_size, a negative
// scheduler_node, a scheduler_node_bytes entry outside [-2^60, 2^60], or
// what GroupWrapperLines rejects, and a request that gives more than one of
// buffers, events and nodes, or output_names / removed_buffers /
// scheduler_node_bytes without events (output_names: or nodes). A request
// with nodes gets the groups of WrapperLinesFromNodes's lines (`*lines` and
// `*program` are those lines, the service's own, not the caller's);
// INVALID_ARGUMENT also names a write (`nodes[i].writes[j]`) without
// size_bytes, with a malformed symbolic_size, with an empty or repeated
// name, or an in_place_of the node does not read.
absl::StatusOr<Problem> RequestToProblem(const v1::PlanMemoryRequest& request,
                                         PoolLines* lines = nullptr,
                                         WrapperProgram* program = nullptr);

// A request resolved for planning: the problem, the strategy's planner name
// and the search's time budget (defaults filled in).
struct ResolvedRequest {
  Problem problem;
  std::string strategy;        // e.g. "auto"; never empty
  absl::Duration time_budget;  // options.time_budget, or kDefaultTimeBudget
  bool events = false;         // the request gave events
  // With events or nodes: the wrapper lines and their groups
  // (RequestToProblem); for nodes the service's own lines. Empty for
  // buffers.
  PoolLines lines;
  WrapperProgram program;
  // The graph's memory on one time axis (core/graph_memory.h): of the lines
  // (core/inductor/wrapper_memory.h WholeGraphTimeline), else of the
  // buffers.
  GraphTimeline timeline;
  // With a forward (request.forward): its message serialized
  // deterministically, which the graph hash covers; else empty.
  std::string forward_key;
  // With a forward: the training step around this backward graph
  // (core/entry_state.h), for the planners that judge a backward's pools
  // by the step that follows; else null.
  std::shared_ptr<const TrainingStep> step;
};

// Returns the forward of a backward request that carries it
// (request.forward), for its entry state (core/entry_state.h): the
// forward's request resolved, its timeline from its own start, its plan
// (forward.plan, validated against it) and the input sources.
// Returns INVALID_ARGUMENT naming the field: a forward on a request
// without events; forward.request without events, with a forward of its
// own, or failing RequestToProblem (`forward.request.<field>`); forward.plan
// missing, malformed or not a valid plan of it; an input source without an
// input, repeating one, or whose forward_output is not one of
// forward.request.output_names.
struct ForwardGraphState {
  Problem problem;
  Plan plan;
  GraphTimeline timeline;
  std::vector<std::string> outputs;
  std::vector<InputSource> sources;
};
absl::StatusOr<ForwardGraphState> ForwardEntryState(
    const v1::PlanMemoryRequest& request);

// Returns `context` with the wrapper lines of `resolved` attached
// (PlanContext::wrapper_program and wrapper_lines, for strategies "reuse"
// and "nnc") when the request gave events or nodes, its timeline
// (PlanContext::timeline) and its training step (PlanContext::step, with a
// forward); `resolved` must outlive the planning run.
PlanContext WithWrapperLines(const ResolvedRequest& resolved,
                             PlanContext context);

// Returns RequestToProblem(request) with StrategyName and TimeBudget of its
// options and its timeline, or the first of their INVALID_ARGUMENT errors
// (ForwardEntryState's too). With a forward (request.forward) the
// timeline starts from the state the forward leaves in a training step
// whose forward began from the previous step's gradient segments, in the
// training loop's steady state (core/entry_state.h SteadyTrainingStep:
// the step replayed with default's backward, NextStepStart, until its
// start repeats, then the forward again, BackwardEntryState).
absl::StatusOr<ResolvedRequest> ResolveRequest(
    const v1::PlanMemoryRequest& request);

// Returns the planner name (core/strategies.h FindPlanner) for `strategy`:
// kDefaultStrategy ("auto") for STRATEGY_UNSPECIFIED, else "inductor",
// "best_fit", "optimal", "auto", "reuse" or "nnc". Returns INVALID_ARGUMENT
// for a number the enum does not define.
absl::StatusOr<std::string> StrategyName(v1::Strategy strategy);

// Returns how long a search strategy may run for a request with `options`:
// options.time_budget, or kDefaultTimeBudget (100 ms) when unset. Returns
// INVALID_ARGUMENT naming options.time_budget when it is negative, longer
// than kMaxTimeBudget (1 hour), or not a valid Duration (nanos outside
// (-1e9, 1e9) or of the other sign than seconds).
absl::StatusOr<absl::Duration> TimeBudget(const v1::PlanOptions& options);

// Returns the core pool mode for `mode` (POOL_MODE_UNSPECIFIED:
// kIntermediates). Returns INVALID_ARGUMENT for a number the enum does not
// define.
absl::StatusOr<PoolMode> PoolModeFromProto(v1::PoolMode mode);

// Returns the wire value of `mode` (never POOL_MODE_UNSPECIFIED).
v1::PoolMode PoolModeToProto(PoolMode mode);

// Returns a request describing `problem` with `strategy` (the inverse of
// RequestToProblem; alignment always explicit, capacity_bytes set when
// nonzero, a buffer's alignment when nonzero, fixed_offset when set;
// time_budget unset). For tests and benchmarks that build core problems.
v1::PlanMemoryRequest ProblemToRequest(
    const Problem& problem, v1::Strategy strategy = v1::STRATEGY_UNSPECIFIED);

// What a response says beyond the plan itself.
struct ResponseInfo {
  std::string graph_hash;  // 32 hex characters (proto/graph_hash.h)
  // The strategy's name, e.g. "auto": stats.planner where the plan does not
  // name its planner (Plan::planner empty).
  std::string planner;
  absl::Duration planning_time;  // wall time of the planner alone
  v1::CacheStatus cache = v1::CACHE_STATUS_MISS;
  // For a request with events: how they map to the buffer groups (from
  // RequestToProblem); sets Assignment.allocation_event and the pools'
  // first_allocation_event / last_free_event (MarkFirstLastUsage). Not owned.
  const PoolLines* lines = nullptr;
  // The graph's timeline (ResolvedRequest::timeline) for the whole-graph
  // stats; null: the timeline of the problem's buffers. Not owned.
  const GraphTimeline* timeline = nullptr;
};

// Returns the response for `plan`, a plan of `problem` (assignments parallel
// to problem.buffers): pools in plan order (name, device, size in bytes,
// symbolic size), assignments as (pool name, offset in bytes, symbolic
// offset when plan.symbolic_offsets has them), and stats as docs/DESIGN.md
// "Stats" defines them, from core/bounds.h (lower_bound_bytes =
// LowerBound, total_pool_bytes = TotalPoolBytes, peak_bytes =
// PeakPoolBytes, mode_lower_bound_bytes = ModeLowerBound, retained_bytes =
// RetainedBytes, all in bytes summed over devices; planner = plan.planner,
// or info.planner when that is empty; proven_optimal =
// plan.proven_optimal; planning_micros = info.planning_time in whole
// microseconds), and plan.decisions (strategies reuse and nnc) as
// reuse_decisions, stack_allocation and nnc_decisions, their event indices
// set only with info.lines (a request with events).
// Returns INTERNAL when `plan` does not fit `problem` (assignment count, a
// pool index out of range): a planner bug.
absl::StatusOr<v1::PlanMemoryResponse> PlanToResponse(const Problem& problem,
                                                      const Plan& plan,
                                                      const ResponseInfo& info);

// Returns the core plan in `response`: pools in order (symbolic sizes
// too), each assignment's pool name resolved to its index (symbolic
// offsets into plan.symbolic_offsets when any is set), the segment
// reservations in order, planner = stats.planner and
// proven_optimal = stats.proven_optimal. Returns INVALID_ARGUMENT when a pool
// name repeats or an assignment names no pool of the response.
absl::StatusOr<Plan> ResponseToPlan(const v1::PlanMemoryResponse& response);

}  // namespace memplan

#endif  // MEMPLAN_PROTO_CONVERT_H_
