#include "core/inductor/pool_planner.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/bounds.h"
#include "core/live_ranges.h"
#include "core/symbolic/symbolic.h"
#include "core/symbolic/symbolic_plan.h"

namespace memplan {
namespace {

using NodeId = int32_t;
constexpr NodeId kNoNode = -1;

// The kinds of AllocationTreeNode in memory_planning.py.
enum class NodeKind : uint8_t {
  kAllocation,  // one buffer (Allocation)
  kEmpty,       // reserved space, no buffer (Empty)
  kTemporal,    // children sharing bytes, live ranges disjoint (TemporalSplit)
  kSpatial,     // left then right in memory (SpatialSplit)
};

// What a subtree can still offer in time, for pruning: a buffer fits in a
// TemporalSplit only if its live range does not overlap the split's merged
// live ranges, which needs (for ranges R and buffer range r) r.end <=
// R.begin, or r.begin >= R.end, or a gap between consecutive ranges of R at
// least as long as r. These are maxima / minima over all TemporalSplits of
// the subtree, so they give a necessary condition for the whole subtree.
// A TemporalSplit without live ranges holds any buffer: it counts as a gap
// of infinite length.
struct FreeTime {
  Timestep max_begin = std::numeric_limits<Timestep>::min();
  Timestep min_end = std::numeric_limits<Timestep>::max();
  // Longest gap between two ranges of one split; the largest Timestep when
  // some split has no live range.
  Timestep max_gap = -1;

  void Add(const FreeTime& other) {
    max_begin = std::max(max_begin, other.max_begin);
    min_end = std::min(min_end, other.min_end);
    max_gap = std::max(max_gap, other.max_gap);
  }
  void AddSplit(const LiveRanges& ranges) {
    if (ranges.empty()) {
      max_gap = std::numeric_limits<Timestep>::max();
      return;
    }
    max_begin = std::max(max_begin, ranges.begin());
    min_end = std::min(min_end, ranges.end());
    const LiveRanges::Storage& r = ranges.ranges();
    for (size_t i = 1; i < r.size(); ++i) {
      max_gap = std::max(max_gap, r[i].begin - r[i - 1].end);
    }
  }
  friend bool operator==(const FreeTime& a, const FreeTime& b) {
    return a.max_begin == b.max_begin && a.min_end == b.min_end &&
           a.max_gap == b.max_gap;
  }
  bool MayHold(LiveRange range) const {
    return range.end <= max_begin || range.begin >= min_end ||
           range.length() <= max_gap;
  }
};

// Two cache lines, the first holding what a visit of the tree walk reads
// (kind, pruning test, size, children), the second what a TemporalSplit
// reads of its children (live ranges) and what a SpatialSplit's visit and
// the updates after a placement read.
struct alignas(64) Node {
  NodeKind kind = NodeKind::kEmpty;
  int32_t block = -1;  // kAllocation: index into Block list
  // Derived from the subtree, as Inductor's get_size_hint() and
  // get_live_ranges() (cached there with cache_on_self and cleared along
  // the path of every successful allocation; here computed when the node
  // is made and brought up to date along that path by UpdatePath).
  Bytes size_hint = 0;
  FreeTime free_time;  // neutral for allocations and empty space
  absl::InlinedVector<NodeId, 2> children;  // kTemporal
  LiveRanges live_ranges;
  NodeId left = kNoNode;    // kSpatial: a kTemporal node
  NodeId right = kNoNode;   // kSpatial: a kTemporal node
  NodeId parent = kNoNode;  // kNoNode: a pool's root
  // A chain split (Allocator::Chain) holds its chain and index there; a
  // spine level (Allocator::Spine) holds -2 - its spine, and its index.
  int32_t chain = -1;
  int32_t chain_index = -1;
  // kTemporal with many children: index into Allocator::hulls_, else -1.
  int32_t hulls = -1;
};
static_assert(sizeof(Node) == 128, "a node is two cache lines");

// The first begin and last end of a node's live ranges, kept beside a wide
// TemporalSplit's children (Allocator::hulls_) so that its walk rejects
// most children without reading them: get_live_ranges(child).overlaps(r)
// needs a range that holds r.begin or begins inside (r.begin, r.end)
// (LiveRanges::Overlaps), so none when end <= r.begin, or when begin >
// r.begin and begin >= r.end. A node without live ranges has the empty
// hull {max, min}, which rejects every block.
struct Hull {
  Timestep begin = std::numeric_limits<Timestep>::max();
  Timestep end = std::numeric_limits<Timestep>::min();

  static Hull Of(const LiveRanges& ranges) {
    return ranges.empty() ? Hull{} : Hull{ranges.begin(), ranges.end()};
  }
  bool MayOverlap(LiveRange range) const {
    return end > range.begin && (begin <= range.begin || begin < range.end);
  }
};

// TemporalSplits with at least this many children keep their hulls.
constexpr size_t kHullChildren = 16;

// Whether the walk, at a TemporalSplit one of whose children is an
// allocation live over `leaf`, fails for a block live over `range`: it does
// whenever that leaf overlaps the block (LiveRanges::Overlaps), as the leaf
// is then the one overlapping child, which takes nothing, or one of
// several.
bool LeafRefuses(LiveRange leaf, LiveRange range) {
  return LiveRanges::RangeOverlaps(leaf, range);
}

// One buffer to place (Inductor's Allocation).
struct Block {
  int32_t buffer;  // index into Problem::buffers
  int32_t device;  // index into the planner's device list
  Bytes size;
  LiveRange live_range;
  // Allocation.earliest_available: the begin of a buffer whose size depends
  // on data, else 0. As in Python, 0 counts as "none".
  Timestep earliest_available;
};

// An AllocationPool: one tree, one device.
struct PoolState {
  int32_t device = 0;     // index into the planner's device list
  int32_t position = 0;   // index in its device's pool list
  NodeId root = kNoNode;  // a kTemporal node
  bool can_expand = false;
  // restrict_live_range = [restrict_begin, inf) once set.
  std::optional<Timestep> restrict_begin;
  // Copies of the root's size_hint and free_time, refreshed whenever the
  // pool changes, so that the pool loop rejects most pools without
  // touching their trees.
  Bytes size_hint = 0;
  FreeTime free_time;
};

// Maxima over a growing array of pool sizes, to find the next pool large
// enough for a buffer without visiting the smaller ones: a segment tree
// over leaves_ slots (a power of two), unused slots holding -1.
class PoolSizeIndex {
 public:
  void Append(Bytes size) {
    if (count_ == leaves_) Grow();
    Set(count_++, size);
  }
  void Set(int index, Bytes size) {
    int node = index + leaves_;
    tree_[node] = size;
    for (node >>= 1; node > 0; node >>= 1) {
      tree_[node] = std::max(tree_[2 * node], tree_[2 * node + 1]);
    }
  }
  // Returns the first index >= from whose size is >= size, or the count.
  int FirstAtLeast(int from, Bytes size) const {
    if (from >= count_) return count_;
    int node = from + leaves_;
    while (tree_[node] < size) {
      // Climb while `node` is a right child, then step to the right.
      while (node & 1) {
        node >>= 1;
        if (node == 0) return count_;
      }
      ++node;
    }
    while (node < leaves_) {
      node = tree_[2 * node] >= size ? 2 * node : 2 * node + 1;
    }
    return std::min(node - leaves_, count_);
  }

 private:
  void Grow() {
    std::vector<Bytes> old(tree_.begin() + leaves_,
                           tree_.begin() + leaves_ + count_);
    leaves_ = std::max(1, 2 * leaves_);
    tree_.assign(2 * leaves_, -1);
    for (int i = 0; i < count_; ++i) Set(i, old[i]);
  }

  std::vector<Bytes> tree_;
  int leaves_ = 0;
  int count_ = 0;
};

// The allocation state for one problem: the node arena, pools per device.
class Allocator {
 public:
  // `symbolic`: the buffers' parsed symbolic sizes when some depend on a
  // symbol (the plan then gets symbolic pool sizes and offsets), else null.
  Allocator(const Problem& problem, const InductorPlanner::Options& options,
            const PlanContext& context, SymbolicSizes* symbolic)
      : problem_(problem),
        options_(options),
        context_(context),
        symbolic_(symbolic) {}

  absl::StatusOr<Plan> Run();

 private:
  NodeId NewNode(NodeKind kind) {
    nodes_.emplace_back();
    nodes_.back().kind = kind;
    return static_cast<NodeId>(nodes_.size() - 1);
  }
  NodeId NewAllocation(int32_t block) {
    NodeId id = NewNode(NodeKind::kAllocation);
    nodes_[id].block = block;
    nodes_[id].size_hint = blocks_[block].size;
    nodes_[id].live_ranges = LiveRanges({blocks_[block].live_range});
    return id;
  }
  NodeId NewEmpty(Bytes size) {
    NodeId id = NewNode(NodeKind::kEmpty);
    nodes_[id].size_hint = size;  // bytes reserved
    return id;
  }
  NodeId NewTemporal(absl::InlinedVector<NodeId, 2> children) {
    NodeId id = NewNode(NodeKind::kTemporal);
    for (NodeId child : children) nodes_[child].parent = id;
    nodes_[id].children = std::move(children);
    Summarize(id);
    return id;
  }
  NodeId NewSpatial(NodeId left, NodeId right) {
    NodeId id = NewNode(NodeKind::kSpatial);
    nodes_[id].left = left;
    nodes_[id].right = right;
    nodes_[left].parent = id;
    nodes_[right].parent = id;
    Summarize(id);
    return id;
  }
  // As SpatialSplit.create: `left` with `extra_space` bytes free after it.
  NodeId NewSpatialWithSpace(NodeId left, Bytes extra_space) {
    NodeId left_split = NewTemporal({left});
    NodeId right_split = NewTemporal({NewEmpty(extra_space)});
    return NewSpatial(left_split, right_split);
  }

  // Computes the derived values of a new split from its children.
  void Summarize(NodeId id);
  // Recomputes size_hint and free_time of a split from its children and its
  // own live_ranges.
  void RecomputeFromChildren(NodeId id);
  // After `block` was placed in split `placed`: updates it and every node
  // above it up to its pool's root, deepest first; each gained exactly the
  // block's live range.
  void UpdatePath(NodeId placed, int32_t block);

  // A chain: splits that AllocateAtEnd stacked, each a TemporalSplit
  // whose one child is a SpatialSplit whose left is the split below:
  //
  //   nodes[k]  Temporal{ Spatial(nodes[k-1], right_k) }
  //   ...
  //   nodes[0]  Temporal{ Spatial(any node, right_0) }
  //
  // Going down a chain, each split holds the one below it, so its live
  // ranges, size_hint and free_time contain the lower one's: whether the
  // walk goes on down (Continues) is monotone along a chain, and where it
  // stops is found by binary search instead of visiting every level. A
  // split that takes a second child (PlaceInTemporal) breaks: it stays in
  // nodes, listed in `broken`, and no search passes it.
  //
  // Backtracking tries the right halves of the levels skipped, bottom up,
  // and most fail at once (the pruning test, or too small) or at the
  // buffer the right half was made for (AllocateAtEnd: Temporal{that
  // buffer}, which stays its first child until the half grows;
  // LeafRefuses): a copy of what those tests read, kept beside the chain,
  // lets the walk pass them without reading their nodes. A broken level's
  // copy may go stale (its SpatialSplit is wrapped when the split grows);
  // no search reads it.
  struct RightHalf {
    NodeId node = kNoNode;  // the level's SpatialSplit's right
    Bytes size_hint = 0;    // the node's, kept equal by UpdatePath
    FreeTime free_time;
    bool has_leaf = false;  // the node's first child is an allocation,
    LiveRange leaf{0, 0};   // live over this range
  };
  // Returns the chain's copy of right half `right`.
  RightHalf CopyRightHalf(NodeId right) const {
    const Node& node = nodes_[right];
    RightHalf copy;
    copy.node = right;
    copy.size_hint = node.size_hint;
    copy.free_time = node.free_time;
    if (!node.children.empty() &&
        nodes_[node.children[0]].kind == NodeKind::kAllocation) {
      copy.has_leaf = true;
      copy.leaf = blocks_[nodes_[node.children[0]].block].live_range;
    }
    return copy;
  }
  struct Chain {
    std::vector<NodeId> nodes;        // bottom first
    std::vector<RightHalf> rights;    // per level, as nodes
    absl::btree_set<int32_t> broken;  // indices into nodes
  };
  // After the right half of SpatialSplit `spatial` changed: when
  // `spatial` is a chain level's, refreshes the chain's copy.
  void RefreshRightHalf(NodeId spatial) {
    const NodeId parent = nodes_[spatial].parent;
    if (parent == kNoNode) return;
    const Node& split = nodes_[parent];
    if (split.chain < 0 || split.children[0] != spatial) return;
    RightHalf& copy = chains_[split.chain].rights[split.chain_index];
    copy = CopyRightHalf(copy.node);
  }
  // Makes `top` (a new pool root over `below`) a chain split: on top of
  // below's chain when below is an unbroken chain top, else a new chain.
  void ExtendChain(NodeId top, NodeId below);
  // Whether the walk, at chain split `split` with is_last false, goes on
  // down through it: its SpatialSplit passes the pruning test, the split
  // is large enough and its child overlaps the block.
  bool Continues(NodeId split, const Block& block) const;
  // At chain split `split`, which the walk (with `is_last`) goes down
  // through: skips the levels below that it would go on through
  // (Continues), puts their right halves aside as one frame, and returns
  // the node the walk reaches next (is_last false); kNoNode when there is
  // nothing to skip (the walk goes on as usual).
  NodeId SkipDownChain(NodeId split, bool is_last, const Block& block);
  // A spine: TemporalSplits that a slot grows as it is filled (a block
  // placed in a split holding only reserved space leaves the rest reserved
  // to its right, PlaceInTemporal), each with one child, a SpatialSplit
  // whose right half is the next level:
  //
  //   levels[0]  Temporal{ Spatial(left_0, levels[1]) }
  //   levels[1]  Temporal{ Spatial(left_1, levels[2]) }
  //   ...
  //
  // At each level the walk tests the split (pruning test, size, overlap
  // with its child) and the SpatialSplit (pruning test), tries the left
  // half and then goes on down. Each level holds the ones below, so those
  // tests hold for a prefix of the levels (binary search). A left half is
  // the slot of the buffer placed first at its level: Temporal{that
  // buffer}, which may take more children but keeps its size and that
  // first child. The walk (never last there) fails in it whenever the
  // block is larger than the slot, or overlaps the first buffer (that
  // leaf is then the one overlapping child, or one of several): what the
  // spine keeps per level lets the walk see that without reading nodes. A
  // level that takes a second child breaks: it is listed in `broken`, and
  // no search passes it.
  struct LeftHalf {
    Bytes size;       // the slot's size_hint: it never changes
    LiveRange first;  // the live range of the slot's first buffer
  };
  struct Spine {
    std::vector<NodeId> levels;       // top first
    std::vector<LeftHalf> lefts;      // per level, as levels
    absl::btree_set<int32_t> broken;  // indices into levels
  };
  // Returns the spine of TemporalSplit `id`, or -1.
  int32_t SpineOf(NodeId id) const {
    const int32_t chain = nodes_[id].chain;
    return chain <= -2 ? -2 - chain : -1;
  }
  // After PlaceInTemporal put a SpatialSplit with reserved space into
  // `split`, which held only reserved space: makes `split` a spine level,
  // below the level whose right half it is, or the first of a new spine.
  void ExtendSpine(NodeId split);
  // Whether the walk, trying the left half `left` of a spine level (never
  // last), fails there (Spine).
  static bool LeftFails(const LeftHalf& left, const Block& block);
  // At spine level `split`, which the walk (with `is_last`) enters through
  // its one child: returns the node where the walk, still with `is_last`,
  // goes on after the levels it would only pass through (the SpatialSplit
  // of the first level whose left half may take the block, or the first
  // level whose own tests fail); kNoNode when it passes none.
  NodeId SkipDownSpine(NodeId split, bool is_last, const Block& block);
  // Returns get_live_ranges(id).overlaps(block's live range).
  bool OverlapsBlock(NodeId id, const Block& block) const {
    return nodes_[id].live_ranges.Overlaps(block.live_range);
  }

  // As AllocationTreeNode.allocate(block, is_last) on the tree under `root`.
  absl::StatusOr<bool> AllocateInTree(NodeId root, int32_t block, bool is_last);
  // As TemporalSplit._allocate once it found no overlapping child.
  void PlaceInTemporal(NodeId split, int32_t block, Bytes slot_size);
  // After TemporalSplit `split` took a new last child (its other children
  // keep their places and live ranges): adds the child's hull, and makes
  // the split's hulls once it has kHullChildren children.
  void AddChildHull(NodeId split);
  // Returns the one child of TemporalSplit `node` whose live ranges overlap
  // `block`'s; kNoNode when none does; sets *several when more than one
  // does (then the return value is meaningless).
  NodeId OverlappingChild(const Node& node, const Block& block,
                          bool* several) const;
  // As AllocationPool.allocate / allocate_at_end / update_restrict_live_range.
  absl::StatusOr<bool> AllocateInPool(PoolState& pool, int32_t block,
                                      bool is_last);
  void AllocateAtEnd(PoolState& pool, int32_t block);
  void RefreshGate(PoolState& pool) {
    pool.size_hint = nodes_[pool.root].size_hint;
    pool.free_time = nodes_[pool.root].free_time;
    device_pools_[pool.device].sizes.Set(pool.position, pool.size_hint);
  }
  void UpdateRestrict(PoolState& pool, int32_t block);
  // As AllocationPools.get_pools / allocate / allocate_output.
  struct DevicePools {
    std::vector<int32_t> pools;  // pools_ indices, in creation order
    PoolSizeIndex sizes;         // their size_hint, by position
    bool requested = false;      // get_pools was called for the device
  };
  // Returns the pools of device `device` (an index into devices_), noting
  // the device's first use: pools are named in that order, as
  // AllocationPools.device_to_pools is filled by get_pools.
  DevicePools& PoolsOf(int32_t device) {
    DevicePools& pools = device_pools_[device];
    if (!pools.requested) {
      pools.requested = true;
      device_order_.push_back(device);
    }
    return pools;
  }
  void NewPool(int32_t block, bool can_expand);
  absl::Status Allocate(int32_t block);
  void AllocateOutput(int32_t block);
  // As AllocationPools.finalize: names pools, fixes sizes and offsets, and
  // with symbolic_ their expressions (AllocationTreeNode.get_symbolic_size).
  absl::StatusOr<Plan> Finalize();
  // Sets sizes[id], the symbolic size of node `id` after finalize, from its
  // children's (set before): TemporalSplit.get_symbolic_size (Max),
  // SpatialSplit.get_symbolic_size (align(left) + right, or left once
  // finalize dropped an empty right), an Allocation's buffer's, Empty's 0.
  void SetSymbolicSize(NodeId id, std::vector<ExprId>& sizes,
                       std::vector<ExprId>& scratch);

  const Problem& problem_;
  const InductorPlanner::Options& options_;
  const PlanContext& context_;
  SymbolicSizes* symbolic_;
  std::vector<Node> nodes_;
  std::vector<Block> blocks_;
  std::vector<PoolState> pools_;
  std::vector<std::string> devices_;   // in order of first buffer
  std::vector<int32_t> device_order_;  // devices_ indices, by first pool

  std::vector<DevicePools> device_pools_;
  // Scratch space reused across calls.
  // A right half put aside: `node` with `is_last`; or, when chain >= 0,
  // the right halves of chain nodes [from, top] of that chain, tried from
  // `from` up (the last with `is_last`, the others not).
  struct Frame {
    NodeId node;
    bool is_last;
    int32_t chain = -1;
    int32_t from = 0;
    int32_t top = 0;
  };
  std::vector<Frame> search_stack_;
  std::vector<Chain> chains_;
  std::vector<Spine> spines_;
  // Per wide TemporalSplit (Node::hulls): its children's hulls, in the
  // order of its children.
  std::vector<std::vector<Hull>> hulls_;
  std::vector<LiveRange> range_scratch_;
  uint64_t steps_ = 0;  // tree nodes visited, for deadline checks
};

void Allocator::Summarize(NodeId id) {
  Node& node = nodes_[id];
  if (node.kind == NodeKind::kTemporal && node.children.size() == 1) {
    node.live_ranges = nodes_[node.children[0]].live_ranges;
  } else {
    std::vector<LiveRange>& ranges = range_scratch_;
    ranges.clear();
    auto add = [&](NodeId child) {
      const LiveRanges::Storage& r = nodes_[child].live_ranges.ranges();
      ranges.insert(ranges.end(), r.begin(), r.end());
    };
    if (node.kind == NodeKind::kTemporal) {
      for (NodeId child : node.children) add(child);
    } else {
      add(node.left);
      add(node.right);
    }
    node.live_ranges = LiveRanges(ranges);
  }
  RecomputeFromChildren(id);
}

void Allocator::RecomputeFromChildren(NodeId id) {
  Node& node = nodes_[id];
  FreeTime free_time;
  Bytes size = 0;
  if (node.kind == NodeKind::kTemporal) {
    for (NodeId child : node.children) {
      free_time.Add(nodes_[child].free_time);
      size = std::max(size, nodes_[child].size_hint);
    }
    free_time.AddSplit(node.live_ranges);
  } else {
    free_time.Add(nodes_[node.left].free_time);
    free_time.Add(nodes_[node.right].free_time);
    size = AlignUp(nodes_[node.left].size_hint, problem_.alignment) +
           nodes_[node.right].size_hint;
  }
  node.free_time = free_time;
  node.size_hint = size;
}

void Allocator::UpdatePath(NodeId placed, int32_t block) {
  const LiveRange range = blocks_[block].live_range;
  NodeId below = kNoNode;
  for (NodeId id = placed; id != kNoNode; below = id, id = nodes_[id].parent) {
    Node& node = nodes_[id];
    const Bytes old_size = node.size_hint;
    const FreeTime old_free_time = node.free_time;
    const bool ranges_changed = node.live_ranges.Add(range);
    if (node.hulls >= 0 && below != kNoNode) {
      const auto& children = node.children;
      const size_t i = static_cast<size_t>(
          std::find(children.begin(), children.end(), below) -
          children.begin());
      hulls_[node.hulls][i] = Hull::Of(nodes_[below].live_ranges);
    }
    RecomputeFromChildren(id);
    if (node.kind == NodeKind::kSpatial && below == node.right) {
      RefreshRightHalf(id);
    }
    // Above a split that did not change, nothing changes: each ancestor's
    // ranges already hold the block's, and its children are as they were.
    if (id != placed && !ranges_changed && node.size_hint == old_size &&
        node.free_time == old_free_time) {
      break;
    }
  }
}

void Allocator::ExtendChain(NodeId top, NodeId below) {
  const Node& under = nodes_[below];
  int32_t chain = under.chain;
  if (chain < 0 || chains_[chain].nodes.back() != below ||
      under.children.size() != 1) {
    chain = static_cast<int32_t>(chains_.size());
    chains_.emplace_back();
  }
  nodes_[top].chain = chain;
  nodes_[top].chain_index = static_cast<int32_t>(chains_[chain].nodes.size());
  chains_[chain].nodes.push_back(top);
  chains_[chain].rights.push_back(
      CopyRightHalf(nodes_[nodes_[top].children[0]].right));
}

bool Allocator::Continues(NodeId split, const Block& block) const {
  const Node& node = nodes_[split];
  const Node& spatial = nodes_[node.children[0]];
  return (!options_.prune_full_subtrees ||
          spatial.free_time.MayHold(block.live_range)) &&
         block.size <= node.size_hint &&
         spatial.live_ranges.Overlaps(block.live_range);
}

absl::StatusOr<bool> Allocator::AllocateInTree(NodeId root, int32_t block_id,
                                               bool is_last) {
  const Block& block = blocks_[block_id];
  // Depth-first, in Inductor's order: a SpatialSplit tries left (never
  // last) before right; a TemporalSplit with one overlapping child hands
  // the block to it. A failed attempt changes nothing, so backtracking is
  // resuming at the last right half put aside. Down a chain (Chain) the
  // levels the walk would pass through are skipped by binary search, and
  // their right halves put aside as one frame.
  std::vector<Frame>& pending = search_stack_;
  pending.clear();
  NodeId at = root;
  bool at_is_last = is_last;
  while (true) {
    if ((++steps_ & 0xFFFF) == 0) {
      absl::Status status = context_.Check();
      if (!status.ok()) return status;
    }
    const Node& node = nodes_[at];
    const bool may_hold =
        (node.kind == NodeKind::kTemporal || node.kind == NodeKind::kSpatial) &&
        (!options_.prune_full_subtrees ||
         node.free_time.MayHold(block.live_range));
    if (may_hold && node.kind == NodeKind::kSpatial) {
      pending.push_back({node.right, at_is_last});
      at = node.left;
      at_is_last = false;
      continue;
    }
    // TemporalSplit._allocate.
    if (may_hold && (at_is_last || block.size <= node.size_hint)) {
      bool several_overlap = false;
      const NodeId overlapping =
          OverlappingChild(node, block, &several_overlap);
      if (!several_overlap && overlapping != kNoNode) {
        if (options_.prune_full_subtrees && node.chain >= 0) {
          const NodeId below = SkipDownChain(at, at_is_last, block);
          if (below != kNoNode) {
            at = below;
            at_is_last = false;
            continue;
          }
        } else if (options_.prune_full_subtrees && node.chain <= -2) {
          const NodeId below = SkipDownSpine(at, at_is_last, block);
          if (below != kNoNode) {
            at = below;  // at_is_last as it was
            continue;
          }
        }
        at = overlapping;
        continue;
      }
      if (!several_overlap) {
        PlaceInTemporal(at, block_id, node.size_hint);
        // Every split on the way down now holds the block (Inductor clears
        // their caches: ClearCacheOnAllocateMixin).
        UpdatePath(at, block_id);
        return true;
      }
    }
    // This subtree cannot take the block: back to the last right half.
    if (pending.empty()) return false;
    Frame& last = pending.back();
    if (last.chain < 0) {
      at = last.node;
      at_is_last = last.is_last;
      pending.pop_back();
      continue;
    }
    // Right halves below the top that would fail at once are passed.
    const std::vector<RightHalf>& rights = chains_[last.chain].rights;
    const auto fails = [&](const RightHalf& right) {
      return block.size > right.size_hint ||
             !right.free_time.MayHold(block.live_range) ||
             (right.has_leaf && LeafRefuses(right.leaf, block.live_range));
    };
    while (last.from < last.top && fails(rights[last.from])) ++last.from;
    at = rights[last.from].node;
    at_is_last = last.from == last.top && last.is_last;
    if (last.from == last.top) {
      pending.pop_back();
    } else {
      ++last.from;
    }
  }
}

NodeId Allocator::OverlappingChild(const Node& node, const Block& block,
                                   bool* several) const {
  NodeId overlapping = kNoNode;
  *several = false;
  const auto consider = [&](NodeId child) {
    if (!OverlapsBlock(child, block)) return true;
    if (overlapping != kNoNode) {
      *several = true;
      return false;
    }
    overlapping = child;
    return true;
  };
  if (node.hulls < 0) {
    for (NodeId child : node.children) {
      if (!consider(child)) break;
    }
    return overlapping;
  }
  const std::vector<Hull>& hulls = hulls_[node.hulls];
  for (size_t i = 0; i < hulls.size(); ++i) {
    if (hulls[i].MayOverlap(block.live_range) && !consider(node.children[i])) {
      break;
    }
  }
  return overlapping;
}

void Allocator::AddChildHull(NodeId split) {
  Node& node = nodes_[split];
  if (node.hulls >= 0) {
    hulls_[node.hulls].push_back(
        Hull::Of(nodes_[node.children.back()].live_ranges));
    return;
  }
  if (!options_.prune_full_subtrees || node.children.size() < kHullChildren) {
    return;
  }
  node.hulls = static_cast<int32_t>(hulls_.size());
  std::vector<Hull>& hulls = hulls_.emplace_back();
  for (NodeId child : node.children) {
    hulls.push_back(Hull::Of(nodes_[child].live_ranges));
  }
}

void Allocator::ExtendSpine(NodeId split) {
  int32_t spine = -1;
  const NodeId spatial = nodes_[split].parent;
  if (spatial != kNoNode && nodes_[spatial].kind == NodeKind::kSpatial &&
      nodes_[spatial].right == split) {
    const NodeId above = nodes_[spatial].parent;
    const int32_t above_spine = above == kNoNode ? -1 : SpineOf(above);
    if (above_spine >= 0 && spines_[above_spine].levels.back() == above &&
        nodes_[above].children.size() == 1) {
      spine = above_spine;
    }
  }
  if (spine < 0) {
    spine = static_cast<int32_t>(spines_.size());
    spines_.emplace_back();
  }
  Spine& extended = spines_[spine];
  nodes_[split].chain = -2 - spine;
  nodes_[split].chain_index = static_cast<int32_t>(extended.levels.size());
  extended.levels.push_back(split);
  // The left half is Temporal{the allocation just placed} (PlaceInTemporal).
  const Node& left = nodes_[nodes_[nodes_[split].children[0]].left];
  extended.lefts.push_back(
      {left.size_hint, blocks_[nodes_[left.children[0]].block].live_range});
}

bool Allocator::LeftFails(const LeftHalf& left, const Block& block) {
  return block.size > left.size || LeafRefuses(left.first, block.live_range);
}

NodeId Allocator::SkipDownSpine(NodeId split, bool is_last,
                                const Block& block) {
  const Node& node = nodes_[split];
  if (node.children.size() != 1) return kNoNode;  // broken
  const Spine& spine = spines_[SpineOf(split)];
  const int32_t index = node.chain_index;
  // The levels below reachable without passing a broken one: [index, end).
  int32_t end = static_cast<int32_t>(spine.levels.size());
  const auto broken_below = spine.broken.upper_bound(index);
  if (broken_below != spine.broken.end()) end = *broken_below;
  // Whether the walk passes level k's split and its SpatialSplit on to the
  // left half: the split's tests, its one child overlapping the block, the
  // SpatialSplit's pruning test. True at `index` but for the last test,
  // and true for a prefix of the levels.
  const auto passes = [&](int32_t k) {
    const Node& level = nodes_[spine.levels[k]];
    const Node& spatial = nodes_[level.children[0]];
    return level.free_time.MayHold(block.live_range) &&
           (is_last || block.size <= level.size_hint) &&
           spatial.live_ranges.Overlaps(block.live_range) &&
           spatial.free_time.MayHold(block.live_range);
  };
  if (end - index < 2 || !passes(index)) return kNoNode;
  // The deepest level passed: passes holds on [index, low].
  int32_t low = index;
  int32_t high = end - 1;
  while (low < high) {
    const int32_t mid = low + (high - low + 1) / 2;
    if (passes(mid)) {
      low = mid;
    } else {
      high = mid - 1;
    }
  }
  for (int32_t k = index; k <= low; ++k) {
    if (!LeftFails(spine.lefts[k], block)) {
      // The walk goes on at that level's SpatialSplit (which it passes).
      return k == index ? kNoNode : nodes_[spine.levels[k]].children[0];
    }
  }
  // Every left half down to `low` fails: the walk reaches the
  // right half of level low, with is_last as it was.
  return nodes_[nodes_[spine.levels[low]].children[0]].right;
}

NodeId Allocator::SkipDownChain(NodeId split, bool is_last,
                                const Block& block) {
  const Node& node = nodes_[split];
  if (node.children.size() != 1) return kNoNode;  // broken
  // The walk goes on through the split's SpatialSplit only if that passes
  // the pruning test.
  if (!nodes_[node.children[0]].free_time.MayHold(block.live_range)) {
    return kNoNode;
  }
  const Chain& chain = chains_[node.chain];
  const int32_t index = node.chain_index;
  // The lowest level reachable without passing a broken split.
  int32_t lowest = 0;
  const auto broken_above = chain.broken.lower_bound(index);
  if (broken_above != chain.broken.begin()) {
    lowest = *std::prev(broken_above) + 1;
  }
  if (index - 1 < lowest || !Continues(chain.nodes[index - 1], block)) {
    return kNoNode;  // at most one level: walk it
  }
  // The lowest level the walk goes on through: Continues holds from there
  // up to index - 1.
  int32_t low = lowest;
  int32_t high = index - 1;
  while (low < high) {
    const int32_t mid = low + (high - low) / 2;
    if (Continues(chain.nodes[mid], block)) {
      high = mid;
    } else {
      low = mid + 1;
    }
  }
  search_stack_.push_back({kNoNode, is_last, node.chain, low, index});
  return nodes_[nodes_[chain.nodes[low]].children[0]].left;
}

void Allocator::PlaceInTemporal(NodeId split, int32_t block, Bytes slot_size) {
  const Bytes block_size = blocks_[block].size;
  if (nodes_[split].chain >= 0) {
    chains_[nodes_[split].chain].broken.insert(nodes_[split].chain_index);
  }
  if (const int32_t spine = SpineOf(split); spine >= 0) {
    spines_[spine].broken.insert(nodes_[split].chain_index);
  }
  absl::InlinedVector<NodeId, 2>& children = nodes_[split].children;
  const bool only_reserved =
      children.size() == 1 && nodes_[children[0]].kind == NodeKind::kEmpty;
  if (only_reserved) children.pop_back();
  if (slot_size == block_size) {
    NodeId allocation = NewAllocation(block);
    nodes_[allocation].parent = split;
    nodes_[split].children.push_back(allocation);
  } else if (slot_size > block_size) {
    NodeId allocation = NewAllocation(block);
    NodeId spatial = NewSpatialWithSpace(allocation, slot_size - block_size);
    nodes_[spatial].parent = split;
    nodes_[split].children.push_back(spatial);
    if (only_reserved && options_.prune_full_subtrees) ExtendSpine(split);
  } else {
    // Grow: only on the last pool's right edge (is_last).
    absl::InlinedVector<NodeId, 2> old_children =
        std::move(nodes_[split].children);
    absl::InlinedVector<NodeId, 2> grown;
    grown.reserve(old_children.size() + 1);
    for (NodeId child : old_children) {
      grown.push_back(NewSpatialWithSpace(child, block_size - slot_size));
    }
    grown.push_back(NewAllocation(block));
    for (NodeId child : grown) nodes_[child].parent = split;
    nodes_[split].children = std::move(grown);
  }
  // Every case above appended one child; growing wrapped the others in
  // place, with their live ranges.
  AddChildHull(split);
}

absl::StatusOr<bool> Allocator::AllocateInPool(PoolState& pool, int32_t block,
                                               bool is_last) {
  const Block& b = blocks_[block];
  if (pool.restrict_begin.has_value() &&
      !(*pool.restrict_begin <= b.live_range.begin)) {
    return false;
  }
  const Timestep pool_begin = nodes_[pool.root].live_ranges.begin();
  if (b.earliest_available != 0 && b.earliest_available > pool_begin) {
    return false;
  }
  is_last = pool.can_expand && is_last;
  // The root split's own first test, and the pruning test, before setting
  // up the walk: most pools are rejected here.
  if (!is_last && b.size > nodes_[pool.root].size_hint) return false;
  if (options_.prune_full_subtrees &&
      !nodes_[pool.root].free_time.MayHold(b.live_range)) {
    if (!is_last) return false;
    AllocateAtEnd(pool, block);
    return true;
  }
  absl::StatusOr<bool> placed = AllocateInTree(pool.root, block, is_last);
  if (!placed.ok() || *placed) {
    if (placed.ok()) {
      UpdateRestrict(pool, block);
      RefreshGate(pool);
    }
    return placed;
  }
  if (is_last) {
    AllocateAtEnd(pool, block);
    return true;
  }
  return false;
}

void Allocator::AllocateAtEnd(PoolState& pool, int32_t block) {
  NodeId right = NewTemporal({NewAllocation(block)});
  NodeId spatial = NewSpatial(pool.root, right);
  const NodeId below = pool.root;
  pool.root = NewTemporal({spatial});
  ExtendChain(pool.root, below);
  UpdateRestrict(pool, block);
  RefreshGate(pool);
}

void Allocator::UpdateRestrict(PoolState& pool, int32_t block) {
  const Timestep earliest = blocks_[block].earliest_available;
  if (earliest == 0) return;
  pool.restrict_begin = pool.restrict_begin.has_value()
                            ? std::min(*pool.restrict_begin, earliest)
                            : earliest;
}

void Allocator::NewPool(int32_t block, bool can_expand) {
  DevicePools& device_pools = device_pools_[blocks_[block].device];
  PoolState pool;
  pool.device = blocks_[block].device;
  pool.position = static_cast<int32_t>(device_pools.pools.size());
  pool.root = NewTemporal({NewAllocation(block)});
  pool.can_expand = can_expand;
  device_pools.pools.push_back(static_cast<int32_t>(pools_.size()));
  device_pools.sizes.Append(0);
  UpdateRestrict(pool, block);
  RefreshGate(pool);
  pools_.push_back(pool);
}

absl::Status Allocator::Allocate(int32_t block) {
  const DevicePools& device_pools = PoolsOf(blocks_[block].device);
  const std::vector<int32_t>& pools = device_pools.pools;
  const Block& b = blocks_[block];
  const int count = static_cast<int>(pools.size());
  // Every pool but the last, and the last when it cannot grow, rejects a
  // buffer larger than its root's size_hint, or one its free_time cannot
  // hold, without changing anything (AllocationPool.allocate): skip those,
  // the too-small ones by the size index.
  for (int i = device_pools.sizes.FirstAtLeast(0, b.size); i < count;
       i = device_pools.sizes.FirstAtLeast(i + 1, b.size)) {
    PoolState& pool = pools_[pools[i]];
    const bool is_last = i + 1 == count;
    if (is_last && pool.can_expand) break;
    if (options_.prune_full_subtrees && !pool.free_time.MayHold(b.live_range)) {
      continue;
    }
    absl::StatusOr<bool> placed = AllocateInPool(pool, block, is_last);
    if (!placed.ok()) return placed.status();
    if (*placed) return absl::OkStatus();
  }
  if (count > 0 && pools_[pools.back()].can_expand) {
    // The last pool may grow, so it takes every buffer that reaches it.
    absl::StatusOr<bool> placed =
        AllocateInPool(pools_[pools.back()], block, /*is_last=*/true);
    if (!placed.ok()) return placed.status();
    if (*placed) return absl::OkStatus();
  }
  NewPool(block, problem_.pool_mode != PoolMode::kNone);
  return absl::OkStatus();
}

void Allocator::AllocateOutput(int32_t block) {
  const std::vector<int32_t>& pools = PoolsOf(blocks_[block].device).pools;
  const bool shared = problem_.pool_mode == PoolMode::kOutputs ||
                      problem_.pool_mode == PoolMode::kCombined;
  if (!pools.empty() && shared) {
    AllocateAtEnd(pools_[pools.back()], block);
  } else {
    NewPool(block, problem_.pool_mode == PoolMode::kCombined);
  }
}

absl::StatusOr<Plan> Allocator::Finalize() {
  Plan plan;
  plan.assignments.resize(problem_.buffers.size());
  // Symbolic sizes (node ids) and offsets (buffer ids) when symbolic_.
  ExprArena* arena = symbolic_ == nullptr ? nullptr : &symbolic_->arena;
  std::vector<ExprId> symbolic_size(arena == nullptr ? 0 : nodes_.size(), -1);
  std::vector<ExprId> pool_symbolic_sizes;
  std::vector<ExprId> symbolic_offsets(
      arena == nullptr ? 0 : problem_.buffers.size(), -1);
  std::vector<ExprId> child_sizes;
  // A SpatialSplit whose right half is still only reserved space is
  // replaced by its left half (SpatialSplit.finalize), so sizes after
  // finalize are: TemporalSplit the max of its children; SpatialSplit
  // align(left) + right, or left alone when right is empty.
  auto right_is_empty = [&](const Node& spatial) {
    const Node& right = nodes_[spatial.right];
    return right.children.size() == 1 &&
           nodes_[right.children[0]].kind == NodeKind::kEmpty;
  };
  std::vector<Bytes> final_size(nodes_.size(), 0);
  std::vector<std::pair<NodeId, bool>> stack;
  struct Placed {
    NodeId node;
    Bytes offset;
    ExprId symbolic_offset;  // -1 without symbolic_
  };
  std::vector<Placed> offsets;
  for (int32_t device : device_order_) {
    for (int32_t pool_index : device_pools_[device].pools) {
      const PoolState& pool = pools_[pool_index];
      // Sizes, children first.
      stack.assign({{pool.root, false}});
      while (!stack.empty()) {
        auto [id, children_done] = stack.back();
        stack.pop_back();
        const Node& node = nodes_[id];
        if (!children_done && (node.kind == NodeKind::kTemporal ||
                               node.kind == NodeKind::kSpatial)) {
          stack.push_back({id, true});
          if (node.kind == NodeKind::kTemporal) {
            for (NodeId child : node.children) stack.push_back({child, false});
          } else {
            stack.push_back({node.left, false});
            stack.push_back({node.right, false});
          }
          continue;
        }
        switch (node.kind) {
          case NodeKind::kAllocation:
            final_size[id] = blocks_[node.block].size;
            break;
          case NodeKind::kEmpty:
            final_size[id] = node.size_hint;
            break;
          case NodeKind::kTemporal: {
            Bytes size = 0;
            for (NodeId child : node.children) {
              size = std::max(size, final_size[child]);
            }
            final_size[id] = size;
            break;
          }
          case NodeKind::kSpatial:
            final_size[id] =
                right_is_empty(node)
                    ? final_size[node.left]
                    : AlignUp(final_size[node.left], problem_.alignment) +
                          final_size[node.right];
            break;
        }
        if (arena != nullptr) SetSymbolicSize(id, symbolic_size, child_sizes);
      }
      // Offsets, parents first.
      const int32_t plan_pool = static_cast<int32_t>(plan.pools.size());
      plan.pools.push_back(Pool{absl::StrCat("pool", plan_pool),
                                devices_[pool.device], final_size[pool.root]});
      if (arena != nullptr) {
        pool_symbolic_sizes.push_back(symbolic_size[pool.root]);
      }
      offsets.push_back(
          {pool.root, 0, arena == nullptr ? -1 : arena->Integer(0)});
      while (!offsets.empty()) {
        const Placed placed = offsets.back();
        offsets.pop_back();
        const Node& node = nodes_[placed.node];
        switch (node.kind) {
          case NodeKind::kAllocation: {
            const int32_t buffer = blocks_[node.block].buffer;
            plan.assignments[buffer] = Assignment{plan_pool, placed.offset};
            if (arena != nullptr) {
              symbolic_offsets[buffer] = placed.symbolic_offset;
            }
            break;
          }
          case NodeKind::kEmpty:
            break;
          case NodeKind::kTemporal:
            for (NodeId child : node.children) {
              offsets.push_back({child, placed.offset, placed.symbolic_offset});
            }
            break;
          case NodeKind::kSpatial:
            offsets.push_back(
                {node.left, placed.offset, placed.symbolic_offset});
            if (!right_is_empty(node)) {
              // As SpatialSplit.finalize: offset + align(left's size).
              offsets.push_back(
                  {node.right,
                   placed.offset +
                       AlignUp(final_size[node.left], problem_.alignment),
                   arena == nullptr
                       ? -1
                       : arena->Add(placed.symbolic_offset,
                                    arena->Align(symbolic_size[node.left],
                                                 problem_.alignment))});
            }
            break;
        }
      }
    }
  }
  if (arena != nullptr) {
    absl::Status status =
        SetSymbolicPlan(*arena, pool_symbolic_sizes, symbolic_offsets, plan);
    if (!status.ok()) return status;
  }
  return plan;
}

void Allocator::SetSymbolicSize(NodeId id, std::vector<ExprId>& sizes,
                                std::vector<ExprId>& scratch) {
  ExprArena& arena = symbolic_->arena;
  const Node& node = nodes_[id];
  switch (node.kind) {
    case NodeKind::kAllocation:
      sizes[id] = symbolic_->sizes[blocks_[node.block].buffer];
      break;
    case NodeKind::kEmpty:
      sizes[id] = arena.Integer(0);  // Empty.get_symbolic_size
      break;
    case NodeKind::kTemporal:
      scratch.clear();
      for (NodeId child : node.children) scratch.push_back(sizes[child]);
      sizes[id] = arena.Max(scratch);
      break;
    case NodeKind::kSpatial: {
      const Node& right = nodes_[node.right];
      const bool right_empty =
          right.children.size() == 1 &&
          nodes_[right.children[0]].kind == NodeKind::kEmpty;
      sizes[id] =
          right_empty
              ? sizes[node.left]
              : arena.Add(arena.Align(sizes[node.left], problem_.alignment),
                          sizes[node.right]);
      break;
    }
  }
}

absl::StatusOr<Plan> Allocator::Run() {
  const std::vector<Buffer>& buffers = problem_.buffers;
  blocks_.reserve(buffers.size());
  // Most buffers make a handful of nodes; growing the arena moves them all.
  nodes_.reserve(4 * buffers.size() + 16);
  absl::flat_hash_map<absl::string_view, int32_t> device_index;
  std::vector<int32_t> outputs;
  std::vector<int32_t> intermediates;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const Buffer& buffer = buffers[i];
    const int32_t block = static_cast<int32_t>(blocks_.size());
    auto [device, inserted] = device_index.try_emplace(
        buffer.device, static_cast<int32_t>(devices_.size()));
    if (inserted) devices_.push_back(buffer.device);
    blocks_.push_back(Block{
        static_cast<int32_t>(i), device->second, buffer.size, buffer.live_range,
        buffer.size_is_data_dependent ? buffer.live_range.begin : Timestep{0}});
    if (buffer.is_output && problem_.pool_mode != PoolMode::kCombined) {
      outputs.push_back(block);
    } else {
      intermediates.push_back(block);
    }
  }
  device_pools_.resize(devices_.size());
  // Outputs by (size, -length), the rest by (-size, -length); stable.
  std::stable_sort(outputs.begin(), outputs.end(), [&](int32_t a, int32_t b) {
    const Block& x = blocks_[a];
    const Block& y = blocks_[b];
    if (x.size != y.size) return x.size < y.size;
    return x.live_range.length() > y.live_range.length();
  });
  std::stable_sort(intermediates.begin(), intermediates.end(),
                   [&](int32_t a, int32_t b) {
                     const Block& x = blocks_[a];
                     const Block& y = blocks_[b];
                     if (x.size != y.size) return x.size > y.size;
                     return x.live_range.length() > y.live_range.length();
                   });
  for (size_t i = 0; i < outputs.size(); ++i) {
    if ((i & 0xFF) == 0) {
      absl::Status status = context_.Check();
      if (!status.ok()) return status;
    }
    AllocateOutput(outputs[i]);
  }
  for (size_t i = 0; i < intermediates.size(); ++i) {
    if ((i & 0xFF) == 0) {
      absl::Status status = context_.Check();
      if (!status.ok()) return status;
    }
    absl::Status status = Allocate(intermediates[i]);
    if (!status.ok()) return status;
  }
  return Finalize();
}

}  // namespace

absl::StatusOr<Plan> InductorPlanner::PlanProblem(
    const Problem& problem, const PlanContext& context) const {
  for (size_t i = 0; i < problem.buffers.size(); ++i) {
    const Buffer& buffer = problem.buffers[i];
    const char* field = buffer.fixed_offset                    ? "fixed_offset"
                        : buffer.alignment > problem.alignment ? "alignment"
                                                               : nullptr;
    if (field != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "buffers[", i, "] (\"", buffer.names[0], "\"): ", field,
          " is set, which strategy inductor cannot honour (Inductor places "
          "every buffer itself, at multiples of options.alignment); use "
          "best_fit, optimal or auto"));
    }
  }
  // Under dynamic shapes, Inductor's symbolic sizes along with the plan.
  std::optional<SymbolicSizes> symbolic;
  if (MayHaveSymbols(problem)) {
    absl::StatusOr<SymbolicSizes> parsed = ParseSymbolicSizes(problem);
    if (!parsed.ok()) return parsed.status();
    if (parsed->any_symbol) symbolic = *std::move(parsed);
  }
  const absl::Time start = absl::Now();
  // No search: the work budget, a search's, does not apply.
  PlanContext unbudgeted = context;
  unbudgeted.work_left = nullptr;
  absl::StatusOr<Plan> plan =
      Allocator(problem, options_, unbudgeted,
                symbolic.has_value() ? &*symbolic : nullptr)
          .Run();
  if (!plan.ok()) return plan;
  plan->planner = "inductor";
  AddRunOverAllDevices("inductor", start, *plan);
  return WithinCapacity(problem, context, *std::move(plan));
}

}  // namespace memplan
