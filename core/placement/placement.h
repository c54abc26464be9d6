// The single-pool placement problem that the search strategies solve (as
// MiniMalloc's Problem and Solution): put every item of one pool at a byte
// offset so that no two items whose live ranges intersect share a byte.
//
//   offset ^
//   height +.............................
//          |        +------+
//          |  +-----+  i1  |          items i0 and i2 may share bytes:
//          |  |  i0 +------+          their half-open live ranges [0,3)
//          |  +-----+--------+        and [3,6) do not intersect
//          |        |   i2   |
//          +--------+--------+----> timestep
//          0        3        6
//
// Pool modes, devices and names are the strategies' business
// (core/placement/pool_layout.h maps a pool mode onto placements); a
// placement is one pool of one device.
#ifndef MEMPLAN_CORE_PLACEMENT_PLACEMENT_H_
#define MEMPLAN_CORE_PLACEMENT_PLACEMENT_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <ostream>
#include <vector>

#include "absl/status/status.h"
#include "core/types.h"

namespace memplan {

// No capacity: the pool may be as high as it needs.
inline constexpr Bytes kUnboundedCapacity = std::numeric_limits<Bytes>::max();

// One buffer to place.
struct PlacementItem {
  LiveRange live_range;     // half-open [begin, end), timesteps
  Bytes size = 0;           // bytes, >= 0
  Bytes alignment = 1;      // the offset is a multiple of this (power of 2)
  Bytes fixed_offset = -1;  // >= 0: the item is pinned at this offset

  bool pinned() const { return fixed_offset >= 0; }
  // Whether the item takes some bytes at some timestep (size > 0 and a
  // non-empty live range), so that it can conflict with another.
  bool occupies() const {
    return size > 0 && live_range.begin < live_range.end;
  }
  friend bool operator==(const PlacementItem& a, const PlacementItem& b) {
    return a.live_range == b.live_range && a.size == b.size &&
           a.alignment == b.alignment && a.fixed_offset == b.fixed_offset;
  }
};

// Prints "[b,e)+size/alignment" (and "@offset" when pinned).
std::ostream& operator<<(std::ostream& os, const PlacementItem& item);

struct PlacementProblem {
  std::vector<PlacementItem> items;
  // Every offset + size must be <= capacity, in bytes.
  Bytes capacity = kUnboundedCapacity;
};

struct Placement {
  std::vector<Bytes> offsets;  // bytes, parallel to PlacementProblem::items
  Bytes height = 0;  // max over items of offset + size; 0 without items

  friend bool operator==(const Placement& a, const Placement& b) {
    return a.offsets == b.offsets && a.height == b.height;
  }
};

// Returns max over items of offsets[i] + size (0 for no items), in bytes.
Bytes PlacementHeight(const PlacementProblem& problem,
                      const std::vector<Bytes>& offsets);

// Returns OK when `placement` places every item of `problem` validly:
// offsets parallel to items, >= 0, multiples of each item's alignment,
// pinned items at their fixed offset, no two items overlapping in both time
// (half-open ranges intersect) and bytes, height == PlacementHeight, and
// height <= capacity. Else INTERNAL naming the first violation (items by
// index). Shares no code with any placement strategy. O(n log n).
absl::Status ValidatePlacement(const PlacementProblem& problem,
                               const Placement& placement);

// Returns the maximum over timesteps of the summed sizes of live items, in
// bytes: no placement is lower. O(n + span) where the span is dense (see
// SpatialTimes), else O(n log n).
Bytes PlacementLowerBound(const PlacementProblem& problem);

// The times of the items that occupy bytes (size > 0, begin < end): the
// least begin `lo`, the greatest end `hi`, and their number of ends (two
// an item); lo = hi = 0 without such items.
struct SpatialTimes {
  Timestep lo = 0;
  Timestep hi = 0;
  size_t ends = 0;

  // hi - lo + 1, the timesteps from lo to hi; 0 without ends.
  uint64_t span() const {
    return ends == 0
               ? 0
               : static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) + 1;
  }
  // Whether the span is at most twice the number of ends, so that a table
  // over it costs no more than the ends themselves (as with positions in a
  // program); callers then index by time instead of sorting.
  bool dense() const { return ends > 0 && span() <= 2 * ends; }
  // The index of t, in [lo, hi], in such a table.
  uint64_t at(Timestep t) const {
    return static_cast<uint64_t>(t) - static_cast<uint64_t>(lo);
  }
};
SpatialTimes FindSpatialTimes(const PlacementProblem& problem);

}  // namespace memplan

#endif  // MEMPLAN_CORE_PLACEMENT_PLACEMENT_H_
