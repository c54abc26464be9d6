// The placement validator is deliberately written apart from every
// placement strategy: it shares no helper with them, and checks overlaps
// with its own sweep over time.
#include "core/placement/placement.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace memplan {
namespace {

// Returns `[begin,end)@offset+size` for item i.
std::string Geometry(const PlacementProblem& problem,
                     const Placement& placement, size_t i) {
  const PlacementItem& item = problem.items[i];
  return absl::StrCat("[", item.live_range.begin, ",", item.live_range.end,
                      ")@", placement.offsets[i], "+", item.size);
}

// Checks each item on its own: well-formed, offset >= 0, aligned, pinned
// where pinned, and offset + size representable.
absl::Status CheckItems(const PlacementProblem& problem,
                        const Placement& placement) {
  if (placement.offsets.size() != problem.items.size()) {
    return absl::InternalError(
        absl::StrCat("placement has ", placement.offsets.size(),
                     " offsets for ", problem.items.size(), " items"));
  }
  for (size_t i = 0; i < problem.items.size(); ++i) {
    const PlacementItem& item = problem.items[i];
    const Bytes offset = placement.offsets[i];
    if (item.size < 0) {
      return absl::InternalError(
          absl::StrCat("items[", i, "]: size ", item.size, " is negative"));
    }
    if (item.live_range.begin > item.live_range.end) {
      return absl::InternalError(
          absl::StrCat("items[", i, "]: live range [", item.live_range.begin,
                       ",", item.live_range.end, ") ends before it begins"));
    }
    if (item.alignment <= 0) {
      return absl::InternalError(absl::StrCat(
          "items[", i, "]: alignment ", item.alignment, " is not positive"));
    }
    if (offset < 0) {
      return absl::InternalError(
          absl::StrCat("items[", i, "]: offset ", offset, " is negative"));
    }
    if (offset % item.alignment != 0) {
      return absl::InternalError(
          absl::StrCat("items[", i, "]: offset ", offset,
                       " is not a multiple of its alignment ", item.alignment));
    }
    if (item.pinned() && offset != item.fixed_offset) {
      return absl::InternalError(absl::StrCat("items[", i, "]: pinned at ",
                                              item.fixed_offset,
                                              " but placed at ", offset));
    }
    if (offset > std::numeric_limits<Bytes>::max() - item.size) {
      return absl::InternalError(absl::StrCat("items[", i, "]: offset ", offset,
                                              " + size ", item.size,
                                              " overflows"));
    }
  }
  return absl::OkStatus();
}

// Checks that no two items intersect both in time and in bytes.
//
// A sweep over time keeps the live items ordered by offset. Until the first
// conflict the live items hold pairwise disjoint byte intervals, so a newly
// live item conflicts with some live item if and only if it conflicts with
// its neighbour below or above in byte order. Ends are applied before begins
// at equal times, so [0,3) and [3,6) may share bytes. Items of size 0 or
// with an empty live range never conflict. O(n log n).
absl::Status CheckNoOverlap(const PlacementProblem& problem,
                            const Placement& placement) {
  struct Event {
    Timestep time;
    int32_t is_begin;  // 0 for an end, so that ends sort first
    size_t item;

    bool operator<(const Event& other) const {
      if (time != other.time) return time < other.time;
      if (is_begin != other.is_begin) return is_begin < other.is_begin;
      return item < other.item;
    }
  };
  std::vector<Event> events;
  events.reserve(2 * problem.items.size());
  for (size_t i = 0; i < problem.items.size(); ++i) {
    const PlacementItem& item = problem.items[i];
    if (!item.occupies()) continue;
    events.push_back({item.live_range.begin, 1, i});
    events.push_back({item.live_range.end, 0, i});
  }
  std::sort(events.begin(), events.end());

  // Live items as (offset, item index).
  std::set<std::pair<Bytes, size_t>> live;
  auto conflict = [&](size_t a, size_t b) {
    const size_t first = std::min(a, b);
    const size_t second = std::max(a, b);
    return absl::InternalError(
        absl::StrCat("items[", first, "] and items[", second,
                     "] overlap: ", Geometry(problem, placement, first), " vs ",
                     Geometry(problem, placement, second)));
  };
  for (const Event& event : events) {
    const Bytes offset = placement.offsets[event.item];
    if (!event.is_begin) {
      live.erase({offset, event.item});
      continue;
    }
    const auto it = live.insert({offset, event.item}).first;
    if (it != live.begin()) {
      const size_t below = std::prev(it)->second;
      if (placement.offsets[below] + problem.items[below].size > offset) {
        return conflict(below, event.item);
      }
    }
    const auto next = std::next(it);
    if (next != live.end() &&
        offset + problem.items[event.item].size > next->first) {
      return conflict(next->second, event.item);
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::ostream& operator<<(std::ostream& os, const PlacementItem& item) {
  os << item.live_range << "+" << item.size << "/" << item.alignment;
  if (item.pinned()) os << "@" << item.fixed_offset;
  return os;
}

Bytes PlacementHeight(const PlacementProblem& problem,
                      const std::vector<Bytes>& offsets) {
  Bytes height = 0;
  const size_t n = std::min(problem.items.size(), offsets.size());
  for (size_t i = 0; i < n; ++i) {
    height = std::max(height, offsets[i] + problem.items[i].size);
  }
  return height;
}

absl::Status ValidatePlacement(const PlacementProblem& problem,
                               const Placement& placement) {
  absl::Status status = CheckItems(problem, placement);
  if (!status.ok()) return status;
  // Its own maximum, not PlacementHeight's: the validator shares no code.
  Bytes height = 0;
  for (size_t i = 0; i < problem.items.size(); ++i) {
    height = std::max(height, placement.offsets[i] + problem.items[i].size);
  }
  if (placement.height != height) {
    return absl::InternalError(absl::StrCat("placement height ",
                                            placement.height,
                                            " but the items reach ", height));
  }
  if (height > problem.capacity) {
    return absl::InternalError(
        absl::StrCat("height ", height, " exceeds the capacity ",
                     problem.capacity, " by ", height - problem.capacity));
  }
  return CheckNoOverlap(problem, placement);
}

Bytes PlacementLowerBound(const PlacementProblem& problem) {
  const SpatialTimes times = FindSpatialTimes(problem);
  if (times.dense()) {
    // The net change of live bytes at each time, summed in time order: the
    // bytes live after a time's ends and begins are never exceeded in
    // between (ends only lower them, begins only raise them).
    std::vector<Bytes> delta(times.span(), 0);
    for (const PlacementItem& item : problem.items) {
      if (!item.occupies()) continue;
      delta[times.at(item.live_range.begin)] += item.size;
      delta[times.at(item.live_range.end)] -= item.size;
    }
    Bytes live = 0;
    Bytes bound = 0;
    for (const Bytes change : delta) {
      live += change;
      bound = std::max(bound, live);
    }
    return bound;
  }
  // (time, delta): ends (negative deltas) sort before begins at equal times.
  std::vector<std::pair<Timestep, Bytes>> events;
  events.reserve(times.ends);
  for (const PlacementItem& item : problem.items) {
    if (!item.occupies()) continue;
    events.emplace_back(item.live_range.begin, item.size);
    events.emplace_back(item.live_range.end, -item.size);
  }
  std::sort(events.begin(), events.end());
  Bytes live = 0;
  Bytes bound = 0;
  for (const auto& [time, delta] : events) {
    live += delta;
    bound = std::max(bound, live);
  }
  return bound;
}

SpatialTimes FindSpatialTimes(const PlacementProblem& problem) {
  SpatialTimes times;
  times.lo = std::numeric_limits<Timestep>::max();
  times.hi = std::numeric_limits<Timestep>::min();
  for (const PlacementItem& item : problem.items) {
    if (!item.occupies()) continue;
    times.lo = std::min(times.lo, item.live_range.begin);
    times.hi = std::max(times.hi, item.live_range.end);
    times.ends += 2;
  }
  if (times.ends == 0) times.lo = times.hi = 0;
  return times;
}

}  // namespace memplan
