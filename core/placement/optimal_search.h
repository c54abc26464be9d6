// An exact, anytime search for one pool (in the spirit of MiniMalloc,
// Moffitt, ASPLOS'23): places the items of a PlacementProblem at the lowest
// height possible, or decides whether they fit under its capacity.
//
// The search enumerates canonical placements. Gravity lets every unpinned
// item fall until it rests on the floor or on an item below it, so some
// optimal placement has every item at the aligned top of the highest item
// below it that shares a timestep with it:
//
//   offset ^
//          |  +--------+
//          |  |   i2   |                i2 rests on i0 (it also meets
//          |  +-----+--+    +---+       i1), i3 on i1. Listed by offset,
//          |  | i0  |       |i3 |       each item sits at the top of the
//          |  |     +-------+---+--+    highest earlier item it meets in
//          |  |     |      i1      |    time, so the search only chooses
//          +--+-----+--------------+--> which item comes next.
//             0     3              8
//
// The search runs depth first on an explicit stack and prunes with:
//  - the load of each section of time (the span between two consecutive
//    begins or ends): the next offset plus a section's remaining load must
//    fit, and each section's remaining items must stack under the capacity
//    above their earliest offsets (a one-machine schedule with release
//    times);
//  - dominance: no item is left above empty space it could move down into;
//    identical items go in a fixed order;
//  - a table of partial states proven to lead nowhere;
//  - decomposition: timesteps where nothing is live split the problem into
//    independent parts (height = max), and during the search, once no
//    unplaced item crosses a boundary between sections, the two sides are
//    solved as problems of their own;
//  - exchange: items that cover every section with items left in such a
//    group wait for its top (the others then fit under a lower capacity).
// Each part is searched by a portfolio of three searches taking turns: two
// with fixed orders of trying items at equal offsets, and, every other turn,
// one that restarts with new orders after budgets following Luby's
// sequence. Turns count nodes, not time, so a search that completes gives
// the same answer on every run. Minimizing bisects over heights with a
// node budget per probe that doubles every pass.
#ifndef MEMPLAN_CORE_PLACEMENT_OPTIMAL_SEARCH_H_
#define MEMPLAN_CORE_PLACEMENT_OPTIMAL_SEARCH_H_

#include <cstdint>
#include <ostream>

#include "absl/status/statusor.h"
#include "core/placement/placement.h"
#include "core/planner.h"

namespace memplan {

struct SearchOptions {
  // Optional starting placement, used as the incumbent: the search looks
  // only for lower ones. Not owned; may be null (then BestFitPortfolio's
  // placement seeds the search). Must place every item validly (its height
  // may exceed the capacity).
  const Placement* incumbent = nullptr;
};

struct SearchResult {
  // The best valid placement found (always one: the seed at worst): the
  // lowest one, or with a capacity the first that fits. Offsets in bytes,
  // parallel to PlacementProblem::items.
  Placement placement;
  // `placement` is valid and fits the capacity (when one is set).
  bool found = false;
  // No valid placement is lower than `placement`: the search completed, or
  // the height equals a lower bound (PlacementLowerBound, a pinned item's
  // top, the size of an item with an empty live range).
  bool proven_optimal = false;
  // With a capacity: proven that no placement fits under it.
  bool infeasible_proven = false;
  // Search nodes visited (partial placements extended), for benchmarks. Not
  // compared by operator==.
  int64_t nodes = 0;

  friend bool operator==(const SearchResult& a, const SearchResult& b) {
    return a.placement == b.placement && a.found == b.found &&
           a.proven_optimal == b.proven_optimal &&
           a.infeasible_proven == b.infeasible_proven;
  }
};

// Prints "height=H found=1 proven_optimal=0 infeasible_proven=0 offsets=[...]".
std::ostream& operator<<(std::ostream& os, const SearchResult& result);

// Places every item of `problem` (sizes and offsets in bytes, live ranges
// half-open in timesteps), respecting each item's alignment and pinned
// offset.
//
// Without a capacity (kUnboundedCapacity) minimizes the height: returns the
// lowest placement found, with proven_optimal when no lower one exists.
// With a capacity decides, as MiniMalloc, whether the items fit under it:
// returns the first placement found with height <= capacity (found), or
// found = false with infeasible_proven when none exists, or found = false
// without it when time ran out; in those two cases `placement` holds the
// lowest placement seen (above the capacity), so the caller can say by how
// many bytes it misses.
//
// Anytime: when `context` says stop (deadline passed, cancelled), returns OK
// with the best placement so far, within about a millisecond (the search
// looks every 128 nodes); the seed comes first, so there always is one
// (best-fit's quick program-order sweep when the context stopped its
// portfolio). Never returns DEADLINE_EXCEEDED or CANCELLED. The search
// counts nodes, not time: a run that completes gives the same result on
// every run and machine.
//
// Returns INVALID_ARGUMENT, naming the item and field, for a negative
// capacity, a size past kMaxBufferBytes (or negative), a live range that
// ends before it begins, an alignment that is not a power of two in
// [1, kMaxAlignment], a pinned offset past 2^50 or not a multiple of the
// item's alignment, two pinned items that overlap, or an incumbent that
// does not place every item validly. Returns INTERNAL if its own placement
// fails ValidatePlacement (a bug).
absl::StatusOr<SearchResult> OptimalPlace(const PlacementProblem& problem,
                                          const SearchOptions& options,
                                          const PlanContext& context);

}  // namespace memplan

#endif  // MEMPLAN_CORE_PLACEMENT_OPTIMAL_SEARCH_H_
