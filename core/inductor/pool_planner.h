// Strategy "inductor": a faithful restatement of torch 2.11's pool planner,
// torch/_inductor/codegen/memory_planning.py (AllocationPools and its tree
// of TemporalSplit / SpatialSplit nodes), giving the same pools, pool names,
// pool sizes and offsets as Inductor for every pool mode.
//
// A pool is a tree. A TemporalSplit holds children whose live ranges do not
// overlap, so they share bytes; a SpatialSplit puts its right child after
// its left one in memory, at align(size of left):
//
//   offset ^
//          |       +---------------------+
//          | right |   TemporalSplit     |   SpatialSplit(left, right)
//          |       +---------------------+
//          |       +------+  +------+
//          | left  |  b0  |  |  b1  |       TemporalSplit[b0, b1]
//          |       +------+  +------+
//          +----------------------------> timestep
//
// Inductor builds and walks that tree by recursion whose depth grows with
// the number of pool expansions (RecursionError on densenet121 training in
// `combined` mode). This restatement walks it with explicit stacks, and
// prunes subtrees in which no TemporalSplit has room in time for the buffer
// (an exact shortcut: Inductor's walk would fail there too), so that 20,000
// outputs living to the end do not take quadratic time (measured in
// docs/benchmarks.md, "Strategy inductor against Inductor's own planner").
#ifndef MEMPLAN_CORE_INDUCTOR_POOL_PLANNER_H_
#define MEMPLAN_CORE_INDUCTOR_POOL_PLANNER_H_

#include "core/planner.h"

namespace memplan {

class InductorPlanner : public Planner {
 public:
  struct Options {
    // Skip subtrees in which no TemporalSplit is free for the buffer's live
    // range, and the levels of a chain of pool roots the walk would only
    // pass through (found by binary search). Exact (the plan is the same
    // either way); off only in tests that check exactly that. With it, a
    // TemporalSplit of many children also keeps their first begins and last
    // ends beside them, to pass the children a block cannot overlap, and
    // the walk skips down the spines that slots grow as they are filled.
    bool prune_full_subtrees = true;
  };

  InductorPlanner() = default;
  explicit InductorPlanner(Options options) : options_(options) {}

  absl::string_view name() const override { return "inductor"; }
  // Pool mode none included; no pinned offsets, no per-buffer alignments.
  PlannerCapabilities capabilities() const override {
    PlannerCapabilities capabilities;
    capabilities.plans_pool_mode_none = true;
    return capabilities;
  }

  // Returns Inductor's plan, as `MemoryPlanner.allocate_groups`: outputs
  // (except in `combined` mode) are placed first in order of
  // (size, -live range length) ascending, then the rest in order of
  // (-size, -live range length), both sorts stable in buffer order. Pools are
  // named pool0, pool1, ... devices in the order their first pool was made;
  // a pool's size is its tree's size after finalize (empty right halves of
  // SpatialSplits dropped). Offsets are multiples of problem.alignment (64
  // in Inductor). Under dynamic shapes (some buffer's symbolic size names a
  // symbol) the plan also carries Inductor's symbolic pool sizes and
  // offsets (core/symbolic/symbolic_plan.h): the tree's sizes as
  // AllocationTreeNode.get_symbolic_size (TemporalSplit: Max over children;
  // SpatialSplit: align(left) + right) after finalize, offsets accumulated
  // down the tree as finalize does. A buffer whose size depends on data
  // follows Allocation.earliest_available: it joins no pool in use before
  // it begins, and a pool it joins takes no buffer beginning before it.
  // Returns INVALID_ARGUMENT for a buffer with a fixed offset or its own
  // alignment (Inductor cannot honour them) or a malformed symbolic size,
  // RESOURCE_EXHAUSTED when the plan exceeds problem.capacity or its
  // symbolic text kMaxSymbolicPlanChars, DEADLINE_EXCEEDED / CANCELLED from
  // `context`.
  absl::StatusOr<Plan> PlanProblem(const Problem& problem,
                                   const PlanContext& context) const override;

 private:
  Options options_;
};

}  // namespace memplan

#endif  // MEMPLAN_CORE_INDUCTOR_POOL_PLANNER_H_
