#include "core/live_ranges.h"

#include <vector>

#include "gtest/gtest.h"
#include "tests/core/random_problems.h"

namespace memplan {
namespace {

TEST(LiveRangesTest, SortsAndJoinsOverlappingAndTouchingRanges) {
  LiveRanges ranges({{7, 9}, {0, 3}, {3, 5}, {11, 11}, {2, 4}});
  EXPECT_EQ(ranges.ranges(), (LiveRanges::Storage{{0, 5}, {7, 9}, {11, 11}}));
  EXPECT_EQ(ranges.begin(), 0);
  EXPECT_EQ(ranges.end(), 11);
}

TEST(LiveRangesTest, TouchingRangesDoNotOverlap) {
  // [0,3) ends where [3,6) begins: they may share bytes.
  EXPECT_FALSE(LiveRanges({{0, 3}}).Overlaps(LiveRanges({{3, 6}})));
  EXPECT_FALSE(LiveRanges({{3, 6}}).Overlaps(LiveRanges({{0, 3}})));
  EXPECT_TRUE(LiveRanges({{0, 4}}).Overlaps(LiveRanges({{3, 6}})));
}

TEST(LiveRangesTest, OverlapOfEmptyRangesIsAsInductor) {
  // Inductor's walk is not symmetric when a range is empty.
  EXPECT_TRUE(LiveRanges({{3, 5}}).Overlaps(LiveRanges({{3, 3}})));
  EXPECT_FALSE(LiveRanges({{3, 3}}).Overlaps(LiveRanges({{3, 5}})));
  // An empty range strictly inside another overlaps from both sides.
  EXPECT_TRUE(LiveRanges({{4, 4}}).Overlaps(LiveRanges({{3, 5}})));
  EXPECT_TRUE(LiveRanges({{3, 5}}).Overlaps(LiveRanges({{4, 4}})));
  EXPECT_FALSE(LiveRanges().Overlaps(LiveRanges({{0, 9}})));
}

TEST(LiveRangesTest, InterleavedSetsOverlapOnlyWhenTheyMeet) {
  LiveRanges odd({{1, 2}, {5, 6}, {9, 10}});
  EXPECT_FALSE(odd.Overlaps(LiveRanges({{2, 5}, {6, 9}, {10, 12}})));
  EXPECT_TRUE(odd.Overlaps(LiveRanges({{2, 5}, {6, 10}})));
}

std::vector<LiveRange> RandomRanges(SplitMix64& rng, int count) {
  std::vector<LiveRange> ranges;
  for (int i = 0; i < count; ++i) {
    Timestep begin = rng.Uniform(0, 30);
    ranges.push_back({begin, begin + rng.Uniform(0, 4)});
  }
  return ranges;
}

TEST(LiveRangesTest, SingleRangeOverlapEqualsTheGeneralWalk) {
  SplitMix64 rng(7);
  for (int trial = 0; trial < 20000; ++trial) {
    LiveRanges set(RandomRanges(rng, static_cast<int>(rng.Uniform(0, 6))));
    LiveRange range = RandomRanges(rng, 1)[0];
    ASSERT_EQ(set.Overlaps(range), set.Overlaps(LiveRanges({range})))
        << set << " vs " << range;
  }
}

TEST(LiveRangesTest, OverlapOfAUnionIsOverlapOfOneOfItsParts) {
  // What lets a TemporalSplit test its children's merged ranges.
  SplitMix64 rng(8);
  for (int trial = 0; trial < 20000; ++trial) {
    std::vector<LiveRange> parts =
        RandomRanges(rng, static_cast<int>(rng.Uniform(1, 6)));
    LiveRange range = RandomRanges(rng, 1)[0];
    bool any = false;
    for (const LiveRange& part : parts) {
      any |= LiveRanges({part}).Overlaps(range);
    }
    ASSERT_EQ(LiveRanges(parts).Overlaps(range), any) << range;
  }
}

TEST(LiveRangesTest, AddEqualsRebuilding) {
  SplitMix64 rng(9);
  for (int trial = 0; trial < 20000; ++trial) {
    std::vector<LiveRange> ranges =
        RandomRanges(rng, static_cast<int>(rng.Uniform(0, 6)));
    LiveRanges incremental(ranges);
    LiveRange added = RandomRanges(rng, 1)[0];
    incremental.Add(added);
    ranges.push_back(added);
    ASSERT_EQ(incremental, LiveRanges(ranges)) << added;
  }
}

}  // namespace
}  // namespace memplan
