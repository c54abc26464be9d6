// Strategy "nnc": TorchScript NNC's buffer-reuse pass, restated so that a
// worker gets the decisions its compiler would make
// (core/reference_decisions.h), and a plan of pools and offsets like every
// other strategy's.
//
// "nnc" restates TorchScript NNC's AllocBufsWithMemReuse
// (torch/csrc/jit/tensorexpr/codegen.cpp, CodeGen::allocIntermediateBufs):
// buffers in order of their start; before each static-size buffer, the
// memory of every buffer whose range has ended goes to the front of a
// free list (latest end first); the buffer takes the first memory on the
// list at least as large as itself (first fit by size; NNC compares the
// memory's original owner's size), else memory of its own. A buffer of
// dynamic size gets memory of its own that is never reused; an externally
// allocated buffer never takes freed memory (its kernel allocates it), but
// its memory, once it ends, is up for grabs like any other (NNC puts it in
// the same map). Graph outputs are NNC's buffer arguments, which it does
// not plan: they get memory of their own, never reused.
//
// The pass walks the problem's wrapper lines, or lines derived from its
// buffers, and lays out its storages per pool mode, as strategy "reuse"
// does (core/inductor/reuse_pass_program.h, storage_layout.h).
#ifndef MEMPLAN_CORE_NNC_NNC_PLANNER_H_
#define MEMPLAN_CORE_NNC_NNC_PLANNER_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/planner.h"
#include "core/types.h"

namespace memplan {

// Strategy "nnc" (above).
class NncPlanner : public Planner {
 public:
  absl::string_view name() const override { return "nnc"; }
  // Every pool mode and per-buffer alignment; no pinned offsets; follows
  // the wrapper lines.
  PlannerCapabilities capabilities() const override {
    PlannerCapabilities capabilities;
    capabilities.plans_pool_mode_none = true;
    capabilities.honours_buffer_alignment = true;
    capabilities.follows_wrapper_lines = true;
    return capabilities;
  }

  // Returns the plan of NNC's AllocBufsWithMemReuse over the buffer groups
  // (O(n log n) plus, as in NNC, a scan of the free list per buffer)
  // (live ranges half-open: a buffer ending at t frees its memory for one
  // starting at t), ties in start broken by external buffers first, then
  // group order; memory of another device never fits. Plan::decisions holds
  // one NncDecision per group and external buffer. External buffers are
  // FREE_IF_NOT_REUSED lines with has_allocation in context.wrapper_program,
  // live up to their line's timestep. Errors as ReusePlanner's (subgraph
  // lines are ignored: NNC has none).
  absl::StatusOr<Plan> PlanProblem(const Problem& problem,
                                   const PlanContext& context) const override;
};

}  // namespace memplan

#endif  // MEMPLAN_CORE_NNC_NNC_PLANNER_H_
