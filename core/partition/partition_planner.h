// Strategy "partition": pools chosen against the whole graph's peak.
//
// Inductor's pool modes fix the grouping before any offset is chosen
// (`intermediates`: one pool for the intermediates, one per output), and a
// pool holds its whole size from its first buffer's allocation to its last
// buffer's free, beside the memory no pool holds (extern kernels' outputs,
// graph inputs not yet freed). So a plan whose pools total the lower bound
// can still raise the graph's peak: one large pool is charged its full
// height at positions where the graph is busiest elsewhere. This strategy
// chooses how many pools each device gets, which buffers share one, and
// their offsets, to minimize the whole graph's predicted peak
// (core/graph_memory.h) first and the number of pools second:
//
//   bytes ^              T (the target: the peak with one pool per buffer)
//         |- - - - - - - - - - - - - - - - - - - - - -
//         |   +------------+      +----------------+
//         |   |   pool0    |      |     pool1      |   each pool over the
//         |   | a   b    c |      | d    e         |   hull of its buffers,
//         |###+############+######+################+#  never above T where
//         |## unplanned (extern outputs, inputs) ######  it is charged
//         +-----------------------------------------> position
//
// The extremes are Inductor's: one pool per buffer reaches the lowest peak
// (the baseline's, but for the reuse pass's storages held across gaps) and
// one pool per device needs one allocation. The planner starts from one
// pool per buffer, whose peak T is the least any plan of the mode can have
// up to the allocator's rounding, and places the intermediates in order of
// their allocation: each joins the existing pool where it fits (at the
// lowest offset free over its live range, or on top, raising the pool's
// height) with the smallest added charge, if the charge (the pool's height
// over its hull, now longer and perhaps higher, in place of the buffer's
// own) keeps every position at or below T; else it opens a pool. Range
// additions and maxima over the positions (core/range_max_tree.h) make each
// trial O(log n), so a graph of n buffers takes O(n k log n) for k trial
// pools per buffer (at most kTrialPools), per candidate below (at most 11
// shapes, the 9 sharing ones each planned again at most 3 times: 38; with
// outputs released together every shape twice: 76), plus per candidate at
// most 33 allocator replays of O(m log m) for m blocks (the suite's
// largest graph: 13 ms on a 2-core machine, 29 ms with outputs released
// together, docs/gpu.md).
//
// The reserved bytes: a pool the caching allocator cannot serve from its
// cached blocks takes a new segment, which the allocator keeps
// (core/caching_allocator.h), so pools of growing sizes that live one after
// another reserve their sum. The planner therefore builds each device's
// pools several ways (candidates): as above; in mode `intermediates` with
// pools capped at the largest intermediate (rounded to 2 MiB) and at 2, 4
// and 8 times that, below the largest pool uncapped; from an entry state
// (a training backward's, core/entry_state.h, whose forward left its freed
// blocks cached) capped at the entry's largest free block, half and a
// quarter of it, so that pools fit the blocks default's storages reuse;
// default torch.compile's storages as pools (each chain of groups its reuse
// pass hands one storage along, GraphTimeline::storage_from: its peak,
// reserved bytes and allocator calls but for the outputs), alone and as the
// start of the sharing above; and one pool per buffer. The target T counts
// each allocation as its rounded bytes, while the allocator charges a
// request served from a cached block whose rest it does not split (at most
// 1 MiB) the whole block; so a sharing candidate whose replayed peak is
// above the lowest's slack is planned again under T lowered by its excess,
// at most 3 times. In mode `intermediates`
// each candidate then pads, for a pool that takes a new segment, a smaller
// pool released before it to its size (at most kPadTrials tried per pool,
// 32 replays per device), where the padding keeps every position at or
// below T and the allocator model reserves less. Of the candidates whose
// predicted peak (as the stats count it: with the 512-byte block, the allocator
// model's) is within 1/256 of the lowest, those whose reserved bytes are at
// most default torch.compile's (the baseline replayed through the same model)
// or within 1/32 (at least 2 MiB) of the least, it keeps the one with the
// fewest pools, or where candidates with at most 1/8 more pools of
// intermediates reserve less, the one of them that reserves least: the peak
// first, the allocations second, and never more reserved bytes than
// default's where a candidate reserves no more. For a training backward
// whose request carries its forward (PlanContext::step), a candidate's
// reserved bytes are the training step's that follows it
// (core/entry_state.h NextStepReserved): the segments its gradients leave
// cached at the step's start plus those the step then takes, and a
// candidate may reserve at most 2 MiB more than the least (no slack of
// the step's total, no default's step as a ceiling: the step's forward
// and start dominate the total, and the model's step errs by up to 30 MiB
// on the suite's models, docs/gpu.md "Runs D1 and Z3 to Z5"). Where that
// leaves only candidates of more pools than default's storages for the
// same buffers (the reuse chains as pools), the eligible candidates are
// instead those within the peak's slack with at most that many pools and
// no more reserved in the step than those storages, chosen among as
// above: pools replace allocations, and one pool per buffer a few MiB
// under a plan of a tenth of the pools is not the better plan (docs/gpu.md
// "Runs U1 to U4"). The gradients'
// segments decide where the next forward's activations go, so a backward that
// reserves least on its own may cost the step more, and gradients packed into
// fewer segments leave the forward less to reuse but cost the step no more.
// That costs, per candidate within the peak's slack, one forward replay, two
// backward replays and one timeline of the lines (distinct candidates only; the
// suite's backward graphs: at most 42 ms with outputs released together on a
// 2-core machine, docs/gpu.md). Mode `none` pads nothing (a pool is never
// larger than its largest buffer).
//
// Segment reservations (Problem::reserve_segments; not for a training
// backward judged by its step, nor under dynamic shapes): per candidate
// within the peak's slack, a reservation of at most the peak (rounded down
// to 2 MiB, less 0 to 3 times 2 MiB, then 7/8, 3/4 and 1/2 of it, none
// below 10 MiB) that the allocator model finds to lower the reserved bytes
// by more than its error (1/32, at least 2 MiB), keeping the peak, and to
// reserve no more over four calls in a loop (each call's outputs held until
// the next returns) than the candidate without it nor default's storages;
// the candidate is then judged by those bytes. In mode `intermediates` the
// candidates then also include pools capped at 1/2, 1/4, 1/8 and 1/16 of
// the largest intermediate (at least 2 MiB): pools the size of single
// buffers split a reserved segment as default's allocations do. After the
// choice above, the least reserved candidate of at most twice the fewest
// pools replaces the chosen one where it reserves less by more than the
// model's error (swin_t's inference graph: 15 pools and 162 MiB reserved
// against 11 pools and 218 MiB, docs/gpu.md "Pools capped for a
// reservation"): reserved bytes are memory, pools only allocator calls.
// In a private pool (Problem::private_pool: a training step's graphs in a
// torch.cuda.MemPool of their own, whose state at the entry the model
// does not know), a candidate within the slack reserves its peak rounded
// down to 2 MiB (none below 10 MiB), unjudged: the forward's pools, extern
// outputs and saved activations split that one segment, the backward
// reuses it and the next step's forward finds it free where the caller
// holds none of the forward's outputs into it (docs/gpu.md "Runs R3, T1,
// U7, W6 and V13 to V15": the transformer rows' held logits split it; the
// judged sizes above compare against the default pool's cached blocks,
// which are not the private pool's). A private-pool training backward
// whose forward reserves a segment is judged by the private pool's steady
// step instead (core/entry_state.h StepReservation, PrivatePoolStep): of
// the candidates within the peak's slack with at most kReservedPoolFactor
// times the fewest pools (or default's storages), the one whose step
// reserves least where it saves at least 2 MiB, and the forward's
// reservation sized for that step (Plan::forward_reservations). Where the
// candidates within the slack keep more than kReservedPoolFactor times
// the fewest pools of any candidate, those beyond the slack with fewer
// pools than the chosen (the lowest peak of each pool count) are stepped
// too, each held to the chosen step's peak allocated plus 1/256: a
// backward peaking far under its forward can hold a few pools longer at
// no cost to the step (resnet50's: 8 pools for 269, docs/gpu.md "Runs K4
// to K7"; planner version 20).
//
// Pool modes `intermediates` and `none`: each output keeps a pool of its
// own (the caller frees outputs independently, as both modes require); a
// buffer whose size depends on data gets a pool of its own (as the other
// placement strategies). Outputs and such buffers stay where they are in
// T's count. In mode `intermediates` with outputs released together
// (Problem::ReleasedTogether: a training backward's gradients, all
// released together; a training forward's saved activations of one
// release group, which its backward frees at one point) outputs share
// pools of outputs, placed as the intermediates are (an output in a pool
// opened before it is charged from the pool's creation to the graph's
// end) and never with an intermediate nor with an output released apart;
// in T's count each is its own, so the peak stays where one pool per
// output puts it. In mode
// `none` a pool never grows past its first buffer (Inductor's pools that cannot
// expand): a buffer joins a pool only below the pool's height. Without memory
// outside the plan (no unplanned buffers, no extern lines) the same planner
// minimizes the peak of the pools alone. Strategy "partition" plans the other
// pool modes (outputs, combined), whose grouping is fixed, as "auto" does
// (core/strategies.cc).
#ifndef MEMPLAN_CORE_PARTITION_PARTITION_PLANNER_H_
#define MEMPLAN_CORE_PARTITION_PARTITION_PLANNER_H_

#include "core/planner.h"

namespace memplan {

class PartitionPlanner : public Planner {
 public:
  // Pools a buffer is tried in, the most recently extended first.
  static constexpr int kTrialPools = 64;

  struct Options {
    // Plan only problems that describe the memory outside the plan
    // (Problem::whole_graph): auto's rule (core/strategies.cc).
    bool whole_graph_only = false;
  };
  PartitionPlanner() = default;
  explicit PartitionPlanner(Options options) : options_(options) {}

  absl::string_view name() const override { return "partition"; }
  PlannerCapabilities capabilities() const override;
  // OK for pool modes intermediates and none (with whole_graph_only, when
  // the problem describes the whole graph) and no pinned offsets; else
  // INVALID_ARGUMENT.
  absl::Status CanPlan(const Problem& problem) const override;

  // Returns the plan above over context.timeline (or, when null, the
  // timeline of the problem's buffers, core/graph_memory.h
  // TimelineOfBuffers); pools named pool0, pool1, ... in device order, then
  // by first allocation. Returns INVALID_ARGUMENT where CanPlan does,
  // RESOURCE_EXHAUSTED over problem.capacity, DEADLINE_EXCEEDED /
  // CANCELLED from `context`.
  absl::StatusOr<Plan> PlanProblem(const Problem& problem,
                                   const PlanContext& context) const override;

 private:
  Options options_;
};

}  // namespace memplan

#endif  // MEMPLAN_CORE_PARTITION_PARTITION_PLANNER_H_
