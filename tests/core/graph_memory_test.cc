// The whole-graph model: peaks over blocks, the timeline of plain buffers,
// and a plan's predicted and baseline peaks.
#include "core/graph_memory.h"

#include <string>
#include <tuple>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memplan {
namespace {

using ::testing::ElementsAre;

TEST(AllocatorBytesTest, RoundsUpToTheBlockAndAllocatesNothingForNothing) {
  EXPECT_EQ(AllocatorBytes(0, 512), 0);
  EXPECT_EQ(AllocatorBytes(1, 512), 512);
  EXPECT_EQ(AllocatorBytes(512, 512), 512);
  EXPECT_EQ(AllocatorBytes(513, 512), 1024);
  EXPECT_EQ(AllocatorBytes(513, 1), 513);
}

//   bytes ^
//     300 |      +----+
//         |   a  | b  |          a [0, 4) 100, b [2, 3) 200,
//     100 |------+----+----      input freed at 3: -150
//       0 +--------------+--->   peak 300 at 2; never below 0
//         0      2    3  4
TEST(PeakAboveEntryTest, IsTheMostBytesAtOncePositionsHalfOpen) {
  const std::vector<MemoryBlock> blocks = {
      {0, 4, 100}, {2, 3, 200}, {3, kNeverFreed, 150, /*freed_input=*/true}};
  EXPECT_EQ(PeakAboveEntry(blocks, 1), 300);
  // Rounded to 128-byte blocks: 128 + 256.
  EXPECT_EQ(PeakAboveEntry(blocks, 128), 384);
  // A block ending at 2 and one beginning at 2 never coexist.
  EXPECT_EQ(PeakAboveEntry({{0, 2, 100}, {2, 5, 100}}, 1), 100);
  // Only freed inputs: the peak is the entry's, 0.
  EXPECT_EQ(PeakAboveEntry({{0, kNeverFreed, 64, true}}, 1), 0);
  EXPECT_EQ(PeakAboveEntry({}, 512), 0);
  // Empty blocks allocate nothing.
  EXPECT_EQ(PeakAboveEntry({{3, 3, 1000}, {1, 2, 0}}, 1), 0);
}

TEST(PeakAboveEntryTest, AFreedInputMakesRoomForLaterAllocations) {
  // 500 bytes of an input freed at 1; then 400 allocated: below the entry.
  EXPECT_EQ(PeakAboveEntry({{1, kNeverFreed, 500, true}, {2, 4, 400}}, 1), 0);
  // The same allocation before the free counts.
  EXPECT_EQ(PeakAboveEntry({{1, kNeverFreed, 500, true}, {0, 4, 400}}, 1), 400);
}

// Two buffers in one pool, one in another; an extern output and an input.
//
//   pool0: a [0, 2) 100, b [3, 5) 100 (offset 0): the pool over [0, 5)
//   pool1: c [1, 4) 50 (an output)
//   extern e [2, 6) 30; input freed at 4: -40
Problem SmallWholeGraph() {
  Problem problem;
  for (const auto& [name, size, begin, end, output] :
       std::vector<std::tuple<std::string, Bytes, Timestep, Timestep, bool>>{
           {"a", 100, 0, 2, false},
           {"b", 100, 3, 5, false},
           {"c", 50, 1, 4, true}}) {
    Buffer buffer;
    buffer.names = {name};
    buffer.size = size;
    buffer.live_range = {begin, end};
    buffer.is_output = output;
    buffer.device = "cuda:0";
    problem.buffers.push_back(buffer);
  }
  problem.unplanned = {{"e", 30, "cuda:0", {2, 6}, false},
                       {"x", 40, "cuda:0", {0, 4}, true}};
  problem.whole_graph = true;
  problem.allocator_block = 1;
  return problem;
}

Plan SmallPlan() {
  Plan plan;
  plan.pools = {Pool("pool0", "cuda:0", 100), Pool("pool1", "cuda:0", 50)};
  plan.assignments = {{0, 0}, {0, 0}, {1, 0}};
  return plan;
}

TEST(TimelineOfBuffersTest, SpansAreLiveRangesAndTheBaselineHoldsEachBuffer) {
  const Problem problem = SmallWholeGraph();
  const GraphTimeline timeline = TimelineOfBuffers(problem);
  ASSERT_EQ(timeline.spans.size(), 3u);
  EXPECT_EQ(timeline.spans[1].begin, 3);
  EXPECT_EQ(timeline.spans[1].end, 5);
  ASSERT_EQ(timeline.unplanned.size(), 1u);
  EXPECT_EQ(timeline.unplanned[0].device, "cuda:0");
  EXPECT_THAT(timeline.unplanned[0].blocks,
              ElementsAre(MemoryBlock{2, 6, 30},
                          MemoryBlock{4, kNeverFreed, 40, true}));
  ASSERT_EQ(timeline.baseline.size(), 1u);
  EXPECT_THAT(timeline.baseline[0].blocks,
              ElementsAre(MemoryBlock{0, 2, 100}, MemoryBlock{3, 5, 100},
                          MemoryBlock{1, 4, 50}, MemoryBlock{2, 6, 30},
                          MemoryBlock{4, kNeverFreed, 40, true}));
}

//   predicted: pool0 [0, 5) 100, pool1 [1, 4) 50, e [2, 6) 30, x -40 from 4
//     at 2 and 3: 100 + 50 + 30 = 180 (the peak)
//   baseline: a [0, 2), b [3, 5), c [1, 4), e, x
//     at 3: 100 + 50 + 30 = 180; at 2: 50 + 30 = 80
//   lower bound: the buffers' own bytes: at 3, 180 as well
//   reserved: with pools and without, one 2 MiB segment of the caching
//   allocator's small pool holds every block
//   allocations: pool0, pool1 and e with pools; a, b, c and e without (the
//   freed input x counts none)
TEST(WholeGraphPeaksTest, PoolsAreChargedOverTheHullOfTheirBuffers) {
  const Problem problem = SmallWholeGraph();
  const GraphTimeline timeline = TimelineOfBuffers(problem);
  const std::vector<DevicePeaks> peaks =
      WholeGraphPeaks(problem, SmallPlan(), timeline);
  ASSERT_EQ(peaks.size(), 1u);
  EXPECT_EQ(peaks[0],
            (DevicePeaks{"cuda:0", 180, 180, 180, 2 << 20, 2 << 20, 3, 4}));
  const std::vector<DeviceMemory> memory =
      PlanMemory(problem, SmallPlan(), timeline);
  ASSERT_EQ(memory.size(), 1u);
  EXPECT_THAT(
      memory[0].blocks,
      ElementsAre(MemoryBlock{2, 6, 30}, MemoryBlock{4, kNeverFreed, 40, true},
                  MemoryBlock{0, 5, 100}, MemoryBlock{1, 4, 50}));
}

TEST(WholeGraphPeaksTest, OnePoolForEverythingRaisesThePeak) {
  Problem problem = SmallWholeGraph();
  // a, b and c in one pool of 150 bytes (c above a and b): over [0, 5),
  // so at 2 the pool's 150 and e's 30 coexist, where the buffers' own
  // bytes are only 50 + 30.
  Plan plan;
  plan.pools = {Pool("pool0", "cuda:0", 150)};
  plan.assignments = {{0, 0}, {0, 0}, {0, 100}};
  const std::vector<DevicePeaks> peaks =
      WholeGraphPeaks(problem, plan, TimelineOfBuffers(problem));
  ASSERT_EQ(peaks.size(), 1u);
  EXPECT_EQ(peaks[0].predicted, 180);  // at 2 and 3: 150 + 30
  EXPECT_EQ(peaks[0].baseline, 180);
  // Without b, the buffers' own bytes peak at 1 (a and c: 150); the one
  // pool still holds 150 bytes at 2, where e comes: 180.
  problem.buffers[1].live_range = {0, 0};
  const std::vector<DevicePeaks> without_b =
      WholeGraphPeaks(problem, plan, TimelineOfBuffers(problem));
  EXPECT_EQ(without_b[0].predicted, 180);
  EXPECT_EQ(without_b[0].baseline, 150);
  EXPECT_EQ(without_b[0].lower_bound, 150);
}

// Wrapper lines cut short (a fuzzer's find): a, no output, is never freed,
// so its span runs to the end, while its live range [0, 2) lets b share its
// offset. The pool holds both in 100 bytes over [0, never): the lower bound
// must not count a beside b.
TEST(WholeGraphPeaksTest, ANeverFreedIntermediateBoundsNothing) {
  Problem problem = SmallWholeGraph();
  GraphTimeline timeline = TimelineOfBuffers(problem);
  timeline.spans[0].end = kNeverFreed;
  const std::vector<DevicePeaks> peaks =
      WholeGraphPeaks(problem, SmallPlan(), timeline);
  ASSERT_EQ(peaks.size(), 1u);
  // pool0 [0, never) 100, pool1 [1, 4) 50, e [2, 6) 30, x -40 from 4.
  EXPECT_EQ(peaks[0].predicted, 180);
  // b, c and e at 3.
  EXPECT_EQ(peaks[0].lower_bound, 180);
  EXPECT_LE(peaks[0].lower_bound, peaks[0].predicted);
  // a's 100 bytes beside b's would have made it 280.
}

TEST(WholeGraphPeaksTest, DevicesComeInTheOrderOfTheirFirstBuffer) {
  Problem problem = SmallWholeGraph();
  problem.unplanned.push_back({"y", 64, "cpu", {0, 1}, false});
  const std::vector<DevicePeaks> peaks =
      WholeGraphPeaks(problem, SmallPlan(), TimelineOfBuffers(problem));
  ASSERT_EQ(peaks.size(), 2u);
  EXPECT_EQ(peaks[0].device, "cuda:0");
  EXPECT_EQ(peaks[1], (DevicePeaks{"cpu", 64, 64, 64, 2 << 20, 2 << 20, 1, 1}));
}

TEST(WholeGraphPeaksTest, CachedBlocksAtTheEntrySaveTheirSegments) {
  Problem problem = SmallWholeGraph();
  // A 2 MiB small-pool block cached on the graph's device holds every
  // allocation (each at most 1 MiB); one on a device the graph does not
  // use is left out.
  problem.cached_blocks = {{"cuda:0", 2 << 20, true}, {"cuda:1", 512, true}};
  const GraphTimeline timeline = TimelineOfBuffers(problem);
  ASSERT_EQ(timeline.unplanned.size(), 1u);
  EXPECT_EQ(timeline.unplanned[0].cached,
            (std::vector<CachedBlock>{{"cuda:0", 2 << 20, true}}));
  EXPECT_EQ(timeline.baseline[0].cached, timeline.unplanned[0].cached);
  const std::vector<DevicePeaks> peaks =
      WholeGraphPeaks(problem, SmallPlan(), timeline);
  ASSERT_EQ(peaks.size(), 1u);
  // The peaks and calls as from an empty cache; no segment reserved.
  EXPECT_EQ(peaks[0], (DevicePeaks{"cuda:0", 180, 180, 180, 0, 0, 3, 4}));
}

}  // namespace
}  // namespace memplan
