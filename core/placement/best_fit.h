// Greedy best-fit placement of one pool (core/placement/placement.h), as
// XLA's GlobalDecreasingSizeBestFitHeap: items are taken one at a time in a
// fixed order, and each goes into the tightest gap of bytes that is free
// for its whole live range among the items already placed. Every order at
// once, the lowest kept: BestFitPortfolio
// (core/placement/best_fit_portfolio.h).
//
//   offset ^
//      120 |  +-----------------------+
//          |  |           c           |   d [4,6)+25 comes after a, b, c:
//       90 |  +------+                |   free during all of [4,6) are
//          |  |  b   |  +-----+       |   [60,90), which b has left, and
//       60 |  +------+--+  d  +-------+   everything above 120. The
//          |  |           a           |   bounded gap fits, so d goes to
//        0 +--+------+--+-----+-------+-> 60; the unbounded one above the
//             0      3  4     6       9   topmost item serves only when
//                                         no bounded gap fits.
//
// Pinned items are placed first, at their fixed offsets; the others never
// overlap them. Capacity is not consulted: callers compare the height with
// PlacementProblem::capacity.
#ifndef MEMPLAN_CORE_PLACEMENT_BEST_FIT_H_
#define MEMPLAN_CORE_PLACEMENT_BEST_FIT_H_

#include "absl/status/statusor.h"
#include "core/placement/placement.h"
#include "core/planner.h"

namespace memplan {

// The order in which BestFitPlace takes the unpinned items. Every order
// breaks its remaining ties by item index, so the order (and the placement)
// is the same on every run and machine.
//
// The contention of an item is the largest total size of the items live at
// one timestep of its live range (the lower bound of its live range):
// items where memory is tightest are placed first, while the gaps there
// are still large, as TelaMalloc and idealloc favour contended buffers.
enum class BestFitOrder {
  // Largest size first (XLA's and MiniMalloc's usual greedy order).
  kSizeDescending,
  // Longest live range (end - begin) first.
  kLengthDescending,
  // Largest size * length first (the item's area in offset-time space).
  kAreaDescending,
  // Earliest begin first, as an online allocator would see them.
  kProgramOrder,
  // Highest contention first; then the longest live range, the largest size.
  kContentionDescending,
  // As kContentionDescending with contention counted in bands of 1/64 of
  // the problem's peak, so that within a band the longest live ranges go
  // first (then the largest size).
  kContentionBandDescending,
};

// Every BestFitOrder, in the order BestFitPortfolio starts them and breaks
// ties (the order listed first wins): contention, contention band, size,
// length, area, program order. That is not the enum's order: the
// contention orders come first because they win most often on large
// traces, and the portfolio stops at the first order that meets the lower
// bound or, as an anytime step, when its time is up.
inline constexpr BestFitOrder kAllBestFitOrders[] = {
    BestFitOrder::kContentionDescending,
    BestFitOrder::kContentionBandDescending,
    BestFitOrder::kSizeDescending,
    BestFitOrder::kLengthDescending,
    BestFitOrder::kAreaDescending,
    BestFitOrder::kProgramOrder,
};

// How the segment-tree engine (below) sequences its work. An item's offset
// depends only on the items before it in the order whose live ranges
// overlap its own, so any sequence that keeps each such pair in order
// places every item at the same offset; the sequences differ in speed
// alone.
enum class BestFitSchedule {
  // The items in the order itself: consecutive items jump across time,
  // and on large problems nearly every read of the engine's tree misses
  // the cache.
  kOrder,
  // Items by begin, each held back until every item before it in the
  // order that overlaps it has been placed: the engine reads what it has
  // just read, and frees what no item left to place reads. O(n log n)
  // more time; faster on every problem of tests/bench/best_fit_bench.cc
  // and, on large ones, lighter on memory (docs/benchmarks.md, "Best fit
  // at scale"), so it is the default.
  kTimeSweep,
  // First the items at the time of the highest load (the first such leaf
  // of the engine's tree) and every item they wait for through chains of
  // overlapping, earlier items (the set closed under "overlaps and comes
  // earlier in the order", placed in the order), then the rest as in
  // kTimeSweep. The height an order reaches is mostly decided at that
  // time, so an order that cannot win (BestFitPortfolio) is found out after
  // placing that set alone, a small share of the items where the sweep
  // from the start would place many more first (docs/benchmarks.md, "Best
  // fit at scale"). Finding the set costs O(m log m) a doubling of a
  // window around the peak, m the items that can meet the window, O(log n)
  // doublings; where the set would hold more than half of the items, this
  // is kTimeSweep.
  kPeakFirst,
};

// Returns "size", "length", "area", "program", "contention" or
// "contention_band".
const char* BestFitOrderName(BestFitOrder order);

// Places every item of `problem`: pinned items at their fixed offsets; items
// of size 0 or with an empty live range at offset 0; the others in `order`,
// each at the aligned offset of the free gap (bytes free during the item's
// whole half-open live range, among the items placed before it) whose length
// exceeds the item's size least, ties going to the lowest offset; the gap
// above the topmost overlapping item only when no bounded gap fits.
// Offsets and height are in bytes. Returns DEADLINE_EXCEEDED or CANCELLED
// when `context` says so (checked every few thousand items).
//
// Cost: program order without pinned items is a sweep, O(n log n). The
// other orders use a segment tree over time: each item visits O(log n)
// nodes and reads their unions of byte intervals, which together are at
// most as long as the number of placed items overlapping it, and much
// shorter where items pack tightly (tests/bench/best_fit_bench.cc). The
// items are taken in the sequence `schedule` says.
//
// The problem should have passed ValidatePlacement's per-item rules (sizes
// >= 0, begin <= end, power-of-two alignments); pinned items that overlap
// each other stay where they are pinned.
//
// `schedule` picks the sequence in which the engine does its work; the
// placement is the same for every value (see BestFitSchedule). Program
// order without pinned items needs none: its sweep is already in time.
absl::StatusOr<Placement> BestFitPlace(
    const PlacementProblem& problem, BestFitOrder order,
    const PlanContext& context,
    BestFitSchedule schedule = BestFitSchedule::kTimeSweep);

}  // namespace memplan

#endif  // MEMPLAN_CORE_PLACEMENT_BEST_FIT_H_
