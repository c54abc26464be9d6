// Best fit in program order without pinned items, as a sweep over time:
// internal to core/placement/best_fit.cc.
#ifndef MEMPLAN_CORE_PLACEMENT_PROGRAM_ORDER_SWEEP_H_
#define MEMPLAN_CORE_PLACEMENT_PROGRAM_ORDER_SWEEP_H_

#include "absl/status/statusor.h"
#include "core/placement/order_stop.h"
#include "core/placement/placement.h"
#include "core/planner.h"

namespace memplan {
namespace best_fit_internal {

// Best-fit in program order as a sweep over time, for problems without
// pinned items: taking items by (begin, index), the placed items that
// overlap the next one are exactly those still live at its begin, so it
// keeps the live items ordered by offset and the gaps between them ordered
// by (length, offset). Each item then costs O(log n). Places exactly as
// BestFitEngine::Place(kProgramOrder) does.
//
//   offset ^
//          |  +------+                 at t = 4, a has ended: its bytes
//          |  |  b   |  +------+       merge with the gap below it; the
//          |  +------+  |  d   |       new item d takes the tightest gap
//          |  +---+     +------+       among those live at 4.
//          |  | a |  +-----+
//          |  +---+  |  c  |
//          +--+---+--+-----+------> timestep
//             0   2  3     4
//
// Returns the placement of `problem`'s items (none of them pinned) in
// BestFitOrder::kProgramOrder; stops with DEADLINE_EXCEEDED or CANCELLED
// from `context`, or ABORTED when `stop` says so.
absl::StatusOr<Placement> PlaceInProgramOrder(const PlacementProblem& problem,
                                              const PlanContext& context,
                                              const OrderStop& stop);

}  // namespace best_fit_internal
}  // namespace memplan

#endif  // MEMPLAN_CORE_PLACEMENT_PROGRAM_ORDER_SWEEP_H_
