// Strategy "partition": pools chosen against the whole graph's peak.
#include "core/partition/partition_planner.h"

#include <vector>

#include "core/caching_allocator.h"
#include "core/graph_memory.h"
#include "core/strategies.h"
#include "core/validator.h"
#include "gtest/gtest.h"
#include "tests/core/random_problems.h"

namespace memplan {
namespace {

// Buffers of one device in intermediates mode, with the extern outputs
// `unplanned`, rounded to no block.
Problem WholeGraph(std::vector<Buffer> buffers,
                   std::vector<UnplannedBuffer> unplanned) {
  Problem problem;
  problem.buffers = std::move(buffers);
  problem.unplanned = std::move(unplanned);
  problem.whole_graph = true;
  problem.allocator_block = 1;
  return problem;
}

DevicePeaks PeaksOf(const Problem& problem, const Plan& plan) {
  const std::vector<DevicePeaks> peaks =
      WholeGraphPeaks(problem, plan, TimelineOfBuffers(problem));
  EXPECT_EQ(peaks.size(), 1u);
  return peaks.empty() ? DevicePeaks{} : peaks[0];
}

//   bytes ^
//    1100 |       +-----+          a, b, c: 100 bytes each, one after the
//         |       |  e  |          other; e (extern, 1000) beside b.
//     100 |  a    |  b  |   c      One pool of 100 bytes over [0, 6) never
//         +--+----+-----+---+-->   passes the peak with one pool per
//            0    2     4   6      buffer (1100 at 2): one pool.
TEST(PartitionPlannerTest, OnePoolWhereItNeverRaisesThePeak) {
  const Problem problem =
      WholeGraph({MakeBuffer("a", 100, 0, 2), MakeBuffer("b", 100, 2, 4),
                  MakeBuffer("c", 100, 4, 6)},
                 {{"e", 1000, "cuda:0", {2, 4}, false}});
  const Plan plan = PlanAndValidate(PartitionPlanner(), problem);
  EXPECT_EQ(plan.planner, "partition");
  ASSERT_EQ(plan.pools.size(), 1u);
  EXPECT_EQ(plan.pools[0].size, 100);
  const DevicePeaks peaks = PeaksOf(problem, plan);
  EXPECT_EQ(peaks.predicted, 1100);
  EXPECT_EQ(peaks.predicted, peaks.baseline);
  EXPECT_EQ(peaks.predicted, peaks.lower_bound);
}

//   bytes ^
//    1100 |       +-----+          a (300) before b (100) and e (1000):
//         |  a    |  e  |          b in a's pool would hold 300 bytes
//     300 |       |  b  |          beside e (1300 at 2): b gets a pool
//         +--+----+-----+----->    of its own.
//            0    2     4
TEST(PartitionPlannerTest, APoolOfItsOwnWhereSharingWouldRaiseThePeak) {
  const Problem problem =
      WholeGraph({MakeBuffer("a", 300, 0, 2), MakeBuffer("b", 100, 2, 4)},
                 {{"e", 1000, "cuda:0", {2, 4}, false}});
  const Plan plan = PlanAndValidate(PartitionPlanner(), problem);
  ASSERT_EQ(plan.pools.size(), 2u);
  EXPECT_NE(plan.assignments[0].pool, plan.assignments[1].pool);
  EXPECT_EQ(PeaksOf(problem, plan).predicted, 1100);
  // The pools of auto's other strategies (one pool of 300 bytes for both)
  // raise it.
  Problem classic = problem;
  classic.whole_graph = false;
  const Plan smallest = PlanAndValidate(*FindPlanner("auto"), classic);
  ASSERT_EQ(smallest.pools.size(), 1u);
  EXPECT_EQ(PeaksOf(problem, smallest).predicted, 1300);
}

//   a (50 MiB) [0, 2), e (extern, 20 MiB) [2, 3), b (62 MiB) [3, 6): b in
//   a's pool would hold 62 MiB beside e, so two pools. The caching
//   allocator cannot serve b from a's freed 50 MiB segment: 112 MiB
//   reserved for a peak of 62. Padded to 62 MiB (its peak stays 62), a's
//   pool leaves a segment b reuses (e borrows it between them).
TEST(PartitionPlannerTest, PadsAPoolSoThatALaterLargerOneReusesItsSegment) {
  constexpr Bytes kMiB = Bytes{1} << 20;
  Problem problem = WholeGraph(
      {MakeBuffer("a", 50 * kMiB, 0, 2), MakeBuffer("b", 62 * kMiB, 3, 6)},
      {{"e", 20 * kMiB, "cuda:0", {2, 3}, false}});
  const Plan plan = PlanAndValidate(PartitionPlanner(), problem);
  ASSERT_EQ(plan.pools.size(), 2u);
  EXPECT_EQ(plan.pools[plan.assignments[0].pool].size, 62 * kMiB);
  DevicePeaks peaks = PeaksOf(problem, plan);
  EXPECT_EQ(peaks.predicted, 62 * kMiB);
  EXPECT_EQ(peaks.predicted_reserved, 62 * kMiB);
  EXPECT_EQ(peaks.baseline_reserved, 112 * kMiB);
  // Pool mode none: a pool is never larger than its largest buffer.
  problem.pool_mode = PoolMode::kNone;
  const Plan none = PlanAndValidate(PartitionPlanner(), problem);
  EXPECT_EQ(none.pools[none.assignments[0].pool].size, 50 * kMiB);
  EXPECT_EQ(PeaksOf(problem, none).predicted_reserved, 112 * kMiB);
}

//   a (38 MiB) [0, 10) beside e1 (extern, 8 MiB) [2, 8), then the output
//   o (62 MiB) [11, 20) beside e2 (4 MiB): the peak is 66 MiB at 11.
//   Padded to 62 MiB, a's pool would hold 70 beside e1, so the allocator
//   takes a's segment (38), e1's (20: a request under 10 MiB), and o's
//   (62): 120 MiB reserved. A reservation of 66 MiB at the entry (a block
//   allocated and freed before anything else) leaves one segment that a
//   and e1 split and, freed, o and e2: 66 MiB reserved at the same peak.
//   Only where the problem allows it (Problem::reserve_segments).
TEST(PartitionPlannerTest, ASegmentReservationServesPoolsOfGrowingSizes) {
  constexpr Bytes kMiB = Bytes{1} << 20;
  Problem problem =
      WholeGraph({MakeBuffer("a", 38 * kMiB, 0, 10),
                  MakeBuffer("o", 62 * kMiB, 11, 20, /*is_output=*/true)},
                 {{"e1", 8 * kMiB, "cuda:0", {2, 8}, false},
                  {"e2", 4 * kMiB, "cuda:0", {11, 20}, false}});
  problem.allocator_block = CachingAllocatorModel::kMinBlockSize;
  const Plan without = PlanAndValidate(PartitionPlanner(), problem);
  EXPECT_TRUE(without.reservations.empty());
  const DevicePeaks before = PeaksOf(problem, without);
  EXPECT_EQ(before.predicted, 66 * kMiB);
  EXPECT_EQ(before.predicted_reserved, 120 * kMiB);

  problem.reserve_segments = true;
  const Plan plan = PlanAndValidate(PartitionPlanner(), problem);
  ASSERT_EQ(plan.reservations.size(), 1u);
  EXPECT_EQ(plan.reservations[0].device, "cuda:0");
  EXPECT_EQ(plan.reservations[0].size, 66 * kMiB);
  const DevicePeaks after = PeaksOf(problem, plan);
  EXPECT_EQ(after.predicted, 66 * kMiB);
  EXPECT_EQ(after.predicted_reserved, 66 * kMiB);
  EXPECT_EQ(after.predicted_allocations, before.predicted_allocations + 1);

  // Under dynamic shapes one size cannot stay under every shape's peak:
  // none.
  problem.buffers[0].size_is_data_dependent = true;
  EXPECT_TRUE(
      PlanAndValidate(PartitionPlanner(), problem).reservations.empty());
}

//   a (30 MiB) [0, 10) beside e (extern, 13 MiB and 4 KiB, which the
//   caching allocator rounds up to 14 MiB) [2, 6), then the output o
//   (20 MiB) [11, 20): the peak is 44 MiB at 2. In a private pool
//   (Problem::private_pool: the graph a training forward whose step's
//   graphs alone allocate from the pool, which the model's start does not
//   describe) the reservation is that peak rounded down to 2 MiB,
//   unjudged, at the same predicted peak; a peak under 10 MiB gets none,
//   and without reserve_segments nothing is reserved.
TEST(PartitionPlannerTest, APrivatePoolReservesTheForwardsPeak) {
  constexpr Bytes kMiB = Bytes{1} << 20;
  Problem problem =
      WholeGraph({MakeBuffer("a", 30 * kMiB, 0, 10),
                  MakeBuffer("o", 20 * kMiB, 11, 20, /*is_output=*/true)},
                 {{"e", 13 * kMiB + 4096, "cuda:0", {2, 6}, false}});
  problem.allocator_block = CachingAllocatorModel::kMinBlockSize;
  problem.private_pool = true;
  EXPECT_TRUE(
      PlanAndValidate(PartitionPlanner(), problem).reservations.empty());

  problem.reserve_segments = true;
  problem.private_pool = false;
  const Plan judged = PlanAndValidate(PartitionPlanner(), problem);
  const DevicePeaks before = PeaksOf(problem, judged);
  EXPECT_EQ(before.predicted, 44 * kMiB);

  problem.private_pool = true;
  const Plan plan = PlanAndValidate(PartitionPlanner(), problem);
  ASSERT_EQ(plan.reservations.size(), 1u);
  EXPECT_EQ(plan.reservations[0].device, "cuda:0");
  EXPECT_EQ(plan.reservations[0].size, 44 * kMiB);
  EXPECT_EQ(PeaksOf(problem, plan).predicted, before.predicted);

  problem.buffers[0].size = 4 * kMiB;
  problem.buffers[1].size = 2 * kMiB;
  problem.unplanned[0].size = 2 * kMiB;
  EXPECT_TRUE(
      PlanAndValidate(PartitionPlanner(), problem).reservations.empty());
}

//   a (600) [0, 2), then b (400) beside e (500) [2, 4). In a's pool, b
//   holds 600 bytes beside e: 1100 at 2, above the 900 of one pool per
//   buffer, so two pools. With 1000 bytes of an input freed at 1, a's
//   pool over [0, 4) stays at 100 at 2 (the peak is a's 600 at 0): one.
TEST(PartitionPlannerTest, AnInputFreedEarlyMakesRoomForALongerPool) {
  Problem problem =
      WholeGraph({MakeBuffer("a", 600, 0, 2), MakeBuffer("b", 400, 2, 4)},
                 {{"e", 500, "cuda:0", {2, 4}, false}});
  EXPECT_EQ(PlanAndValidate(PartitionPlanner(), problem).pools.size(), 2u);
  problem.unplanned.push_back({"input", 1000, "cuda:0", {0, 1}, true});
  const Plan plan = PlanAndValidate(PartitionPlanner(), problem);
  EXPECT_EQ(plan.pools.size(), 1u);
  EXPECT_EQ(PeaksOf(problem, plan).predicted, 600);
}

//   a (100) [0, 2), e (extern, 25600) [2, 3), b (100) [3, 5); default's
//   reuse pass hands a's storage on to b, holding it beside e (25700 at
//   2). One pool per buffer peaks at 25600, and sharing a pool above it is
//   refused: two pools. Default's storage as a pool (the reuse chain) is
//   within 1/256 of that peak, reserves what default does and needs one
//   allocation: the planner keeps it.
TEST(PartitionPlannerTest, DefaultsReuseChainIsAPoolWhereItNearlyKeepsThePeak) {
  const Problem problem =
      WholeGraph({MakeBuffer("a", 100, 0, 2), MakeBuffer("b", 100, 3, 5)},
                 {{"e", 25600, "cuda:0", {2, 3}, false}});
  EXPECT_EQ(PlanAndValidate(PartitionPlanner(), problem).pools.size(), 2u);
  GraphTimeline timeline = TimelineOfBuffers(problem);
  timeline.storage_from = {-1, 0};
  timeline.baseline[0].blocks = {MemoryBlock{0, 5, 100},
                                 MemoryBlock{2, 3, 25600}};
  PlanContext context;
  context.timeline = &timeline;
  const Plan plan = PlanAndValidate(PartitionPlanner(), problem, context);
  ASSERT_EQ(plan.pools.size(), 1u);
  EXPECT_EQ(plan.assignments[0].offset, 0);
  EXPECT_EQ(plan.assignments[1].offset, 0);
  const std::vector<DevicePeaks> peaks =
      WholeGraphPeaks(problem, plan, timeline);
  ASSERT_EQ(peaks.size(), 1u);
  EXPECT_EQ(peaks[0].predicted, 25700);
  EXPECT_EQ(peaks[0].predicted, peaks[0].baseline);
}

// The tree counts a pool as its bytes, the caching allocator as the block
// it gets, whole where the rest is at most 1 MiB. Cached at the entry: C1
// of 2 MiB and C2 of 3.375 MiB. a (2.5 MiB) [0, 1), b (2) [1, 2), c and d
// (1 each) [3, 4) and [4, 5); extern y (3) [1, 2), z (5.5) [2, 3).
//
//   one pool per buffer    a in C2 (3.375), b in C1, y in C2, z new: the
//                          peak 5.5 MiB at 2, the target T
//   a and b in one pool    2.5 + 3 = 5.5 at 1 by the tree, but the pool
//                          is C2 whole and y takes a new segment: 6.375
//
// The sharing candidate replays above T, so it is planned again under T
// less its excess: b alone, c and d in one pool, 3 pools at 5.5 MiB
// (where the candidates without the replanning kept one pool per buffer).
TEST(PartitionPlannerTest, ASharingCandidateAboveThePeakIsPlannedAgainBelowIt) {
  constexpr Bytes kMiB = Bytes{1} << 20;
  Problem problem = WholeGraph(
      {MakeBuffer("a", 5 * kMiB / 2, 0, 1), MakeBuffer("b", 2 * kMiB, 1, 2),
       MakeBuffer("c", kMiB, 3, 4), MakeBuffer("d", kMiB, 4, 5)},
      {{"y", 3 * kMiB, "cuda:0", {1, 2}, false},
       {"z", 11 * kMiB / 2, "cuda:0", {2, 3}, false}});
  problem.allocator_block = CachingAllocatorModel::kMinBlockSize;
  problem.cached_blocks = {{"cuda:0", 2 * kMiB, false},
                           {"cuda:0", 27 * kMiB / 8, false}};
  const Plan plan = PlanAndValidate(PartitionPlanner(), problem);
  ASSERT_EQ(plan.pools.size(), 3u);
  EXPECT_NE(plan.assignments[0].pool, plan.assignments[1].pool);
  EXPECT_EQ(plan.assignments[2].pool, plan.assignments[3].pool);
  const DevicePeaks peaks = PeaksOf(problem, plan);
  EXPECT_EQ(peaks.predicted, 11 * kMiB / 2);
  EXPECT_EQ(peaks.predicted, peaks.baseline);
}

// A timeline that does not charge a buffer (an empty span) while its live
// range overlaps another's (lines that GroupWrapperLines now refuses gave
// one: a free before the allocation): the buffer still never shares the
// other's bytes.
TEST(PartitionPlannerTest, AnUnchargedBufferWithALiveRangeNeverOverlaps) {
  const Problem problem =
      WholeGraph({MakeBuffer("a", 100, 0, 4), MakeBuffer("b", 100, 1, 3)}, {});
  GraphTimeline timeline = TimelineOfBuffers(problem);
  timeline.spans[1] = GraphTimeline::Span{2, 2};
  PlanContext context;
  context.timeline = &timeline;
  const Plan plan = PlanAndValidate(PartitionPlanner(), problem, context);
  EXPECT_EQ(plan.pools.size(), 2u);
}

TEST(PartitionPlannerTest, OutputsKeepPoolsOfTheirOwn) {
  const Problem problem = WholeGraph(
      {MakeBuffer("a", 64, 0, 2), MakeBuffer("out0", 64, 1, 5, true),
       MakeBuffer("out1", 128, 3, 5, true), MakeBuffer("b", 64, 2, 4)},
      {{"e", 32, "cuda:0", {0, 5}, false}});
  const Plan plan = PlanAndValidate(PartitionPlanner(), problem);
  const int32_t out0 = plan.assignments[1].pool;
  const int32_t out1 = plan.assignments[2].pool;
  EXPECT_NE(out0, out1);
  for (size_t i : {size_t{0}, size_t{3}}) {
    EXPECT_NE(plan.assignments[i].pool, out0);
    EXPECT_NE(plan.assignments[i].pool, out1);
  }
  EXPECT_EQ(plan.pools[out0].size, 64);
  EXPECT_EQ(plan.pools[out1].size, 128);
}

// a (64 bytes) then outputs g0, g1, g2 (128 bytes each, to the end),
// after e (1000 bytes at [0, 2)) and, with `f`, beside f (1000 at [3, 4)).
Problem OutputsAfterA(bool f) {
  std::vector<UnplannedBuffer> unplanned = {
      {"e", 1000, "cuda:0", {0, 2}, false}};
  if (f) unplanned.push_back({"f", 1000, "cuda:0", {3, 4}, false});
  return WholeGraph(
      {MakeBuffer("a", 64, 0, 2), MakeBuffer("g0", 128, 2, 6, true),
       MakeBuffer("g1", 128, 3, 6, true), MakeBuffer("g2", 128, 4, 6, true)},
      std::move(unplanned));
}

// g1 on top of g0 in one pool of 256 bytes, g2 and a in pools of their own.
void ExpectG1OnG0AndTheRestApart(const Plan& plan) {
  ASSERT_EQ(plan.pools.size(), 3u);
  const int32_t shared = plan.assignments[1].pool;
  EXPECT_EQ(plan.assignments[2].pool, shared);
  EXPECT_EQ(plan.assignments[2].offset, 128);
  EXPECT_NE(plan.assignments[3].pool, shared);
  EXPECT_NE(plan.assignments[0].pool, shared);  // never with an intermediate
  EXPECT_NE(plan.assignments[0].pool, plan.assignments[3].pool);
  EXPECT_EQ(plan.pools[shared].size, 256);
}

//   bytes ^
//    1256 |  e       f             g0, g1, g2 (outputs, 128 bytes each,
//         | ###     ###            to the end) after e (1000) and a (64),
//         | ###  g0 g1 g2          beside f (1000) at 3: the peak with a
//         +--+---+---+---+---+-->  pool per output is 1256 at 3. Released
//            0   2   3   4   6     together, g1 joins g0's pool (256 at 2,
//                                  1256 at 3); g2 in it would hold 1384.
TEST(PartitionPlannerTest, OutputsReleasedTogetherShareWhereThatKeepsThePeak) {
  Problem problem = OutputsAfterA(/*f=*/true);
  const Plan apart = PlanAndValidate(PartitionPlanner(), problem);
  EXPECT_EQ(apart.pools.size(), 4u);
  EXPECT_EQ(PeaksOf(problem, apart).predicted, 1256);

  problem.outputs_released_together = true;
  const Plan plan = PlanAndValidate(PartitionPlanner(), problem);
  ExpectG1OnG0AndTheRestApart(plan);
  EXPECT_EQ(PeaksOf(problem, plan).predicted, 1256);
  // Without f, all three share one pool (384 bytes from 2, below e's 1064).
  // In mode none every output keeps a pool of its own.
  problem.unplanned.pop_back();
  const Plan one = PlanAndValidate(PartitionPlanner(), problem);
  ASSERT_EQ(one.pools.size(), 2u);
  EXPECT_EQ(one.pools[one.assignments[3].pool].size, 384);
  EXPECT_EQ(PeaksOf(problem, one).predicted, 1064);
  problem.pool_mode = PoolMode::kNone;
  EXPECT_EQ(PlanAndValidate(PartitionPlanner(), problem).pools.size(), 4u);
}

// The same graph with release groups instead: g0 and g1 in group 0, g2 in
// group 1. g1 joins g0's pool as above; g2 keeps a pool of its own, even
// without f, where outputs released together would share one pool of
// three; an output of no group (-1) never shares.
TEST(PartitionPlannerTest, OutputsOfOneReleaseGroupShareOnlyWithEachOther) {
  Problem problem = OutputsAfterA(/*f=*/false);
  problem.buffers[1].release_group = 0;
  problem.buffers[2].release_group = 0;
  problem.buffers[3].release_group = 1;
  const Plan plan = PlanAndValidate(PartitionPlanner(), problem);
  ExpectG1OnG0AndTheRestApart(plan);
  EXPECT_EQ(PeaksOf(problem, plan).predicted, 1064);
  // g2 in group 0 too: one pool of outputs; then g1 apart (-1): its own.
  problem.buffers[3].release_group = 0;
  EXPECT_EQ(PlanAndValidate(PartitionPlanner(), problem).pools.size(), 2u);
  problem.buffers[2].release_group = -1;
  const Plan apart = PlanAndValidate(PartitionPlanner(), problem);
  ASSERT_EQ(apart.pools.size(), 3u);
  EXPECT_EQ(apart.assignments[1].pool, apart.assignments[3].pool);
  EXPECT_NE(apart.assignments[2].pool, apart.assignments[1].pool);
  // Other pool modes and strategies: a pool per output.
  problem.pool_mode = PoolMode::kNone;
  EXPECT_EQ(PlanAndValidate(PartitionPlanner(), problem).pools.size(), 4u);
}

// a and b overlap; c follows a; d, the largest, comes with an extern
// output e of 1000 bytes, so the peak of one pool per buffer is 1256, at
// [6, 8). In intermediates, one pool: b on top of a, then c and d at 0.
// In none, a pool never grows past its first buffer: b, which would go on
// top of a, and d, larger than a, get pools of their own; c joins a's
// pool below its height.
TEST(PartitionPlannerTest, InModeNoneAPoolNeverGrowsPastItsFirstBuffer) {
  Problem problem =
      WholeGraph({MakeBuffer("a", 128, 0, 4), MakeBuffer("b", 128, 1, 3),
                  MakeBuffer("c", 64, 4, 6), MakeBuffer("d", 256, 6, 8)},
                 {{"e", 1000, "cuda:0", {6, 8}, false}});
  const Plan intermediates = PlanAndValidate(PartitionPlanner(), problem);
  ASSERT_EQ(intermediates.pools.size(), 1u);
  EXPECT_EQ(intermediates.pools[0].size, 256);

  problem.pool_mode = PoolMode::kNone;
  const Plan none = PlanAndValidate(PartitionPlanner(), problem);
  ASSERT_EQ(none.pools.size(), 3u);
  const int32_t pool = none.assignments[0].pool;
  EXPECT_EQ(none.assignments[2].pool, pool);
  EXPECT_NE(none.assignments[1].pool, pool);
  EXPECT_NE(none.assignments[3].pool, pool);
  EXPECT_NE(none.assignments[3].pool, none.assignments[1].pool);
  EXPECT_EQ(none.pools[pool].size, 128);
  EXPECT_EQ(PeaksOf(problem, none).predicted, 1256);
}

TEST(PartitionPlannerTest,
     AutoPartitionsAWholeGraphInModesIntermediatesAndNone) {
  Problem problem =
      WholeGraph({MakeBuffer("a", 300, 0, 2), MakeBuffer("b", 100, 2, 4)},
                 {{"e", 1000, "cuda:0", {2, 4}, false}});
  const Planner& automatic = *FindPlanner("auto");
  EXPECT_EQ(PlanAndValidate(automatic, problem).planner, "partition");
  problem.pool_mode = PoolMode::kNone;
  EXPECT_EQ(PlanAndValidate(automatic, problem).planner, "partition");
  problem.pool_mode = PoolMode::kCombined;
  EXPECT_NE(PlanAndValidate(automatic, problem).planner, "partition");
  EXPECT_NE(PlanAndValidate(*FindPlanner("partition"), problem).planner,
            "partition");
  EXPECT_FALSE(PartitionPlanner().CanPlan(problem).ok());
  problem.pool_mode = PoolMode::kOutputs;
  EXPECT_FALSE(PartitionPlanner().CanPlan(problem).ok());
  problem.pool_mode = PoolMode::kIntermediates;
  problem.whole_graph = false;
  EXPECT_NE(PlanAndValidate(automatic, problem).planner, "partition");
  // Strategy partition plans it all the same: the peak of the pools alone.
  EXPECT_EQ(PlanAndValidate(*FindPlanner("partition"), problem).planner,
            "partition");
}

TEST(PartitionPlannerTest, PinnedOffsetsGoToAutosStrategies) {
  Problem problem =
      WholeGraph({MakeBuffer("a", 64, 0, 2), MakeBuffer("b", 64, 2, 4)},
                 {{"e", 32, "cuda:0", {0, 4}, false}});
  problem.buffers[1].fixed_offset = 128;
  EXPECT_FALSE(PartitionPlanner().CanPlan(problem).ok());
  const Plan plan = PlanAndValidate(*FindPlanner("auto"), problem);
  EXPECT_EQ(plan.assignments[1].offset, 128);
}

TEST(PartitionPlannerTest, TheSameProblemGivesTheSamePlan) {
  RandomProblemOptions options;
  options.min_buffers = 200;
  options.max_buffers = 400;
  options.num_devices = 2;
  options.horizon = 300;
  options.max_unplanned = 40;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Problem problem = RandomProblem(seed, options);
    // Every other seed with outputs released together (shared pools of
    // outputs, validated as such), every third with release groups of
    // outputs (group by buffer index mod 3).
    problem.outputs_released_together = seed % 2 == 0;
    if (seed % 3 == 0) {
      for (size_t i = 0; i < problem.buffers.size(); ++i) {
        if (problem.buffers[i].is_output) {
          problem.buffers[i].release_group = static_cast<int32_t>(i % 3);
        }
      }
    }
    const Plan first = PlanAndValidate(PartitionPlanner(), problem);
    const Plan second = PlanAndValidate(PartitionPlanner(), problem);
    EXPECT_EQ(first, second) << "seed " << seed;
    for (const DevicePeaks& peaks :
         WholeGraphPeaks(problem, first, TimelineOfBuffers(problem))) {
      EXPECT_LE(peaks.predicted, peaks.baseline) << "seed " << seed;
    }
  }
}

}  // namespace
}  // namespace memplan
