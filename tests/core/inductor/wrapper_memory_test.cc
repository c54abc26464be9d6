// The whole graph's memory read off wrapper lines: extern outputs, their
// multi-output bindings, input frees and in-place takeovers, the reuse
// pass's hand-overs in the baseline, and the checks of those lines.
#include "core/inductor/wrapper_memory.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/inductor/wrapper_line_builders.h"

namespace memplan {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;
using namespace wrapper_line_builders;  // NOLINT: test builders

WrapperLine Extern(const std::string& name, Bytes size,
                   std::vector<Bytes> outputs = {}) {
  WrapperLine line = Allocate(name, size);
  line.kind = WrapperLineKind::kExternAllocate;
  line.output_bytes = std::move(outputs);
  return line;
}

WrapperLine Bind(const std::string& tuple, int64_t index,
                 const std::string& name) {
  WrapperLine line = Reuse(tuple, name);
  line.kind = WrapperLineKind::kMultiOutput;
  line.output_index = index;
  return line;
}

WrapperLine FreeInput(const std::string& name, Bytes size) {
  WrapperLine line = Allocate(name, size);
  line.kind = WrapperLineKind::kFreeInput;
  return line;
}

// The problem and lines of `program`, as the service derives them.
struct Graph {
  WrapperProgram program;
  PoolLines lines;
  Problem problem;
};

Graph Derive(WrapperProgram program) {
  Graph graph;
  graph.program = std::move(program);
  graph.lines = GroupWrapperLines(graph.program).value();
  graph.problem.buffers = graph.lines.buffers;
  graph.problem.allocator_block = 1;
  return graph;
}

//   line 0 EXTERN conv0 (1000)             conv0: [0, 5)
//   line 1 ALLOCATE buf1 (200)   t1        buf1: [1, 4)
//   line 2 kernel
//   line 3 EXTERN sdpa (300 + 50): tuple   out0 bound to buf4 [3, 7)
//   line 4 MULTI_OUTPUT sdpa[0] -> buf4                 (the tuple
//   line 5 FREE sdpa             t2        frees out1 (50) at 5: [3, 5))
//   line 5 ...
//   line 6 FREE_INPUT saved (700)          -700 from 6
//   line 7 FREE buf1             t3
//   line 8 FREE conv0            t3        conv0 freed at 8
//   line 9 kernel
//   line 10 FREE buf4            t4        out0 freed at 10
//   line 11 kernel
// (positions are line indices: the FREE of conv0 at 8 ends it at 8.)
WrapperProgram ExternsAndInputs() {
  WrapperProgram program;
  program.lines = {Extern("conv0", 1000),
                   Allocate("buf1", 200),
                   Kernel(),
                   Extern("sdpa", 350, {300, 50}),
                   Bind("sdpa", 0, "buf4"),
                   Free("sdpa"),
                   FreeInput("saved", 700),
                   Free("buf1"),
                   Free("conv0"),
                   Kernel(),
                   Free("buf4"),
                   Kernel()};
  return program;
}

TEST(TimelineOfLinesTest, ExternOutputsLiveUntilTheirLastHolderLetsGo) {
  const Graph graph = Derive(ExternsAndInputs());
  const GraphTimeline timeline =
      TimelineOfLines(graph.problem, graph.program, graph.lines, {});
  ASSERT_EQ(timeline.spans.size(), 1u);  // buf1
  EXPECT_EQ(timeline.spans[0].begin, 1);
  EXPECT_EQ(timeline.spans[0].end, 7);
  ASSERT_EQ(timeline.unplanned.size(), 1u);
  EXPECT_THAT(timeline.unplanned[0].blocks,
              UnorderedElementsAre(
                  MemoryBlock{3, 5, 50}, MemoryBlock{6, kNeverFreed, 700, true},
                  MemoryBlock{0, 8, 1000}, MemoryBlock{3, 10, 300}));
  // The baseline holds buf1 as well.
  EXPECT_THAT(
      timeline.baseline[0].blocks,
      UnorderedElementsAre(MemoryBlock{1, 7, 200}, MemoryBlock{3, 5, 50},
                           MemoryBlock{6, kNeverFreed, 700, true},
                           MemoryBlock{0, 8, 1000}, MemoryBlock{3, 10, 300}));
}

// The whole-graph peaks of `graph` (one device) with every buffer in one
// pool of `pool_bytes` at offset 0.
DevicePeaks OnePoolPeaks(const Graph& graph, Bytes pool_bytes) {
  const GraphTimeline timeline =
      TimelineOfLines(graph.problem, graph.program, graph.lines, {});
  Plan plan;
  plan.pools = {Pool("pool0", "cuda:0", pool_bytes)};
  plan.assignments.assign(graph.problem.buffers.size(), Assignment{0, 0});
  const std::vector<DevicePeaks> peaks =
      WholeGraphPeaks(graph.problem, plan, timeline);
  EXPECT_EQ(peaks.size(), 1u);
  return peaks.empty() ? DevicePeaks{} : peaks[0];
}

TEST(TimelineOfLinesTest, PredictedAndBaselinePeaks) {
  const DevicePeaks peaks = OnePoolPeaks(Derive(ExternsAndInputs()), 200);
  // At 3 and 4: conv0 1000, buf1's pool 200, sdpa's outputs 350.
  EXPECT_EQ(peaks.predicted, 1550);
  EXPECT_EQ(peaks.baseline, 1550);
  EXPECT_EQ(peaks.lower_bound, 1550);
}

//   line 0 ALLOCATE a (256)   t1   a: [1, 2), held [0, 2)
//   line 1 kernel
//   line 2 ALLOCATE b (256)   t2   b: [2, 3), held [3, 5): one run with
//   line 3 FREE a             t2   a's FREE, whose bytes a plan may give b
//   line 4 kernel                  (the lines' order in a run is free)
//   line 5 FREE b             t3
//   line 6 kernel
// One pool of 256 bytes holds both: the lower bound is 256, not the 512
// that a and b's spans ([0, 3) and [2, 5)) would sum to at line 2.
TEST(TimelineOfLinesTest, TheLowerBoundLetsARunShareBytes) {
  WrapperProgram program;
  program.lines = {
      Allocate("a", 256), Kernel(), Allocate("b", 256), Free("a"), Kernel(),
      Free("b"),          Kernel()};
  const Graph graph = Derive(program);
  EXPECT_EQ(graph.problem.buffers[0].live_range, (LiveRange{1, 2}));
  EXPECT_EQ(graph.problem.buffers[1].live_range, (LiveRange{2, 3}));
  const DevicePeaks peaks = OnePoolPeaks(graph, 256);
  EXPECT_EQ(peaks.predicted, 256);
  EXPECT_EQ(peaks.lower_bound, 256);
  EXPECT_EQ(peaks.baseline, 512);
}

//   line 0 ALLOCATE a (256)      a freed at 2, its storage handed to b at 4:
//   line 1 kernel                held over [0, 4) by a, then by b to 6
//   line 2 FREE a
//   line 3 kernel
//   line 4 ALLOCATE b (256)
//   line 5 kernel
//   line 6 FREE b
//   line 7 kernel
TEST(TimelineOfLinesTest, TheBaselineHoldsAStorageTheReusePassHandsOn) {
  WrapperProgram program;
  program.lines = {Allocate("a", 256), Kernel(), Free("a"), Kernel(),
                   Allocate("b", 256), Kernel(), Free("b"), Kernel()};
  const Graph graph = Derive(program);
  const ReuseDecision decision{/*allocation_line=*/4, /*free_line=*/2, "b",
                               "a"};
  const GraphTimeline timeline =
      TimelineOfLines(graph.problem, graph.program, graph.lines, {decision});
  EXPECT_THAT(timeline.baseline[0].blocks, ElementsAre(MemoryBlock{0, 6, 256}));
  // b (group 1) takes a's (group 0) storage.
  EXPECT_THAT(timeline.storage_from, ElementsAre(-1, 0));
  // Without the hand-over, two storages, one after the other.
  const GraphTimeline apart =
      TimelineOfLines(graph.problem, graph.program, graph.lines, {});
  EXPECT_THAT(apart.baseline[0].blocks,
              ElementsAre(MemoryBlock{0, 2, 256}, MemoryBlock{4, 6, 256}));
  EXPECT_TRUE(apart.storage_from.empty());
}

TEST(TimelineOfLinesTest, AnExternOutputHandedToABufferLivesOnInTheBaseline) {
  // The reuse pass gives buf2 the storage of conv0 (an extern output); with
  // pools, conv0 is freed at its FREE and buf2 lives in its pool.
  WrapperLine free_conv = FreeExternal("conv0", 512);
  WrapperProgram program;
  program.lines = {Extern("conv0", 512),
                   Kernel(),
                   free_conv,
                   Allocate("buf2", 512),
                   Kernel(),
                   Free("buf2"),
                   Kernel()};
  const Graph graph = Derive(program);
  const GraphTimeline timeline = TimelineOfLines(
      graph.problem, graph.program, graph.lines,
      {ReuseDecision{/*allocation_line=*/3, /*free_line=*/2, "buf2", "conv0"}});
  EXPECT_THAT(timeline.baseline[0].blocks, ElementsAre(MemoryBlock{0, 5, 512}));
  EXPECT_THAT(timeline.unplanned[0].blocks,
              ElementsAre(MemoryBlock{0, 2, 512}));
}

TEST(TimelineOfLinesTest, AnInputTakenOverInPlaceIsFreedWithItsTaker) {
  // `buf3 = relu_1; del relu_1  # reuse`: relu_1 (a saved activation) is
  // freed when buf3 is.
  WrapperLine takeover = Reuse("relu_1", "buf3");
  takeover.reuses_input = true;
  takeover.allocation.size = 4096;
  takeover.allocation.device = "cuda:0";
  WrapperProgram program;
  program.lines = {Allocate("buf0", 64), Kernel(),     takeover, Kernel(),
                   Free("buf3"),         Free("buf0"), Kernel()};
  const Graph graph = Derive(program);
  const GraphTimeline timeline =
      TimelineOfLines(graph.problem, graph.program, graph.lines, {});
  EXPECT_THAT(timeline.unplanned[0].blocks,
              ElementsAre(MemoryBlock{4, kNeverFreed, 4096, true}));
}

TEST(TimelineOfLinesTest, OutputsAndTheirStoragesAreNeverFreed) {
  WrapperProgram program;
  program.lines = {Extern("out", 128), Allocate("buf1", 64), Kernel(),
                   Free("buf1"), Kernel()};
  program.output_names = {"out", "buf1"};
  const Graph graph = Derive(program);
  const GraphTimeline timeline =
      TimelineOfLines(graph.problem, graph.program, graph.lines, {});
  EXPECT_EQ(timeline.spans[0].end, kNeverFreed);  // buf1, an output
  EXPECT_THAT(timeline.unplanned[0].blocks,
              ElementsAre(MemoryBlock{0, kNeverFreed, 128}));
}

//   line 0 ALLOCATE buf0 (100)  t1
//   line 1 EXTERN conv (300), workspace 500: at line 1 only
//   line 2 FREE buf0            t2
//   line 3 EXTERN conv2 (50), workspace 20
//   line 4 kernel
TEST(TimelineOfLinesTest, AWorkspaceIsLiveAtItsKernelsLineOnly) {
  WrapperProgram program;
  program.lines = {Allocate("buf0", 100), Extern("conv", 300), Free("buf0"),
                   Extern("conv2", 50), Kernel()};
  program.lines[1].workspace = 500;
  program.lines[3].workspace = 20;
  const Graph graph = Derive(program);
  const GraphTimeline timeline =
      TimelineOfLines(graph.problem, graph.program, graph.lines, {});
  EXPECT_THAT(
      timeline.unplanned[0].blocks,
      UnorderedElementsAre(MemoryBlock{1, 2, 500}, MemoryBlock{3, 4, 20},
                           MemoryBlock{1, kNeverFreed, 300},
                           MemoryBlock{3, kNeverFreed, 50}));
  const DevicePeaks peaks = OnePoolPeaks(graph, 100);
  // At line 1: buf0's pool 100, conv 300, its workspace 500.
  EXPECT_EQ(peaks.predicted, 900);
  EXPECT_EQ(peaks.baseline, 900);
  EXPECT_EQ(peaks.lower_bound, 900);
  // One allocation more per workspace, with pools and without.
  EXPECT_EQ(peaks.predicted_allocations, 5);
  EXPECT_EQ(peaks.baseline_allocations, 5);
}

TEST(CheckLinesOutsideThePlanTest, NamesTheLineAndTheField) {
  auto error = [](std::vector<WrapperLine> lines) {
    WrapperProgram program;
    program.lines = std::move(lines);
    return std::string(CheckLinesOutsideThePlan(program, "events").message());
  };
  EXPECT_THAT(error({Extern("", 10)}), HasSubstr("events[0]: name is missing"));
  EXPECT_THAT(error({Extern("e", -1)}),
              HasSubstr("events[0] (\"e\"): size_bytes must be in [0, "));
  EXPECT_THAT(error({Extern("e", 10, {4, 5})}),
              HasSubstr("size_bytes must be the sum of output_bytes (9)"));
  EXPECT_THAT(error({Extern("e", 10, {-4, 14})}),
              HasSubstr("output_bytes[0] must be in [0, "));
  EXPECT_THAT(error({Allocate("e", 8), Extern("e", 10)}),
              HasSubstr("events[1] (\"e\"): name is allocated by an earlier"));
  EXPECT_THAT(error({Extern("e", 10), Bind("e", 0, "x")}),
              HasSubstr("events[1] (\"e\"): name is no earlier EXTERN_ALLOCATE "
                        "with output_bytes"));
  EXPECT_THAT(error({Extern("e", 10, {4, 6}), Bind("e", 2, "x")}),
              HasSubstr("output_index must be in [0, 2), got 2"));
  EXPECT_THAT(error({Extern("e", 10, {4, 6}), Bind("e", 1, "")}),
              HasSubstr("reused_as is missing"));
  WrapperLine workspace = Extern("e", 10);
  workspace.workspace = -1;
  EXPECT_THAT(error({workspace}),
              HasSubstr("events[0] (\"e\"): workspace_bytes must be in [0, "));
  EXPECT_THAT(error({FreeInput("x", -5)}),
              HasSubstr("events[0] (\"x\"): size_bytes must be in [0, "));
  WrapperLine takeover = Reuse("x", "y");
  takeover.reuses_input = true;
  takeover.allocation.size = Bytes{1} << 41;
  EXPECT_THAT(error({takeover}), HasSubstr("size_bytes must be in [0, "));
  EXPECT_TRUE(CheckLinesOutsideThePlan(ExternsAndInputs()).ok());
}

}  // namespace
}  // namespace memplan
