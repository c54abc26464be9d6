// The whole graph's memory read off wrapper lines: extern outputs, their
// multi-output bindings, input frees and in-place takeovers, the reuse
// pass's hand-overs in the baseline, and the checks of those lines.
#include "core/inductor/wrapper_memory.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/caching_allocator.h"
#include "core/entry_state.h"
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

CallAllocation Output(int64_t index) {
  CallAllocation call;
  call.output = index;
  return call;
}

CallAllocation Scratch(Bytes bytes, int64_t freed_before) {
  CallAllocation call;
  call.scratch = bytes;
  call.freed_before = freed_before;
  return call;
}

// An extern kernel's allocations one by one (WrapperLine::call), with
// CUDA's 512-byte block, from an empty cache:
//   line 0 EXTERN bwd: outputs gi (3 MiB), gw (4 MiB); the call allocates
//          copy (3 MiB), gi, gw, then frees copy, then ws (2 MiB), freed
//          at its return
//   line 1 kernel
// The copy's bytes return before ws is allocated, which takes them: the
// peak is copy + gi + gw = 10 MiB (one workspace of copy + ws after the
// outputs would give 12), in one 20 MiB segment, four Malloc calls.
TEST(TimelineOfLinesTest, ACallsAllocationsReplayOneByOne) {
  constexpr Bytes kMiB = Bytes{1} << 20;
  WrapperProgram program;
  program.lines = {Extern("bwd", 7 * kMiB, {3 * kMiB, 4 * kMiB}), Kernel()};
  program.lines[0].call = {Scratch(3 * kMiB, 3), Output(0), Output(1),
                           Scratch(2 * kMiB, 4)};
  Graph graph = Derive(program);
  graph.problem.allocator_block = CachingAllocatorModel::kMinBlockSize;
  const GraphTimeline timeline =
      TimelineOfLines(graph.problem, graph.program, graph.lines, {});
  MemoryBlock copy{0, 1, 3 * kMiB};
  copy.step = 1;
  copy.free_step = 4;
  MemoryBlock ws{0, 1, 2 * kMiB};
  ws.step = 4;
  ws.free_step = 5;
  MemoryBlock gi{0, kNeverFreed, 3 * kMiB};
  gi.step = 2;
  MemoryBlock gw{0, kNeverFreed, 4 * kMiB};
  gw.step = 3;
  EXPECT_THAT(timeline.unplanned[0].blocks,
              UnorderedElementsAre(copy, ws, gi, gw));
  const std::vector<DevicePeaks> peaks =
      WholeGraphPeaks(graph.problem, Plan{}, timeline);
  ASSERT_EQ(peaks.size(), 1u);
  EXPECT_EQ(peaks[0].baseline, 10 * kMiB);
  EXPECT_EQ(peaks[0].baseline_reserved, 20 * kMiB);
  EXPECT_EQ(peaks[0].baseline_allocations, 4);
  EXPECT_EQ(PeakAboveEntry(timeline.unplanned[0].blocks, 512), 10 * kMiB);
  // Outputs the list does not name come first: gw alone, then ws.
  program.lines[0].call = {Output(0), Scratch(kMiB, 2)};
  graph = Derive(program);
  const GraphTimeline unnamed =
      TimelineOfLines(graph.problem, graph.program, graph.lines, {});
  MemoryBlock first{0, kNeverFreed, 4 * kMiB};  // gw, step 0
  MemoryBlock named{0, kNeverFreed, 3 * kMiB};
  named.step = 1;
  MemoryBlock scratch{0, 1, kMiB};
  scratch.step = 2;
  scratch.free_step = 3;
  EXPECT_THAT(unnamed.unplanned[0].blocks,
              UnorderedElementsAre(first, named, scratch));
}

// A training step's forward and backward, with CUDA's 512-byte block:
//   forward  line 0 ALLOCATE a (3 MiB)   saved for the backward
//            line 1 ALLOCATE t (5 MiB)   an intermediate
//            line 2 kernel
//            line 3 FREE t
//            line 4 ALLOCATE u (2 MiB)   the user's output
//            line 5 kernel
// From an empty cache, a takes a new 20 MiB segment and t and u follow it
// in that segment: at the return a [0, 3) and u [3, 5) MiB are in use and
// the 15 MiB after them are cached.
constexpr Bytes kMiB = Bytes{1} << 20;

Graph CudaGraph(WrapperProgram program) {
  Graph graph = Derive(std::move(program));
  graph.problem.allocator_block = CachingAllocatorModel::kMinBlockSize;
  return graph;
}

Graph TrainingForward() {
  WrapperProgram program;
  program.lines = {Allocate("a", 3 * kMiB),
                   Allocate("t", 5 * kMiB),
                   Kernel(),
                   Free("t"),
                   Allocate("u", 2 * kMiB),
                   Kernel()};
  program.output_names = {"a", "u"};
  return CudaGraph(std::move(program));
}

// Each group in a pool of its own (a, t, u in that order).
Plan OwnPools(const Problem& problem) {
  Plan plan;
  for (size_t g = 0; g < problem.buffers.size(); ++g) {
    plan.pools.push_back(
        Pool(absl::StrCat("pool", g), "cuda:0", problem.buffers[g].size));
    plan.assignments.push_back(Assignment{static_cast<int32_t>(g), 0});
  }
  return plan;
}

EntryState EntryOf(const Graph& forward, const Plan& plan,
                   const std::vector<InputSource>& sources) {
  const GraphTimeline timeline =
      TimelineOfLines(forward.problem, forward.program, forward.lines, {});
  return BackwardEntryState(ForwardEndState(forward.problem, plan, timeline,
                                            forward.program.output_names),
                            forward.program.output_names, sources);
}

TEST(EntryStateTest, AForwardLeavesItsOutputsInUseAndItsIntermediatesCached) {
  const Graph forward = TrainingForward();
  const GraphTimeline timeline =
      TimelineOfLines(forward.problem, forward.program, forward.lines, {});
  const ForwardState state =
      ForwardEndState(forward.problem, OwnPools(forward.problem), timeline,
                      forward.program.output_names);
  for (const ForwardEnd* end : {&state.predicted, &state.baseline}) {
    ASSERT_EQ(end->models.size(), 1u);
    const CachingAllocatorModel& model = *end->models[0].second;
    ASSERT_TRUE(end->block_of.contains("a"));
    ASSERT_TRUE(end->block_of.contains("u"));
    EXPECT_FALSE(end->block_of.contains("t"));  // no output
    EXPECT_EQ(model.size(end->block_of.at("a").second), 3 * kMiB);
    EXPECT_EQ(model.InUse().size(), 2u);
    // The 15 MiB rest is cached: a 15 MiB request takes no new segment.
    CachingAllocatorModel next = model;
    next.Malloc(15 * kMiB);
    EXPECT_FALSE(next.created_segment());
  }
}

TEST(EntryStateTest, ABackwardFreesAForwardBlockAtItsLastReference) {
  // x and y are views of a: a's block returns at y's free, not x's.
  WrapperProgram program;
  program.lines = {FreeInput("x", 0), Kernel(), FreeInput("y", 0),
                   Allocate("g", 14 * kMiB + kMiB / 2)};
  program.output_names = {"g"};
  const Graph backward = CudaGraph(std::move(program));
  const Graph forward = TrainingForward();
  const EntryState entry =
      EntryOf(forward, OwnPools(forward.problem), {{"x", "a"}, {"y", "a"}});
  const GraphTimeline timeline = TimelineOfLines(
      backward.problem, backward.program, backward.lines, {}, &entry);
  for (const std::vector<DeviceMemory>* side :
       {&timeline.unplanned, &timeline.baseline}) {
    ASSERT_EQ(side->size(), 1u);
    const DeviceMemory& memory = (*side)[0];
    ASSERT_NE(memory.start, nullptr);
    std::vector<MemoryBlock> freed;
    for (const MemoryBlock& block : memory.blocks) {
      if (block.freed_input) freed.push_back(block);
    }
    ASSERT_EQ(freed.size(), 1u);
    EXPECT_EQ(freed[0].begin, 2);  // y's FREE_INPUT
    EXPECT_EQ(freed[0].size, 3 * kMiB);
    EXPECT_GE(freed[0].start_block, 0);
  }
  // g (14.5 MiB) takes the forward's cached 15 MiB whole (a rest of 0.5
  // MiB is not split off): 15 MiB allocated, less a's 3 MiB freed before.
  Plan plan;
  plan.pools = {Pool("pool0", "cuda:0", 14 * kMiB + kMiB / 2)};
  plan.assignments = {Assignment{0, 0}};
  const std::vector<DevicePeaks> peaks =
      WholeGraphPeaks(backward.problem, plan, timeline);
  ASSERT_EQ(peaks.size(), 1u);
  EXPECT_EQ(peaks[0].baseline, 12 * kMiB);
  EXPECT_EQ(peaks[0].predicted, 12 * kMiB);
  EXPECT_EQ(peaks[0].predicted_reserved, 0);  // no new segment
  // From an empty cache: a new 16 MiB segment, 14.5 MiB of it split off.
  const GraphTimeline cold =
      TimelineOfLines(backward.problem, backward.program, backward.lines, {});
  EXPECT_EQ(WholeGraphPeaks(backward.problem, plan, cold)[0].baseline,
            14 * kMiB + kMiB / 2);
}

// The line at which the backward returns the forward's block of a (x and
// y are views of it), on each side: every freed-input block's begin.
std::vector<int64_t> BlockReturns(const WrapperProgram& program) {
  const Graph backward = CudaGraph(program);
  const Graph forward = TrainingForward();
  const EntryState entry =
      EntryOf(forward, OwnPools(forward.problem), {{"x", "a"}, {"y", "a"}});
  const GraphTimeline timeline = TimelineOfLines(
      backward.problem, backward.program, backward.lines, {}, &entry);
  std::vector<int64_t> returns;
  for (const std::vector<DeviceMemory>* side :
       {&timeline.unplanned, &timeline.baseline}) {
    for (const MemoryBlock& block : (*side)[0].blocks) {
      if (!block.freed_input) continue;
      EXPECT_EQ(block.size, 3 * kMiB);
      EXPECT_GE(block.start_block, 0);
      returns.push_back(block.begin);
    }
  }
  return returns;
}

TEST(EntryStateTest, ABufferTakingOverAnInputHoldsItsForwardBlock) {
  // `buf3 = x; del x  # reuse` (x donated): buf3 holds x's reference to
  // a's block, so y's free returns nothing and buf3's free returns a's
  // block (line 5), on both sides.
  WrapperLine takeover = Reuse("x", "buf3");
  takeover.reuses_input = true;
  takeover.allocation.device = "cuda:0";
  WrapperProgram program;
  program.lines = {Allocate("buf0", kMiB), Kernel(), takeover,
                   FreeInput("y", 0),      Kernel(), Free("buf3"),
                   Free("buf0"),           Kernel()};
  EXPECT_THAT(BlockReturns(program), ElementsAre(5, 5));
  // buf3 let go before y's free: the block returns at y's (line 5).
  program.lines = {
      Allocate("buf0", kMiB), Kernel(),          takeover,     Kernel(),
      Free("buf3"),           FreeInput("y", 0), Free("buf0"), Kernel()};
  EXPECT_THAT(BlockReturns(program), ElementsAre(5, 5));
  // Neither let go: a's block stays in use to the end.
  program.lines = {
      Allocate("buf0", kMiB), Kernel(), takeover, FreeInput("y", 0), Kernel(),
      Free("buf0"),           Kernel()};
  program.output_names = {"buf3"};
  EXPECT_THAT(BlockReturns(program), ElementsAre());
}

TEST(EntryStateTest, AnOutputTheBackwardDoesNotGetHoldsItsBlock) {
  // With a and u in one pool (pool mode combined), the user's output u
  // holds the pool: freeing a returns nothing; default's own storages
  // return a's.
  WrapperProgram program;
  program.lines = {FreeInput("x", 0), Kernel()};
  const Graph backward = CudaGraph(std::move(program));
  const Graph forward = TrainingForward();
  Plan combined;
  combined.pools = {Pool("pool0", "cuda:0", 10 * kMiB)};
  combined.assignments = {Assignment{0, 0}, Assignment{0, 3 * kMiB},
                          Assignment{0, 8 * kMiB}};
  const EntryState entry = EntryOf(forward, combined, {{"x", "a"}});
  const GraphTimeline timeline = TimelineOfLines(
      backward.problem, backward.program, backward.lines, {}, &entry);
  auto freed = [](const DeviceMemory& memory) {
    int count = 0;
    for (const MemoryBlock& block : memory.blocks) count += block.freed_input;
    return count;
  };
  EXPECT_EQ(freed(timeline.unplanned[0]), 0);
  EXPECT_EQ(freed(timeline.baseline[0]), 1);
}

TEST(EntryStateTest, TheNextStepStartsFromTheGradientsSegments) {
  // The backward's output g (a gradient) stays allocated past the step;
  // empty_cache() releases the segments without a block in use, then g is
  // set to None: its segment is all that is cached.
  WrapperProgram program;
  program.lines = {Allocate("tmp", 30 * kMiB), Allocate("g", 4 * kMiB),
                   Free("tmp")};
  program.output_names = {"g"};
  const Graph backward = CudaGraph(std::move(program));
  const GraphTimeline timeline =
      TimelineOfLines(backward.problem, backward.program, backward.lines, {});
  const std::shared_ptr<const CachingAllocatorModel> start =
      NextStepStart(timeline.baseline[0], {"g"});
  EXPECT_TRUE(start->InUse().empty());
  CachingAllocatorModel next = *start;
  next.Malloc(20 * kMiB);  // g's 20 MiB segment, free again
  EXPECT_FALSE(next.created_segment());
  next.Malloc(30 * kMiB);  // tmp's segment was released
  EXPECT_TRUE(next.created_segment());
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
  WrapperLine call = Extern("e", 10, {4, 6});
  call.call = {Output(2)};
  EXPECT_THAT(error({call}),
              HasSubstr("events[0] (\"e\"): call_allocations[0].output_index "
                        "must be in [0, 2), got 2"));
  call.call = {Output(1), Output(1)};
  EXPECT_THAT(error({call}),
              HasSubstr("call_allocations[1].output_index 1 is named twice"));
  call.call = {Scratch(0, 1)};
  EXPECT_THAT(error({call}),
              HasSubstr("call_allocations[0].scratch_bytes must be in (0, "));
  call.call = {Output(0), Scratch(8, 1)};
  EXPECT_THAT(error({call}),
              HasSubstr("call_allocations[1].freed_before must be in (1, 2], "
                        "got 1"));
  call.call = {Scratch(8, 1)};
  call.workspace = 8;
  EXPECT_THAT(error({call}), HasSubstr("workspace_bytes and call_allocations "
                                       "are exclusive"));
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
