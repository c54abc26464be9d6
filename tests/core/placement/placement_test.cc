#include "core/placement/placement.h"

#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/placement/random_placement.h"

namespace memplan {
namespace {

using ::testing::HasSubstr;

Placement At(const PlacementProblem& problem, std::vector<Bytes> offsets) {
  Placement placement;
  placement.offsets = std::move(offsets);
  placement.height = PlacementHeight(problem, placement.offsets);
  return placement;
}

void ExpectInternal(const PlacementProblem& problem, const Placement& placement,
                    const std::string& message) {
  const absl::Status status = ValidatePlacement(problem, placement);
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal) << status;
  EXPECT_EQ(status.message(), message);
}

//   offset ^
//      256 |       +-----------+
//          |       |    i2     |    i0 and i1 share bytes [0,128): their
//      128 | +-----+--+--------+    ranges [0,3) and [3,6) touch. i2
//          | |  i0    |  i1    |    [2,6) sits above both.
//        0 | +--------+--------+
//          +-+-----+--+--------+--> timestep
//            0     2  3        6
PlacementProblem ThreeItems() {
  PlacementProblem problem;
  problem.items = {Item(0, 3, 128), Item(3, 6, 100), Item(2, 6, 128)};
  return problem;
}

TEST(PlacementItemTest, Prints) {
  std::ostringstream os;
  os << Item(2, 9, 64, 8) << " " << Item(0, 1, 32, 1, 128);
  EXPECT_EQ(os.str(), "[2,9)+64/8 [0,1)+32/1@128");
}

TEST(PlacementHeightTest, MaxOfOffsetPlusSize) {
  const PlacementProblem problem = ThreeItems();
  EXPECT_EQ(PlacementHeight(problem, {0, 0, 128}), 256);
  EXPECT_EQ(PlacementHeight(problem, {0, 300, 128}), 400);
  EXPECT_EQ(PlacementHeight(PlacementProblem(), {}), 0);
}

TEST(ValidatePlacementTest, AcceptsTouchingRangesSharingBytes) {
  const PlacementProblem problem = ThreeItems();
  EXPECT_TRUE(ValidatePlacement(problem, At(problem, {0, 0, 128})).ok());
}

TEST(ValidatePlacementTest, AcceptsEmptyProblem) {
  EXPECT_TRUE(ValidatePlacement(PlacementProblem(), Placement()).ok());
}

TEST(ValidatePlacementTest, NamesOverlappingItems) {
  const PlacementProblem problem = ThreeItems();
  ExpectInternal(problem, At(problem, {0, 0, 64}),
                 "items[0] and items[2] overlap: [0,3)@0+128 vs [2,6)@64+128");
}

TEST(ValidatePlacementTest, FindsOverlapWithNeighbourAbove) {
  //   i1 [4,5)@160+32 lies inside i0 [2,9)@128+64, entering after it.
  PlacementProblem problem;
  problem.items = {Item(0, 1, 8), Item(0, 1, 8), Item(0, 1, 8), Item(2, 9, 64),
                   Item(0, 1, 8), Item(0, 1, 8), Item(0, 1, 8), Item(4, 5, 32)};
  ExpectInternal(problem, At(problem, {0, 8, 16, 128, 24, 32, 40, 160}),
                 "items[3] and items[7] overlap: [2,9)@128+64 vs [4,5)@160+32");
  ExpectInternal(problem, At(problem, {0, 8, 16, 128, 24, 32, 40, 100}),
                 "items[3] and items[7] overlap: [2,9)@128+64 vs [4,5)@100+32");
}

TEST(ValidatePlacementTest, FindsOverlapAtSameOffset) {
  PlacementProblem problem;
  problem.items = {Item(0, 4, 16), Item(1, 2, 16)};
  ExpectInternal(problem, At(problem, {32, 32}),
                 "items[0] and items[1] overlap: [0,4)@32+16 vs [1,2)@32+16");
}

TEST(ValidatePlacementTest, FindsOverlapBehindNonConflictingNeighbours) {
  // i2 enters between i0 (below, disjoint) and i1 (above, overlapping).
  PlacementProblem problem;
  problem.items = {Item(0, 10, 10), Item(0, 10, 10), Item(5, 6, 15)};
  ExpectInternal(problem, At(problem, {0, 20, 10}),
                 "items[1] and items[2] overlap: [0,10)@20+10 vs [5,6)@10+15");
}

TEST(ValidatePlacementTest, ZeroSizeAndEmptyRangesNeverConflict) {
  PlacementProblem problem;
  problem.items = {Item(0, 10, 100), Item(2, 5, 0), Item(3, 3, 50)};
  EXPECT_TRUE(ValidatePlacement(problem, At(problem, {0, 50, 20})).ok());
}

TEST(ValidatePlacementTest, RejectsWrongOffsetCount) {
  const PlacementProblem problem = ThreeItems();
  Placement placement = At(problem, {0, 0, 128});
  placement.offsets.pop_back();
  ExpectInternal(problem, placement, "placement has 2 offsets for 3 items");
}

TEST(ValidatePlacementTest, RejectsNegativeOffset) {
  const PlacementProblem problem = ThreeItems();
  ExpectInternal(problem, At(problem, {0, -64, 128}),
                 "items[1]: offset -64 is negative");
}

TEST(ValidatePlacementTest, RejectsUnalignedOffset) {
  PlacementProblem problem;
  problem.items = {Item(0, 1, 10, 64)};
  ExpectInternal(problem, At(problem, {32}),
                 "items[0]: offset 32 is not a multiple of its alignment 64");
}

TEST(ValidatePlacementTest, RejectsMovedPinnedItem) {
  PlacementProblem problem;
  problem.items = {Item(0, 1, 10), Item(0, 1, 10, 1, 64)};
  ExpectInternal(problem, At(problem, {0, 10}),
                 "items[1]: pinned at 64 but placed at 10");
  EXPECT_TRUE(ValidatePlacement(problem, At(problem, {0, 64})).ok());
}

TEST(ValidatePlacementTest, RejectsWrongHeight) {
  const PlacementProblem problem = ThreeItems();
  Placement placement = At(problem, {0, 0, 128});
  placement.height = 300;
  ExpectInternal(problem, placement,
                 "placement height 300 but the items reach 256");
}

TEST(ValidatePlacementTest, RejectsHeightOverCapacity) {
  PlacementProblem problem = ThreeItems();
  problem.capacity = 200;
  ExpectInternal(problem, At(problem, {0, 0, 128}),
                 "height 256 exceeds the capacity 200 by 56");
  problem.capacity = 256;
  EXPECT_TRUE(ValidatePlacement(problem, At(problem, {0, 0, 128})).ok());
}

TEST(ValidatePlacementTest, RejectsOverflowingOffset) {
  PlacementProblem problem;
  problem.items = {Item(0, 1, 10)};
  Placement placement;
  placement.offsets = {std::numeric_limits<Bytes>::max() - 5};
  EXPECT_THAT(ValidatePlacement(problem, placement).message(),
              HasSubstr("overflows"));
}

TEST(PlacementLowerBoundTest, EndsBeforeBeginsAtEqualTimes) {
  // i0 and i1 touch at 3: 228 would count them together.
  EXPECT_EQ(PlacementLowerBound(ThreeItems()), 256);
  PlacementProblem problem;
  problem.items = {Item(0, 3, 128), Item(3, 6, 100)};
  EXPECT_EQ(PlacementLowerBound(problem), 128);
}

TEST(PlacementLowerBoundTest, IgnoresEmptyRanges) {
  PlacementProblem problem;
  problem.items = {Item(0, 4, 10), Item(2, 2, 1000), Item(1, 3, 5),
                   Item(2, 3, 0)};
  EXPECT_EQ(PlacementLowerBound(problem), 15);
  EXPECT_EQ(PlacementLowerBound(PlacementProblem()), 0);
}

// Dense times are summed in a table, sparse ones sorted: scaling every
// time by a million (and shifting it below zero) moves a problem to the
// second path and keeps its bound.
TEST(PlacementLowerBoundTest, SparseTimesGiveTheDenseBound) {
  int dense_count = 0;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    const PlacementProblem dense =
        RandomPlacementProblem(seed, VariedPlacementOptions(seed));
    dense_count += FindSpatialTimes(dense).dense() ? 1 : 0;
    PlacementProblem sparse = dense;
    for (PlacementItem& item : sparse.items) {
      item.live_range.begin = item.live_range.begin * 1'000'000 - 7'000'000;
      item.live_range.end = item.live_range.end * 1'000'000 - 7'000'000;
    }
    EXPECT_FALSE(FindSpatialTimes(sparse).dense());
    EXPECT_EQ(PlacementLowerBound(sparse), PlacementLowerBound(dense))
        << "seed " << seed;
  }
  EXPECT_GT(dense_count, 100);  // both paths ran
}

TEST(SpatialTimesTest, SpansTheItemsThatOccupyBytes) {
  PlacementProblem problem;
  problem.items = {Item(5, 9, 10), Item(-3, -3, 7), Item(2, 40, 0),
                   Item(7, 12, 1)};
  const SpatialTimes times = FindSpatialTimes(problem);
  EXPECT_EQ(times.lo, 5);
  EXPECT_EQ(times.hi, 12);
  EXPECT_EQ(times.ends, 4u);
  EXPECT_EQ(times.span(), 8u);
  EXPECT_TRUE(times.dense());
  EXPECT_EQ(times.at(7), 2u);
  EXPECT_EQ(FindSpatialTimes(PlacementProblem()).span(), 0u);
  EXPECT_FALSE(FindSpatialTimes(PlacementProblem()).dense());
}

}  // namespace
}  // namespace memplan
