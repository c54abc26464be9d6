#include "core/placement/best_fit.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "core/placement/byte_unions.h"
#include "core/placement/order_placer.h"
#include "core/placement/order_stop.h"
#include "core/placement/paged_level.h"
#include "core/placement/program_order_sweep.h"
#include "core/placement/radix_sort.h"
#include "core/placement/time_sweep.h"

namespace memplan {
namespace best_fit_internal {
namespace {

// Steps of a TimeSweep between two releases of the unions it has passed
// (BestFitEngine::ReleaseBefore); kCheckInterval is a multiple of it.
constexpr size_t kSweepBatch = 256;
static_assert(kCheckInterval % kSweepBatch == 0);

// Unions this short are cut from the free gaps interval by interval.
constexpr size_t kFewIntervals = 4;

// Place fetches the nodes of the job kNodesAhead places ahead, and the
// blocks of the job kBlocksAhead ahead, in a ring of kLookahead NodeLists.
constexpr size_t kNodesAhead = 6;
constexpr size_t kBlocksAhead = 3;
constexpr size_t kLookahead = 8;

// BestFitEngine keeps nodes on every kLevelStride-th level of its binary
// tree only (0, 3, 6, ...): a tree of fanout 8. A canonical node on a
// level between is replaced by its descendants on the kept level below
// it. Fewer levels mean fewer ancestors to read and write per item, for
// more canonical nodes. Stride 3 was the fastest of strides 1 to 6 on
// memplan-best-fit-bench's 1M random items (docs/benchmarks.md, "Best fit
// at scale").
constexpr int kLevelStride = 3;

// Returns the kept level that a canonical node on `level` is replaced
// from: the highest kept level at or below it.
constexpr int KeptLevel(int level) { return level - level % kLevelStride; }

// The most canonical nodes of one item after replacement: at most one a
// level on each side, each replaced by up to 2^(kLevelStride - 1) nodes,
// over at most 64 levels.
constexpr size_t MaxCanonicalNodes() {
  size_t nodes = 0;
  for (int level = 0; level < 64; ++level) {
    nodes += 2 * (size_t{1} << (level - KeptLevel(level)));
  }
  return nodes;
}

// The end of the gap above every item.
constexpr Bytes kUnbounded = std::numeric_limits<Bytes>::max();

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

// A key of at most 64 bits and its item, sorted by (key, item).
struct PackedKey {
  uint64_t key;
  uint32_t item;
};

// A node of BestFitEngine's tree above the leaves. One cache line: a visit
// that needs only the spans reads nothing else.
struct alignas(64) Node {
  ByteUnion own;  // items stored here: each covers the node's span
  ByteUnion sub;  // items stored here or below it
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
// Nodes are kept on every kLevelStride-th level only (a canonical node
// between is replaced by its descendants on the kept level below), and of
// those, only on levels that hold a canonical node of some item: no item
// is stored anywhere else, so the other levels are skipped. A leaf keeps
// one union: with no children, its own and sub are the same. Items are
// taken in a TimeSweep (after the peak's set, with kPeakFirst) unless the
// caller asks for the order itself (BestFitSchedule). In a sweep, the
// unions of nodes that every job left to place begins after are freed as
// it goes (ReleaseBefore), so the arena holds the unions near the sweep,
// not all of them, and reuses blocks still in cache. The nodes themselves
// live in pages per level (PagedLevel), taken when the sweep reaches them
// and given back once it has passed them, so that they too are few and
// warm. What the two saved in the portfolio's peak memory is in
// docs/benchmarks.md ("Best fit at scale").
class BestFitEngine {
 public:
  explicit BestFitEngine(const PlacementProblem& problem)
      : problem_(problem), arena_(ChunkIntervals(problem.items.size())) {
    const std::vector<PlacementItem>& items = problem.items;
    first_leaf_.assign(items.size(), 0);
    end_leaf_.assign(items.size(), 0);
    const size_t num_leaves = FindLeaves();
    leaves_ = 1;
    levels_ = 1;
    while (leaves_ < num_leaves) {
      leaves_ *= 2;
      ++levels_;
    }
    level_read_ = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].occupies()) continue;
      max_span_ = std::max(max_span_, end_leaf_[i] - first_leaf_[i]);
      size_t l = first_leaf_[i] + leaves_;
      size_t r = end_leaf_[i] + leaves_;
      for (int level = 0; l < r; ++level, l >>= 1, r >>= 1) {
        if ((l & 1) != 0 || (r & 1) != 0) {
          level_read_ |= uint64_t{1} << KeptLevel(level);
        }
        if ((l & 1) != 0) ++l;
        if ((r & 1) != 0) --r;
      }
    }
    while (read_levels_end_ < levels_ &&
           (level_read_ >> read_levels_end_) != 0) {
      ++read_levels_end_;
    }
    leaf_level_.Resize(leaves_);
    inner_levels_.resize(std::max(read_levels_end_, 1));
    for (int level = 1; level < read_levels_end_; ++level) {
      if (LevelRead(level)) inner_levels_[level].Resize(leaves_ >> level);
    }
  }

  // Cuts time into leaves at every begin and end of a spatial item: sets
  // first_leaf_ and end_leaf_ to each such item's leaf range, and returns
  // the number of leaves (at least 1). Where the times are dense
  // (SpatialTimes::dense), a table over their span gives each time its
  // leaf in O(n + span); else a sort and binary searches do, O(n log n).
  size_t FindLeaves() {
    const std::vector<PlacementItem>& items = problem_.items;
    const SpatialTimes spatial_times = FindSpatialTimes(problem_);
    if (spatial_times.ends == 0) return 1;
    if (spatial_times.dense()) {
      // table[t - lo]: 1 where a time is used, then the used times before t.
      std::vector<uint32_t> table(spatial_times.span(), 0);
      const auto at = [&](Timestep t) -> uint32_t& {
        return table[spatial_times.at(t)];
      };
      for (const PlacementItem& item : items) {
        if (!item.occupies()) continue;
        at(item.live_range.begin) = 1;
        at(item.live_range.end) = 1;
      }
      uint32_t used = 0;
      for (uint32_t& entry : table) {
        const uint32_t here = entry;
        entry = used;
        used += here;
      }
      for (size_t i = 0; i < items.size(); ++i) {
        if (!items[i].occupies()) continue;
        first_leaf_[i] = at(items[i].live_range.begin);
        end_leaf_[i] = at(items[i].live_range.end);
      }
      return used - 1;
    }
    std::vector<Timestep> times;
    times.reserve(spatial_times.ends);
    for (const PlacementItem& item : items) {
      if (!item.occupies()) continue;
      times.push_back(item.live_range.begin);
      times.push_back(item.live_range.end);
    }
    std::sort(times.begin(), times.end());
    times.erase(std::unique(times.begin(), times.end()), times.end());
    const auto leaf = [&](Timestep t) {
      return static_cast<uint32_t>(
          std::lower_bound(times.begin(), times.end(), t) - times.begin());
    };
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].occupies()) continue;
      first_leaf_[i] = leaf(items[i].live_range.begin);
      end_leaf_[i] = leaf(items[i].live_range.end);
    }
    return times.size() - 1;
  }

  // Places the items in `order`; stops with ABORTED when `stop` says so,
  // as with a deadline.
  absl::StatusOr<Placement> Place(
      BestFitOrder order, const PlanContext& context,
      const OrderStop& stop = OrderStop(),
      BestFitSchedule schedule = BestFitSchedule::kTimeSweep) {
    absl::Status status = CheckOrder(context, stop);
    if (!status.ok()) return status;
    leaf_level_.Clear(leaf_pool_);
    for (PagedLevel<Node>& level : inner_levels_) level.Clear(node_pool_);
    arena_.Clear();
    released_before_ = 0;  // before any Insert, the pinned items' too

    const std::vector<PlacementItem>& items = problem_.items;
    Placement placement;
    placement.offsets.assign(items.size(), 0);
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].pinned()) continue;
      placement.offsets[i] = items[i].fixed_offset;
      if (items[i].occupies()) {
        const Job job = MakeJob(i);
        Decompose(job, lookahead_[0]);
        Insert(job, items[i].fixed_offset, lookahead_[0]);
      }
    }
    std::vector<Job>& jobs = jobs_;  // by item, then in the sequence
    jobs.clear();
    jobs.reserve(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      if (Placed(i)) jobs.push_back(MakeJob(i));
    }
    Ranks(order, rank_);
    // With a sweep, jobs fills as the loop below reaches its end, after
    // the peak's set with kPeakFirst.
    const bool sweep = schedule != BestFitSchedule::kOrder;
    if (sweep) {
      sweep_.Start(jobs, rank_, leaves_);
      jobs.clear();
      if (schedule == BestFitSchedule::kPeakFirst) {
        sweep_.NextPeakFirst(PeakLeaf(), max_span_, jobs);
      }
    } else {
      std::sort(jobs.begin(), jobs.end(), [&](const Job& a, const Job& b) {
        return rank_[a.item] < rank_[b.item];
      });
    }
    // (jobs, leaf): once the first `jobs` jobs are placed, every job
    // beginning before `leaf` is, so the unions of nodes ending by then
    // are read no more (ReleaseBefore).
    std::vector<std::pair<size_t, size_t>> checkpoints;
    size_t batches = 0;
    // Returns whether job k exists, sweeping on to it if need be.
    const auto exists = [&](size_t k) {
      while (k >= jobs.size() && sweep && !sweep_.done() && status.ok()) {
        if (!checkpoints.empty() && checkpoints.back().first == jobs.size()) {
          checkpoints.back().second = sweep_.YieldedBefore();
        } else {
          checkpoints.emplace_back(jobs.size(), sweep_.YieldedBefore());
        }
        sweep_.Next(jobs, kSweepBatch);
        if (batches++ % (kCheckInterval / kSweepBatch) == 0) {
          status = CheckOrder(context, stop);
        }
      }
      return k < jobs.size() && status.ok();
    };
    // The nodes of later jobs are found and fetched while this one is
    // placed: the engine waits on memory far more than it computes.
    const auto stage = [&](size_t k) {
      NodeList& nodes = lookahead_[k % kLookahead];
      Decompose(jobs[k], nodes);
      PrefetchNodes(nodes);
    };
    for (size_t k = 0; k < kNodesAhead && exists(k); ++k) stage(k);
    Bytes height = PlacementHeight(problem_, placement.offsets);  // so far
    for (size_t k = 0; exists(k); ++k) {
      if (k % kCheckInterval == kCheckInterval - 1) {
        status = CheckOrder(context, stop);
        if (!status.ok()) return status;
      }
      if (!checkpoints.empty() && checkpoints.front().first <= k) {
        ReleaseBefore(checkpoints.front().second);
        checkpoints.erase(checkpoints.begin());  // one of a few
      }
      if (exists(k + kNodesAhead)) stage(k + kNodesAhead);
      if (exists(k + kBlocksAhead)) {
        PrefetchBlocks(lookahead_[(k + kBlocksAhead) % kLookahead]);
      }
      const Job& job = jobs[k];
      const NodeList& nodes = lookahead_[k % kLookahead];
      const Bytes offset = BestOffset(job, nodes);
      placement.offsets[job.item] = offset;
      height = std::max(height, offset + job.size);
      if (stop.Exceeded(height)) return CannotWin();
      Insert(job, offset, nodes);
    }
    if (!status.ok()) return status;
    placement.height = PlacementHeight(problem_, placement.offsets);
    return placement;
  }

 private:
  // The nodes one job reads and writes (Decompose), each list bottom-up;
  // at most two a level.
  struct NodeList {
    size_t canonical_count = 0;
    size_t ancestor_count = 0;
    // A canonical node's sub (a leaf's one union), and its own (null for
    // a leaf).
    ByteUnion* sub[MaxCanonicalNodes()];
    ByteUnion* own[MaxCanonicalNodes()];
    Node* ancestors[128];
    size_t ancestor_starts[128];  // the first leaf of each one's span
  };

  // Returns whether some item has a canonical node on `level`.
  bool LevelRead(int level) const { return ((level_read_ >> level) & 1) != 0; }

  // Returns the node at heap index v on `level` (1 or more).
  Node& InnerNode(size_t v, int level) {
    return inner_levels_[level].At(v - (leaves_ >> level), node_pool_);
  }

  // Returns whether Place places item i by best fit: it occupies bytes
  // over time and is not pinned.
  bool Placed(size_t i) const {
    return !problem_.items[i].pinned() && problem_.items[i].occupies();
  }

  Job MakeJob(size_t i) const {
    const PlacementItem& item = problem_.items[i];
    return Job{static_cast<uint32_t>(i), first_leaf_[i], end_leaf_[i],
               item.alignment > 1 ? static_cast<uint32_t>(__builtin_ctzll(
                                        static_cast<uint64_t>(item.alignment)))
                                  : 0,
               item.size};
  }

  // Sets rank[i], for each unpinned spatial item i, to its rank in `order`:
  // distinct keys below 2^63 whose ascending order is the order's (other
  // items' are 0). Where the bits in which the items' OrderKeys differ fit
  // in 63 with the item's index, the rank is those bits, packed: no sort.
  // Else the keys are sorted (RadixSort) and the rank is the position.
  void Ranks(BestFitOrder order, std::vector<uint64_t>& rank) const {
    const std::vector<PlacementItem>& items = problem_.items;
    std::vector<uint64_t> contention;
    uint64_t peak = 0;
    if (order == BestFitOrder::kContentionDescending ||
        order == BestFitOrder::kContentionBandDescending) {
      contention = Contention();
      for (const uint64_t c : contention) peak = std::max(peak, c);
    }
    const auto key_of = [&](size_t i) {
      const PlacementItem& item = items[i];
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
      return key;
    };
    // The bits in which some two keys differ, per word: above the highest,
    // all keys agree, so the bits below it order them. (The keys are made
    // again below rather than kept: 32 bytes an item.)
    uint64_t all[3] = {~uint64_t{0}, ~uint64_t{0}, ~uint64_t{0}};
    uint64_t any[3] = {0, 0, 0};
    for (size_t i = 0; i < items.size(); ++i) {
      if (!Placed(i)) continue;
      const OrderKey key = key_of(i);
      const uint64_t words[3] = {key.a, key.b, key.c};
      for (int w = 0; w < 3; ++w) {
        all[w] &= words[w];
        any[w] |= words[w];
      }
    }
    const auto bit_width = [](uint64_t x) {
      return x == 0 ? 0 : 64 - __builtin_clzll(x);
    };
    int width[3];
    for (int w = 0; w < 3; ++w) width[w] = bit_width(all[w] ^ any[w]);
    const int item_width = bit_width(items.size());
    rank.assign(items.size(), 0);
    // The low `bits` bits of x, shifted up by `shift`.
    const auto field = [](uint64_t x, int bits, int shift) {
      return bits == 0 ? 0 : (x & (~uint64_t{0} >> (64 - bits))) << shift;
    };
    // The differing bits of `key`, packed above the low `shift` bits.
    const auto pack = [&](const OrderKey& key, int shift) {
      uint64_t packed = field(key.c, width[2], shift);
      shift += width[2];
      packed |= field(key.b, width[1], shift);
      shift += width[1];
      return packed | field(key.a, width[0], shift);
    };
    if (width[0] + width[1] + width[2] + item_width <= 63) {
      for (size_t i = 0; i < items.size(); ++i) {
        if (Placed(i)) rank[i] = pack(key_of(i), item_width) | i;
      }
      return;
    }
    // The rank is the position in sorted order: of 16-byte keys where the
    // differing bits fit in 64 without the index, else of whole OrderKeys.
    if (width[0] + width[1] + width[2] <= 64) {
      std::vector<PackedKey> keys;
      keys.reserve(items.size());
      for (size_t i = 0; i < items.size(); ++i) {
        if (Placed(i)) {
          keys.push_back(
              PackedKey{pack(key_of(i), 0), static_cast<uint32_t>(i)});
        }
      }
      RadixSort<1>(keys, [](const PackedKey& key, int) { return key.key; });
      for (size_t r = 0; r < keys.size(); ++r) rank[keys[r].item] = r;
      return;
    }
    std::vector<OrderKey> keys;
    keys.reserve(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      if (Placed(i)) keys.push_back(key_of(i));
    }
    RadixSort<3>(keys, [](const OrderKey& key, int w) {
      return w == 0 ? key.c : w == 1 ? key.b : key.a;
    });
    for (size_t r = 0; r < keys.size(); ++r) rank[keys[r].item] = r;
  }

  // Returns each item's contention (best_fit.h) in bytes; 0 for items
  // that are not spatial. A sweep gives the load of every leaf, and a
  // range-maximum tree over the leaves the maximum over each live range.
  std::vector<uint64_t> Contention() const {
    const std::vector<PlacementItem>& items = problem_.items;
    std::vector<Bytes> max_load(2 * leaves_, 0);
    const std::vector<Bytes> loads = LeafLoads();
    std::copy(loads.begin(), loads.end(), max_load.begin() + leaves_);
    for (size_t v = leaves_ - 1; v >= 1; --v) {
      max_load[v] = std::max(max_load[2 * v], max_load[2 * v + 1]);
    }
    std::vector<uint64_t> contention(items.size(), 0);
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].occupies()) continue;
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

  // Returns the first leaf of highest load, computed once.
  uint32_t PeakLeaf() {
    if (!peak_leaf_.has_value()) {
      const std::vector<Bytes> loads = LeafLoads();
      peak_leaf_ = static_cast<uint32_t>(
          std::max_element(loads.begin(), loads.end()) - loads.begin());
    }
    return *peak_leaf_;
  }

  // Returns the bytes of the items live during each leaf, by leaf
  // (leaves_ of them; 0 past the last leaf in use).
  std::vector<Bytes> LeafLoads() const {
    const std::vector<PlacementItem>& items = problem_.items;
    std::vector<Bytes> loads(leaves_ + 1, 0);  // first the changes
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].occupies()) continue;
      loads[first_leaf_[i]] += items[i].size;
      loads[end_leaf_[i]] -= items[i].size;
    }
    for (size_t leaf = 1; leaf < leaves_; ++leaf) {
      loads[leaf] += loads[leaf - 1];
    }
    loads.pop_back();
    return loads;
  }

  // Sets `nodes` to the job's canonical nodes (on kept levels) and to
  // their strict ancestors on levels that are read, each bottom-up (the
  // canonical nodes roughly: those replaced from a level come after the
  // ones of the kept level itself).
  //
  // Bottom-up, a canonical node taken on the left at some level has as its
  // ancestor, at every level above, the node just left of the remaining
  // range (l - 1); one taken on the right, the node just right of it (r).
  void Decompose(const Job& job, NodeList& nodes) {
    nodes.canonical_count = 0;
    nodes.ancestor_count = 0;
    int level = 0;
    // Takes the node at heap index v on `level`, or its descendants on
    // the kept level below: the 2^depth nodes from v << depth.
    const auto canonical = [&](size_t v) {
      const int kept = KeptLevel(level);
      const int depth = level - kept;
      for (size_t w = v << depth; w < (v + 1) << depth; ++w) {
        const size_t k = nodes.canonical_count++;
        if (kept == 0) {
          nodes.sub[k] = &leaf_level_.At(w - leaves_, leaf_pool_);
          nodes.own[k] = nullptr;
        } else {
          Node& node = InnerNode(w, kept);
          nodes.sub[k] = &node.sub;
          nodes.own[k] = &node.own;
        }
      }
    };
    const auto ancestor = [&](size_t v) {
      nodes.ancestor_starts[nodes.ancestor_count] = (v - (leaves_ >> level))
                                                    << level;
      nodes.ancestors[nodes.ancestor_count++] = &InnerNode(v, level);
    };
    size_t l = job.first_leaf + leaves_;
    size_t r = job.end_leaf + leaves_;
    bool left = false;   // a canonical node was taken on the left
    bool right = false;  // ... on the right
    for (; l < r; ++level, l >>= 1, r >>= 1) {
      if (LevelRead(level)) {
        if (left) ancestor(l - 1);
        if (right) ancestor(r);
      }
      if ((l & 1) != 0) {
        canonical(l++);
        left = true;
      }
      if ((r & 1) != 0) {
        canonical(--r);
        right = true;
      }
    }
    size_t left_ancestor = left ? l - 1 : 0;  // 0: none
    size_t right_ancestor = right ? r : 0;
    for (; level < read_levels_end_; ++level) {
      if (right_ancestor == left_ancestor) right_ancestor = 0;
      if (LevelRead(level)) {
        if (left_ancestor != 0) ancestor(left_ancestor);
        if (right_ancestor != 0) ancestor(right_ancestor);
      }
      left_ancestor >>= 1;
      right_ancestor >>= 1;
    }
  }

  // Records the job at `offset` in the nodes Decompose(job) found.
  void Insert(const Job& job, Bytes offset, const NodeList& nodes) {
    const Bytes lo = offset;
    const Bytes hi = offset + job.size;
    for (size_t k = 0; k < nodes.canonical_count; ++k) {
      if (nodes.own[k] != nullptr) AddToUnion(*nodes.own[k], lo, hi, arena_);
      AddToUnion(*nodes.sub[k], lo, hi, arena_);
    }
    // A node's sub is read only by jobs that cover its span, which begin
    // at or before its first leaf; once every job beginning before
    // released_before_ is placed, the subs of nodes starting before it are
    // read no more.
    for (size_t k = 0; k < nodes.ancestor_count; ++k) {
      if (nodes.ancestor_starts[k] < released_before_) continue;
      AddToUnion(nodes.ancestors[k]->sub, lo, hi, arena_);
    }
  }

  // Empties every node whose span ends at or before `leaf`, once no job
  // left to place reads or writes it (every job beginning before `leaf` is
  // placed): its unions' blocks go back to the arena, which reuses them
  // while they are still in cache, and its page, once every node of it is
  // passed, to the pool. O(1) amortized a leaf.
  void ReleaseBefore(size_t leaf) {
    if (leaf <= released_before_) return;
    const auto release = [&](ByteUnion& byte_union) {
      if (byte_union.size >= 2) {
        arena_.Release(byte_union.block, byte_union.capacity_log2);
      }
      byte_union = ByteUnion{};
    };
    leaf_level_.EmptyRange(released_before_, leaf, leaf_pool_, release);
    for (int level = 1; level < read_levels_end_; ++level) {
      if (!LevelRead(level)) continue;
      inner_levels_[level].EmptyRange(released_before_ >> level, leaf >> level,
                                      node_pool_, [&](Node& node) {
                                        release(node.own);
                                        release(node.sub);
                                      });
    }
    released_before_ = leaf;
  }

  void PrefetchNodes(const NodeList& nodes) const {
    for (size_t k = 0; k < nodes.canonical_count; ++k) {
      __builtin_prefetch(nodes.sub[k]);
    }
    for (size_t k = 0; k < nodes.ancestor_count; ++k) {
      __builtin_prefetch(nodes.ancestors[k]);
    }
  }

  // Prefetches the blocks of the unions a job reads and writes, from the
  // nodes PrefetchNodes fetched a few jobs earlier. A block that moves
  // before the job is placed costs a wasted prefetch, nothing else.
  void PrefetchBlocks(const NodeList& nodes) {
    for (size_t k = 0; k < nodes.canonical_count; ++k) {
      PrefetchBlock(*nodes.sub[k]);
      if (nodes.own[k] != nullptr) PrefetchBlock(*nodes.own[k]);
    }
    for (size_t k = 0; k < nodes.ancestor_count; ++k) {
      PrefetchBlock(nodes.ancestors[k]->own);
      PrefetchBlock(nodes.ancestors[k]->sub);
    }
  }

  // Returns the best-fit offset for the job among the items placed so far,
  // from the nodes Decompose(job) found.
  //
  // Starts from all bytes free and subtracts the unions of the ancestors'
  // own and the canonical nodes' sub, one union at a time, dropping every
  // gap that can no longer hold the item (gaps only shrink). What is left
  // are the maximal gaps free during the item's live range that fit it,
  // and the unbounded gap above everything.
  Bytes BestOffset(const Job& job, const NodeList& nodes) {
    free_[0] = ByteInterval{0, kUnbounded};
    free_size_ = 1;
    // Top-down: the owns of ancestors hold items that cover the whole
    // live range, and high canonical nodes the most items, so the gaps
    // shrink soonest this way (faster than canonical nodes first:
    // docs/benchmarks.md, "Best fit at scale").
    for (size_t k = nodes.ancestor_count; k-- > 0;) {
      Subtract(nodes.ancestors[k]->own, job);
    }
    for (size_t k = nodes.canonical_count; k-- > 0;) {
      Subtract(*nodes.sub[k], job);
    }

    Bytes best_offset = -1;
    Bytes best_waste = std::numeric_limits<Bytes>::max();
    // The last gap is the unbounded one.
    for (size_t g = 0; g + 1 < free_size_; ++g) {
      const Bytes waste = free_[g].hi - free_[g].lo - job.size;
      if (waste < best_waste) {
        best_waste = waste;
        best_offset = AlignUpPow2(free_[g].lo, job.alignment());
      }
    }
    if (best_offset >= 0) return best_offset;
    return AlignUpPow2(free_[free_size_ - 1].lo, job.alignment());
  }

  // Returns the intervals of a non-empty union.
  const ByteInterval* Intervals(const ByteUnion& byte_union) {
    return byte_union.size == 1 ? &byte_union.span : byte_union.block;
  }

  // Prefetches the first lines of a union's block.
  void PrefetchBlock(const ByteUnion& byte_union) {
    if (byte_union.size < 2) return;
    const char* const first = reinterpret_cast<const char*>(byte_union.block);
    const size_t bytes =
        std::min<size_t>(byte_union.size, 16) * sizeof(ByteInterval);
    for (size_t line = 0; line < bytes; line += 64) {
      __builtin_prefetch(first + line);
    }
  }

  // Removes `interval` from the free gaps in place, and the pieces of the
  // gaps it cuts that cannot hold the job: a binary search and a short
  // move, cheaper than Subtract's walk over all gaps for a short union.
  void Cut(const ByteInterval& interval, const Job& job) {
    ByteInterval* const gaps = free_.data();
    // The first gap that ends after the interval begins.
    size_t g = static_cast<size_t>(
        FirstEndingAfter(gaps, gaps + free_size_, interval.lo) - gaps);
    const auto fits = [&](Bytes lo, Bytes hi) {
      return lo < hi && (hi == kUnbounded ||
                         AlignUpPow2(lo, job.alignment()) + job.size <= hi);
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

  // Removes the intervals of `byte_union` from the free gaps, and then the
  // gaps that cannot hold the job.
  void Subtract(const ByteUnion& byte_union, const Job& job) {
    // Below every gap (the last one, unbounded, is never dropped).
    if (byte_union.size == 0 || byte_union.hi() <= free_[0].lo) return;
    const ByteInterval* const intervals = Intervals(byte_union);
    const size_t count = byte_union.size;
    if (count <= kFewIntervals) {
      for (size_t k = 0; k < count; ++k) Cut(intervals[k], job);
      return;
    }
    if (next_free_.size() < free_size_ + count) {
      next_free_.resize(2 * (free_size_ + count));
    }
    ByteInterval* out = next_free_.data();
    const auto keep = [&](Bytes lo, Bytes hi) {
      if (hi == kUnbounded ||
          AlignUpPow2(lo, job.alignment()) + job.size <= hi) {
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
  uint64_t level_read_ = 0;  // bit per level: a canonical node is there
  int read_levels_end_ = 0;  // 1 + the highest level read, 0 if none
  uint32_t max_span_ = 0;    // the most leaves an item covers
  std::optional<uint32_t> peak_leaf_;  // PeakLeaf's, once computed
  // The tree in heap order, root 1, inner nodes 1 .. leaves_ - 1, leaves
  // leaves_ .. 2 * leaves_ - 1, by level: the leaves in leaf_level_, one
  // union each (a leaf has no children, so own and sub are the same), and
  // the nodes of each level read above them in inner_levels_[level].
  PagePool<ByteUnion> leaf_pool_;
  PagePool<Node> node_pool_;
  PagedLevel<ByteUnion> leaf_level_;
  std::vector<PagedLevel<Node>> inner_levels_;
  // The nodes of the job being placed and of the next few, in a ring.
  std::vector<NodeList> lookahead_ = std::vector<NodeList>(kLookahead);
  // Scratch of BestOffset and Subtract: the free gaps are free_[0, free_size_).
  std::vector<ByteInterval> free_ = std::vector<ByteInterval>(1);
  size_t free_size_ = 0;
  std::vector<ByteInterval> next_free_;
  IntervalArena arena_;  // blocks of the nodes' unions
  // Place's scratch, kept so that later orders reuse its memory.
  std::vector<Job> jobs_;
  std::vector<uint64_t> rank_;
  TimeSweep sweep_;
  // In a sweep, the unions of nodes ending at or before this leaf are
  // released (ReleaseBefore).
  size_t released_before_ = 0;
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

struct OrderPlacer::Engine {
  explicit Engine(const PlacementProblem& problem) : engine(problem) {}
  BestFitEngine engine;
};

OrderPlacer::OrderPlacer(const PlacementProblem& problem) : problem_(problem) {}

OrderPlacer::~OrderPlacer() = default;

absl::StatusOr<Placement> OrderPlacer::Place(BestFitOrder order,
                                             const PlanContext& context,
                                             const OrderStop& stop,
                                             BestFitSchedule schedule) {
  if (order == BestFitOrder::kProgramOrder && !AnyPinned(problem_)) {
    return PlaceInProgramOrder(problem_, context, stop);
  }
  if (engine_ == nullptr) engine_ = std::make_unique<Engine>(problem_);
  return engine_->engine.Place(order, context, stop, schedule);
}

}  // namespace best_fit_internal

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
                                       const PlanContext& context,
                                       BestFitSchedule schedule) {
  return best_fit_internal::OrderPlacer(problem).Place(
      order, context, best_fit_internal::OrderStop(), schedule);
}

}  // namespace memplan
