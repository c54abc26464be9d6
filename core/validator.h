// An independent check of any plan. It shares no code with the planners, so
// a planner bug cannot hide behind the same bug here.
#ifndef MEMPLAN_CORE_VALIDATOR_H_
#define MEMPLAN_CORE_VALIDATOR_H_

#include "absl/status/status.h"
#include "core/types.h"

namespace memplan {

// Returns OK when `plan` is a valid plan for `problem`, else INTERNAL with a
// message naming the first violation found (buffers by index and name):
//   - one assignment per buffer, each naming an existing pool;
//   - the pool's device is the buffer's device;
//   - offset >= 0, a multiple of the buffer's alignment (the larger of
//     problem.alignment and its own), the pinned offset when the buffer has
//     one, and offset + size within the pool's size;
//   - no two buffers of one pool overlap both in time (their half-open live
//     ranges intersect) and in bytes ([offset, offset + size) intersect);
//   - the pool mode's sharing rules (docs/DESIGN.md, "Pool modes"):
//       none:          a pool holds at most one output, and is no larger
//                      than its largest buffer rounded up to the alignment,
//                      plus padding (below);
//       intermediates: a pool holds at most one output, and a pool holding
//                      an output is no larger than that output rounded up to
//                      the alignment, plus padding (below);
//       outputs:       all outputs of a device are in one pool, except
//                      those whose size depends on data (they may have
//                      pools of their own, core/placement/pool_layout.h);
//       combined:      one pool per device holds all of its buffers, unless
//                      a buffer of the device has a data-dependent size
//                      (torch 2.11's Allocation.earliest_available may then
//                      start other pools).
//     Padding: `alignment` bytes for each other buffer of the pool whose
//     size is not a multiple of the alignment. Inductor places a
//     SpatialSplit's right part at align(left), so fitting a b-byte buffer
//     into an S-byte slot takes align(b) + (S - b) bytes; with every size a
//     multiple of the alignment there is no padding.
// Pool names must be unique and pools non-empty (every pool holds a buffer).
// With problem.capacity > 0, the pools of each device total at most it.
// Segment reservations (Plan::reservations) only with
// problem.reserve_segments, forward reservations (Plan::
// forward_reservations) only with problem.private_pool; each list at most
// one per device, each on a device that holds a buffer, of a positive
// multiple of 2 MiB.
absl::Status ValidatePlan(const Problem& problem, const Plan& plan);

}  // namespace memplan

#endif  // MEMPLAN_CORE_VALIDATOR_H_
