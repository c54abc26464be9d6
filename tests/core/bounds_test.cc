#include "core/bounds.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace memplan {
namespace {

Buffer MakeBuffer(const std::string& name, Bytes size, Timestep begin,
                  Timestep end, const std::string& device = "cuda:0") {
  Buffer buffer;
  buffer.names = {name};
  buffer.size = size;
  buffer.live_range = {begin, end};
  buffer.device = device;
  return buffer;
}

// bytes live
//   ^
//   |     +-----+          b0 [0,3) 100, b1 [3,6) 100: they touch at 3 and
//   | b0  | b1  |          never add up, so the bound is 100.
//   +-----+-----+-> t
//   0     3     6
TEST(LowerBoundTest, TouchingRangesDoNotAdd) {
  Problem problem;
  problem.buffers = {MakeBuffer("b0", 100, 0, 3), MakeBuffer("b1", 100, 3, 6)};
  EXPECT_EQ(LowerBound(problem), 100);
}

// timestep    0   1   2   3   4   5   6
// b0 (64)     [===============)
// b1 (32)             [===============)
// b2 (16)                 [=======)
// live bytes  64  64  96  112 48  32     -> bound 112 at t = 3
TEST(LowerBoundTest, MaximumOverTimestepsOfLiveBytes) {
  Problem problem;
  problem.buffers = {MakeBuffer("b0", 64, 0, 4), MakeBuffer("b1", 32, 2, 6),
                     MakeBuffer("b2", 16, 3, 5)};
  EXPECT_EQ(LowerBound(problem), 112);
}

TEST(LowerBoundTest, EmptyRangesAndZeroSizesContributeNothing) {
  Problem problem;
  problem.buffers = {MakeBuffer("b0", 64, 0, 4),
                     MakeBuffer("empty", 1000, 2, 2),  // [2,2): never live
                     MakeBuffer("zero", 0, 0, 4)};
  EXPECT_EQ(LowerBound(problem), 64);
}

TEST(LowerBoundTest, OneTimestepRangesAtTheSameStepAdd) {
  Problem problem;
  problem.buffers = {MakeBuffer("b0", 10, 5, 6), MakeBuffer("b1", 20, 5, 6),
                     MakeBuffer("b2", 40, 6, 7)};
  EXPECT_EQ(LowerBound(problem), 40);
}

// Device cuda:1 appears first. Per device:
//   cuda:1: a [0,2) 8, b [1,3) 8  -> 16 at t = 1
//   cuda:0: c [0,5) 100, d [5,9) 50 (touching) -> 100
TEST(LowerBoundTest, PerDeviceInOrderOfFirstAppearance) {
  Problem problem;
  problem.buffers = {
      MakeBuffer("a", 8, 0, 2, "cuda:1"), MakeBuffer("c", 100, 0, 5, "cuda:0"),
      MakeBuffer("b", 8, 1, 3, "cuda:1"), MakeBuffer("d", 50, 5, 9, "cuda:0")};
  const std::vector<DeviceBound> bounds = LowerBoundPerDevice(problem);
  ASSERT_EQ(bounds.size(), 2u);
  EXPECT_EQ(bounds[0].device, "cuda:1");
  EXPECT_EQ(bounds[0].bytes, 16);
  EXPECT_EQ(bounds[1].device, "cuda:0");
  EXPECT_EQ(bounds[1].bytes, 100);
  EXPECT_EQ(LowerBound(problem), 116);
}

TEST(LowerBoundTest, DeviceWithOnlyEmptyRangesHasBoundZero) {
  Problem problem;
  problem.buffers = {MakeBuffer("a", 8, 3, 3, "cpu"),
                     MakeBuffer("b", 8, 0, 1, "cuda:0")};
  const std::vector<DeviceBound> bounds = LowerBoundPerDevice(problem);
  ASSERT_EQ(bounds.size(), 2u);
  EXPECT_EQ(bounds[0].device, "cpu");
  EXPECT_EQ(bounds[0].bytes, 0);
  EXPECT_EQ(bounds[1].bytes, 8);
  EXPECT_TRUE(LowerBoundPerDevice(Problem{}).empty());
  EXPECT_EQ(LowerBound(Problem{}), 0);
}

TEST(TotalPoolBytesTest, SumsPoolSizes) {
  Plan plan;
  EXPECT_EQ(TotalPoolBytes(plan), 0);
  plan.pools = {{"pool0", "cuda:0", 512},
                {"pool1", "cuda:1", 64},
                {"pool2", "cuda:0", 0}};
  EXPECT_EQ(TotalPoolBytes(plan), 576);
}

// timestep      0   1   2   3   4   5   6   7   8
// pool0 (256)   [===============)                    b0 [0,2), b1 [2,4)
// pool1 (128)               [===================)    b2 [3,5), b3 [6,8)
// in use        256 256 256 384 128 128 128 128 -> peak 384 at t = 3
TEST(PeakPoolBytesTest, PoolInUseFromFirstBeginToLastEnd) {
  Problem problem;
  problem.buffers = {MakeBuffer("b0", 256, 0, 2), MakeBuffer("b1", 128, 2, 4),
                     MakeBuffer("b2", 128, 3, 5), MakeBuffer("b3", 64, 6, 8)};
  Plan plan;
  plan.pools = {{"pool0", "cuda:0", 256}, {"pool1", "cuda:0", 128}};
  plan.assignments = {{0, 0}, {0, 0}, {1, 0}, {1, 0}};
  EXPECT_EQ(PeakPoolBytes(problem, plan), 384);
}

// pool0 over [0,3), pool1 over [3,6): they touch and never add.
TEST(PeakPoolBytesTest, TouchingPoolsDoNotAdd) {
  Problem problem;
  problem.buffers = {MakeBuffer("b0", 100, 0, 3), MakeBuffer("b1", 200, 3, 6)};
  Plan plan;
  plan.pools = {{"pool0", "cuda:0", 128}, {"pool1", "cuda:0", 256}};
  plan.assignments = {{0, 0}, {1, 0}};
  EXPECT_EQ(PeakPoolBytes(problem, plan), 256);
}

TEST(PeakPoolBytesTest, EmptyRangesDoNotExtendOrStartAPool) {
  Problem problem;
  problem.buffers = {MakeBuffer("b0", 64, 0, 2),
                     MakeBuffer("late", 64, 9, 9),  // would extend pool0 to 9
                     MakeBuffer("b2", 64, 5, 7),
                     MakeBuffer("ghost", 64, 1, 1)};  // pool2's only buffer
  Plan plan;
  plan.pools = {{"pool0", "cuda:0", 64},
                {"pool1", "cuda:0", 64},
                {"pool2", "cuda:0", 4096}};
  plan.assignments = {{0, 0}, {0, 0}, {1, 0}, {2, 0}};
  EXPECT_EQ(PeakPoolBytes(problem, plan), 64);
}

// Per device maxima are summed, though they happen at different times:
//   cuda:0: pool0 (512) over [0,2);  cuda:1: pool1 (64) over [4,6).
TEST(PeakPoolBytesTest, SumsPeaksOverDevices) {
  Problem problem;
  problem.buffers = {MakeBuffer("a", 512, 0, 2, "cuda:0"),
                     MakeBuffer("b", 64, 4, 6, "cuda:1")};
  Plan plan;
  plan.pools = {{"pool0", "cuda:0", 512}, {"pool1", "cuda:1", 64}};
  plan.assignments = {{0, 0}, {1, 0}};
  EXPECT_EQ(PeakPoolBytes(problem, plan), 576);
  EXPECT_EQ(LowerBound(problem), 576);
}

}  // namespace
}  // namespace memplan
