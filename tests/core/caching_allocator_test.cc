// The caching-allocator model: size classes, best fit, splitting, merging,
// and replays of whole-graph blocks.
#include "core/caching_allocator.h"

#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace memplan {
namespace {

constexpr Bytes kMiB = Bytes{1} << 20;

TEST(CachingAllocatorModelTest, SegmentSizesFollowTheSizeClasses) {
  EXPECT_EQ(CachingAllocatorModel::RoundSize(1), 512);
  EXPECT_EQ(CachingAllocatorModel::RoundSize(513), 1024);
  EXPECT_EQ(CachingAllocatorModel::SegmentSize(512), 2 * kMiB);
  EXPECT_EQ(CachingAllocatorModel::SegmentSize(kMiB), 2 * kMiB);
  EXPECT_EQ(CachingAllocatorModel::SegmentSize(kMiB + 512), 20 * kMiB);
  EXPECT_EQ(CachingAllocatorModel::SegmentSize(10 * kMiB - 512), 20 * kMiB);
  EXPECT_EQ(CachingAllocatorModel::SegmentSize(10 * kMiB), 10 * kMiB);
  EXPECT_EQ(CachingAllocatorModel::SegmentSize(11 * kMiB), 12 * kMiB);
}

TEST(CachingAllocatorModelTest, SmallRequestsShareATwoMiBSegment) {
  CachingAllocatorModel model;
  const int32_t a = model.Malloc(1000);  // 1024 bytes of a new 2 MiB segment
  EXPECT_TRUE(model.created_segment());
  model.Malloc(3000);  // 3072 bytes split from the rest
  EXPECT_FALSE(model.created_segment());
  EXPECT_EQ(model.stats().allocated, 1024 + 3072);
  EXPECT_EQ(model.stats().reserved, 2 * kMiB);
  model.Free(a);
  EXPECT_EQ(model.stats().allocated, 3072);
  EXPECT_EQ(model.stats().peak_allocated, 1024 + 3072);
  EXPECT_EQ(model.stats().segments, 1);
}

TEST(CachingAllocatorModelTest, MidSizedRequestsShareATwentyMiBSegment) {
  CachingAllocatorModel model;
  model.Malloc(3 * kMiB);
  model.Malloc(5 * kMiB);
  model.Malloc(11 * kMiB);  // 12 MiB left: fits, rest 1 MiB stays with it
  EXPECT_FALSE(model.created_segment());
  // The rest (1 MiB) was not split off: the block counts 12 MiB allocated.
  EXPECT_EQ(model.stats().allocated, 20 * kMiB);
  EXPECT_EQ(model.stats().reserved, 20 * kMiB);
  model.Malloc(2 * kMiB);  // nothing free: a new 20 MiB segment
  EXPECT_TRUE(model.created_segment());
  EXPECT_EQ(model.stats().reserved, 40 * kMiB);
}

// CachedBytes: the free blocks of both pools, what empty_cache() leaves
// cached once every block is freed.
TEST(CachingAllocatorModelTest, CachedBytesAreTheFreeBlocksOfBothPools) {
  CachingAllocatorModel model;
  EXPECT_EQ(model.CachedBytes(), 0);
  const int32_t small = model.Malloc(1000);
  const int32_t mid = model.Malloc(3 * kMiB);
  const int32_t large = model.Malloc(18 * kMiB);  // a segment of its own
  // The rests: 2 MiB - 1024 bytes and 17 MiB; the 18 MiB segment has none.
  EXPECT_EQ(model.CachedBytes(), 2 * kMiB - 1024 + 17 * kMiB);
  model.Free(large);
  model.EmptyCache();  // releases the 18 MiB segment
  EXPECT_EQ(model.CachedBytes(), 2 * kMiB - 1024 + 17 * kMiB);
  model.Free(small);
  model.Free(mid);
  EXPECT_EQ(model.CachedBytes(), 22 * kMiB);
  model.EmptyCache();
  EXPECT_EQ(model.CachedBytes(), 0);
}

TEST(CachingAllocatorModelTest, EmptyCacheKeepsTheCachedBlocks) {
  // A cached block is the free part of a segment holding a live tensor:
  // empty_cache() cannot release it, whether or not a block was carved
  // from it and freed again; a segment of the graph's own is released.
  CachingAllocatorModel model;
  model.Cache(12 * kMiB, /*small=*/false);
  model.Cache(kMiB, /*small=*/true);
  model.Free(model.Malloc(11 * kMiB));  // from the cached 12 MiB, split
  model.Free(model.Malloc(30 * kMiB));  // a segment of its own
  EXPECT_EQ(model.FreeBlockSizes(),
            (std::pair<std::vector<Bytes>, std::vector<Bytes>>{
                {kMiB}, {12 * kMiB, 30 * kMiB}}));
  model.EmptyCache();
  EXPECT_EQ(
      model.FreeBlockSizes(),
      (std::pair<std::vector<Bytes>, std::vector<Bytes>>{{kMiB}, {12 * kMiB}}));
  EXPECT_EQ(model.CachedBytes(), 13 * kMiB);
  EXPECT_EQ(model.stats().reserved, 30 * kMiB);
}

TEST(CachingAllocatorModelTest, FreeBlocksAreListedInAddressOrder) {
  CachingAllocatorModel model;
  model.Cache(4 * kMiB, /*small=*/false);
  model.Cache(2 * kMiB, /*small=*/false);
  model.Cache(3 * kMiB, /*small=*/false);
  EXPECT_EQ(model.FreeBlockSizes().second,
            (std::vector<Bytes>{4 * kMiB, 2 * kMiB, 3 * kMiB}));
}

TEST(CachingAllocatorModelTest, ALargerLaterPoolCannotUseASmallerFreedOne) {
  CachingAllocatorModel model;
  model.Free(model.Malloc(50 * kMiB));
  model.Malloc(62 * kMiB);
  EXPECT_TRUE(model.created_segment());
  EXPECT_EQ(model.stats().reserved, 112 * kMiB);
  EXPECT_EQ(model.stats().peak_allocated, 62 * kMiB);
  // The other way round, the smaller one is carved from the freed larger.
  CachingAllocatorModel other;
  other.Free(other.Malloc(62 * kMiB));
  other.Malloc(50 * kMiB);
  EXPECT_FALSE(other.created_segment());
  EXPECT_EQ(other.stats().reserved, 62 * kMiB);
}

TEST(CachingAllocatorModelTest, BestFitTakesTheSmallestBlockThatFits) {
  CachingAllocatorModel model;
  const int32_t a = model.Malloc(30 * kMiB);
  const int32_t b = model.Malloc(12 * kMiB);
  const int32_t c = model.Malloc(20 * kMiB);
  model.Free(a);
  model.Free(c);
  // 12 MiB in use; 30 and 20 MiB cached. 14 MiB goes in the 20 MiB one,
  // then 25 MiB still fits the 30 MiB one.
  model.Malloc(14 * kMiB);
  EXPECT_FALSE(model.created_segment());
  model.Malloc(25 * kMiB);
  EXPECT_FALSE(model.created_segment());
  EXPECT_EQ(model.stats().reserved, 62 * kMiB);
  model.Free(b);
}

TEST(CachingAllocatorModelTest, LargestFreeIsTheLargePoolsLargestFreeBlock) {
  CachingAllocatorModel model;
  EXPECT_EQ(model.LargestFree(), 0);
  model.Cache(512 * 1024, /*small=*/true);  // the small pool's: not counted
  EXPECT_EQ(model.LargestFree(), 0);
  model.Cache(6 * kMiB, /*small=*/false);
  const int32_t a = model.Malloc(30 * kMiB);
  EXPECT_EQ(model.LargestFree(), 6 * kMiB);
  model.Malloc(2 * kMiB);  // best fit: split off the cached 6 MiB block
  EXPECT_FALSE(model.created_segment());
  EXPECT_EQ(model.LargestFree(), 4 * kMiB);
  model.Free(a);
  EXPECT_EQ(model.LargestFree(), 30 * kMiB);
}

TEST(CachingAllocatorModelTest, FreedNeighboursMergeWithinASegment) {
  CachingAllocatorModel model;
  const int32_t a = model.Malloc(2 * kMiB);  // a 20 MiB segment
  const int32_t b = model.Malloc(3 * kMiB);
  const int32_t c = model.Malloc(4 * kMiB);
  model.Free(a);
  model.Free(c);  // merges with the 11 MiB rest after it
  model.Free(b);  // merges with both: the whole segment is free again
  model.Malloc(20 * kMiB);
  EXPECT_FALSE(model.created_segment());
  EXPECT_EQ(model.stats().reserved, 20 * kMiB);
}

// PoolNextStep: a private pool's segments stay for the next step, every
// block in them free, but an adopted input's (memory outside the pool).
TEST(CachingAllocatorModelTest, APoolsNextStepKeepsItsSegmentsFree) {
  CachingAllocatorModel model;
  const int32_t input = model.Adopt(30 * kMiB);
  model.Malloc(40 * kMiB);  // a 40 MiB segment, held at the end
  const int32_t b = model.Malloc(3 * kMiB);  // a 20 MiB segment
  model.Malloc(5 * kMiB);  // split from the same 20 MiB segment
  model.Malloc(1000);      // a 2 MiB small segment
  model.Free(b);
  model.Free(input);        // freed to the model, but no segment of the pool
  model.Malloc(24 * kMiB);  // carved from the input's block
  EXPECT_EQ(model.stats().reserved, 62 * kMiB);
  EXPECT_EQ(model.PoolSegmentBytes(), 62 * kMiB);
  CachingAllocatorModel next = model.PoolNextStep();
  EXPECT_EQ(next.stats().reserved, 0);
  EXPECT_EQ(next.stats().allocated, 0);
  EXPECT_EQ(next.CachedBytes(), 62 * kMiB);
  EXPECT_EQ(next.FreeBlockSizes(),
            (std::pair<std::vector<Bytes>, std::vector<Bytes>>{
                {2 * kMiB}, {40 * kMiB, 20 * kMiB}}));
  EXPECT_EQ(next.PoolSegmentBytes(), 62 * kMiB);
  // The kept segments serve the next step's requests whole.
  next.Malloc(40 * kMiB);
  EXPECT_FALSE(next.created_segment());
  next.Malloc(30 * kMiB);  // the input's 30 MiB are not there
  EXPECT_TRUE(next.created_segment());
  // Cached segments never go on empty_cache() (a live pool keeps them).
  next.EmptyCache();
  EXPECT_EQ(next.PoolSegmentBytes(), 92 * kMiB);
}

TEST(ReplayCachingAllocatorTest, FreesComeBeforeAllocationsAtAPosition) {
  // A freed at 2, B allocated at 2: B reuses A's segment.
  const std::vector<MemoryBlock> blocks = {{0, 2, 40 * kMiB},
                                           {2, 5, 40 * kMiB}};
  const AllocatorReplay replay = ReplayCachingAllocator(blocks);
  EXPECT_EQ(replay.stats.reserved, 40 * kMiB);
  EXPECT_EQ(replay.created_segment, (std::vector<bool>{true, false}));
}

TEST(ReplayCachingAllocatorTest, AFreedInputIsReusableButNotReserved) {
  const std::vector<MemoryBlock> blocks = {
      {1, kNeverFreed, 30 * kMiB, /*freed_input=*/true},
      {2, 4, 24 * kMiB},  // carved from the input's freed block
      {3, 6, 12 * kMiB},  // 6 MiB left there: a new 12 MiB segment
      {4, 5, 0},          // nothing
      {5, 5, 8 * kMiB}};  // an empty range: nothing
  const AllocatorReplay replay = ReplayCachingAllocator(blocks);
  EXPECT_EQ(replay.stats.reserved, 12 * kMiB);
  EXPECT_EQ(replay.stats.segments, 1);
  EXPECT_EQ(replay.stats.peak_allocated, 6 * kMiB);  // 24 + 12 - 30
  EXPECT_EQ(replay.created_segment,
            (std::vector<bool>{false, false, true, false, false}));
}

TEST(ReplayCachingAllocatorTest, CachedBlocksServeRequestsWithoutSegments) {
  // The cache at the entry: a 6 MiB large-pool block and a 1 MiB
  // small-pool one, each between blocks in use.
  const std::vector<CachedBlock> cached = {{"cuda:0", 6 * kMiB, false},
                                           {"cuda:0", kMiB, true}};
  const std::vector<MemoryBlock> blocks = {
      {0, 3, 5 * kMiB},    // the 6 MiB block, its 1 MiB rest not split off
      {1, 4, 512 * 1024},  // from the small block
      {2, 4, 5 * kMiB}};   // nothing cached left: a new 20 MiB segment
  const AllocatorReplay replay = ReplayCachingAllocator(blocks, cached);
  EXPECT_EQ(replay.stats.reserved, 20 * kMiB);
  EXPECT_EQ(replay.stats.segments, 1);
  EXPECT_EQ(replay.created_segment, (std::vector<bool>{false, false, true}));
  // Counted whole, as memory_allocated counts the unsplit block.
  EXPECT_EQ(replay.stats.peak_allocated, 6 * kMiB + 512 * 1024 + 5 * kMiB);
  // From an empty cache all three share one 20 MiB segment and nothing is
  // counted beyond the requests.
  const AllocatorReplay cold = ReplayCachingAllocator(blocks);
  EXPECT_EQ(cold.stats.reserved, 20 * kMiB + 2 * kMiB);
  EXPECT_EQ(cold.stats.peak_allocated, 10 * kMiB + 512 * 1024);
}

TEST(ReplayCachingAllocatorTest, ACachedBlockServesOnlyItsOwnPool) {
  // A 2 MiB small-pool block cannot hold a 1.5 MiB (large-pool) request.
  const std::vector<CachedBlock> cached = {{"cuda:0", 2 * kMiB, true}};
  const std::vector<MemoryBlock> blocks = {{0, 1, 3 * kMiB / 2}};
  EXPECT_EQ(ReplayCachingAllocator(blocks, cached).stats.reserved, 20 * kMiB);
}

}  // namespace
}  // namespace memplan
