#include "core/placement/program_order_sweep.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <iterator>
#include <queue>
#include <utility>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/status/status.h"
#include "core/placement/byte_unions.h"

namespace memplan {
namespace best_fit_internal {
namespace {

// Best-fit in program order as a sweep over time (PlaceInProgramOrder).
class ProgramOrderSweep {
 public:
  explicit ProgramOrderSweep(const PlacementProblem& problem)
      : problem_(problem) {}

  absl::StatusOr<Placement> Place(const PlanContext& context,
                                  const OrderStop& stop = OrderStop()) {
    absl::Status status = CheckOrder(context, stop);
    if (!status.ok()) return status;
    const std::vector<PlacementItem>& items = problem_.items;
    Placement placement;
    placement.offsets.assign(items.size(), 0);
    const std::vector<uint32_t> order = ItemsByBegin();
    // Live items by end, soonest first: (end, offset).
    std::priority_queue<std::pair<Timestep, Bytes>,
                        std::vector<std::pair<Timestep, Bytes>>,
                        std::greater<std::pair<Timestep, Bytes>>>
        ends;
    Bytes height = PlacementHeight(problem_, placement.offsets);  // so far
    for (size_t k = 0; k < order.size(); ++k) {
      if (k % kCheckInterval == kCheckInterval - 1) {
        status = CheckOrder(context, stop);
        if (!status.ok()) return status;
      }
      const uint32_t i = order[k];
      const Timestep begin = items[i].live_range.begin;
      while (!ends.empty() && ends.top().first <= begin) {
        Remove(ends.top().second);
        ends.pop();
      }
      const PlacementItem& item = items[i];
      const Bytes offset = BestOffset(item.size, item.alignment);
      Add(offset, offset + item.size);
      ends.emplace(item.live_range.end, offset);
      placement.offsets[i] = offset;
      height = std::max(height, offset + item.size);
      if (stop.Exceeded(height)) return CannotWin();
    }
    placement.height = PlacementHeight(problem_, placement.offsets);
    return placement;
  }

 private:
  // Returns the items that occupy bytes over time by (begin, index): where
  // the times are dense (SpatialTimes::dense), a count of the items
  // beginning at each time places them in O(n + span); else a sort does.
  std::vector<uint32_t> ItemsByBegin() const {
    const std::vector<PlacementItem>& items = problem_.items;
    std::vector<uint32_t> order;
    order.reserve(items.size());
    const SpatialTimes times = FindSpatialTimes(problem_);
    if (!times.dense()) {
      for (size_t i = 0; i < items.size(); ++i) {
        if (items[i].occupies()) order.push_back(static_cast<uint32_t>(i));
      }
      std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
        const Timestep begin_a = items[a].live_range.begin;
        const Timestep begin_b = items[b].live_range.begin;
        return begin_a != begin_b ? begin_a < begin_b : a < b;
      });
      return order;
    }
    // first[t - lo]: the items beginning at t, then the first slot of them.
    std::vector<uint32_t> first(times.span() + 1, 0);
    for (const PlacementItem& item : items) {
      if (item.occupies()) ++first[times.at(item.live_range.begin) + 1];
    }
    for (size_t t = 1; t < first.size(); ++t) first[t] += first[t - 1];
    order.resize(first.back());
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].occupies()) continue;
      order[first[times.at(items[i].live_range.begin)]++] =
          static_cast<uint32_t>(i);
    }
    return order;
  }

  // Returns the top of the live items: the end of the highest one, or 0.
  Bytes Top() const { return live_.empty() ? 0 : std::prev(live_.end())->hi; }

  Bytes BestOffset(Bytes size, Bytes alignment) const {
    // In (length, offset) order the first gap that fits wastes least, and
    // is the lowest of those that waste as little.
    for (auto it = gaps_.lower_bound({size, 0}); it != gaps_.end(); ++it) {
      const auto [length, lo] = *it;
      const Bytes offset = AlignUpPow2(lo, alignment);
      if (offset + size <= lo + length) return offset;
    }
    return AlignUpPow2(Top(), alignment);
  }

  // Records the live item [lo, hi), which lies in a free gap or at or
  // above the top.
  void Add(Bytes lo, Bytes hi) {
    const auto next = live_.lower_bound(ByteInterval{lo, 0});
    const Bytes below = next == live_.begin() ? 0 : std::prev(next)->hi;
    if (next != live_.end()) {
      gaps_.erase({next->lo - below, below});
      AddGap(hi, next->lo);
    }
    AddGap(below, lo);
    live_.insert(next, ByteInterval{lo, hi});
  }

  // Forgets the live item at offset lo, merging the gaps on its sides.
  void Remove(Bytes lo) {
    const auto it = live_.find(ByteInterval{lo, 0});
    const Bytes below = it == live_.begin() ? 0 : std::prev(it)->hi;
    const auto next = std::next(it);
    gaps_.erase({lo - below, below});
    if (next != live_.end()) {
      gaps_.erase({next->lo - it->hi, it->hi});
      AddGap(below, next->lo);
    }
    live_.erase(it);
  }

  void AddGap(Bytes lo, Bytes hi) {
    if (hi > lo) gaps_.insert({hi - lo, lo});
  }

  struct ByLo {
    bool operator()(const ByteInterval& a, const ByteInterval& b) const {
      return a.lo < b.lo;
    }
  };

  const PlacementProblem& problem_;
  absl::btree_set<ByteInterval, ByLo> live_;       // disjoint, by offset
  absl::btree_set<std::pair<Bytes, Bytes>> gaps_;  // bounded: (length, lo)
};

}  // namespace

absl::StatusOr<Placement> PlaceInProgramOrder(const PlacementProblem& problem,
                                              const PlanContext& context,
                                              const OrderStop& stop) {
  return ProgramOrderSweep(problem).Place(context, stop);
}

}  // namespace best_fit_internal
}  // namespace memplan
