#include "core/best_fit.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"

namespace memplan {
namespace {

// Items placed between two checks of the deadline and cancellation.
constexpr size_t kCheckInterval = 4096;

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

// Best-fit placement over a segment tree on (compressed) time.
//
// Time is cut into elementary intervals (leaves) at every begin and end.
// An item covering leaves [l, r) is stored at the O(log n) canonical nodes
// whose spans partition [l, r), as in any segment tree:
//
//   level 2        [------------ node 1 ------------]
//   level 1        [---- node 2 ----][---- node 3 ----]
//   level 0        [ 4  ][ 5  ][ 6  ][ 7  ]
//   item [1,4)           [ 5  ][---- node 3 ----]       (canonical: 5, 3;
//                                                         ancestors: 2, 1)
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
// the other levels are skipped. Nodes are prefetched before use: at a
// million items most of them are cache misses.
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
    }

    const std::vector<PlacementItem>& items = problem_.items;
    Placement placement;
    placement.offsets.assign(items.size(), 0);
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].pinned()) continue;
      placement.offsets[i] = items[i].fixed_offset;
      if (Spatial(items[i])) {
        Decompose(i);
        Insert(i, items[i].fixed_offset);
      }
    }
    const std::vector<OrderKey> keys = Order(order);
    for (size_t k = 0; k < keys.size(); ++k) {
      if (k % kCheckInterval == kCheckInterval - 1) {
        status = context.Check();
        if (!status.ok()) return status;
      }
      const size_t i = keys[k].item;
      Decompose(i);
      const Bytes offset = BestOffset(i);
      placement.offsets[i] = offset;
      Insert(i, offset);
    }
    placement.height = PlacementHeight(problem_, placement.offsets);
    return placement;
  }

 private:
  struct Node {
    ByteUnion own;  // items stored here: each covers the node's span
    ByteUnion sub;  // items stored here or below; kept where level_read_
  };

  // Returns whether the item occupies bytes at some time, i.e. can conflict.
  static bool Spatial(const PlacementItem& item) {
    return item.size > 0 && item.live_range.begin < item.live_range.end;
  }

  // Returns the unpinned spatial items in `order`.
  std::vector<OrderKey> Order(BestFitOrder order) const {
    const std::vector<PlacementItem>& items = problem_.items;
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
        case BestFitOrder::kSizeDescendingLongestFirst:
          key.a = size;
          key.b = length;
          key.c = begin;
          break;
        case BestFitOrder::kLengthDescendingLargestFirst:
          key.a = length;
          key.b = size;
          break;
      }
      keys.push_back(key);
    }
    std::sort(keys.begin(), keys.end());
    return keys;
  }

  // Sets canonical_ to item i's canonical nodes and ancestors_ to their
  // strict ancestors on levels that are read, and prefetches them all.
  //
  // Bottom-up, a canonical node taken on the left at some level has as its
  // ancestor, at every level above, the node just left of the remaining
  // range (l - 1); one taken on the right, the node just right of it (r).
  void Decompose(size_t i) {
    canonical_.clear();
    ancestors_.clear();
    size_t l = first_leaf_[i] + leaves_;
    size_t r = end_leaf_[i] + leaves_;
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
    for (const size_t v : canonical_) __builtin_prefetch(&nodes_[v]);
    for (const size_t v : ancestors_) __builtin_prefetch(&nodes_[v]);
  }

  // Records item i at `offset` in the nodes Decompose(i) found.
  void Insert(size_t i, Bytes offset) {
    const Bytes lo = offset;
    const Bytes hi = offset + problem_.items[i].size;
    for (const size_t v : canonical_) {
      AddToUnion(nodes_[v].own, lo, hi);
      AddToUnion(nodes_[v].sub, lo, hi);
    }
    for (const size_t v : ancestors_) AddToUnion(nodes_[v].sub, lo, hi);
  }

  // Returns the best-fit offset for item i among the items placed so far,
  // from the nodes Decompose(i) found.
  Bytes BestOffset(size_t i) {
    const PlacementItem& item = problem_.items[i];
    occupied_.clear();
    for (const size_t v : canonical_) {
      const ByteUnion& sub = nodes_[v].sub;
      occupied_.insert(occupied_.end(), sub.begin(), sub.end());
    }
    for (const size_t v : ancestors_) {
      const ByteUnion& own = nodes_[v].own;
      occupied_.insert(occupied_.end(), own.begin(), own.end());
    }
    std::sort(occupied_.begin(), occupied_.end(),
              [](const ByteInterval& x, const ByteInterval& y) {
                return x.lo < y.lo;
              });

    const Bytes size = item.size;
    const Bytes alignment = item.alignment;
    Bytes best_offset = -1;
    Bytes best_waste = std::numeric_limits<Bytes>::max();
    Bytes reach = 0;  // everything in [0, reach) is occupied or considered
    for (const ByteInterval& interval : occupied_) {
      if (interval.lo > reach) {
        const Bytes offset = AlignUp(reach, alignment);
        if (offset <= interval.lo - size) {
          const Bytes waste = interval.lo - reach - size;
          if (waste < best_waste) {
            best_waste = waste;
            best_offset = offset;
            if (waste == 0) return best_offset;
          }
        }
      }
      reach = std::max(reach, interval.hi);
    }
    if (best_offset >= 0) return best_offset;
    return AlignUp(reach, alignment);
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
  std::vector<ByteInterval> occupied_;  // scratch of BestOffset
};

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
    case BestFitOrder::kSizeDescendingLongestFirst:
      return "size_longest";
    case BestFitOrder::kLengthDescendingLargestFirst:
      return "length_largest";
  }
  return "unknown";
}

absl::StatusOr<Placement> BestFitPlace(const PlacementProblem& problem,
                                       BestFitOrder order,
                                       const PlanContext& context) {
  BestFitEngine engine(problem);
  return engine.Place(order, context);
}

absl::StatusOr<Placement> BestFitPortfolio(const PlacementProblem& problem,
                                           const PlanContext& context,
                                           BestFitOrder* winner) {
  BestFitEngine engine(problem);
  absl::StatusOr<Placement> best;
  BestFitOrder best_order = kAllBestFitOrders[0];
  for (const BestFitOrder order : kAllBestFitOrders) {
    absl::StatusOr<Placement> placement = engine.Place(order, context);
    if (!placement.ok()) return placement.status();
    if (!best.ok() || placement->height < best->height) {
      best = std::move(placement);
      best_order = order;
    }
  }
  if (winner != nullptr) *winner = best_order;
  return best;
}

}  // namespace memplan
