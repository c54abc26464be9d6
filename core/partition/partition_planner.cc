#include "core/partition/partition_planner.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "core/caching_allocator.h"
#include "core/entry_state.h"
#include "core/graph_memory.h"
#include "core/inductor/range_max_tree.h"
#include "core/symbolic/symbolic_plan.h"

namespace memplan {
namespace {

// How often (in buffers) the planner looks at the deadline.
constexpr size_t kCheckEvery = 256;
// The segment sharing pass: pools tried for padding per pool that takes a
// new segment, and replays of the allocator model per device at most.
constexpr int kPadTrials = 4;
constexpr int kMaxReplays = 32;
// Pool caps tried (Shape::cap), and how close to the lowest peak a
// candidate's peak must be (1/kPeakSlack of it) to be chosen.
constexpr int kCaps = 4;
constexpr Bytes kPeakSlack = 256;
constexpr Bytes kReservedSlack = 32;

// The allocator model's error on `reserved` bytes (docs/gpu.md): 1/32 of
// them, at least one large segment's rounding (2 MiB). Reserved bytes
// closer than this are not told apart: a reservation must save more, a
// candidate may reserve this much more than the least, and a candidate of
// more pools must reserve less by more.
Bytes ReservedSlack(Bytes reserved) {
  return std::max(CachingAllocatorModel::kRoundLarge,
                  reserved / kReservedSlack);
}
// Replans of a sharing candidate under a lowered target (Shape::target_cut).
constexpr int kTightenings = 3;
// Pool caps from an entry state: its largest free block down to this
// fraction of it, halving.
constexpr Bytes kEntryCapDivisor = 4;
// Candidates with at most 1/kPoolSlack more pools of intermediates than
// the fewest count as few: among them the least reserved bytes win.
constexpr size_t kPoolSlack = 8;
// Segment reservations (Problem::reserve_segments) tried per candidate:
// the peak rounded down to 2 MiB, less 0 to kReservationSteps - 1 times
// 2 MiB, then 7/8, 3/4 and 1/2 of it; none below kMinReservation.
constexpr int kReservationSteps = 4;
constexpr Bytes kMinReservation = CachingAllocatorModel::kMinLargeAlloc;
// With segment reservations, pools capped below the largest intermediate
// too: at half of it and at a quarter, an eighth and a sixteenth, none
// below 2 MiB. Pools the size of single buffers split a reserved segment
// the way default's allocations do, where larger pools fragment it.
constexpr int kReservedCaps = 4;
// With segment reservations, a candidate of more pools (at most
// kReservedPoolFactor times the fewest) wins where it reserves less
// by more than the model's error on reserved bytes (the chooser's slack:
// 1/kReservedSlack, at least 2 MiB): a few allocator calls for segments'
// worth of reserved bytes (swin_t's inference graph: 15 pools and 162 MiB
// reserved against 11 pools and 218 MiB, docs/gpu.md).
constexpr size_t kReservedPoolFactor = 2;
// Calls of a loop a reservation may not reserve more over than the plan
// without it: a loop that holds each output until the next call returns
// alternates between two reserved segments from the third call on
// (swin_t's inference graph, docs/gpu.md "Segment reservations").
constexpr int kLoopCalls = 4;

// The reservation sizes tried for a candidate whose predicted peak is
// `peak` bytes (above), largest first, each a multiple of 2 MiB.
std::vector<Bytes> ReservationSizes(Bytes peak) {
  constexpr Bytes kUnit = CachingAllocatorModel::kRoundLarge;
  const Bytes top = peak / kUnit * kUnit;
  std::vector<Bytes> sizes;
  auto add = [&](Bytes size) {
    size = size / kUnit * kUnit;
    if (size >= kMinReservation &&
        std::find(sizes.begin(), sizes.end(), size) == sizes.end()) {
      sizes.push_back(size);
    }
  };
  for (int k = 0; k < kReservationSteps; ++k) add(top - k * kUnit);
  add(top / 8 * 7);
  add(top / 4 * 3);
  add(top / 2);
  return sizes;
}

// How one device's pools are built (one candidate of the device's plan).
struct Shape {
  // A pool grows (by a buffer on top) to at most this many bytes; a buffer
  // larger than it opens a pool of its own.
  Bytes cap = std::numeric_limits<Bytes>::max();
  // Whether buffers share pools at all (false: one pool per buffer, or per
  // chain below).
  bool share = true;
  // Whether a buffer joins the pool of the group whose storage default
  // torch.compile's reuse pass hands on to it (GraphTimeline::storage_from):
  // without sharing, default's storages as pools (its peak, reserved bytes
  // and allocator calls, but for the outputs, which keep pools of their
  // own); with sharing, the chain first where it keeps the target.
  bool reuse_chains = false;
  // Bytes the target is lowered by (the tightening in PlanProblem): the
  // pools are placed under the peak with one pool per buffer, as the
  // tree counts it, less this many bytes.
  Bytes target_cut = 0;
  // Whether outputs share pools of outputs where the problem allows it
  // (Problem::ReleasedTogether); false: one pool per output.
  bool share_outputs = true;
};

// The positions of one device where the memory in use can change, sorted:
// slot i stands for the positions [points[i], points[i + 1]).
class Axis {
 public:
  explicit Axis(std::vector<int64_t> points) : points_(std::move(points)) {
    std::sort(points_.begin(), points_.end());
    points_.erase(std::unique(points_.begin(), points_.end()), points_.end());
  }
  size_t slots() const { return points_.size(); }
  // The slot of `position` (one of the points, or kNeverFreed: slots()).
  size_t Slot(int64_t position) const {
    if (position == kNeverFreed) return points_.size();
    return std::lower_bound(points_.begin(), points_.end(), position) -
           points_.begin();
  }
  // The position slot `slot` begins at (slots(): kNeverFreed).
  int64_t Position(size_t slot) const {
    return slot < points_.size() ? points_[slot] : kNeverFreed;
  }
  // The positions slots [begin, end) cover (the last slot: one position).
  int64_t Width(size_t begin, size_t end) const {
    if (begin >= end) return 0;
    const int64_t last =
        end < points_.size() ? points_[end] : points_.back() + 1;
    return last - points_[begin];
  }

 private:
  std::vector<int64_t> points_;
};

// A buffer live in a pool, for the search of a free offset.
struct LiveItem {
  Bytes offset = 0;
  Bytes size = 0;
  Timestep end = 0;  // the end of its live range
};

// One pool being built.
struct PoolState {
  Bytes height = 0;       // bytes: its buffers' highest end
  Bytes padded = 0;       // bytes: at least this (segment sharing)
  size_t hull_begin = 0;  // slots [hull_begin, hull_end)
  size_t hull_end = 0;
  std::vector<LiveItem> live;    // by offset
  std::vector<int32_t> members;  // problem buffer indices
  bool fixed = false;            // an output's or a data-dependent one's
  bool output = false;           // holds outputs (and nothing else)
  // What it may hold (DevicePartition::KindOf): intermediates, or the
  // outputs of one release.
  int32_t kind = 0;
  int32_t newer = -1, older = -1;  // its kind's list of pools, newest first
};

// Where a buffer would go in a pool, and what it costs.
struct Trial {
  int32_t pool = -1;
  Bytes offset = 0;
  Bytes height = 0;  // the pool's height with the buffer
  size_t begin = 0;  // the pool's hull with the buffer
  size_t end = 0;
  int64_t cost = 0;  // bytes x positions the pool's charge grows by
};

// Plans the buffers of one device.
class DevicePartition {
 public:
  DevicePartition(const Problem& problem, const GraphTimeline& timeline,
                  const DeviceMemory* unplanned, std::vector<int32_t> buffers,
                  Shape shape)
      : problem_(problem),
        shape_(shape),
        timeline_(timeline),
        block_(problem.allocator_block),
        buffers_(std::move(buffers)),
        axis_(Points(timeline, unplanned, buffers_)),
        tree_(InitialLoad(unplanned)),
        pool_of_(problem.buffers.size(), -1),
        shared_outputs_(problem.pool_mode == PoolMode::kIntermediates &&
                        problem.OutputsMayShare() && shape.share_outputs) {
    target_ = axis_.slots() == 0 ? 0 : tree_.Max(0, axis_.slots());
    target_ -= std::min(target_, shape_.target_cut);
  }

  // Places every buffer; returns the pools (members and offsets set in
  // `offsets`, parallel to problem.buffers).
  absl::Status Run(const PlanContext& context, std::vector<Bytes>& offsets) {
    std::vector<int32_t> order;
    // Outputs released together share pools of outputs, placed as the
    // intermediates (in order of allocation, each where it costs least
    // within the target) but never with an intermediate nor with an output
    // released apart (KindOf): a pool holding an output lives until the
    // caller releases it.
    for (int32_t b : buffers_) {
      const Buffer& buffer = problem_.buffers[b];
      if (buffer.size_is_data_dependent ||
          (buffer.is_output && !(SharesPools(b) && Charged(b)))) {
        OpenPool(b, /*fixed=*/true);
        offsets[b] = 0;
      } else if (Charged(b)) {
        order.push_back(b);
      }
    }
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      const Buffer& x = problem_.buffers[a];
      const Buffer& y = problem_.buffers[b];
      if (x.live_range.begin != y.live_range.begin) {
        return x.live_range.begin < y.live_range.begin;
      }
      return timeline_.spans[a].begin < timeline_.spans[b].begin;
    });
    for (size_t i = 0; i < order.size(); ++i) {
      if (i % kCheckEvery == 0) {
        if (absl::Status status = context.Check(); !status.ok()) {
          return status;
        }
      }
      Place(order[i], offsets);
    }
    // Buffers that allocate nothing (no bytes, or an empty span): at
    // offset 0 of the newest pool of intermediates they fit in, so that no
    // pool grows for them; a pool of their own where none is large enough,
    // or where the buffer's live range is not empty (a span cannot be empty
    // then for the lines GroupWrapperLines accepts, but overlapping another
    // buffer is never an option).
    for (int32_t b : buffers_) {
      const Buffer& buffer = problem_.buffers[b];
      if (buffer.is_output || buffer.size_is_data_dependent || Charged(b)) {
        continue;
      }
      const bool holds_bytes =
          buffer.size > 0 && buffer.live_range.begin < buffer.live_range.end;
      int32_t pool = holds_bytes ? -1 : Newest(kIntermediates);
      while (pool >= 0 && pools_[pool].height < buffer.size) {
        pool = pools_[pool].older;
      }
      if (pool < 0) {
        OpenPool(b, /*fixed=*/false);
      } else {
        pools_[pool].members.push_back(b);
        pool_of_[b] = pool;
      }
      offsets[b] = 0;
    }
    return absl::OkStatus();
  }

  // Segment sharing: a pool the caching allocator cannot serve from its
  // cached blocks takes a new segment, and the allocator keeps segments
  // while the graph runs (core/caching_allocator.h). So where a pool P
  // takes a new segment and a smaller pool Q was released before P is
  // created, padding Q to P's size lets P reuse Q's segment. Pads the
  // largest such Q (of kPadTrials) whose padding keeps every position at or
  // below the target and lowers the reserved bytes the model replays;
  // pools in order of creation. The allocated peak stays at most the
  // target; the reserved bytes never rise.
  absl::Status ShareSegments(const PlanContext& context,
                             const DeviceMemory* unplanned) {
    std::vector<int32_t> kept;  // not read: no output names asked for
    DeviceMemory memory = Memory(unplanned, {}, kept);
    std::vector<MemoryBlock>& blocks = memory.blocks;
    const std::vector<CachedBlock>& cached = memory.cached;
    const CachingAllocatorModel* start = memory.start.get();
    const size_t first = blocks.size() - pools_.size();
    // The peak as the whole-graph stats count it (core/graph_memory.h
    // WholeGraphPeaks): the allocator model's with CUDA's 512-byte block,
    // else the rounded bytes of the tree.
    const bool cuda = block_ == CachingAllocatorModel::kMinBlockSize;
    auto measure = [&](const AllocatorReplay& replay) {
      reserved_ = replay.stats.reserved;
      peak_ = cuda ? replay.stats.peak_allocated
                   : (axis_.slots() == 0 ? 0 : tree_.Max(0, axis_.slots()));
    };
    AllocatorReplay replay = ReplayCachingAllocator(blocks, cached, start);
    measure(replay);
    // Pool mode none: a pool is never larger than its largest buffer.
    if (problem_.pool_mode == PoolMode::kNone) return absl::OkStatus();
    std::vector<int32_t> order(pools_.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return pools_[a].hull_begin < pools_[b].hull_begin;
    });
    int replays = 0;
    for (const int32_t p : order) {
      if (!replay.created_segment[first + p]) continue;
      const Bytes need = CachingAllocatorModel::RoundSize(pools_[p].height);
      if (need <= CachingAllocatorModel::kSmallSize) continue;
      std::vector<int32_t> candidates;
      for (int32_t q = 0; q < static_cast<int32_t>(pools_.size()); ++q) {
        const PoolState& pool = pools_[q];
        if (!pool.fixed && !pool.output && pool.hull_begin < pool.hull_end &&
            pool.hull_end <= pools_[p].hull_begin &&
            blocks[first + q].size > 0 && blocks[first + q].size < need) {
          candidates.push_back(q);
        }
      }
      std::stable_sort(candidates.begin(), candidates.end(),
                       [&](int32_t a, int32_t b) {
                         return blocks[first + a].size > blocks[first + b].size;
                       });
      int tried = 0;
      for (const int32_t q : candidates) {
        if (tried == kPadTrials || replays == kMaxReplays) break;
        const PoolState& pool = pools_[q];
        const Bytes raise = AllocatorBytes(need, block_) -
                            AllocatorBytes(blocks[first + q].size, block_);
        if (tree_.Max(pool.hull_begin, pool.hull_end) + raise > target_) {
          continue;
        }
        ++tried;
        ++replays;
        if (absl::Status status = context.Check(); !status.ok()) return status;
        const Bytes size = blocks[first + q].size;
        blocks[first + q].size = need;
        AllocatorReplay trial = ReplayCachingAllocator(blocks, cached, start);
        if (trial.stats.reserved < replay.stats.reserved &&
            (!cuda || trial.stats.peak_allocated <=
                          std::max(replay.stats.peak_allocated, target_))) {
          tree_.Add(pool.hull_begin, pool.hull_end, raise);
          pools_[q].padded = need;
          replay = std::move(trial);
          measure(replay);
          break;
        }
        blocks[first + q].size = size;
      }
    }
    return absl::OkStatus();
  }

  // The device's blocks with these pools (the unplanned ones first, then
  // each pool over its hull at its padded height), and in `kept` the
  // indices of those holding the graph's outputs at its return (`outputs`:
  // the names).
  DeviceMemory Memory(const DeviceMemory* unplanned,
                      const std::vector<std::string>& outputs,
                      std::vector<int32_t>& kept) const {
    DeviceMemory memory;
    if (unplanned != nullptr) {
      memory = *unplanned;
      for (const std::string& name : outputs) {
        auto it = unplanned->held_at_end.find(name);
        if (it != unplanned->held_at_end.end()) kept.push_back(it->second);
      }
    }
    for (const PoolState& pool : pools_) {
      const int64_t end = axis_.Position(pool.hull_end);
      if (pool.output && end == kNeverFreed) {
        kept.push_back(static_cast<int32_t>(memory.blocks.size()));
      }
      memory.blocks.push_back(MemoryBlock{axis_.Position(pool.hull_begin), end,
                                          std::max(pool.height, pool.padded)});
    }
    return memory;
  }

  const std::vector<PoolState>& pools() const { return pools_; }
  // The pools that hold intermediates (not outputs, not a data-dependent
  // buffer's own).
  size_t intermediate_pools() const {
    return std::count_if(
        pools_.begin(), pools_.end(),
        [](const PoolState& pool) { return !pool.fixed && !pool.output; });
  }
  // The predicted peak of the pools built (bytes above the entry, as
  // WholeGraphPeaks counts it), as ShareSegments leaves them.
  Bytes peak() const { return peak_; }
  // The reserved bytes the allocator model replays for them (set by
  // ShareSegments).
  Bytes reserved() const { return reserved_; }
  // The largest pool built.
  Bytes largest_pool() const {
    Bytes largest = 0;
    for (const PoolState& pool : pools_) {
      largest = std::max(largest, std::max(pool.height, pool.padded));
    }
    return largest;
  }

 private:
  // The kinds of pool: intermediates, every output (outputs released
  // together), or the outputs of release group g (g >= 0).
  static constexpr int32_t kIntermediates = -1;
  static constexpr int32_t kAllOutputs = -2;
  // The kind of pool buffer b may join: one pool holds buffers of one kind.
  int32_t KindOf(int32_t b) const {
    const Buffer& buffer = problem_.buffers[b];
    if (!buffer.is_output) return kIntermediates;
    if (problem_.outputs_released_together) return kAllOutputs;
    return buffer.release_group;  // -1 (apart) never shares: SharesPools
  }
  // Whether output b may share a pool with other outputs (those of its
  // kind).
  bool SharesPools(int32_t b) const {
    return shared_outputs_ && (problem_.outputs_released_together ||
                               problem_.buffers[b].release_group >= 0);
  }
  // The newest pool of `kind`, or -1.
  int32_t Newest(int32_t kind) const {
    auto it = newest_.find(kind);
    return it == newest_.end() ? -1 : it->second;
  }

  // Whether buffer b allocates anything (a size and a non-empty span).
  bool Charged(int32_t b) const {
    const GraphTimeline::Span& span = timeline_.spans[b];
    return problem_.buffers[b].size > 0 && span.begin < span.end;
  }

  static std::vector<int64_t> Points(const GraphTimeline& timeline,
                                     const DeviceMemory* unplanned,
                                     const std::vector<int32_t>& buffers) {
    std::vector<int64_t> points;
    auto add = [&](int64_t begin, int64_t end) {
      if (begin >= end) return;
      points.push_back(begin);
      if (end != kNeverFreed) points.push_back(end);
    };
    for (int32_t b : buffers)
      add(timeline.spans[b].begin, timeline.spans[b].end);
    if (unplanned != nullptr) {
      for (const MemoryBlock& block : unplanned->blocks) {
        add(block.begin, block.end);
      }
    }
    return points;
  }

  // The bytes in use per slot with one pool per buffer, plus the unplanned
  // memory.
  std::vector<Bytes> InitialLoad(const DeviceMemory* unplanned) const {
    std::vector<Bytes> change(axis_.slots() + 1, 0);
    auto add = [&](int64_t begin, int64_t end, Bytes bytes) {
      if (begin >= end || bytes == 0) return;
      change[axis_.Slot(begin)] += bytes;
      change[axis_.Slot(end)] -= bytes;
    };
    if (unplanned != nullptr) {
      for (const MemoryBlock& block : unplanned->blocks) {
        const Bytes bytes = AllocatorBytes(block.size, block_);
        add(block.begin, block.end, block.freed_input ? -bytes : bytes);
      }
    }
    for (int32_t b : buffers_) {
      if (!Charged(b)) continue;
      add(timeline_.spans[b].begin, timeline_.spans[b].end,
          AllocatorBytes(PoolBytesOf(b), block_));
    }
    std::vector<Bytes> load(axis_.slots(), 0);
    Bytes total = 0;
    for (size_t i = 0; i < load.size(); ++i) {
      total += change[i];
      load[i] = total;
    }
    return load;
  }

  // The bytes of a pool holding buffer b alone.
  Bytes PoolBytesOf(int32_t b) const { return problem_.buffers[b].size; }

  // Opens a pool holding buffer b alone at offset 0 (its charge is already
  // in the tree: it is b's own).
  void OpenPool(int32_t b, bool fixed) {
    PoolState pool;
    pool.height = problem_.buffers[b].size;
    pool.hull_begin = axis_.Slot(timeline_.spans[b].begin);
    pool.hull_end = axis_.Slot(timeline_.spans[b].end);
    pool.members.push_back(b);
    pool.fixed = fixed;
    pool.output = problem_.buffers[b].is_output;
    pool.kind = KindOf(b);
    pool.live.push_back(LiveItem{0, problem_.buffers[b].size,
                                 problem_.buffers[b].live_range.end});
    pool_of_[b] = static_cast<int32_t>(pools_.size());
    pools_.push_back(std::move(pool));
    if (!fixed) MakeNewest(static_cast<int32_t>(pools_.size()) - 1);
  }

  void MakeNewest(int32_t p) {
    PoolState& pool = pools_[p];
    int32_t& newest = newest_.try_emplace(pool.kind, -1).first->second;
    if (newest == p) return;
    if (pool.newer >= 0) pools_[pool.newer].older = pool.older;
    if (pool.older >= 0) pools_[pool.older].newer = pool.newer;
    pool.newer = -1;
    pool.older = newest;
    if (newest >= 0) pools_[newest].newer = p;
    newest = p;
  }

  // Where buffer b would go in pool p, or nullopt when that would raise
  // some position above the target (unless `unbounded`) or break the pool
  // mode's or the shape's bounds.
  std::optional<Trial> Try(int32_t b, int32_t p, bool unbounded = false) {
    PoolState& pool = pools_[p];
    const Buffer& buffer = problem_.buffers[b];
    // Buffers whose live range has ended by b's begin no longer hold bytes.
    pool.live.erase(std::remove_if(pool.live.begin(), pool.live.end(),
                                   [&](const LiveItem& item) {
                                     return item.end <= buffer.live_range.begin;
                                   }),
                    pool.live.end());
    const Bytes alignment = problem_.AlignmentOf(b);
    Bytes offset = 0;
    for (const LiveItem& item : pool.live) {
      if (AlignUp(offset, alignment) + buffer.size <= item.offset) break;
      offset = std::max(offset, item.offset + item.size);
    }
    Trial trial;
    trial.pool = p;
    trial.offset = AlignUp(offset, alignment);
    // Pool mode none: a pool never grows past its first buffer (Inductor's
    // pools that cannot expand), so the buffer fits under its height.
    if (problem_.pool_mode == PoolMode::kNone &&
        trial.offset + buffer.size > pool.height) {
      return std::nullopt;
    }
    trial.height = std::max(pool.height, trial.offset + buffer.size);
    if (trial.height > pool.height && trial.height > shape_.cap) {
      return std::nullopt;
    }
    const size_t begin = axis_.Slot(timeline_.spans[b].begin);
    const size_t end = axis_.Slot(timeline_.spans[b].end);
    trial.begin = std::min(pool.hull_begin, begin);
    trial.end = std::max(pool.hull_end, end);
    const Bytes old_bytes = AllocatorBytes(pool.height, block_);
    const Bytes new_bytes = AllocatorBytes(trial.height, block_);
    const Bytes raise = new_bytes - old_bytes;
    if (!unbounded && raise > 0 &&
        tree_.Max(pool.hull_begin, pool.hull_end) + raise > target_) {
      return std::nullopt;
    }
    if (!unbounded && trial.begin < pool.hull_begin &&
        tree_.Max(trial.begin, pool.hull_begin) + new_bytes > target_) {
      return std::nullopt;
    }
    if (!unbounded && pool.hull_end < trial.end &&
        tree_.Max(pool.hull_end, trial.end) + new_bytes > target_) {
      return std::nullopt;
    }
    trial.cost = raise * axis_.Width(pool.hull_begin, pool.hull_end) +
                 new_bytes * (axis_.Width(trial.begin, pool.hull_begin) +
                              axis_.Width(pool.hull_end, trial.end));
    return trial;
  }

  // The pool of the group whose storage the reuse pass hands on to b,
  // where the shape follows those chains and that pool takes buffers of
  // b's kind (output or intermediate); else -1.
  int32_t ChainPool(int32_t b) const {
    if (!shape_.reuse_chains || timeline_.storage_from.empty()) return -1;
    const int32_t from = timeline_.storage_from[b];
    if (from < 0) return -1;
    const int32_t pool = pool_of_[from];
    return pool >= 0 && !pools_[pool].fixed && pools_[pool].kind == KindOf(b)
               ? pool
               : -1;
  }

  // Places buffer b: in its reuse chain's pool (ChainPool: without sharing
  // whatever it costs, as default's storage; with sharing where it keeps
  // the target), else in the pool where it costs least within the target,
  // else in a pool of its own.
  void Place(int32_t b, std::vector<Bytes>& offsets) {
    const Buffer& buffer = problem_.buffers[b];
    const size_t begin = axis_.Slot(timeline_.spans[b].begin);
    const size_t end = axis_.Slot(timeline_.spans[b].end);
    const Bytes own = AllocatorBytes(PoolBytesOf(b), block_);
    tree_.Add(begin, end, -own);  // b's own pool, until it finds another
    std::optional<Trial> best;
    if (const int32_t chain = ChainPool(b); chain >= 0) {
      best = Try(b, chain, /*unbounded=*/!shape_.share);
    }
    int tried = 0;
    const int trials =
        shape_.share && !best.has_value() ? PartitionPlanner::kTrialPools : 0;
    for (int32_t p = Newest(KindOf(b)); p >= 0 && tried < trials;
         p = pools_[p].older, ++tried) {
      std::optional<Trial> trial = Try(b, p);
      if (trial.has_value() &&
          (!best.has_value() || trial->cost < best->cost)) {
        best = trial;
      }
    }
    if (!best.has_value()) {
      tree_.Add(begin, end, own);
      OpenPool(b, /*fixed=*/false);
      offsets[b] = 0;
      return;
    }
    PoolState& pool = pools_[best->pool];
    const Bytes old_bytes = AllocatorBytes(pool.height, block_);
    const Bytes new_bytes = AllocatorBytes(best->height, block_);
    tree_.Add(pool.hull_begin, pool.hull_end, new_bytes - old_bytes);
    tree_.Add(best->begin, pool.hull_begin, new_bytes);
    tree_.Add(pool.hull_end, best->end, new_bytes);
    pool.height = best->height;
    pool.hull_begin = best->begin;
    pool.hull_end = best->end;
    pool.members.push_back(b);
    pool_of_[b] = best->pool;
    const LiveItem item{best->offset, buffer.size, buffer.live_range.end};
    pool.live.insert(std::upper_bound(pool.live.begin(), pool.live.end(), item,
                                      [](const LiveItem& x, const LiveItem& y) {
                                        return x.offset < y.offset;
                                      }),
                     item);
    offsets[b] = best->offset;
    MakeNewest(best->pool);
  }

  const Problem& problem_;
  const Shape shape_;
  const GraphTimeline& timeline_;
  const Bytes block_;
  const std::vector<int32_t> buffers_;
  const Axis axis_;
  RangeMaxTree tree_;
  Bytes target_ = 0;  // the peak with one pool per buffer
  Bytes reserved_ = 0;
  Bytes peak_ = 0;
  std::vector<PoolState> pools_;
  std::vector<int32_t> pool_of_;  // per problem buffer: its pool, or -1
  // Outputs may share pools (of outputs only): Problem::OutputsMayShare in
  // mode intermediates.
  const bool shared_outputs_;
  // Per kind (KindOf): the pool extended last, the head of its list.
  absl::flat_hash_map<int32_t, int32_t> newest_;
};

}  // namespace

PlannerCapabilities PartitionPlanner::capabilities() const {
  PlannerCapabilities capabilities;
  capabilities.honours_buffer_alignment = true;
  capabilities.minimizes_peak = true;
  capabilities.plans_pool_mode_none = true;
  return capabilities;
}

absl::Status PartitionPlanner::CanPlan(const Problem& problem) const {
  if (problem.pool_mode != PoolMode::kIntermediates &&
      problem.pool_mode != PoolMode::kNone) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.pool_mode: the pool partitioning plans pool "
                     "modes intermediates and none, not ",
                     PoolModeName(problem.pool_mode)));
  }
  if (options_.whole_graph_only && !problem.whole_graph) {
    return absl::InvalidArgumentError(
        "the request describes no memory outside the plan (events "
        "EXTERN_ALLOCATE, MULTI_OUTPUT, FREE_INPUT, or unplanned buffers)");
  }
  return Planner::CanPlan(problem);
}

absl::StatusOr<Plan> PartitionPlanner::PlanProblem(
    const Problem& problem, const PlanContext& context) const {
  if (absl::Status status = CanPlan(problem); !status.ok()) return status;
  const absl::Time start = absl::Now();
  std::optional<GraphTimeline> own;
  const GraphTimeline* timeline = context.timeline;
  if (timeline == nullptr) {
    own = TimelineOfBuffers(problem);
    timeline = &*own;
  }
  // Devices in order of their first buffer.
  std::vector<std::string> devices;
  absl::flat_hash_map<std::string, std::vector<int32_t>> buffers_of;
  for (size_t i = 0; i < problem.buffers.size(); ++i) {
    auto [it, added] = buffers_of.try_emplace(problem.buffers[i].device);
    if (added) devices.push_back(problem.buffers[i].device);
    it->second.push_back(static_cast<int32_t>(i));
  }
  const bool reserve =
      problem.reserve_segments &&
      problem.allocator_block == CachingAllocatorModel::kMinBlockSize &&
      !IsDynamic(problem);
  Plan plan;
  plan.planner = "partition";
  plan.assignments.resize(problem.buffers.size());
  std::vector<Bytes> offsets(problem.buffers.size(), 0);
  for (const std::string& device : devices) {
    const DeviceMemory* unplanned = nullptr;
    for (const DeviceMemory& memory : timeline->unplanned) {
      if (memory.device == device) unplanned = &memory;
    }
    // The candidates: pools shaped several ways (Shapes), each planned and
    // replayed through the allocator model; the lowest peak wins, then
    // (among peaks within kPeakSlack of it, reserving no more than default
    // or nearly the least) the fewest pools, then the first.
    const std::vector<int32_t>& buffers = buffers_of[device];
    std::vector<std::unique_ptr<DevicePartition>> candidates;
    std::vector<std::vector<Bytes>> candidate_offsets;
    auto plan_shape = [&](Shape shape) -> absl::Status {
      auto partition = std::make_unique<DevicePartition>(
          problem, *timeline, unplanned, buffers, shape);
      std::vector<Bytes> trial = offsets;
      if (absl::Status status = partition->Run(context, trial); !status.ok()) {
        return status;
      }
      if (absl::Status status = partition->ShareSegments(context, unplanned);
          !status.ok()) {
        return status;
      }
      candidates.push_back(std::move(partition));
      candidate_offsets.push_back(std::move(trial));
      return absl::OkStatus();
    };
    // As built so far; then, in pool mode intermediates, pools capped at
    // the largest intermediate (rounded to the allocator's 2 MiB) and at
    // twice, four and eight times that, below the largest pool uncapped;
    // then one pool per buffer.
    std::vector<Shape> shapes = {Shape{}};
    if (absl::Status status = plan_shape(shapes[0]); !status.ok()) {
      return status;
    }
    if (problem.pool_mode == PoolMode::kIntermediates) {
      Bytes largest = 1;
      for (int32_t b : buffers) {
        const Buffer& buffer = problem.buffers[b];
        if (!buffer.is_output && !buffer.size_is_data_dependent) {
          largest = std::max(largest, buffer.size);
        }
      }
      Bytes cap = AlignUp(largest, CachingAllocatorModel::kRoundLarge);
      const Bytes largest_cap = cap;
      for (int i = 0; i < kCaps && cap < candidates[0]->largest_pool();
           ++i, cap *= 2) {
        shapes.push_back(Shape{cap, true});
      }
      cap = largest_cap / 2;
      for (int i = 0; reserve && i < kReservedCaps &&
                      cap >= CachingAllocatorModel::kRoundLarge;
           ++i, cap /= 2) {
        shapes.push_back(
            Shape{AlignUp(cap, CachingAllocatorModel::kRoundLarge), true});
      }
    }
    // From an entry state (a training backward's, core/entry_state.h) the
    // forward's freed blocks are cached, and default's storages fit them
    // where a larger pool takes a new segment: pools capped at the largest
    // free block of the entry and at half and a quarter of it.
    if (problem.pool_mode == PoolMode::kIntermediates && unplanned != nullptr &&
        unplanned->start != nullptr) {
      const Bytes free = unplanned->start->LargestFree();
      for (Bytes cap = free; cap > CachingAllocatorModel::kSmallSize &&
                             cap >= free / kEntryCapDivisor;
           cap /= 2) {
        shapes.push_back(Shape{cap, true});
      }
    }
    // Default torch.compile's storages as pools, alone and as the start of
    // the sharing, where its reuse pass hands any storage on.
    bool chains = false;
    if (!timeline->storage_from.empty()) {
      for (int32_t b : buffers) chains |= timeline->storage_from[b] >= 0;
    }
    if (chains) {
      shapes.push_back(Shape{std::numeric_limits<Bytes>::max(), true, true});
      shapes.push_back(Shape{std::numeric_limits<Bytes>::max(), false, true});
    }
    shapes.push_back(Shape{std::numeric_limits<Bytes>::max(), false});
    // Outputs released together: every shape also with one pool per
    // output, so that pools of outputs win only where they keep the peak
    // and the reserved bytes the chooser below asks for (a pool of several
    // gradients may need a segment no cached block serves).
    if (problem.pool_mode == PoolMode::kIntermediates &&
        problem.OutputsMayShare()) {
      const size_t shared = shapes.size();
      for (size_t i = 0; i < shared; ++i) {
        Shape apart = shapes[i];
        apart.share_outputs = false;
        shapes.push_back(apart);
      }
    }
    for (size_t i = 1; i < shapes.size(); ++i) {
      if (absl::Status status = plan_shape(shapes[i]); !status.ok()) {
        return status;
      }
    }
    // Tightening: the tree counts each allocation as its rounded bytes,
    // while the allocator model charges a request served from a cached
    // block whose rest it does not split the whole block (up to 1 MiB
    // more; a backward's entry state has many such blocks), so a sharing
    // candidate that keeps the tree under the target can replay above
    // it. Such a candidate is planned again under a target lowered by its
    // excess over the lowest peak's slack, at most kTightenings times.
    auto lowest_of = [&] {
      Bytes lowest = std::numeric_limits<Bytes>::max();
      for (const auto& candidate : candidates) {
        lowest = std::min(lowest, candidate->peak());
      }
      return lowest;
    };
    const Bytes lowest = lowest_of();
    const Bytes goal = lowest + lowest / kPeakSlack;
    const size_t planned = candidates.size();
    for (size_t c = 0; c < planned; ++c) {
      Shape shape = shapes[c];
      Bytes peak = candidates[c]->peak();
      for (int i = 0; i < kTightenings && shape.share && peak > goal; ++i) {
        shape.target_cut += peak - goal;
        if (absl::Status status = plan_shape(shape); !status.ok()) {
          return status;
        }
        peak = candidates.back()->peak();
      }
    }
    // The candidates whose peak is within 1/kPeakSlack of the lowest; among
    // them, those whose reserved bytes are at most default torch.compile's
    // (the baseline's, replayed through the same model) or within
    // 1/kReservedSlack of the least (at least one large segment's rounding,
    // 2 MiB; a training backward's by its step: within 2 MiB of the least,
    // below); among those, the fewest pools, where a few more pools of
    // intermediates (kPoolSlack) reserve less: the least reserved bytes
    // among them (then the fewest pools, then the first).
    const Bytes lowest_peak = lowest_of();
    auto near_peak = [&](const DevicePartition& candidate) {
      return candidate.peak() - lowest_peak <= lowest_peak / kPeakSlack;
    };
    // The reserved bytes each candidate is judged by: its own replay's;
    // for a training backward (context.step), those of the step that
    // follows (core/entry_state.h NextStepReserved: the segments cached at
    // its start, then those it takes): the backward's pools decide the
    // segments the next forward finds cached, so a candidate that reserves
    // least in the backward alone may cost the step more.
    const DeviceMemory* baseline = nullptr;
    for (const DeviceMemory& memory : timeline->baseline) {
      if (memory.device == device) baseline = &memory;
    }
    const bool by_step =
        context.step != nullptr && context.wrapper_program != nullptr &&
        context.wrapper_lines != nullptr && baseline != nullptr;
    std::vector<Bytes> reserved(candidates.size());
    // Shapes often build the same pools: each distinct set of blocks is
    // replayed once.
    struct Replayed {
      std::vector<MemoryBlock> blocks;
      std::vector<int32_t> kept;
      Bytes reserved = 0;
    };
    std::vector<Replayed> replayed;
    for (size_t c = 0; c < candidates.size(); ++c) {
      reserved[c] = candidates[c]->reserved();
      if (!by_step || !near_peak(*candidates[c])) continue;
      std::vector<int32_t> kept;
      const DeviceMemory memory = candidates[c]->Memory(
          unplanned, context.step->backward_outputs, kept);
      auto same = std::find_if(
          replayed.begin(), replayed.end(), [&](const auto& earlier) {
            return earlier.blocks == memory.blocks && earlier.kept == kept;
          });
      if (same != replayed.end()) {
        reserved[c] = same->reserved;
        continue;
      }
      if (absl::Status status = context.Check(); !status.ok()) return status;
      reserved[c] =
          NextStepReserved(*context.step, problem, context.wrapper_program,
                           context.wrapper_lines, memory, kept)
              .total();
      replayed.push_back(Replayed{memory.blocks, kept, reserved[c]});
    }
    // Segment reservations (Problem::reserve_segments; never for a training
    // backward judged by its step, nor under dynamic shapes, where one size
    // cannot stay under every shape's peak): per candidate within the peak's
    // slack, the reservation (ReservationSizes) under which the allocator
    // model reserves least, where that keeps the candidate's peak, saves
    // more than the chooser's reserved slack (1/kReservedSlack, at least
    // 2 MiB: the model's own error on reserved bytes, docs/gpu.md), and
    // reserves no more over kLoopCalls calls in a loop (LoopBlocks: the
    // previous call's outputs, split from the reserved segment, still held
    // as the next call reserves) than the candidate without it, nor than
    // default torch.compile's storages (the baseline) in that loop; the
    // candidate is then judged by those reserved bytes. In a private pool
    // (Problem::private_pool), whose start the model does not know (its
    // cached blocks are the default pool's, and the pool holds what the
    // step's graphs left), the reservation is the candidate's peak rounded
    // down to 2 MiB, unjudged: the step's graphs split it and the next
    // step finds it free where the caller holds none of the forward's
    // outputs into it (docs/gpu.md "Runs R3, T1, U7, W6 and V13 to V15").
    std::vector<Bytes> reservation(candidates.size(), 0);
    if (reserve && !by_step && problem.private_pool) {
      for (size_t c = 0; c < candidates.size(); ++c) {
        if (!near_peak(*candidates[c])) continue;
        const std::vector<Bytes> sizes =
            ReservationSizes(candidates[c]->peak());
        if (sizes.empty()) continue;
        if (absl::Status status = context.Check(); !status.ok()) return status;
        std::vector<int32_t> kept;
        DeviceMemory memory = candidates[c]->Memory(unplanned, {}, kept);
        memory.blocks.push_back(ReservationBlock(memory.blocks, sizes[0]));
        reserved[c] = ReplayCachingAllocator(memory).stats.reserved;
        reservation[c] = sizes[0];
      }
    } else if (reserve && !by_step) {
      Bytes baseline_loop = std::numeric_limits<Bytes>::max();
      if (baseline != nullptr) {
        baseline_loop =
            ReplayCachingAllocator(LoopBlocks(baseline->blocks, kLoopCalls),
                                   baseline->cached, baseline->start.get())
                .stats.reserved;
      }
      for (size_t c = 0; c < candidates.size(); ++c) {
        if (!near_peak(*candidates[c])) continue;
        std::vector<int32_t> kept;
        DeviceMemory memory = candidates[c]->Memory(unplanned, {}, kept);
        const Bytes loop_without = std::min(
            baseline_loop,
            ReplayCachingAllocator(LoopBlocks(memory.blocks, kLoopCalls),
                                   memory.cached, memory.start.get())
                .stats.reserved);
        const Bytes without = reserved[c];
        const Bytes saving = ReservedSlack(without);
        for (const Bytes size : ReservationSizes(candidates[c]->peak())) {
          if (absl::Status status = context.Check(); !status.ok()) {
            return status;
          }
          memory.blocks.push_back(ReservationBlock(memory.blocks, size));
          const CachingAllocatorStats stats =
              ReplayCachingAllocator(memory).stats;
          if (stats.reserved + saving < without &&
              stats.reserved < reserved[c] &&
              stats.peak_allocated <= candidates[c]->peak() &&
              ReplayCachingAllocator(LoopBlocks(memory.blocks, kLoopCalls),
                                     memory.cached, memory.start.get())
                      .stats.reserved <= loop_without) {
            reserved[c] = stats.reserved;
            reservation[c] = size;
          }
          memory.blocks.pop_back();
        }
      }
    }
    Bytes least_reserved = std::numeric_limits<Bytes>::max();
    for (size_t c = 0; c < candidates.size(); ++c) {
      if (near_peak(*candidates[c])) {
        least_reserved = std::min(least_reserved, reserved[c]);
      }
    }
    // A step's reserved bytes are mostly its forward's and its start's,
    // which a backward's candidates move little: there a slack of the
    // total (or default's step as a ceiling) would let the backward's own
    // segments grow by a third (efficientnet_b0's: 134 MiB against 102 in
    // a 1 GiB step), so a step's candidates may reserve one large
    // segment's rounding more than the least, no more.
    Bytes allowed_reserved =
        least_reserved + (by_step ? CachingAllocatorModel::kRoundLarge
                                  : ReservedSlack(least_reserved));
    if (baseline != nullptr && !by_step) {
      allowed_reserved = std::max(
          allowed_reserved, ReplayCachingAllocator(*baseline).stats.reserved);
    }
    // That can leave a training backward only plans of more pools than
    // default torch.compile makes allocations for the same buffers (its
    // storages: the reuse chains as pools, Shape::reuse_chains without
    // sharing) a few MiB under plans of far fewer pools (swin_t's backward:
    // one pool per buffer, 471 pools for default's 240, 8 MiB under 46
    // pools in a 1.9 GB step). Pools are there to replace allocations, so
    // there the candidates are those with at most the storages' pools that
    // reserve in the step no more than the storages do.
    size_t pool_limit = std::numeric_limits<size_t>::max();
    auto eligible = [&](size_t c) {
      return near_peak(*candidates[c]) && reserved[c] <= allowed_reserved &&
             candidates[c]->pools().size() <= pool_limit;
    };
    // The storages' pools (default's allocations of the same buffers).
    size_t storages_pools = std::numeric_limits<size_t>::max();
    if (by_step) {
      Bytes storages_reserved = 0;
      for (size_t c = 0; c < shapes.size(); ++c) {
        if (shapes[c].reuse_chains && !shapes[c].share &&
            near_peak(*candidates[c]) &&
            candidates[c]->pools().size() < storages_pools) {
          storages_pools = candidates[c]->pools().size();
          storages_reserved = reserved[c];
        }
      }
      bool few_enough = false;
      for (size_t c = 0; c < candidates.size(); ++c) {
        few_enough |=
            eligible(c) && candidates[c]->pools().size() <= storages_pools;
      }
      if (!few_enough) {
        pool_limit = storages_pools;
        allowed_reserved = storages_reserved;
      }
    }
    size_t fewest = std::numeric_limits<size_t>::max();
    size_t slack = 0;
    for (size_t c = 0; c < candidates.size(); ++c) {
      if (eligible(c) && candidates[c]->pools().size() < fewest) {
        fewest = candidates[c]->pools().size();
        slack = candidates[c]->intermediate_pools() / kPoolSlack;
      }
    }
    const size_t few = fewest + slack;
    size_t chosen = candidates.size();
    for (size_t c = 0; c < candidates.size(); ++c) {
      if (!eligible(c) || candidates[c]->pools().size() > few) continue;
      if (chosen == candidates.size() ||
          std::make_pair(reserved[c], candidates[c]->pools().size()) <
              std::make_pair(reserved[chosen],
                             candidates[chosen]->pools().size())) {
        chosen = c;
      }
    }
    // With segment reservations (whose reserved bytes the model predicts
    // as the GPU measures them, docs/gpu.md), a few more pools for fewer
    // reserved bytes: the least reserved among the candidates of at most
    // kReservedPoolFactor times the fewest pools, where it saves more than
    // the model's error.
    if (reserve && !by_step) {
      size_t thrifty = chosen;
      for (size_t c = 0; c < candidates.size(); ++c) {
        if (eligible(c) &&
            candidates[c]->pools().size() <= kReservedPoolFactor * fewest &&
            std::make_pair(reserved[c], candidates[c]->pools().size()) <
                std::make_pair(reserved[thrifty],
                               candidates[thrifty]->pools().size())) {
          thrifty = c;
        }
      }
      if (reserved[thrifty] + ReservedSlack(reserved[chosen]) <
          reserved[chosen]) {
        chosen = thrifty;
      }
    }
    // In a private pool, whose step the default pool's next step above
    // does not model: the candidate whose step there reserves least, of at
    // most kReservedPoolFactor times the fewest pools (as segment
    // reservations' choice above) or no more than default's storages (so
    // no more allocator calls than default torch.compile makes for the
    // same buffers), where it saves at least one large segment's rounding
    // (2 MiB) per pool it has beyond the chosen (planner version 21; at
    // least one); and the forward's reservation sized for its step
    // (Plan::forward_reservations). On the H100 capture of the hook as it
    // ships, swin_t's backward: 16 pools for 15, its step 1656 MiB for
    // 1690 in the model; resnet18's and vit_b_16's keep their pools and
    // size their forward's reservation. The slowest graph there plans in
    // about 41 ms (convnext_tiny's backward, docs/gpu.md).
    bool private_step = false;
    if (by_step && problem.private_pool) {
      for (const SegmentReservation& reservation :
           context.step->forward_plan.reservations) {
        if (reservation.device == device) private_step = true;
      }
    }
    if (private_step) {
      const size_t most_pools =
          std::max(kReservedPoolFactor * fewest,
                   storages_pools == std::numeric_limits<size_t>::max()
                       ? size_t{0}
                       : storages_pools);
      // Each distinct set of blocks stepped once (O(10) replays each).
      std::vector<std::pair<std::vector<MemoryBlock>, StepReservationChoice>>
          stepped;
      auto step_of = [&](size_t c) -> absl::StatusOr<StepReservationChoice> {
        std::vector<int32_t> kept;
        const DeviceMemory memory = candidates[c]->Memory(
            unplanned, context.step->backward_outputs, kept);
        for (const auto& [blocks, choice] : stepped) {
          if (blocks == memory.blocks) return choice;
        }
        if (absl::Status status = context.Check(); !status.ok()) return status;
        const StepReservationChoice choice =
            StepReservation(*context.step, problem, context.wrapper_program,
                            context.wrapper_lines, memory);
        stepped.emplace_back(memory.blocks, choice);
        return choice;
      };
      absl::StatusOr<StepReservationChoice> best = step_of(chosen);
      if (!best.ok()) return best.status();
      const Bytes chosen_reserved = best->reserved;
      // Where the candidates near the backward's own lowest peak keep more
      // than kReservedPoolFactor times the pools of the fewest-pool
      // candidate, the step's peak allocated, not the backward's own above
      // its entry, is what a candidate may not raise: a backward whose peak
      // lies under its forward's (its saved activations freed as it goes)
      // can hold a few pools longer at no cost to the step. There the
      // candidates beyond the slack with fewer pools than the chosen are
      // stepped too, the lowest-peak one of each pool count (resnet50's
      // backward on the H100 capture: 8 pools for 269, its step 14 MiB
      // less reserved, its peak 0.2% higher).
      size_t fewest_any = std::numeric_limits<size_t>::max();
      for (const auto& candidate : candidates) {
        fewest_any = std::min(fewest_any, candidate->pools().size());
      }
      // Beyond the slack, one candidate per pool count.
      std::vector<bool> stepped_too(candidates.size(), false);
      if (candidates[chosen]->pools().size() >
          kReservedPoolFactor * fewest_any) {
        std::map<size_t, size_t> lowest_of_count;  // pools -> candidate
        for (size_t c = 0; c < candidates.size(); ++c) {
          const size_t pools = candidates[c]->pools().size();
          if (near_peak(*candidates[c]) ||
              pools >= candidates[chosen]->pools().size()) {
            continue;
          }
          auto [it, first] = lowest_of_count.try_emplace(pools, c);
          if (!first &&
              candidates[c]->peak() < candidates[it->second]->peak()) {
            it->second = c;
          }
        }
        for (const auto& [pools, c] : lowest_of_count) stepped_too[c] = true;
      }
      const Bytes step_peak_limit =
          best->peak_allocated + best->peak_allocated / kPeakSlack;
      size_t thrifty = chosen;
      for (size_t c = 0; c < candidates.size(); ++c) {
        if (c == chosen || candidates[c]->pools().size() > most_pools ||
            (!near_peak(*candidates[c]) && !stepped_too[c])) {
          continue;
        }
        absl::StatusOr<StepReservationChoice> choice = step_of(c);
        if (!choice.ok()) return choice.status();
        if (stepped_too[c] && choice->peak_allocated > step_peak_limit) {
          continue;
        }
        // It must save one large segment's rounding (2 MiB) per pool it
        // has beyond the chosen, at least one: an allocator call per 2 MiB
        // of the step's reserved bytes, the model's error on one
        // allocation (densenet121's backward from a forward with release
        // groups: 249 pools for 8 would save 2 MiB of a 2 GB step).
        const size_t more =
            candidates[c]->pools().size() > candidates[chosen]->pools().size()
                ? candidates[c]->pools().size() -
                      candidates[chosen]->pools().size()
                : 0;
        if (choice->reserved +
                CachingAllocatorModel::kRoundLarge *
                    static_cast<Bytes>(std::max<size_t>(1, more)) >
            chosen_reserved) {
          continue;
        }
        if (std::make_pair(choice->reserved, candidates[c]->pools().size()) <
            std::make_pair(best->reserved,
                           candidates[thrifty]->pools().size())) {
          thrifty = c;
          best = *choice;
        }
      }
      chosen = thrifty;
      if (best->reservation > 0) {
        plan.forward_reservations.push_back(
            SegmentReservation{device, best->reservation});
      }
    }
    offsets = std::move(candidate_offsets[chosen]);
    const DevicePartition& partition = *candidates[chosen];
    if (reservation[chosen] > 0) {
      plan.reservations.push_back(
          SegmentReservation{device, reservation[chosen]});
    }
    // Pools by their first allocation (then as opened).
    const std::vector<PoolState>& pools = partition.pools();
    std::vector<size_t> order(pools.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return pools[a].hull_begin < pools[b].hull_begin;
    });
    for (size_t p : order) {
      const auto index = static_cast<int32_t>(plan.pools.size());
      Bytes size = pools[p].padded;
      for (int32_t b : pools[p].members) {
        plan.assignments[b] = Assignment{index, offsets[b]};
        size = std::max(size, offsets[b] + problem.buffers[b].size);
      }
      plan.pools.emplace_back(absl::StrCat("pool", index), device, size);
    }
  }
  plan.runs.push_back(
      PlannerRun{"partition", absl::StrJoin(devices, ","), start, absl::Now()});
  return WithinCapacity(problem, context, std::move(plan));
}

}  // namespace memplan
