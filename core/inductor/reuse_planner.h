// Strategy "reuse": Inductor's buffer-reuse pass, which it runs when it
// does not plan pools, restated so that a worker gets the decisions its
// compiler would make (core/reference_decisions.h), and a plan of pools and
// offsets like every other strategy's.
//
// "reuse" restates Inductor's default pass (torch 2.11,
// torch/_inductor/codegen/wrapper.py, PythonWrapperCodegen.memory_plan_reuse
// with MemoryPlanningState, AllocateLine.plan, FreeIfNotReusedLine.plan and
// ReuseLine.plan, buffer_reuse_key, and since torch 2.9 (pytorch#159530)
// AllocateLine.should_reuse_buffer with EfficientPeakEstimate):
//   - a FREE_IF_NOT_REUSED line puts its buffer's storage into the planning
//     state's pool under the buffer's reuse key (device, dtype, symbolic
//     size; memplan adds the size in bytes, which equal symbolic sizes share
//     in Inductor anyway);
//   - an ALLOCATE line takes the storage freed last under its key (a stack
//     per key), if the peak check allows it: always when the FREE and the
//     ALLOCATE belong to adjacent scheduler nodes, else only when the
//     allocation's bytes plus the most memory in use at any node between
//     them stay within the graph's peak (the storage is then counted as
//     held at those nodes). Refused, the freed storage goes back. The bytes
//     per node are Inductor's own when the lines carry them
//     (WrapperLine::scheduler_node, WrapperProgram::scheduler_node_bytes):
//     then the decisions are Inductor's (tests/server/
//     reuse_strategies_test.cc: 30 of 30 on five graphs captured from
//     torch 2.11). Otherwise every line of another
//     kind counts as a node, with the bytes of the groups held while it
//     runs, which misses graph inputs and extern kernels' outputs: on those
//     five graphs that made Inductor's 30 reuses and 8 more;
//   - ENTER_SUBGRAPH starts a fresh planning state and EXIT_SUBGRAPH drops
//     it: nothing is reused across a subgraph's boundary;
//   - memory-planning lines after the last other line are dropped, unless
//     they name a graph output (Inductor pops them as pointless);
//   - removed buffers' lines do nothing.
// Its stack-allocation decision restates AOT Inductor's CPU ArrayRef wrapper
// (torch/_inductor/codegen/cpp_wrapper_cpu_array_ref.py memory_plan_reuse and
// can_stack_allocate_buffer): summed over every planning state, the elements
// (not bytes: Inductor multiplies the static shape) of the CPU buffers of
// static size that got a fresh allocation must be at most
// MAX_STACK_ALLOCATION_SIZE = 1024 * 100.
//
// The pass walks the problem's wrapper lines, or lines derived from its
// buffers (core/inductor/reuse_pass_program.h), and lays out its storages
// per pool mode (core/inductor/storage_layout.h), as strategy "nnc"
// (core/nnc/nnc_planner.h) does.
#ifndef MEMPLAN_CORE_INDUCTOR_REUSE_PLANNER_H_
#define MEMPLAN_CORE_INDUCTOR_REUSE_PLANNER_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/planner.h"
#include "core/types.h"

namespace memplan {

// Strategy "reuse" (above).
class ReusePlanner : public Planner {
 public:
  absl::string_view name() const override { return "reuse"; }
  // Every pool mode and per-buffer alignment; no pinned offsets; follows
  // the wrapper lines.
  PlannerCapabilities capabilities() const override {
    PlannerCapabilities capabilities;
    capabilities.plans_pool_mode_none = true;
    capabilities.honours_buffer_alignment = true;
    capabilities.follows_wrapper_lines = true;
    return capabilities;
  }

  // Returns the plan of Inductor's reuse pass over context.wrapper_program
  // (or the lines derived from problem.buffers when it is null), with
  // Plan::decisions holding the reuse decisions and the stack allocation.
  // Returns INVALID_ARGUMENT for a buffer with a fixed offset, for an
  // EXIT_SUBGRAPH without its ENTER_SUBGRAPH or an ENTER_SUBGRAPH never
  // left (naming `events[i]`), or when context.wrapper_lines do not
  // describe problem.buffers; RESOURCE_EXHAUSTED over problem.capacity;
  // DEADLINE_EXCEEDED / CANCELLED from `context`.
  absl::StatusOr<Plan> PlanProblem(const Problem& problem,
                                   const PlanContext& context) const override;
};

}  // namespace memplan

#endif  // MEMPLAN_CORE_INDUCTOR_REUSE_PLANNER_H_
