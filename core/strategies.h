// The registry of planning strategies, by name.
#ifndef MEMPLAN_CORE_STRATEGIES_H_
#define MEMPLAN_CORE_STRATEGIES_H_

#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/planner.h"

namespace memplan {

// The version of the planners' behaviour: bumped whenever a strategy may
// return another plan (pools, offsets or stats) for the same input, so that
// plans cached by an older server (in process or in a shared Redis) are not
// served: graph hashes and Redis keys carry it. The golden test
// (tests/core/golden_plans_test.cc) fails on any change to a corpus plan
// until it is bumped with the digest recorded there.
//   1: the first planners.
//   2: the exact search's peak windows and best fit's orders (changed under
//      version 1), the composites of core/composite.h.
//   3: responses carry the whole graph's peaks (core/graph_memory.h).
//   4: strategy "partition"; "auto" partitions the pools of a request that
//      describes the whole graph.
//   5: predicted_peak_lower_bound_bytes no longer counts a never-freed
//      intermediate (wrapper lines cut short) past its live range.
//   6: strategy "partition" (and "auto" on a whole graph) plans pool mode
//      none too, its pools never larger than their largest buffer.
//   7: strategy "partition" weighs the caching allocator's reserved bytes
//      (core/caching_allocator.h): pools capped or one per buffer where
//      that reserves less, pools padded so that a later larger pool reuses
//      their segment; responses carry predicted/baseline reserved bytes,
//      and with the default 512-byte block the allocated peaks are the
//      allocator model's (unsplit rests counted).
//   8: strategy "partition" keeps the fewest pools among its candidates
//      near the lowest peak that reserve no more than default's (the
//      baseline through the allocator model) or nearly the least, where
//      version 7 kept the least reserved; new candidates: default's reuse
//      chains as pools, alone and as the start of the sharing.
//   9: predicted_peak_lower_bound_bytes of events requests counts a
//      buffer only between its ALLOCATE's run of planning lines and its
//      last FREE's run (a plan may share bytes within a run, whatever the
//      lines' order: the bound was above the predicted peak on such
//      lines); an ALLOCATE of a name an earlier event used is refused.
//   10: a training backward's request may carry its forward
//      (ForwardGraph): the whole-graph model, and with it strategy
//      "partition"'s choice, starts the backward from the allocator state
//      the forward leaves in a training step (core/entry_state.h).
//   11: strategy "partition" replans a sharing candidate whose allocator
//      replay is above the lowest peak's slack under a target lowered by
//      the excess (the tree counts rounded bytes, the allocator charges a
//      cached block whole where it does not split the rest); from an
//      entry state, pools capped at the entry's largest free block (and
//      half, a quarter); among candidates with at most 1/8 more pools of
//      intermediates than the fewest, the least reserved bytes.
//   12: with options.outputs_released_together, strategy "partition"
//      (and "auto" on a whole graph) in pool mode intermediates puts
//      outputs in shared pools of outputs (a training backward's
//      gradients) where that keeps the peak; the mode's lower bound is
//      then the plain one.
//   13: strategy "partition" (and "auto" on a whole graph) judges a
//      training backward's candidates (a request with a forward) by the
//      reserved bytes of the step that follows (core/entry_state.h
//      NextStepReserved): the segments its pools leave the next forward.
//   14: the step's reserved bytes count the segments cached at its start
//      (the previous step's gradients'), as torch.cuda.max_memory_reserved
//      does, not only those the step takes after it.
//   15: a training backward's entry (a request with a forward) is the
//      training loop's steady state (core/entry_state.h
//      SteadyTrainingStep: the step replayed until the segments it leaves
//      repeat), not the state after one replayed step; the forward's
//      cached blocks are free parts of segments in use, which
//      torch.cuda.empty_cache() keeps and a replayed step does not add
//      again (they were counted twice where a gradient had landed in one).
//   16: strategy partition gives a training backward no more pools than
//      default torch.compile's storages for the same buffers where a
//      candidate within the peak's slack has no more and reserves in the
//      step no more than those storages (core/partition/partition_planner.h).
//   17: with segment reservations (PlanOptions.reserve_segments), strategy
//      partition also tries pools capped at 1/2 to 1/16 of the largest
//      intermediate, and takes a candidate of up to twice the fewest pools
//      where it reserves less by more than the model's error.
//   18: strategy partition names, for a training backward in a private
//      pool whose forward reserves a segment, the forward's reservation
//      sized for the step (Plan::forward_reservations, StepReservation).
//   19: that step is the private pool's steady state (PrivatePoolStep:
//      the loop's steps replayed, each from the segments the one before
//      left, until a step takes none), not its first step from an empty
//      pool; a graph input the model adopted and freed is no segment of
//      the pool (CachingAllocatorModel::PoolNextStep).
//   20: where the candidates near a private-pool backward's own lowest peak
//      keep more than kReservedPoolFactor times the fewest pools, strategy
//      partition also steps the candidates beyond that slack with fewer
//      pools, one per pool count, and takes one whose step reserves less
//      where it keeps the step's peak allocated within the slack
//      (resnet50's backward: 8 pools for 269).
//   21: outputs of one release group (PlanMemoryRequest.release_groups: a
//      training forward's saved activations its backward frees at one
//      kernel) may share a pool in pool mode intermediates, as outputs
//      released together do (Problem::ReleasedTogether); and in a private
//      pool's step, a backward takes more pools than the chosen candidate
//      only for 2 MiB less reserved per added pool (it took up to default's
//      storages' count for 2 MiB in all).
//   22: a backward buffer that takes over a saved activation in place
//      (REUSE of a donated input) holds that input's reference to the
//      forward's block, which returns when its last reference goes: a
//      pool of the forward shared by several saved activations stays while
//      the buffer lives (it returned at the other inputs' frees, and the
//      buffer's own free returned nothing: densenet121's grouped backward
//      predicted 6.8 MiB, measured 22.0 on an H100).
inline constexpr uint32_t kPlannerVersion = 22;

// Returns every strategy, in a fixed order ("inductor" first). The planners
// live for the whole program. Tests iterate this list so that a new planner
// inherits every case.
const std::vector<const Planner*>& AllPlanners();

// Returns the planner named `name` (e.g. "inductor"), or nullptr.
const Planner* FindPlanner(absl::string_view name);

}  // namespace memplan

#endif  // MEMPLAN_CORE_STRATEGIES_H_
