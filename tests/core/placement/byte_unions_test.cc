// Tests of the unions of byte intervals best fit's engine keeps
// (core/placement/byte_unions.h): AddToUnion against a plain set of bytes
// on random intervals from fixed seeds, the arena handing released blocks
// out again, FirstEndingAfter, AlignUpPow2 and ChunkIntervals.
#include "core/placement/byte_unions.h"

#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/core/random_problems.h"

namespace memplan {
namespace best_fit_internal {
namespace {

// The intervals of `byte_union`, empty for an empty union.
std::vector<ByteInterval> Intervals(const ByteUnion& byte_union) {
  if (byte_union.size == 0) return {};
  if (byte_union.size == 1) return {byte_union.span};
  return std::vector<ByteInterval>(byte_union.block,
                                   byte_union.block + byte_union.size);
}

// The maximal runs of set bytes of `bytes`: what the union must hold.
std::vector<std::pair<Bytes, Bytes>> Runs(const std::vector<bool>& bytes) {
  std::vector<std::pair<Bytes, Bytes>> runs;
  for (Bytes b = 0; b < static_cast<Bytes>(bytes.size()); ++b) {
    if (!bytes[b]) continue;
    if (!runs.empty() && runs.back().second == b) {
      ++runs.back().second;
    } else {
      runs.push_back({b, b + 1});
    }
  }
  return runs;
}

// Random intervals, short and long, into one union: after every addition
// it holds exactly the bytes added, as sorted runs that neither overlap
// nor touch, its span from the first to the last.
TEST(AddToUnionTest, HoldsExactlyTheBytesAddedAsDisjointRuns) {
  constexpr Bytes kBytes = 600;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    SplitMix64 rng(seed);
    IntervalArena arena(ChunkIntervals(16));
    ByteUnion byte_union;
    std::vector<bool> bytes(kBytes, false);
    const int64_t additions = rng.Uniform(1, 120);
    for (int64_t a = 0; a < additions; ++a) {
      const Bytes lo = rng.Uniform(0, kBytes - 2);
      const Bytes hi =
          rng.Uniform(lo + 1, std::min<Bytes>(kBytes, lo + rng.Uniform(1, 40)));
      AddToUnion(byte_union, lo, hi, arena);
      for (Bytes b = lo; b < hi; ++b) bytes[b] = true;
      std::vector<std::pair<Bytes, Bytes>> got;
      for (const ByteInterval& interval : Intervals(byte_union)) {
        got.push_back({interval.lo, interval.hi});
      }
      ASSERT_EQ(got, Runs(bytes)) << "after adding [" << lo << "," << hi << ")";
      ASSERT_EQ(byte_union.span.lo, got.front().first);
      ASSERT_EQ(byte_union.span.hi, got.back().second);
      ASSERT_EQ(byte_union.hi(), got.back().second);
      ASSERT_LE(byte_union.size, uint32_t{1} << byte_union.capacity_log2);
    }
  }
}

TEST(AddToUnionTest, TouchingIntervalsMerge) {
  IntervalArena arena(ChunkIntervals(1));
  ByteUnion byte_union;
  AddToUnion(byte_union, 0, 10, arena);
  AddToUnion(byte_union, 20, 30, arena);
  ASSERT_EQ(byte_union.size, 2u);
  AddToUnion(byte_union, 10, 20, arena);  // touches both
  ASSERT_EQ(byte_union.size, 1u);
  EXPECT_EQ(byte_union.span.lo, 0);
  EXPECT_EQ(byte_union.span.hi, 30);
  EXPECT_EQ(byte_union.block, nullptr);  // one interval needs no block
}

TEST(IntervalArenaTest, HandsOutReleasedBlocksAgain) {
  IntervalArena arena(ChunkIntervals(1));
  ByteInterval* const two = arena.Allocate(1);
  ByteInterval* const four = arena.Allocate(2);
  EXPECT_NE(two, four);
  arena.Release(two, 1);
  EXPECT_EQ(arena.Allocate(1), two);
  EXPECT_NE(arena.Allocate(1), two);  // given out again: a new block
  // A block larger than a chunk gets one of its own.
  ByteInterval* const huge = arena.Allocate(12);
  huge[(1 << 12) - 1] = ByteInterval{1, 2};
  EXPECT_EQ(huge[(1 << 12) - 1].hi, 2);
}

TEST(FirstEndingAfterTest, FindsTheFirstIntervalEndingAfterX) {
  std::vector<ByteInterval> intervals = {{0, 4}, {6, 9}, {12, 20}, {25, 26}};
  ByteInterval* const first = intervals.data();
  ByteInterval* const last = first + intervals.size();
  for (Bytes x = -1; x <= 27; ++x) {
    ByteInterval* expected = first;
    while (expected != last && expected->hi <= x) ++expected;
    EXPECT_EQ(FirstEndingAfter(first, last, x), expected) << "x " << x;
  }
  EXPECT_EQ(FirstEndingAfter(first, first, 3), first);  // no intervals
}

TEST(AlignUpPow2Test, RoundsUpToTheAlignment) {
  EXPECT_EQ(AlignUpPow2(0, 64), 0);
  EXPECT_EQ(AlignUpPow2(1, 64), 64);
  EXPECT_EQ(AlignUpPow2(64, 64), 64);
  EXPECT_EQ(AlignUpPow2(65, 64), 128);
  EXPECT_EQ(AlignUpPow2(7, 1), 7);
}

TEST(ChunkIntervalsTest, SixteenAnItemBetweenTheBounds) {
  EXPECT_EQ(ChunkIntervals(0), uint64_t{1} << 10);
  EXPECT_EQ(ChunkIntervals(64), uint64_t{1} << 10);
  EXPECT_EQ(ChunkIntervals(65), uint64_t{1} << 11);
  EXPECT_EQ(ChunkIntervals(1000), uint64_t{1} << 14);
  EXPECT_EQ(ChunkIntervals(1000000), uint64_t{1} << 20);
}

}  // namespace
}  // namespace best_fit_internal
}  // namespace memplan
