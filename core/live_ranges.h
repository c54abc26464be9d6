// LiveRanges: a set of half-open live ranges, sorted and merged, as
// Inductor's `LiveRanges` in torch/_inductor/codegen/memory_planning.py.
#ifndef MEMPLAN_CORE_LIVE_RANGES_H_
#define MEMPLAN_CORE_LIVE_RANGES_H_

#include <algorithm>
#include <initializer_list>
#include <ostream>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/types/span.h"
#include "core/types.h"

namespace memplan {

// Half-open ranges [begin, end) of timesteps, sorted by begin, with ranges
// that overlap or touch (end >= next begin) joined into one, as Inductor's
// `LiveRanges.__init__`. Invariant: ranges()[i].end < ranges()[i+1].begin.
// An empty range [t, t) is kept unless it touches another range.
class LiveRanges {
 public:
  LiveRanges() = default;
  // Sorts (by begin) and merges `ranges`.
  explicit LiveRanges(absl::Span<const LiveRange> ranges);
  LiveRanges(std::initializer_list<LiveRange> ranges)
      : LiveRanges(absl::Span<const LiveRange>(ranges)) {}

  // Most sets hold one or two ranges: those need no heap allocation.
  using Storage = absl::InlinedVector<LiveRange, 2>;

  const Storage& ranges() const { return ranges_; }
  bool empty() const { return ranges_.empty(); }
  // First begin and last end; the set must not be empty.
  Timestep begin() const { return ranges_.front().begin; }
  Timestep end() const { return ranges_.back().end; }

  // Adds `range`, joining it with every range it overlaps or touches, so
  // that the result equals LiveRanges(ranges() + {range}). Returns whether
  // the set changed. O(log size()) plus the shift of the tail.
  bool Add(LiveRange range);

  // Returns whether any range of *this overlaps any range of `other`, by
  // Inductor's `LiveRanges.overlaps(self, other)`: walk both lists by begin;
  // the range that begins first overlaps the other list's head when its end
  // is past that head's begin. Ranges that only touch do not overlap. Note
  // the walk is not symmetric for empty ranges: [3,5).overlaps([3,3)) is
  // true, [3,3).overlaps([3,5)) is false. O(size() + other.size()).
  bool Overlaps(const LiveRanges& other) const;

  // Returns Overlaps(LiveRanges({range})), in O(log size()). Inline: the
  // Inductor planner's tree walk calls it for most nodes it visits.
  bool Overlaps(LiveRange range) const {
    // The walk above, for a single range: every range of *this that begins
    // at or before range.begin overlaps when it ends after range.begin
    // (only the last of them can, ends being increasing); then the first
    // range that begins after range.begin overlaps when range ends after
    // its begin.
    const LiveRange* first = ranges_.data();
    const LiveRange* last = first + ranges_.size();
    const LiveRange* after = first;
    if (ranges_.size() <= 4) {
      while (after != last && after->begin <= range.begin) ++after;
    } else {
      after = std::upper_bound(
          first, last, range.begin,
          [](Timestep t, const LiveRange& r) { return t < r.begin; });
    }
    if (after != first && RangeOverlaps(*(after - 1), range)) return true;
    return after != last && RangeOverlaps(*after, range);
  }

  // Returns LiveRanges({mine}).Overlaps(other) in O(1): a range that begins
  // at or before other.begin overlaps when it ends after other.begin; one
  // that begins after it, when other ends after its begin.
  static bool RangeOverlaps(LiveRange mine, LiveRange other) {
    return mine.begin <= other.begin ? mine.end > other.begin
                                     : other.end > mine.begin;
  }

  friend bool operator==(const LiveRanges& a, const LiveRanges& b) {
    return a.ranges_ == b.ranges_;
  }

 private:
  Storage ranges_;
};

// Prints "{[b,e), [b,e)}".
std::ostream& operator<<(std::ostream& os, const LiveRanges& ranges);

}  // namespace memplan

#endif  // MEMPLAN_CORE_LIVE_RANGES_H_
