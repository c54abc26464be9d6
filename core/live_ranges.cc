#include "core/live_ranges.h"

#include <algorithm>
#include <utility>

namespace memplan {

LiveRanges::LiveRanges(absl::Span<const LiveRange> ranges)
    : ranges_(ranges.begin(), ranges.end()) {
  // Merging joins ranges whose closed hulls [begin, end] meet, so the order
  // of equal begins does not matter and a plain sort suffices.
  auto by_begin = [](const LiveRange& a, const LiveRange& b) {
    return a.begin < b.begin;
  };
  if (!std::is_sorted(ranges_.begin(), ranges_.end(), by_begin)) {
    std::sort(ranges_.begin(), ranges_.end(), by_begin);
  }
  // Merge in place: ranges_[0, kept) are the merged ranges so far.
  size_t kept = 0;
  for (size_t i = 0; i < ranges_.size(); ++i) {
    const LiveRange range = ranges_[i];
    if (kept > 0 && ranges_[kept - 1].end >= range.begin) {
      ranges_[kept - 1].end = std::max(ranges_[kept - 1].end, range.end);
    } else {
      ranges_[kept++] = range;
    }
  }
  ranges_.resize(kept);
}

bool LiveRanges::Add(LiveRange range) {
  // Merging joins ranges whose closed hulls [begin, end] meet, so the result
  // does not depend on the order ranges arrive in. Ends, like begins, are
  // strictly increasing. `first` is the first range ending at or after
  // range.begin; `last` the first beginning after range.end.
  auto first = std::lower_bound(
      ranges_.begin(), ranges_.end(), range.begin,
      [](const LiveRange& r, Timestep t) { return r.end < t; });
  auto last = std::upper_bound(
      first, ranges_.end(), range.end,
      [](Timestep t, const LiveRange& r) { return t < r.begin; });
  if (first == last) {
    ranges_.insert(first, range);
    return true;
  }
  LiveRange joined{std::min(range.begin, first->begin),
                   std::max(range.end, std::prev(last)->end)};
  if (std::next(first) == last && joined == *first) return false;
  *first = joined;
  ranges_.erase(std::next(first), last);
  return true;
}

bool LiveRanges::Overlaps(const LiveRanges& other) const {
  // The two heads, each walking its own list; `left` is the list whose head
  // begins first.
  const Storage* left = &ranges_;
  const Storage* right = &other.ranges_;
  size_t left_at = 0;
  size_t right_at = 0;
  while (left_at < left->size() && right_at < right->size()) {
    if ((*left)[left_at].begin > (*right)[right_at].begin) {
      std::swap(left, right);
      std::swap(left_at, right_at);
    }
    if ((*left)[left_at].end > (*right)[right_at].begin) return true;
    ++left_at;
  }
  return false;
}

std::ostream& operator<<(std::ostream& os, const LiveRanges& ranges) {
  os << "{";
  for (size_t i = 0; i < ranges.ranges().size(); ++i) {
    if (i > 0) os << ", ";
    os << ranges.ranges()[i];
  }
  return os << "}";
}

}  // namespace memplan
