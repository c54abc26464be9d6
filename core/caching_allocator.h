// A model of PyTorch's CUDA caching allocator, for the reserved bytes a
// graph's allocations cost (c10/cuda/CUDACachingAllocator.cpp,
// DeviceCachingAllocator with the default configuration: one stream, no
// max_split_size, no expandable segments, no garbage collection, cached
// blocks never released while the graph runs).
//
// The allocated peak (core/graph_memory.h) counts bytes in use; the GPU's
// reserved peak counts the segments the allocator took with cudaMalloc,
// which it keeps cached. A request is rounded up to 512 bytes and served
// from the smallest free cached block of its pool that fits (best fit;
// requests of at most 1 MiB from the small pool, larger ones from the large
// pool), split when the rest is worth keeping; with no block that fits, the
// allocator takes a new segment:
//
//   request (rounded)      segment taken      the rest split off when
//   <= 1 MiB               2 MiB              >= 512 bytes
//   (1 MiB, 10 MiB)        20 MiB             > 1 MiB
//   >= 10 MiB              rounded to 2 MiB   > 1 MiB
//
// A freed block merges with free neighbours of its segment. So pools of
// different sizes that live at different times can cost far more reserved
// than allocated bytes: a 50 MiB pool freed before a 62 MiB one is created
// leaves a 50 MiB cached segment the 62 MiB one cannot use:
//
//   reserved ^         +---------+
//            |         |  62 MiB |  new segment: 50 + 62 reserved
//            | +-----+ |         |  for 62 allocated at once
//            | |50MiB| |         |
//            +-+-----+-+---------+---> position
//
// The model starts from the free blocks cached at the graph's entry that
// the request names (Problem::cached_blocks; none: an empty cache), each a
// free block of a segment of its own (the allocator merges free
// neighbours, so a cached free block lies between blocks in use or a
// segment's ends, and never merges); they cost no reserved bytes. A graph
// input the graph frees is modelled as a block of its own rounded size in
// a segment of exactly that size, allocated before the entry (so its freed
// bytes are reusable, but never more than its own).
#ifndef MEMPLAN_CORE_CACHING_ALLOCATOR_H_
#define MEMPLAN_CORE_CACHING_ALLOCATOR_H_

#include <cstdint>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "core/graph_memory.h"
#include "core/types.h"

namespace memplan {

// The allocator's counters, in bytes above the model's start (allocated
// may go below 0 where inputs allocated before the start are freed).
struct CachingAllocatorStats {
  Bytes allocated = 0;       // bytes of the blocks in use, as split
  Bytes peak_allocated = 0;  // the most of `allocated`, never below 0
  Bytes reserved = 0;        // bytes of the segments taken (never released)
  int64_t segments = 0;      // cudaMalloc calls
  // Malloc calls: allocations requested (allocation.all.allocated in
  // torch.cuda.memory_stats); adopted inputs are not counted.
  int64_t allocations = 0;
};

class CachingAllocatorModel {
 public:
  static constexpr Bytes kMinBlockSize = 512;
  static constexpr Bytes kSmallSize = Bytes{1} << 20;
  static constexpr Bytes kSmallBuffer = Bytes{2} << 20;
  static constexpr Bytes kLargeBuffer = Bytes{20} << 20;
  static constexpr Bytes kMinLargeAlloc = Bytes{10} << 20;
  static constexpr Bytes kRoundLarge = Bytes{2} << 20;

  // `size` (> 0) rounded up to 512 bytes (round_size).
  static Bytes RoundSize(Bytes size);
  // The segment a request of `rounded` bytes takes when no cached block
  // fits (get_allocation_size): the table above.
  static Bytes SegmentSize(Bytes rounded);

  // A block of `size` (> 0) bytes in use before the start (a graph input),
  // in a segment of its own of its rounded size; counted in no statistic
  // until it is freed. Returns its handle.
  int32_t Adopt(Bytes size);
  // A free block of `size` (> 0, a multiple of 512) bytes cached before the
  // start, of the small pool or the large one, in a segment of its own;
  // counted in no statistic. It stands for the free part of a segment that
  // holds a live tensor (the input batch's), so EmptyCache never releases
  // it.
  void Cache(Bytes size, bool small);
  // Allocates `size` (> 0) bytes as the allocator does; returns the
  // block's handle. created_segment() says whether it took a new segment.
  int32_t Malloc(Bytes size);
  // Frees the block `handle` (in use), merging it with free neighbours.
  void Free(int32_t handle);
  // Releases every cached segment that holds no block in use, as
  // torch.cuda.empty_cache() (release_cached_blocks) does, but the cached
  // blocks' (Cache).
  void EmptyCache();
  // The handles of the blocks in use, in handle order.
  std::vector<int32_t> InUse() const;
  // The state a private pool (torch.cuda.MemPool) leaves the next training
  // step: every block freed and every segment kept (empty_cache() releases
  // none of a live pool's), but the segments of adopted blocks (graph
  // inputs, which live outside the pool); each segment cached whole
  // (Cache), in address order, statistics zero. O(b log b) for b blocks.
  CachingAllocatorModel PoolNextStep() const;
  // The bytes of the segments PoolNextStep keeps. O(b).
  Bytes PoolSegmentBytes() const;
  // Zeroes the statistics: from here on they count above the state now
  // (a backward graph's model starts from the state its forward left).
  void ResetStats() { stats_ = CachingAllocatorStats{}; }

  // The size in bytes of the block `handle` (as split).
  Bytes size(int32_t handle) const { return blocks_[handle].size; }
  // Whether the block `handle` is in use.
  bool in_use(int32_t handle) const { return blocks_[handle].in_use; }

  // The bytes of every free block of both pools: the segments cached and
  // not in use (after EmptyCache and every block freed, the reserved bytes
  // the state holds). O(f) for f free blocks.
  Bytes CachedBytes() const;
  // The sizes in bytes of the free blocks of the small pool (first) and of
  // the large pool, each in address order (best fit takes the lowest
  // address of equal sizes, so two states with the same sequences serve
  // every request alike): after EmptyCache and every block freed, the
  // cached segments. O(f log f).
  std::pair<std::vector<Bytes>, std::vector<Bytes>> FreeBlockSizes() const;
  // The size in bytes of the largest free block of the large pool (0: none).
  Bytes LargestFree() const {
    return large_.empty() ? 0 : std::get<0>(*large_.rbegin());
  }

  bool created_segment() const { return created_segment_; }
  const CachingAllocatorStats& stats() const { return stats_; }

 private:
  struct Block {
    Bytes address = 0;
    Bytes size = 0;
    int32_t prev = -1;  // neighbours in the segment
    int32_t next = -1;
    bool small = false;
    bool in_use = false;
    // Of a cached block's segment (Cache): free space of a segment that
    // holds a live tensor, which EmptyCache does not release.
    bool pinned = false;
    // Of an adopted block's segment (Adopt): memory outside the model's
    // pool, given to it when freed.
    bool adopted = false;
  };
  // Free blocks of a pool by (size, address), as the allocator's
  // BlockComparatorSize for one stream.
  using FreeSet = std::set<std::tuple<Bytes, Bytes, int32_t>>;

  FreeSet& PoolOf(const Block& block) { return block.small ? small_ : large_; }
  void Insert(int32_t b);
  void Erase(int32_t b);
  int32_t NewSegment(Bytes size, bool small);
  // Calls f(size, small) for each segment but the adopted ones, in address
  // order.
  template <typename F>
  void ForEachPoolSegment(F f) const;

  std::vector<Block> blocks_;
  FreeSet small_;
  FreeSet large_;
  Bytes next_address_ = 0;
  bool created_segment_ = false;
  CachingAllocatorStats stats_;
};

// What replaying a device's blocks through the model gives.
struct AllocatorReplay {
  CachingAllocatorStats stats;
  // Parallel to the blocks: whether the block's allocation took a new
  // segment (false for freed inputs and blocks that allocate nothing).
  std::vector<bool> created_segment;
  // Parallel to the blocks: the model's handle of the block (-1 for a
  // block that allocates nothing).
  std::vector<int32_t> handles;
};

// Replays `blocks` (core/graph_memory.h's blocks of one device) through a
// CachingAllocatorModel from a cache holding `cached` (the device's free
// blocks at the entry, in order; empty: an empty cache): freed inputs
// adopted first (in order), then at each position, step by step
// (MemoryBlock::step, free_step), the frees (blocks ending there, inputs
// freed there) before the allocations, each group in the blocks' order.
// Blocks of size 0 or with an empty range allocate nothing. O(k log k)
// for k blocks and cached blocks.
//
// `start` (not null): the model starts from that state instead of an empty
// one (a training backward's: what its forward left, core/entry_state.h),
// its statistics counting from there, the cached blocks added to it; a
// freed input with a start_block frees that block of the start (its bytes
// as the start holds them) instead of a block of its own. `end` (not
// null): receives the model's state after the last block.
AllocatorReplay ReplayCachingAllocator(
    const std::vector<MemoryBlock>& blocks,
    const std::vector<CachedBlock>& cached = {},
    const CachingAllocatorModel* start = nullptr,
    CachingAllocatorModel* end = nullptr);

// ReplayCachingAllocator of a device's blocks, cached blocks and start.
AllocatorReplay ReplayCachingAllocator(const DeviceMemory& memory);

}  // namespace memplan

#endif  // MEMPLAN_CORE_CACHING_ALLOCATOR_H_
