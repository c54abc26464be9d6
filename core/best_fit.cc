#include "core/best_fit.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <iterator>
#include <limits>
#include <queue>
#include <utility>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/time/clock.h"

namespace memplan {
namespace {

// Items placed between two checks of the deadline and cancellation.
constexpr size_t kCheckInterval = 4096;

// Unions this short are cut from the free gaps interval by interval.
constexpr size_t kFewIntervals = 4;

// A half-open interval [lo, hi) of bytes.
struct ByteInterval {
  Bytes lo;
  Bytes hi;
};

// A union of byte intervals: sorted by lo, pairwise disjoint and not
// touching (an interval ending at x and one beginning at x are merged).
// Most hold one interval, which needs no allocation.
using ByteUnion = absl::InlinedVector<ByteInterval, 1>;

// Adds [lo, hi) (lo < hi) to `byte_union`. Amortized O(log n) plus the
// moves of the tail.
void AddToUnion(ByteUnion& byte_union, Bytes lo, Bytes hi) {
  // The first interval that reaches lo: every one before it ends below lo.
  auto first = std::lower_bound(
      byte_union.begin(), byte_union.end(), lo,
      [](const ByteInterval& interval, Bytes x) { return interval.hi < x; });
  auto last = first;
  while (last != byte_union.end() && last->lo <= hi) {
    lo = std::min(lo, last->lo);
    hi = std::max(hi, last->hi);
    ++last;
  }
  if (first == last) {
    byte_union.insert(first, ByteInterval{lo, hi});
    return;
  }
  *first = ByteInterval{lo, hi};
  byte_union.erase(first + 1, last);
}

// The end of the gap above every item.
constexpr Bytes kUnbounded = std::numeric_limits<Bytes>::max();

// Returns `bytes` rounded up to a multiple of `alignment`, a power of two.
inline Bytes AlignUpPow2(Bytes bytes, Bytes alignment) {
  return (bytes + alignment - 1) & ~(alignment - 1);
}

// Maps a signed key to an unsigned one of the same order.
uint64_t Ordered(int64_t key) {
  return static_cast<uint64_t>(key) ^ (uint64_t{1} << 63);
}

// The place of one item in an order: sorted ascending by (a, b, c, item),
// so every order is total and the sort's result unique.
struct OrderKey {
  uint64_t a;
  uint64_t b;
  uint64_t c;
  uint32_t item;

  bool operator<(const OrderKey& other) const {
    if (a != other.a) return a < other.a;
    if (b != other.b) return b < other.b;
    if (c != other.c) return c < other.c;
    return item < other.item;
  }
};

// One item to place, with what placing it reads, so that the loop over
// items in order reads memory in sequence.
struct Job {
  uint32_t item;        // index into PlacementProblem::items
  uint32_t first_leaf;  // first leaf its live range covers
  uint32_t end_leaf;    // one past its last leaf
  Bytes size;           // bytes
  Bytes alignment;      // bytes, a power of two
};

// Best-fit placement over a segment tree on (compressed) time.
//
// Time is cut into elementary intervals (leaves) at every begin and end.
// An item covering leaves [l, r) is stored at the O(log n) canonical nodes
// whose spans partition [l, r), as in any segment tree:
//
//   level 2     [----------------- 1 -----------------]
//   level 1     [------- 2 --------][------- 3 --------]
//   level 0     [   4    ][   5    ][   6    ][   7    ]
//   item [1,4)            [   5    ][------- 3 --------]  canonical: 5, 3
//                                                         ancestors: 2, 1
//
// Each node keeps two unions of byte intervals:
//   own: items stored at the node (each covers the node's whole span), and
//   sub: items stored at the node or below it (each intersects its span).
// The items whose live ranges intersect a query range [l, r) are exactly
// those in sub of the query's canonical nodes plus those in own of the
// canonical nodes' strict ancestors; the bytes they occupy, merged, leave
// the gaps free during the whole range. Inserting an item adds it to own
// and sub of its canonical nodes and to sub of their strict ancestors.
//
// Only levels that hold a canonical node of some item are ever read, so
// the other levels are skipped.
class BestFitEngine {
 public:
  explicit BestFitEngine(const PlacementProblem& problem) : problem_(problem) {
    const std::vector<PlacementItem>& items = problem.items;
    std::vector<Timestep> times;
    times.reserve(2 * items.size());
    for (const PlacementItem& item : items) {
      if (!Spatial(item)) continue;
      times.push_back(item.live_range.begin);
      times.push_back(item.live_range.end);
    }
    std::sort(times.begin(), times.end());
    times.erase(std::unique(times.begin(), times.end()), times.end());
    const size_t num_leaves = times.empty() ? 1 : times.size() - 1;
    leaves_ = 1;
    levels_ = 1;
    while (leaves_ < num_leaves) {
      leaves_ *= 2;
      ++levels_;
    }
    first_leaf_.assign(items.size(), 0);
    end_leaf_.assign(items.size(), 0);
    level_read_.assign(levels_, false);
    for (size_t i = 0; i < items.size(); ++i) {
      if (!Spatial(items[i])) continue;
      const auto leaf = [&](Timestep t) {
        return static_cast<uint32_t>(
            std::lower_bound(times.begin(), times.end(), t) - times.begin());
      };
      first_leaf_[i] = leaf(items[i].live_range.begin);
      end_leaf_[i] = leaf(items[i].live_range.end);
      size_t l = first_leaf_[i] + leaves_;
      size_t r = end_leaf_[i] + leaves_;
      for (int level = 0; l < r; ++level, l >>= 1, r >>= 1) {
        if ((l & 1) != 0 || (r & 1) != 0) level_read_[level] = true;
        if ((l & 1) != 0) ++l;
        if ((r & 1) != 0) --r;
      }
    }
    nodes_.resize(2 * leaves_);
  }

  absl::StatusOr<Placement> Place(BestFitOrder order,
                                  const PlanContext& context) {
    absl::Status status = context.Check();
    if (!status.ok()) return status;
    for (Node& node : nodes_) {
      node.own.clear();
      node.sub.clear();
      node.sub_sorted = 0;
    }

    const std::vector<PlacementItem>& items = problem_.items;
    Placement placement;
    placement.offsets.assign(items.size(), 0);
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].pinned()) continue;
      placement.offsets[i] = items[i].fixed_offset;
      if (Spatial(items[i])) {
        const Job job = MakeJob(i);
        Decompose(job);
        Insert(job, items[i].fixed_offset);
      }
    }
    std::vector<Job> jobs;
    {
      const std::vector<OrderKey> keys = Order(order);
      jobs.reserve(keys.size());
      for (const OrderKey& key : keys) jobs.push_back(MakeJob(key.item));
    }
    for (size_t k = 0; k < jobs.size(); ++k) {
      if (k % kCheckInterval == kCheckInterval - 1) {
        status = context.Check();
        if (!status.ok()) return status;
      }
      const Job& job = jobs[k];
      Decompose(job);
      const Bytes offset = BestOffset(job);
      placement.offsets[job.item] = offset;
      Insert(job, offset);
    }
    placement.height = PlacementHeight(problem_, placement.offsets);
    return placement;
  }

 private:
  struct Node {
    ByteUnion own;  // items stored here: each covers the node's span
    // Items stored here or below; kept where level_read_. Its first
    // sub_sorted intervals form a union (sorted, coalesced); those after
    // are appended as they come and merged in batches.
    ByteUnion sub;
    uint32_t sub_sorted = 0;
  };

  // Adds [lo, hi) to node.sub: appended, and merged into the sorted part
  // once the appended part is a third of the whole.
  void AppendToSub(Node& node, Bytes lo, Bytes hi) {
    node.sub.push_back(ByteInterval{lo, hi});
    const size_t appended = node.sub.size() - node.sub_sorted;
    if (appended >= 8 && appended * 2 >= node.sub_sorted) MergeSub(node);
  }

  // Merges the appended part of node.sub into its sorted part.
  void MergeSub(Node& node) {
    ByteUnion& sub = node.sub;
    const auto by_lo = [](const ByteInterval& x, const ByteInterval& y) {
      return x.lo < y.lo;
    };
    std::sort(sub.begin() + node.sub_sorted, sub.end(), by_lo);
    merged_.clear();
    auto a = sub.begin();
    const auto a_end = sub.begin() + node.sub_sorted;
    auto b = a_end;
    while (a != a_end || b != sub.end()) {
      const ByteInterval next =
          (b == sub.end() || (a != a_end && a->lo <= b->lo)) ? *a++ : *b++;
      if (!merged_.empty() && next.lo <= merged_.back().hi) {
        merged_.back().hi = std::max(merged_.back().hi, next.hi);
      } else {
        merged_.push_back(next);
      }
    }
    sub.assign(merged_.begin(), merged_.end());
    node.sub_sorted = static_cast<uint32_t>(sub.size());
  }

  // Returns whether the item occupies bytes at some time, i.e. can conflict.
  static bool Spatial(const PlacementItem& item) {
    return item.size > 0 && item.live_range.begin < item.live_range.end;
  }

  Job MakeJob(size_t i) const {
    const PlacementItem& item = problem_.items[i];
    return Job{static_cast<uint32_t>(i), first_leaf_[i], end_leaf_[i],
               item.size, item.alignment};
  }

  // Returns the unpinned spatial items in `order`.
  std::vector<OrderKey> Order(BestFitOrder order) const {
    const std::vector<PlacementItem>& items = problem_.items;
    std::vector<uint64_t> contention;
    uint64_t peak = 0;
    if (order == BestFitOrder::kContentionDescending ||
        order == BestFitOrder::kContentionBandDescending) {
      contention = Contention();
      for (const uint64_t c : contention) peak = std::max(peak, c);
    }
    std::vector<OrderKey> keys;
    keys.reserve(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      const PlacementItem& item = items[i];
      if (item.pinned() || !Spatial(item)) continue;
      // Descending keys are complemented.
      const uint64_t size = ~Ordered(item.size);
      const uint64_t length = ~Ordered(item.live_range.length());
      const uint64_t begin = Ordered(item.live_range.begin);
      OrderKey key{0, 0, 0, static_cast<uint32_t>(i)};
      switch (order) {
        case BestFitOrder::kSizeDescending:
          key.a = size;
          break;
        case BestFitOrder::kLengthDescending:
          key.a = length;
          break;
        case BestFitOrder::kAreaDescending: {
          // Both factors are positive here; the product needs 128 bits.
          const unsigned __int128 area =
              static_cast<unsigned __int128>(item.size) *
              static_cast<unsigned __int128>(item.live_range.length());
          key.a = ~static_cast<uint64_t>(area >> 64);
          key.b = ~static_cast<uint64_t>(area);
          break;
        }
        case BestFitOrder::kProgramOrder:
          key.a = begin;
          break;
        case BestFitOrder::kContentionDescending:
          key.a = ~contention[i];
          key.b = length;
          key.c = size;
          break;
        case BestFitOrder::kContentionBandDescending: {
          // In [0, 64): contention * 64 / (peak + 1), in 128 bits.
          const uint64_t band = static_cast<uint64_t>(
              static_cast<unsigned __int128>(contention[i]) * 64 /
              (static_cast<unsigned __int128>(peak) + 1));
          key.a = ~band;
          key.b = length;
          key.c = size;
          break;
        }
      }
      keys.push_back(key);
    }
    std::sort(keys.begin(), keys.end());
    return keys;
  }

  // Returns each item's contention (core/best_fit.h) in bytes; 0 for items
  // that are not spatial. A sweep gives the load of every leaf, and a
  // range-maximum tree over the leaves the maximum over each live range.
  std::vector<uint64_t> Contention() const {
    const std::vector<PlacementItem>& items = problem_.items;
    std::vector<Bytes> delta(leaves_ + 1, 0);
    for (size_t i = 0; i < items.size(); ++i) {
      if (!Spatial(items[i])) continue;
      delta[first_leaf_[i]] += items[i].size;
      delta[end_leaf_[i]] -= items[i].size;
    }
    std::vector<Bytes> max_load(2 * leaves_, 0);
    Bytes load = 0;
    for (size_t leaf = 0; leaf < leaves_; ++leaf) {
      load += delta[leaf];
      max_load[leaves_ + leaf] = load;
    }
    for (size_t v = leaves_ - 1; v >= 1; --v) {
      max_load[v] = std::max(max_load[2 * v], max_load[2 * v + 1]);
    }
    std::vector<uint64_t> contention(items.size(), 0);
    for (size_t i = 0; i < items.size(); ++i) {
      if (!Spatial(items[i])) continue;
      Bytes most = 0;
      size_t l = first_leaf_[i] + leaves_;
      size_t r = end_leaf_[i] + leaves_;
      for (; l < r; l >>= 1, r >>= 1) {
        if ((l & 1) != 0) most = std::max(most, max_load[l++]);
        if ((r & 1) != 0) most = std::max(most, max_load[--r]);
      }
      contention[i] = static_cast<uint64_t>(most);
    }
    return contention;
  }

  // Sets canonical_ to the job's canonical nodes and ancestors_ to their
  // strict ancestors on levels that are read.
  //
  // Bottom-up, a canonical node taken on the left at some level has as its
  // ancestor, at every level above, the node just left of the remaining
  // range (l - 1); one taken on the right, the node just right of it (r).
  void Decompose(const Job& job) {
    canonical_.clear();
    ancestors_.clear();
    size_t l = job.first_leaf + leaves_;
    size_t r = job.end_leaf + leaves_;
    bool left = false;   // a canonical node was taken on the left
    bool right = false;  // ... on the right
    int level = 0;
    for (; l < r; ++level, l >>= 1, r >>= 1) {
      if (level_read_[level]) {
        if (left) ancestors_.push_back(l - 1);
        if (right) ancestors_.push_back(r);
      }
      if ((l & 1) != 0) {
        canonical_.push_back(l++);
        left = true;
      }
      if ((r & 1) != 0) {
        canonical_.push_back(--r);
        right = true;
      }
    }
    size_t left_ancestor = left ? l - 1 : 0;  // 0: none
    size_t right_ancestor = right ? r : 0;
    for (; level < levels_; ++level) {
      if (right_ancestor == left_ancestor) right_ancestor = 0;
      if (level_read_[level]) {
        if (left_ancestor != 0) ancestors_.push_back(left_ancestor);
        if (right_ancestor != 0) ancestors_.push_back(right_ancestor);
      }
      left_ancestor >>= 1;
      right_ancestor >>= 1;
    }
  }

  // Records the job at `offset` in the nodes Decompose(job) found.
  void Insert(const Job& job, Bytes offset) {
    const Bytes lo = offset;
    const Bytes hi = offset + job.size;
    for (const size_t v : canonical_) {
      AddToUnion(nodes_[v].own, lo, hi);
      AppendToSub(nodes_[v], lo, hi);
    }
    for (const size_t v : ancestors_) AppendToSub(nodes_[v], lo, hi);
  }

  // Returns the best-fit offset for the job among the items placed so far,
  // from the nodes Decompose(job) found.
  //
  // Starts from all bytes free and subtracts the unions of the canonical
  // nodes' sub and the ancestors' own, one union at a time, dropping every
  // gap that can no longer hold the item (gaps only shrink). What is left
  // are the maximal gaps free during the item's live range that fit it,
  // and the unbounded gap above everything.
  Bytes BestOffset(const Job& job) {
    free_[0] = ByteInterval{0, kUnbounded};
    free_size_ = 1;
    for (auto v = canonical_.rbegin(); v != canonical_.rend(); ++v) {
      Node& node = nodes_[*v];
      if (node.sub.size() != node.sub_sorted) MergeSub(node);
      Subtract(node.sub.data(), node.sub.size(), job);
    }
    for (const size_t v : ancestors_) {
      Subtract(nodes_[v].own.data(), nodes_[v].own.size(), job);
    }

    Bytes best_offset = -1;
    Bytes best_waste = std::numeric_limits<Bytes>::max();
    // The last gap is the unbounded one.
    for (size_t g = 0; g + 1 < free_size_; ++g) {
      const Bytes waste = free_[g].hi - free_[g].lo - job.size;
      if (waste < best_waste) {
        best_waste = waste;
        best_offset = AlignUpPow2(free_[g].lo, job.alignment);
      }
    }
    if (best_offset >= 0) return best_offset;
    return AlignUpPow2(free_[free_size_ - 1].lo, job.alignment);
  }

  // Removes `interval` from the free gaps in place, and the pieces of the
  // gaps it cuts that cannot hold the job: a binary search and a short
  // move, cheaper than Subtract's walk over all gaps for a short union.
  void Cut(const ByteInterval& interval, const Job& job) {
    ByteInterval* const gaps = free_.data();
    // The first gap that ends after the interval begins.
    size_t g = static_cast<size_t>(
        std::lower_bound(gaps, gaps + free_size_, interval.lo,
                         [](const ByteInterval& gap, Bytes x) {
                           return gap.hi <= x;
                         }) -
        gaps);
    const auto fits = [&](Bytes lo, Bytes hi) {
      return lo < hi &&
             (hi == kUnbounded || AlignUpPow2(lo, job.alignment) + job.size <= hi);
    };
    while (g < free_size_ && gaps[g].lo < interval.hi) {
      const ByteInterval gap = gaps[g];
      const bool keep_left = fits(gap.lo, interval.lo);
      const bool keep_right = fits(interval.hi, gap.hi);
      if (keep_left && keep_right) {  // one gap becomes two
        if (free_.size() < free_size_ + 1) free_.resize(2 * (free_size_ + 1));
        ByteInterval* const moved = free_.data();
        std::copy_backward(moved + g + 1, moved + free_size_,
                           moved + free_size_ + 1);
        moved[g] = ByteInterval{gap.lo, interval.lo};
        moved[g + 1] = ByteInterval{interval.hi, gap.hi};
        ++free_size_;
        return;  // the interval ends inside this gap
      }
      if (keep_left) {
        gaps[g].hi = interval.lo;
        ++g;
      } else if (keep_right) {
        gaps[g].lo = interval.hi;
        return;
      } else {
        std::copy(gaps + g + 1, gaps + free_size_, gaps + g);
        --free_size_;
      }
    }
  }

  // Removes the `count` intervals at `intervals` (sorted, coalesced) from
  // the free gaps, and then the gaps that cannot hold the job.
  void Subtract(const ByteInterval* intervals, size_t count, const Job& job) {
    if (count == 0) return;
    if (count <= kFewIntervals) {
      for (size_t k = 0; k < count; ++k) Cut(intervals[k], job);
      return;
    }
    if (next_free_.size() < free_size_ + count) {
      next_free_.resize(2 * (free_size_ + count));
    }
    ByteInterval* out = next_free_.data();
    const auto keep = [&](Bytes lo, Bytes hi) {
      if (hi == kUnbounded || AlignUpPow2(lo, job.alignment) + job.size <= hi) {
        *out++ = ByteInterval{lo, hi};
      }
    };
    const ByteInterval* it = intervals;
    const ByteInterval* const end = intervals + count;
    for (size_t g = 0; g < free_size_; ++g) {
      const ByteInterval gap = free_[g];
      // The first interval that ends after the gap begins.
      while (it != end && it->hi <= gap.lo) ++it;
      if (it == end || it->lo >= gap.hi) {  // untouched
        *out++ = gap;
        continue;
      }
      Bytes lo = gap.lo;
      while (it != end && it->lo < gap.hi) {
        if (it->lo > lo) keep(lo, it->lo);
        lo = it->hi;
        // An interval reaching past the gap may cut the next gap too.
        if (it->hi >= gap.hi) break;
        ++it;
      }
      if (lo < gap.hi) keep(lo, gap.hi);
    }
    free_size_ = static_cast<size_t>(out - next_free_.data());
    free_.swap(next_free_);
  }

  const PlacementProblem& problem_;
  size_t leaves_ = 1;  // a power of two >= the number of elementary intervals
  int levels_ = 1;     // log2(leaves_) + 1
  std::vector<uint32_t> first_leaf_;  // per item: first leaf it covers
  std::vector<uint32_t> end_leaf_;    // per item: one past its last leaf
  std::vector<bool> level_read_;      // per level: a canonical node is there
  std::vector<Node> nodes_;           // heap order: root 1, leaves from leaves_
  std::vector<size_t> canonical_;     // scratch of Decompose
  std::vector<size_t> ancestors_;     // scratch of Decompose
  // Scratch of BestOffset and Subtract: the free gaps are free_[0, free_size_).
  std::vector<ByteInterval> free_ = std::vector<ByteInterval>(1);
  size_t free_size_ = 0;
  std::vector<ByteInterval> next_free_;
  std::vector<ByteInterval> merged_;    // scratch of MergeSub
};

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
class ProgramOrderSweep {
 public:
  explicit ProgramOrderSweep(const PlacementProblem& problem)
      : problem_(problem) {}

  absl::StatusOr<Placement> Place(const PlanContext& context) {
    absl::Status status = context.Check();
    if (!status.ok()) return status;
    const std::vector<PlacementItem>& items = problem_.items;
    Placement placement;
    placement.offsets.assign(items.size(), 0);
    std::vector<std::pair<Timestep, uint32_t>> order;  // (begin, item)
    order.reserve(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      const PlacementItem& item = items[i];
      if (item.size > 0 && item.live_range.begin < item.live_range.end) {
        order.emplace_back(item.live_range.begin, static_cast<uint32_t>(i));
      }
    }
    std::sort(order.begin(), order.end());
    // Live items by end, soonest first: (end, offset).
    std::priority_queue<std::pair<Timestep, Bytes>,
                        std::vector<std::pair<Timestep, Bytes>>,
                        std::greater<std::pair<Timestep, Bytes>>>
        ends;
    for (size_t k = 0; k < order.size(); ++k) {
      if (k % kCheckInterval == kCheckInterval - 1) {
        status = context.Check();
        if (!status.ok()) return status;
      }
      const auto [begin, i] = order[k];
      while (!ends.empty() && ends.top().first <= begin) {
        Remove(ends.top().second);
        ends.pop();
      }
      const PlacementItem& item = items[i];
      const Bytes offset = BestOffset(item.size, item.alignment);
      Add(offset, offset + item.size);
      ends.emplace(item.live_range.end, offset);
      placement.offsets[i] = offset;
    }
    placement.height = PlacementHeight(problem_, placement.offsets);
    return placement;
  }

 private:
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
  absl::btree_set<ByteInterval, ByLo> live_;  // disjoint, by offset
  absl::btree_set<std::pair<Bytes, Bytes>> gaps_;  // bounded: (length, lo)
};

// Returns whether some item is pinned (the sweep cannot place around
// pinned items that begin later).
bool AnyPinned(const PlacementProblem& problem) {
  for (const PlacementItem& item : problem.items) {
    if (item.pinned()) return true;
  }
  return false;
}

}  // namespace

const char* BestFitOrderName(BestFitOrder order) {
  switch (order) {
    case BestFitOrder::kSizeDescending:
      return "size";
    case BestFitOrder::kLengthDescending:
      return "length";
    case BestFitOrder::kAreaDescending:
      return "area";
    case BestFitOrder::kProgramOrder:
      return "program";
    case BestFitOrder::kContentionDescending:
      return "contention";
    case BestFitOrder::kContentionBandDescending:
      return "contention_band";
  }
  return "unknown";
}

absl::StatusOr<Placement> BestFitPlace(const PlacementProblem& problem,
                                       BestFitOrder order,
                                       const PlanContext& context) {
  if (order == BestFitOrder::kProgramOrder && !AnyPinned(problem)) {
    return ProgramOrderSweep(problem).Place(context);
  }
  BestFitEngine engine(problem);
  return engine.Place(order, context);
}

absl::StatusOr<Placement> BestFitPortfolio(const PlacementProblem& problem,
                                           const PlanContext& context,
                                           BestFitOrder* winner,
                                           absl::Time stop_after) {
  BestFitEngine engine(problem);
  absl::StatusOr<Placement> best;
  BestFitOrder best_order = kAllBestFitOrders[0];
  // No placement is lower than the bound, and ties go to the order listed
  // first, so the first order to reach it wins.
  const Bytes bound = PlacementLowerBound(problem);
  for (const BestFitOrder order : kAllBestFitOrders) {
    if (best.ok() && best->height <= bound) break;
    if (best.ok() && absl::Now() >= stop_after) break;
    PlanContext order_context = context;
    if (best.ok() && stop_after < order_context.deadline) {
      order_context.deadline = stop_after;
    }
    absl::StatusOr<Placement> placement =
        order == BestFitOrder::kProgramOrder && !AnyPinned(problem)
            ? ProgramOrderSweep(problem).Place(order_context)
            : engine.Place(order, order_context);
    if (!placement.ok()) {
      // Out of time for this order: keep the best finished one.
      if (best.ok() && absl::Now() >= stop_after &&
          placement.status().code() == absl::StatusCode::kDeadlineExceeded) {
        break;
      }
      return placement.status();
    }
    if (!best.ok() || placement->height < best->height) {
      best = std::move(placement);
      best_order = order;
    }
  }
  if (winner != nullptr) *winner = best_order;
  return best;
}

}  // namespace memplan
