#include "core/validator.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/random_problems.h"

namespace memplan {
namespace {

using ::testing::HasSubstr;

Buffer MakeBuffer(const std::string& name, Bytes size, Timestep begin,
                  Timestep end, bool is_output = false,
                  const std::string& device = "cuda:0") {
  Buffer buffer;
  buffer.names = {name};
  buffer.size = size;
  buffer.live_range = {begin, end};
  buffer.is_output = is_output;
  buffer.device = device;
  return buffer;
}

void ExpectInternal(const Problem& problem, const Plan& plan,
                    const std::string& message) {
  const absl::Status status = ValidatePlan(problem, plan);
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal) << status;
  EXPECT_EQ(status.message(), message);
}

//   offset ^
//      256 |       +-----------+
//          |       |    b2     |    b0 and b1 share bytes [0,128): their
//      128 | +-----+--+--------+    ranges [0,3) and [3,6) touch. b2
//          | |  b0    |  b1    |    [2,6) sits above both.
//        0 | +--------+--------+
//          +-+-----+--+--------+--> timestep
//            0     2  3        6
Problem ThreeBuffers() {
  Problem problem;
  problem.buffers = {MakeBuffer("b0", 128, 0, 3), MakeBuffer("b1", 100, 3, 6),
                     MakeBuffer("b2", 128, 2, 6)};
  return problem;
}

Plan ThreeBuffersPlan() {
  Plan plan;
  plan.pools = {{"pool0", "cuda:0", 256}};
  plan.assignments = {{0, 0}, {0, 0}, {0, 128}};
  return plan;
}

TEST(ValidatePlanTest, AcceptsSharingAcrossTouchingRanges) {
  EXPECT_TRUE(ValidatePlan(ThreeBuffers(), ThreeBuffersPlan()).ok());
}

TEST(ValidatePlanTest, RejectsWrongNumberOfAssignments) {
  Plan plan = ThreeBuffersPlan();
  plan.assignments.pop_back();
  ExpectInternal(ThreeBuffers(), plan, "plan has 2 assignments for 3 buffers");
}

TEST(ValidatePlanTest, RejectsPoolIndexOutOfRange) {
  Plan plan = ThreeBuffersPlan();
  plan.assignments[1].pool = 1;
  ExpectInternal(ThreeBuffers(), plan,
                 "buffers[1] (\"b1\"): assigned to pool #1 but the plan has "
                 "1 pools");
  plan.assignments[1].pool = -1;
  ExpectInternal(ThreeBuffers(), plan,
                 "buffers[1] (\"b1\"): assigned to pool #-1 but the plan has "
                 "1 pools");
}

TEST(ValidatePlanTest, RejectsPoolOfAnotherDevice) {
  Problem problem = ThreeBuffers();
  problem.buffers[2].device = "cuda:1";
  ExpectInternal(problem, ThreeBuffersPlan(),
                 "buffers[2] (\"b2\") of device \"cuda:1\" is in pool "
                 "\"pool0\" of device \"cuda:0\"");
}

TEST(ValidatePlanTest, RejectsNegativeOffset) {
  Plan plan = ThreeBuffersPlan();
  plan.assignments[0].offset = -64;
  ExpectInternal(ThreeBuffers(), plan,
                 "buffers[0] (\"b0\"): offset -64 in pool \"pool0\" is "
                 "negative");
}

TEST(ValidatePlanTest, RejectsMisalignedOffset) {
  Plan plan = ThreeBuffersPlan();
  plan.pools[0].size = 288;
  plan.assignments[2].offset = 160;
  ExpectInternal(ThreeBuffers(), plan,
                 "buffers[2] (\"b2\"): offset 160 in pool \"pool0\" is not a "
                 "multiple of the alignment 64");
  // With alignment 32 the same offset is fine.
  Problem problem = ThreeBuffers();
  problem.alignment = 32;
  EXPECT_TRUE(ValidatePlan(problem, plan).ok());
}

TEST(ValidatePlanTest, RejectsBufferPastTheEndOfItsPool) {
  Plan plan = ThreeBuffersPlan();
  plan.pools[0].size = 255;
  ExpectInternal(ThreeBuffers(), plan,
                 "buffers[2] (\"b2\"): bytes [128, 256) run past the end of "
                 "pool \"pool0\" (size 255)");
}

TEST(ValidatePlanTest, RejectsNegativePoolSize) {
  Problem problem;
  problem.buffers = {MakeBuffer("z", 0, 0, 1)};
  Plan plan;
  plan.pools = {{"pool0", "cuda:0", -64}};
  plan.assignments = {{0, 0}};
  ExpectInternal(problem, plan, "pool \"pool0\": size -64 is negative");
}

TEST(ValidatePlanTest, RejectsDuplicatePoolNames) {
  Problem problem = ThreeBuffers();
  Plan plan = ThreeBuffersPlan();
  plan.pools.push_back({"pool0", "cuda:0", 128});
  plan.assignments[2] = {1, 0};
  ExpectInternal(problem, plan,
                 "pools[1] and pools[0] are both named \"pool0\"");
}

TEST(ValidatePlanTest, RejectsPoolWithoutBuffers) {
  Plan plan = ThreeBuffersPlan();
  plan.pools.push_back({"pool1", "cuda:0", 64});
  ExpectInternal(ThreeBuffers(), plan, "pool \"pool1\" holds no buffer");
}

// pool1 offset ^
//         384 |  +---------------+
//             |  |               |
//         320 |  |       +-------+-------+
//             |  | buf9  |XXXXXXX| buf4  |
//         256 |  |       +-------+-------+
//             |  |               |
//         128 |  +---------------+
//             +--+-------+-------+-------+--> timestep
//                3       5       7       9
// buf9 [3,7)@128+256 and buf4 [5,9)@256+64 share bytes [256,320) over
// [5,7) (XXX). buf6 and buf8, also in pool1, live over [0,2) only.
TEST(ValidatePlanTest, RejectsOverlapNamingBothBuffers) {
  Problem problem;
  problem.buffers = {
      MakeBuffer("buf0", 64, 0, 9), MakeBuffer("buf1", 64, 0, 9),
      MakeBuffer("buf4", 64, 5, 9), MakeBuffer("buf6", 64, 0, 2),
      MakeBuffer("buf8", 64, 0, 2), MakeBuffer("buf9", 256, 3, 7)};
  Plan plan;
  plan.pools = {{"pool0", "cuda:0", 128}, {"pool1", "cuda:0", 384}};
  plan.assignments = {{0, 0}, {0, 64}, {1, 256}, {1, 0}, {1, 128}, {1, 128}};
  ExpectInternal(problem, plan,
                 "buffers[5] (\"buf9\") and buffers[2] (\"buf4\") overlap in "
                 "pool \"pool1\": [3,7)@128+256 vs [5,9)@256+64");
}

// A newcomer below a live buffer is found through its neighbour above.
//   offset ^
//      192 |  +-----+-----+
//          |  | top |XXXXX|     top [0,8)@128+64 is live when big
//      128 |  +-----+     |     [2,8)@0+192 begins; big's neighbour above
//          |        | big |     in byte order is top.
//        0 |        +-----+
//          +--+-----+-----+--> timestep
//             0     2     8
TEST(ValidatePlanTest, RejectsOverlapWithTheNeighbourAbove) {
  Problem problem;
  problem.buffers = {MakeBuffer("top", 64, 0, 8), MakeBuffer("big", 192, 2, 8)};
  Plan plan;
  plan.pools = {{"pool0", "cuda:0", 256}};
  plan.assignments = {{0, 128}, {0, 0}};
  ExpectInternal(problem, plan,
                 "buffers[0] (\"top\") and buffers[1] (\"big\") overlap in "
                 "pool \"pool0\": [0,8)@128+64 vs [2,8)@0+192");
}

TEST(ValidatePlanTest, RejectsOverlapAtTheSameOffset) {
  Problem problem;
  problem.buffers = {MakeBuffer("a", 64, 0, 2), MakeBuffer("b", 1, 1, 3)};
  Plan plan;
  plan.pools = {{"pool0", "cuda:0", 64}};
  plan.assignments = {{0, 0}, {0, 0}};
  ExpectInternal(problem, plan,
                 "buffers[0] (\"a\") and buffers[1] (\"b\") overlap in pool "
                 "\"pool0\": [0,2)@0+64 vs [1,3)@0+1");
}

TEST(ValidatePlanTest, AdjacentBytesZeroSizesAndEmptyRangesNeverConflict) {
  Problem problem;
  problem.buffers = {MakeBuffer("a", 64, 0, 4), MakeBuffer("b", 64, 0, 4),
                     MakeBuffer("zero", 0, 0, 4),     // size 0 inside a
                     MakeBuffer("empty", 128, 2, 2),  // [2,2) over a and b
                     MakeBuffer("c", 1, 4, 5)};       // after a, at its bytes
  Plan plan;
  plan.pools = {{"pool0", "cuda:0", 128}};
  plan.assignments = {{0, 0}, {0, 64}, {0, 0}, {0, 0}, {0, 0}};
  EXPECT_TRUE(ValidatePlan(problem, plan).ok());
}

TEST(ValidatePlanTest, BuffersOfDifferentPoolsNeverConflict) {
  Problem problem;
  problem.buffers = {MakeBuffer("a", 64, 0, 4), MakeBuffer("b", 64, 0, 4)};
  Plan plan;
  plan.pools = {{"pool0", "cuda:0", 64}, {"pool1", "cuda:0", 64}};
  plan.assignments = {{0, 0}, {1, 0}};
  EXPECT_TRUE(ValidatePlan(problem, plan).ok());
}

// Mode none: pools never grow past their first buffer.
TEST(ValidatePlanTest, ModeNoneRejectsTwoOutputsInOnePool) {
  Problem problem;
  problem.pool_mode = PoolMode::kNone;
  problem.buffers = {MakeBuffer("out0", 64, 0, 2, true),
                     MakeBuffer("out1", 64, 2, 4, true)};
  Plan plan;
  plan.pools = {{"pool0", "cuda:0", 64}};
  plan.assignments = {{0, 0}, {0, 0}};
  ExpectInternal(problem, plan,
                 "buffers[0] (\"out0\") and buffers[1] (\"out1\") are both "
                 "outputs in pool \"pool0\" (pool mode none gives every output "
                 "a pool of its own)");
  plan.pools.push_back({"pool1", "cuda:0", 64});
  plan.assignments[1].pool = 1;
  EXPECT_TRUE(ValidatePlan(problem, plan).ok());
}

TEST(ValidatePlanTest, ModeNoneRejectsPoolLargerThanItsLargestBuffer) {
  Problem problem;
  problem.pool_mode = PoolMode::kNone;
  problem.buffers = {MakeBuffer("a", 100, 0, 2), MakeBuffer("b", 64, 2, 4)};
  Plan plan;
  plan.pools = {{"pool0", "cuda:0", 128}};  // AlignUp(100, 64)
  plan.assignments = {{0, 0}, {0, 0}};
  EXPECT_TRUE(ValidatePlan(problem, plan).ok());
  plan.pools[0].size = 192;
  ExpectInternal(problem, plan,
                 "pool \"pool0\": size 192 > 128: its largest buffer "
                 "buffers[0] (\"a\") of 100 bytes rounded up to the alignment "
                 "64 (pool mode none)");
}

TEST(ValidatePlanTest, ModeIntermediatesRejectsTwoOutputsInOnePool) {
  Problem problem;
  problem.buffers = {MakeBuffer("tmp", 64, 0, 2),
                     MakeBuffer("out0", 64, 0, 4, true),
                     MakeBuffer("out1", 64, 0, 4, true)};
  Plan plan;
  plan.pools = {{"pool0", "cuda:0", 64}, {"pool1", "cuda:0", 128}};
  plan.assignments = {{0, 0}, {1, 64}, {1, 0}};
  ExpectInternal(problem, plan,
                 "buffers[1] (\"out0\") and buffers[2] (\"out1\") are both "
                 "outputs in pool \"pool1\" (pool mode intermediates gives "
                 "every output a pool of its own)");
}

// Mode intermediates: an output's pool is the output's size, aligned; an
// intermediate may reuse it while it fits.
//   offset ^
//      192 | +-------+-------+     tmp [0,2) 192 bytes, then out [2,6) 150
//          | |  tmp  |  out  |     bytes: pool0 is 192 bytes, the output's
//        0 | +-------+-------+     size aligned. big [0,6) is in pool1,
//          +-+-------+-------+-->  which holds no output and may be any
//            0       2       6     size.
TEST(ValidatePlanTest, ModeIntermediatesBoundsOnlyPoolsHoldingAnOutput) {
  Problem problem;
  problem.buffers = {MakeBuffer("tmp", 192, 0, 2),
                     MakeBuffer("out", 150, 2, 6, true),
                     MakeBuffer("big", 1000, 0, 6)};
  Plan plan;
  plan.pools = {{"pool0", "cuda:0", 192}, {"pool1", "cuda:0", 4096}};
  plan.assignments = {{0, 0}, {0, 0}, {1, 0}};
  EXPECT_TRUE(ValidatePlan(problem, plan).ok());
  plan.pools[0].size = 256;
  problem.buffers[0].size = 256;
  ExpectInternal(problem, plan,
                 "pool \"pool0\": size 256 > 192: its output buffers[1] "
                 "(\"out\") of 150 bytes rounded up to the alignment 64 (pool "
                 "mode intermediates)");
}

// With outputs released together, outputs may share a pool, bounded by
// their sizes, each aligned: out0 (150) and out1 (100) at 192 in 292
// bytes (at most 192 + 128 = 320).
TEST(ValidatePlanTest, OutputsReleasedTogetherMayShareAPool) {
  Problem problem;
  problem.buffers = {MakeBuffer("out0", 150, 0, 6, true),
                     MakeBuffer("out1", 100, 2, 6, true)};
  Plan plan;
  plan.pools = {{"pool0", "cuda:0", 292}};
  plan.assignments = {{0, 0}, {0, 192}};
  ExpectInternal(problem, plan,
                 "buffers[0] (\"out0\") and buffers[1] (\"out1\") are both "
                 "outputs in pool \"pool0\" (pool mode intermediates gives "
                 "every output a pool of its own)");
  problem.outputs_released_together = true;
  EXPECT_TRUE(ValidatePlan(problem, plan).ok());
  plan.pools[0].size = 448;
  ExpectInternal(problem, plan,
                 "pool \"pool0\": size 448 > 320: its outputs (the first "
                 "buffers[0] (\"out0\")) rounded up to the alignment 64 (pool "
                 "mode intermediates)");
  // Mode none keeps one pool per output.
  problem.pool_mode = PoolMode::kNone;
  plan.pools[0].size = 292;
  EXPECT_FALSE(ValidatePlan(problem, plan).ok());
}

// Outputs of one release group may share a pool; outputs of two groups,
// or one of no group, may not.
TEST(ValidatePlanTest, OutputsOfOneReleaseGroupMayShareAPool) {
  Problem problem;
  problem.buffers = {MakeBuffer("out0", 150, 0, 6, true),
                     MakeBuffer("out1", 100, 2, 6, true)};
  problem.buffers[0].release_group = 4;
  problem.buffers[1].release_group = 4;
  Plan plan;
  plan.pools = {{"pool0", "cuda:0", 292}};
  plan.assignments = {{0, 0}, {0, 192}};
  EXPECT_TRUE(ValidatePlan(problem, plan).ok());
  problem.buffers[1].release_group = 5;
  ExpectInternal(problem, plan,
                 "buffers[0] (\"out0\") and buffers[1] (\"out1\") are both "
                 "outputs in pool \"pool0\" (pool mode intermediates gives "
                 "every output a pool of its own, but to outputs released "
                 "together)");
  problem.buffers[1].release_group = -1;
  EXPECT_FALSE(ValidatePlan(problem, plan).ok());
}

// Segment reservations: only where the problem allows them, one per
// device at most, on a device of some buffer, of whole 2 MiB units.
TEST(ValidatePlanTest, SegmentReservations) {
  constexpr Bytes kMiB = Bytes{1} << 20;
  Problem problem;
  problem.buffers = {MakeBuffer("a", 100, 0, 2)};
  Plan plan;
  plan.pools = {{"pool0", "cuda:0", 128}};
  plan.assignments = {{0, 0}};
  plan.reservations = {{"cuda:0", 20 * kMiB}};
  ExpectInternal(problem, plan,
                 "the plan has segment reservations, which the problem does "
                 "not allow (reserve_segments)");
  problem.reserve_segments = true;
  EXPECT_TRUE(ValidatePlan(problem, plan).ok());
  plan.reservations[0].size = 20 * kMiB + 512;
  ExpectInternal(problem, plan,
                 "reservations[0]: size 20972032 bytes is not a positive "
                 "multiple of 2 MiB");
  plan.reservations[0] = {"cuda:1", 20 * kMiB};
  ExpectInternal(problem, plan,
                 "reservations[0]: device \"cuda:1\" holds no buffer");
  plan.reservations = {{"cuda:0", 20 * kMiB}, {"cuda:0", 2 * kMiB}};
  ExpectInternal(problem, plan,
                 "reservations[0] and reservations[1] are both on device "
                 "\"cuda:0\"");
}

// A training backward's reservations for its forward's step
// (Plan::forward_reservations): only in a private pool, checked as the
// plan's own.
TEST(ValidatePlanTest, ForwardReservations) {
  constexpr Bytes kMiB = Bytes{1} << 20;
  Problem problem;
  problem.buffers = {MakeBuffer("a", 100, 0, 2)};
  Plan plan;
  plan.pools = {{"pool0", "cuda:0", 128}};
  plan.assignments = {{0, 0}};
  plan.forward_reservations = {{"cuda:0", 20 * kMiB}};
  ExpectInternal(problem, plan,
                 "the plan has forward reservations, which a graph outside a "
                 "private pool does not get (private_pool)");
  problem.private_pool = true;
  EXPECT_TRUE(ValidatePlan(problem, plan).ok());
  plan.forward_reservations[0].size = 3 * kMiB;
  ExpectInternal(problem, plan,
                 "forward_reservations[0]: size 3145728 bytes is not a "
                 "positive multiple of 2 MiB");
  plan.forward_reservations = {{"cuda:0", 2 * kMiB}, {"cuda:0", 4 * kMiB}};
  ExpectInternal(problem, plan,
                 "forward_reservations[0] and forward_reservations[1] are "
                 "both on device \"cuda:0\"");
}

// Inductor's padding: a SpatialSplit's right part starts at align(left).
//   offset ^
//      158 |         +-------+
//          |         |   c   |    b [2,4) 70 bytes takes the bottom of a's
//      128 |         +-------+    100-byte slot; c [2,4) 30 bytes fills the
//      100 | +-------+            rest of it from align(70) = 128: the pool
//       70 | |   a   +-------+    is 158 bytes, more than align(100) = 128.
//          | |       |   b   |    Each of b and c (sizes not multiples of
//        0 | +-------+-------+    64) may add up to 64: the bound is 256.
//          +-+-------+-------+--> timestep
//            0       2       4
TEST(ValidatePlanTest, PoolBoundsAllowAlignmentPaddingOfUnalignedBuffers) {
  Problem problem;
  problem.buffers = {MakeBuffer("a", 100, 0, 2), MakeBuffer("b", 70, 2, 4),
                     MakeBuffer("c", 30, 2, 4)};
  Plan plan;
  plan.pools = {{"pool0", "cuda:0", 158}};
  plan.assignments = {{0, 0}, {0, 0}, {0, 128}};
  for (PoolMode mode : {PoolMode::kNone, PoolMode::kIntermediates}) {
    problem.pool_mode = mode;
    problem.buffers[0].is_output = mode == PoolMode::kIntermediates;
    plan.pools[0].size = 158;
    EXPECT_TRUE(ValidatePlan(problem, plan).ok()) << mode;
    plan.pools[0].size = 256;
    EXPECT_TRUE(ValidatePlan(problem, plan).ok()) << mode;
    plan.pools[0].size = 257;
    ExpectInternal(
        problem, plan,
        absl::StrCat(
            "pool \"pool0\": size 257 > 256: ",
            mode == PoolMode::kNone ? "its largest buffer" : "its output",
            " buffers[0] (\"a\") of 100 bytes rounded up to the "
            "alignment 64, plus 64 for each of its 2 other buffers "
            "whose size is not a multiple of it (pool mode ",
            PoolModeName(mode), ")"));
  }
  // With sizes that are multiples of the alignment there is no padding.
  problem.pool_mode = PoolMode::kNone;
  problem.buffers[0].size = 128;
  problem.buffers[1].size = 64;
  problem.buffers[2].size = 64;
  plan.pools[0].size = 192;
  plan.assignments[2].offset = 64;
  ExpectInternal(problem, plan,
                 "pool \"pool0\": size 192 > 128: its largest buffer "
                 "buffers[0] (\"a\") of 128 bytes rounded up to the alignment "
                 "64 (pool mode none)");
}

TEST(ValidatePlanTest, ModeOutputsRejectsOutputsOfOneDeviceInTwoPools) {
  Problem problem;
  problem.pool_mode = PoolMode::kOutputs;
  problem.buffers = {MakeBuffer("out0", 64, 0, 4, true),
                     MakeBuffer("tmp", 64, 0, 2),
                     MakeBuffer("out1", 64, 1, 4, true),
                     MakeBuffer("out2", 64, 0, 4, true, "cuda:1")};
  Plan plan;
  plan.pools = {{"pool0", "cuda:0", 128},
                {"pool1", "cuda:0", 64},
                {"pool2", "cuda:1", 64}};
  plan.assignments = {{0, 0}, {1, 0}, {0, 64}, {2, 0}};
  EXPECT_TRUE(ValidatePlan(problem, plan).ok());
  plan.assignments[1] = {0, 64};
  plan.assignments[2] = {1, 0};
  ExpectInternal(problem, plan,
                 "buffers[0] (\"out0\") and buffers[2] (\"out1\") are outputs "
                 "of device \"cuda:0\" in different pools pool \"pool0\" and "
                 "pool \"pool1\" (pool mode outputs puts all outputs of a "
                 "device in one pool)");
}

TEST(ValidatePlanTest, ModeCombinedRejectsTwoPoolsOnOneDevice) {
  Problem problem;
  problem.pool_mode = PoolMode::kCombined;
  problem.buffers = {MakeBuffer("a", 64, 0, 4),
                     MakeBuffer("b", 64, 0, 4, false, "cuda:1"),
                     MakeBuffer("out", 64, 0, 4, true)};
  Plan plan;
  plan.pools = {{"pool0", "cuda:0", 128}, {"pool1", "cuda:1", 64}};
  plan.assignments = {{0, 0}, {1, 0}, {0, 64}};
  EXPECT_TRUE(ValidatePlan(problem, plan).ok());
  plan.pools.push_back({"pool2", "cuda:0", 64});
  plan.assignments[2] = {2, 0};
  ExpectInternal(problem, plan,
                 "buffers[0] (\"a\") and buffers[2] (\"out\") are buffers of "
                 "device \"cuda:0\" in different pools pool \"pool0\" and pool "
                 "\"pool2\" (pool mode combined puts all buffers of a device "
                 "in one pool)");
}

// A buffer whose size depends on data may only join a pool whose first use
// is not earlier than its own begin (torch 2.11), so it may start a second
// pool on its device.
TEST(ValidatePlanTest, ModeCombinedAllowsMorePoolsWithDataDependentSizes) {
  Problem problem;
  problem.pool_mode = PoolMode::kCombined;
  problem.buffers = {MakeBuffer("a", 64, 1, 7), MakeBuffer("d", 64, 2, 7),
                     MakeBuffer("e", 64, 0, 1)};
  problem.buffers[1].size_is_data_dependent = true;
  Plan plan;
  plan.pools = {{"pool0", "cuda:0", 64}, {"pool1", "cuda:0", 64}};
  plan.assignments = {{0, 0}, {1, 0}, {1, 0}};
  EXPECT_TRUE(ValidatePlan(problem, plan).ok());
  problem.buffers[1].size_is_data_dependent = false;
  ExpectInternal(problem, plan,
                 "buffers[0] (\"a\") and buffers[1] (\"d\") are buffers of "
                 "device \"cuda:0\" in different pools pool \"pool0\" and "
                 "pool \"pool1\" (pool mode combined puts all buffers of a "
                 "device in one pool)");
}

// Returns whether two buffers of one pool intersect in time and in bytes, by
// definition.
bool Conflict(const Problem& problem, const Plan& plan, size_t i, size_t j) {
  const Buffer& a = problem.buffers[i];
  const Buffer& b = problem.buffers[j];
  if (plan.assignments[i].pool != plan.assignments[j].pool) return false;
  const bool in_time = std::max(a.live_range.begin, b.live_range.begin) <
                       std::min(a.live_range.end, b.live_range.end);
  const Bytes a0 = plan.assignments[i].offset, b0 = plan.assignments[j].offset;
  const bool in_bytes = std::max(a0, b0) < std::min(a0 + a.size, b0 + b.size);
  return in_time && in_bytes;
}

// The sweep agrees with the definition (every pair) on random small plans.
TEST(ValidatePlanTest, OverlapSweepAgreesWithAllPairs) {
  RandomProblemOptions options;
  options.min_buffers = 2;
  options.max_buffers = 14;
  options.num_devices = 2;
  options.output_fraction = 0;
  options.horizon = 10;
  options.zero_size_fraction = 0.1;
  options.small_size_fraction = 0.9;
  int valid = 0, invalid = 0;
  for (uint64_t seed = 0; seed < 3000; ++seed) {
    const Problem problem = RandomProblem(seed, options);
    SplitMix64 rng(seed ^ 0x5eed);
    // Two pools per device, made on first use; offsets in [0, 448].
    std::map<std::pair<std::string, int>, int32_t> pool_of;
    Plan plan;
    for (const Buffer& buffer : problem.buffers) {
      const auto key =
          std::make_pair(buffer.device, static_cast<int>(rng.Uniform(0, 1)));
      auto it = pool_of.find(key);
      if (it == pool_of.end()) {
        it =
            pool_of.emplace(key, static_cast<int32_t>(plan.pools.size())).first;
        plan.pools.push_back(
            {absl::StrCat("pool", plan.pools.size()), buffer.device, 0});
      }
      const Assignment assignment{it->second, 64 * rng.Uniform(0, 7)};
      Pool& pool = plan.pools[assignment.pool];
      pool.size = std::max(pool.size, assignment.offset + buffer.size);
      plan.assignments.push_back(assignment);
    }
    bool expect_conflict = false;
    for (size_t i = 0; i < problem.buffers.size(); ++i) {
      for (size_t j = i + 1; j < problem.buffers.size(); ++j) {
        expect_conflict = expect_conflict || Conflict(problem, plan, i, j);
      }
    }
    const absl::Status status = ValidatePlan(problem, plan);
    if (expect_conflict) {
      ++invalid;
      EXPECT_THAT(status.message(), HasSubstr(" overlap in "))
          << "seed " << seed << "\n"
          << plan;
    } else {
      ++valid;
      EXPECT_TRUE(status.ok()) << "seed " << seed << ": " << status << "\n"
                               << plan;
    }
  }
  // Both outcomes are exercised.
  EXPECT_GT(valid, 300);
  EXPECT_GT(invalid, 300);
}

}  // namespace
}  // namespace memplan
