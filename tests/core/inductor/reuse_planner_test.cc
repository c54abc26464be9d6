// Strategy "reuse" (Inductor's memory_plan_reuse): hand-written wrapper
// lines, one per rule of the reference code, each checked for its
// decisions and for a plan the independent validator accepts; and plain
// buffers, whose lines are derived from their live ranges. Line numbers in
// the comments are indices into program.lines; "|" marks a kernel (a line
// of another kind).
#include "core/inductor/reuse_planner.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/inductor/wrapper_lines.h"
#include "core/nnc/nnc_planner.h"
#include "core/reference_decisions.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/inductor/planned_programs.h"
#include "tests/core/inductor/wrapper_line_builders.h"
#include "tests/core/random_problems.h"

namespace memplan {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

using wrapper_line_builders::Allocate;
using wrapper_line_builders::Enter;
using wrapper_line_builders::Exit;
using wrapper_line_builders::Free;
using wrapper_line_builders::FreeExternal;
using wrapper_line_builders::Kernel;
using wrapper_line_builders::Reuse;

//   0 ALLOCATE buf0 | 2 FREE buf0, 3 ALLOCATE buf1 | 5 FREE buf1 |
// buf1 has buf0's key: it takes buf0's storage.
TEST(ReusePlannerTest, AnAllocationTakesAFreedStorageOfItsKey) {
  const Planned planned = PlanReuse(
      Program({Allocate("buf0", 256), Kernel(), Free("buf0"),
               Allocate("buf1", 256), Kernel(), Free("buf1"), Kernel()}));
  ASSERT_TRUE(planned.plan.ok()) << planned.plan.status();
  EXPECT_THAT(planned.decisions().reuse,
              ElementsAre(ReuseDecision{3, 2, "buf1", "buf0"}));
  EXPECT_TRUE(planned.SameStorage("buf0", "buf1"));
  EXPECT_EQ(planned.plan->pools.size(), 1u);
  EXPECT_EQ(planned.plan->planner, "reuse");
  EXPECT_THAT(planned.decisions().nnc, IsEmpty());
}

//   0 ALLOCATE a, 1 ALLOCATE b | 3 FREE a, 4 FREE b, 5 ALLOCATE c,
//   6 ALLOCATE d | 8 FREE c, 9 FREE d |
// The pool of a key is a stack: c takes b (freed last), d then takes a.
TEST(ReusePlannerTest, TheStorageFreedLastIsTakenFirst) {
  const Planned planned = PlanReuse(
      Program({Allocate("a", 256), Allocate("b", 256), Kernel(), Free("a"),
               Free("b"), Allocate("c", 256), Allocate("d", 256), Kernel(),
               Free("c"), Free("d"), Kernel()}));
  ASSERT_TRUE(planned.plan.ok()) << planned.plan.status();
  EXPECT_THAT(planned.decisions().reuse,
              ElementsAre(ReuseDecision{5, 4, "c", "b"},
                          ReuseDecision{6, 3, "d", "a"}));
  EXPECT_TRUE(planned.SameStorage("b", "c"));
  EXPECT_TRUE(planned.SameStorage("a", "d"));
  EXPECT_FALSE(planned.SameStorage("a", "b"));
}

// A freed float32 buffer of 256 bytes on cuda:0 is reused only by a buffer
// of that dtype, device and (symbolic) size.
TEST(ReusePlannerTest, OtherDtypesDevicesAndSizesDoNotReuse) {
  const Planned planned = PlanReuse(
      Program({Allocate("a", 256), Kernel(), Free("a"),
               Allocate("half", 256, "torch.float16"),
               Allocate("other_device", 256, "torch.float32", "cuda:1"),
               Allocate("larger", 512), Allocate("smaller", 128),
               Allocate("symbolic", 256, "torch.float32", "cuda:0", "4*s0"),
               Allocate("same", 256), Kernel(), Free("half"),
               Free("other_device"), Free("larger"), Free("smaller"),
               Free("symbolic"), Free("same"), Kernel()}));
  ASSERT_TRUE(planned.plan.ok()) << planned.plan.status();
  EXPECT_THAT(planned.decisions().reuse,
              ElementsAre(ReuseDecision{8, 2, "same", "a"}));
  EXPECT_EQ(planned.plan->pools.size(), 6u);
}

// Symbolic sizes are compared as written: a storage of s0 is not one of s1,
// even when the size hints agree (buffer_reuse_key's comment).
TEST(ReusePlannerTest, SymbolicSizesMustMatch) {
  const Planned planned = PlanReuse(
      Program({Allocate("a", 64, "torch.float32", "cuda:0", "4*s0"), Kernel(),
               Free("a"), Allocate("b", 64, "torch.float32", "cuda:0", "4*s1"),
               Allocate("c", 64, "torch.float32", "cuda:0", "4*s0"), Kernel(),
               Free("b"), Free("c"), Kernel()}));
  ASSERT_TRUE(planned.plan.ok()) << planned.plan.status();
  EXPECT_THAT(planned.decisions().reuse,
              ElementsAre(ReuseDecision{4, 2, "c", "a"}));
}

//   0 ALLOCATE a | 2 REUSE a -> b | 4 FREE b, 5 ALLOCATE c | 7 FREE c |
// The in-place REUSE makes one group {a, b}; freeing b frees it, under the
// name the FREE line gives.
TEST(ReusePlannerTest, ReuseLinesInTheInputJoinTheGroup) {
  const Planned planned = PlanReuse(
      Program({Allocate("a", 256), Kernel(), Reuse("a", "b"), Kernel(),
               Free("b"), Allocate("c", 256), Kernel(), Free("c"), Kernel()}));
  ASSERT_TRUE(planned.plan.ok()) << planned.plan.status();
  ASSERT_EQ(planned.problem.buffers.size(), 2u);
  EXPECT_THAT(planned.decisions().reuse,
              ElementsAre(ReuseDecision{5, 4, "c", "b"}));
  EXPECT_TRUE(planned.SameStorage("a", "c"));
}

//   0 ALLOCATE big | 2 FREE big, 3 ALLOCATE a | 5 FREE a, 6 ENTER,
//   7 ALLOCATE b | 9 FREE b, 10 EXIT, 11 ALLOCATE c | 13 FREE c |
// Inside the subgraph b cannot take a's storage (another planning state),
// and after it c cannot take b's (the subgraph's state is gone): c takes a.
// (big, another dtype, makes the peak that lets c hold a's storage over
// the subgraph's kernel.)
TEST(ReusePlannerTest, NothingIsReusedAcrossASubgraphBoundary) {
  const Planned planned = PlanReuse(
      Program({Allocate("big", 4096, "torch.int8"), Kernel(), Free("big"),
               Allocate("a", 256), Kernel(), Free("a"), Enter(),
               Allocate("b", 256), Kernel(), Free("b"), Exit(),
               Allocate("c", 256), Kernel(), Free("c"), Kernel()}));
  ASSERT_TRUE(planned.plan.ok()) << planned.plan.status();
  EXPECT_THAT(planned.decisions().reuse,
              ElementsAre(ReuseDecision{11, 5, "c", "a"}));
  EXPECT_FALSE(planned.SameStorage("a", "b"));
  EXPECT_FALSE(planned.SameStorage("b", "c"));
  EXPECT_TRUE(planned.SameStorage("a", "c"));
}

TEST(ReusePlannerTest, StoragesFreedInASubgraphAreReusedInside) {
  const Planned planned = PlanReuse(
      Program({Kernel(), Enter(), Allocate("a", 256), Kernel(), Free("a"),
               Allocate("b", 256), Kernel(), Free("b"), Exit(), Kernel()}));
  ASSERT_TRUE(planned.plan.ok()) << planned.plan.status();
  EXPECT_THAT(planned.decisions().reuse,
              ElementsAre(ReuseDecision{5, 4, "b", "a"}));
}

// An output is never freed: even a FREE line naming it gives nothing back.
TEST(ReusePlannerTest, OutputsAreNeverFreed) {
  const Planned planned =
      PlanReuse(Program({Allocate("out", 256), Kernel(), Free("out"),
                         Allocate("b", 256), Kernel(), Free("b"), Kernel()},
                        {"out"}));
  ASSERT_TRUE(planned.plan.ok()) << planned.plan.status();
  EXPECT_THAT(planned.decisions().reuse, IsEmpty());
  EXPECT_FALSE(planned.SameStorage("out", "b"));
}

// An output may take an intermediate's freed storage: it is allocated like
// any buffer.
TEST(ReusePlannerTest, AnOutputMayReuseAFreedStorage) {
  for (const PoolMode mode : {PoolMode::kNone, PoolMode::kIntermediates,
                              PoolMode::kOutputs, PoolMode::kCombined}) {
    const Planned planned =
        PlanReuse(Program({Allocate("a", 256), Kernel(), Free("a"),
                           Allocate("out", 256), Kernel()},
                          {"out"}),
                  mode);
    ASSERT_TRUE(planned.plan.ok()) << planned.plan.status();
    EXPECT_THAT(planned.decisions().reuse,
                ElementsAre(ReuseDecision{3, 2, "out", "a"}))
        << mode;
    EXPECT_TRUE(planned.SameStorage("a", "out")) << mode;
  }
}

//   0 ALLOCATE a1, 1 ALLOCATE a2 | 3 FREE a1, 4 FREE a2, 5 ALLOCATE big |
//   7 FREE big, 8 ALLOCATE b1, 9 ALLOCATE b2 | 11 FREE b1, 12 FREE b2,
//   13 ALLOCATE huge | 15 FREE huge |
// Bytes held per kernel: 512, 1700, 512, 2048: the peak is 2048. b1 takes
// a2 across the second kernel (1700 + 256 <= 2048), which then holds 1956;
// b2 taking a1 would make it 2212 > 2048, so b2 gets a fresh allocation
// (EfficientPeakEstimate, torch >= 2.9).
TEST(ReusePlannerTest, AReuseThatWouldRaiseThePeakIsRefused) {
  const Planned planned = PlanReuse(
      Program({Allocate("a1", 256), Allocate("a2", 256), Kernel(), Free("a1"),
               Free("a2"), Allocate("big", 1700, "torch.int8"), Kernel(),
               Free("big"), Allocate("b1", 256), Allocate("b2", 256), Kernel(),
               Free("b1"), Free("b2"), Allocate("huge", 2048, "torch.int8"),
               Kernel(), Free("huge"), Kernel()}));
  ASSERT_TRUE(planned.plan.ok()) << planned.plan.status();
  EXPECT_THAT(planned.decisions().reuse,
              ElementsAre(ReuseDecision{8, 4, "b1", "a2"}));
  EXPECT_FALSE(planned.SameStorage("a1", "b2"));
}

// With the FREE and the ALLOCATE between the same two kernels, the reuse
// is always allowed (should_reuse_buffer's adjacent scheduler nodes).
TEST(ReusePlannerTest, AReuseBetweenTheSameKernelsIsAlwaysAllowed) {
  const Planned planned =
      PlanReuse(Program({Allocate("a", 256), Kernel(), Free("a"),
                         Allocate("b", 4096, "torch.int8"), Allocate("c", 256),
                         Kernel(), Free("b"), Free("c"), Kernel()}));
  ASSERT_TRUE(planned.plan.ok()) << planned.plan.status();
  EXPECT_THAT(planned.decisions().reuse,
              ElementsAre(ReuseDecision{4, 2, "c", "a"}));
}

WrapperLine AtNode(WrapperLine line, int64_t node) {
  line.scheduler_node = node;
  return line;
}

//   0 ALLOCATE a @0 | 2 FREE a @0 | 4 ALLOCATE b @1 | 6 FREE b @1 | |
//   9 ALLOCATE c @3 | 11 FREE c @3 |                  (@: scheduler node)
// With Inductor's per-node bytes [256, 256, 1000, 256, 0] (peak 1000): b
// and a belong to adjacent nodes, so b takes a's storage although a line
// of another kind sits between them; c taking b's would hold 256 bytes
// over node 2, which already has the peak: refused. Estimated from the
// lines alone (nothing is held between b's FREE and c), c takes it.
TEST(ReusePlannerTest, InductorsPeakEstimateDecidesWhenGiven) {
  WrapperProgram program = Program(
      {AtNode(Allocate("a", 256), 0), Kernel(), AtNode(Free("a"), 0), Kernel(),
       AtNode(Allocate("b", 256), 1), Kernel(), AtNode(Free("b"), 1), Kernel(),
       Kernel(), AtNode(Allocate("c", 256), 3), Kernel(), AtNode(Free("c"), 3),
       Kernel()});
  const Planned estimated = PlanReuse(program);
  ASSERT_TRUE(estimated.plan.ok()) << estimated.plan.status();
  EXPECT_THAT(estimated.decisions().reuse,
              ElementsAre(ReuseDecision{4, 2, "b", "a"},
                          ReuseDecision{9, 6, "c", "b"}));

  program.scheduler_node_bytes = {256, 256, 1000, 256, 0};
  const Planned exact = PlanReuse(program);
  ASSERT_TRUE(exact.plan.ok()) << exact.plan.status();
  EXPECT_THAT(exact.decisions().reuse,
              ElementsAre(ReuseDecision{4, 2, "b", "a"}));

  program.lines[9].scheduler_node = -1;
  const Planned missing = PlanReuse(program);
  EXPECT_EQ(missing.plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.plan.status().message(),
              HasSubstr("events[9].scheduler_node: is missing"));
  program.lines[9].scheduler_node = 5;
  EXPECT_THAT(PlanReuse(program).plan.status().message(),
              HasSubstr("events[9].scheduler_node: 5 is not below"));
}

// Memory-planning lines after the last kernel are dropped unless they name
// an output (memory_plan_reuse pops them).
TEST(ReusePlannerTest, TrailingLinesArePoppedUnlessTheyNameAnOutput) {
  const std::vector<WrapperLine> lines = {Allocate("a", 256), Kernel(),
                                          Free("a"), Allocate("b", 256)};
  const Planned popped = PlanReuse(Program(lines));
  ASSERT_TRUE(popped.plan.ok()) << popped.plan.status();
  EXPECT_THAT(popped.decisions().reuse, IsEmpty());
  const Planned kept = PlanReuse(Program(lines, {"b"}));
  ASSERT_TRUE(kept.plan.ok()) << kept.plan.status();
  EXPECT_THAT(kept.decisions().reuse,
              ElementsAre(ReuseDecision{3, 2, "b", "a"}));
}

// An extern kernel's output, freed with its allocation given, is reused
// like any storage; the buffer taking it gets bytes of its own in the plan.
// A removed buffer's FREE gives nothing.
TEST(ReusePlannerTest, ExternOutputsAreReusedAndRemovedBuffersAreNot) {
  WrapperProgram program = Program(
      {Kernel(), FreeExternal("ext", 256), FreeExternal("gone", 512),
       Allocate("gone_size", 512), Allocate("b", 256), Kernel(), Free("b"),
       Allocate("c", 256), Kernel(), Free("c"), Free("gone_size"), Kernel()});
  program.removed_buffers = {"gone"};
  const Planned planned = PlanReuse(program);
  ASSERT_TRUE(planned.plan.ok()) << planned.plan.status();
  EXPECT_THAT(planned.decisions().reuse,
              ElementsAre(ReuseDecision{4, 1, "b", "ext"},
                          ReuseDecision{7, 6, "c", "b"}));
  EXPECT_TRUE(planned.SameStorage("b", "c"));
  EXPECT_FALSE(planned.SameStorage("gone_size", "b"));
}

// A buffer freed twice gives its storage once; a FREE that is not its
// group's last line gives nothing (its live range goes on).
TEST(ReusePlannerTest, OnlyTheLastFreeOfAGroupFreesIt) {
  const Planned planned =
      PlanReuse(Program({Allocate("a", 256), Kernel(), Free("a"), Kernel(),
                         Free("a"), Allocate("b", 256), Allocate("c", 256),
                         Kernel(), Free("b"), Free("c"), Kernel()}));
  ASSERT_TRUE(planned.plan.ok()) << planned.plan.status();
  EXPECT_THAT(planned.decisions().reuse,
              ElementsAre(ReuseDecision{5, 4, "b", "a"}));
}

// AOT Inductor's CPU wrapper puts buffers on the stack when the fresh CPU
// allocations of static size total at most 1024 * 100 elements.
std::vector<WrapperLine> CpuLines(Bytes size, const std::string& dtype) {
  return {Allocate("a", size, dtype, "cpu"), Kernel(), Free("a"), Kernel()};
}

TEST(ReusePlannerTest, StackAllocationUpToTheLimitExactly) {
  const Planned at_limit = PlanReuse(Program(CpuLines(102400, "torch.uint8")));
  ASSERT_TRUE(at_limit.plan.ok()) << at_limit.plan.status();
  const StackAllocationDecision& allowed =
      *at_limit.decisions().stack_allocation;
  EXPECT_TRUE(allowed.allowed);
  EXPECT_EQ(allowed.total_static_elements, 102400);
  EXPECT_EQ(allowed.total_static_bytes, 102400);
  EXPECT_EQ(allowed.limit_elements, 102400);
  EXPECT_THAT(allowed.buffers, ElementsAre("a"));

  const Planned over = PlanReuse(Program(CpuLines(102401, "torch.uint8")));
  ASSERT_TRUE(over.plan.ok()) << over.plan.status();
  const StackAllocationDecision& refused = *over.decisions().stack_allocation;
  EXPECT_FALSE(refused.allowed);
  EXPECT_EQ(refused.total_static_elements, 102401);
  EXPECT_THAT(refused.buffers, IsEmpty());
}

// The limit counts elements: 102400 float32 elements are 409600 bytes.
TEST(ReusePlannerTest, StackAllocationCountsElementsNotBytes) {
  const Planned at_limit =
      PlanReuse(Program(CpuLines(4 * 102400, "torch.float32")));
  ASSERT_TRUE(at_limit.plan.ok()) << at_limit.plan.status();
  EXPECT_TRUE(at_limit.decisions().stack_allocation->allowed);
  EXPECT_EQ(at_limit.decisions().stack_allocation->total_static_bytes,
            4 * 102400);
  const Planned over =
      PlanReuse(Program(CpuLines(4 * 102401, "torch.float32")));
  ASSERT_TRUE(over.plan.ok()) << over.plan.status();
  EXPECT_FALSE(over.decisions().stack_allocation->allowed);
}

// Only fresh allocations count: b reuses a's storage (and is on the stack
// with it); non-CPU and dynamic-size buffers neither count nor go on the
// stack.
TEST(ReusePlannerTest, StackAllocationCountsFreshStaticCpuAllocations) {
  const Planned planned = PlanReuse(
      Program({Allocate("a", 100000, "torch.uint8", "cpu"),
               Allocate("gpu", 1 << 20, "torch.uint8", "cuda:0"),
               Allocate("dynamic", 100000, "torch.uint8", "cpu", "s0"),
               Kernel(), Free("a"), Allocate("b", 100000, "torch.uint8", "cpu"),
               Kernel(), Free("b"), Free("gpu"), Free("dynamic"), Kernel()}));
  ASSERT_TRUE(planned.plan.ok()) << planned.plan.status();
  const StackAllocationDecision& stack = *planned.decisions().stack_allocation;
  EXPECT_TRUE(stack.allowed);
  EXPECT_EQ(stack.total_static_elements, 100000);
  EXPECT_THAT(stack.buffers, ElementsAre("a", "b"));
}

// Subgraphs count too: the sum over every planning state.
TEST(ReusePlannerTest, StackAllocationSumsOverSubgraphs) {
  const Planned planned =
      PlanReuse(Program({Allocate("a", 60000, "torch.uint8", "cpu"), Kernel(),
                         Enter(), Allocate("b", 60000, "torch.uint8", "cpu"),
                         Kernel(), Free("b"), Exit(), Free("a"), Kernel()}));
  ASSERT_TRUE(planned.plan.ok()) << planned.plan.status();
  const StackAllocationDecision& stack = *planned.decisions().stack_allocation;
  EXPECT_EQ(stack.total_static_elements, 120000);
  EXPECT_FALSE(stack.allowed);
}

TEST(ReusePlannerTest, RejectsUnbalancedSubgraphsAndFixedOffsets) {
  const Planned exit =
      PlanReuse(Program({Allocate("a", 64), Kernel(), Exit(), Kernel()}));
  EXPECT_EQ(exit.plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(exit.plan.status().message(),
              HasSubstr("events[2]: EXIT_SUBGRAPH without an ENTER_SUBGRAPH"));
  const Planned enter = PlanReuse(
      Program({Allocate("a", 64), Enter(), Kernel(), Free("a"), Kernel()}));
  EXPECT_EQ(enter.plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(enter.plan.status().message(),
              HasSubstr("events[1]: ENTER_SUBGRAPH without an EXIT_SUBGRAPH"));

  Problem problem;
  problem.buffers = {MakeBuffer("a", 64, 0, 1)};
  problem.buffers[0].fixed_offset = 0;
  for (const Planner* planner :
       std::vector<const Planner*>{new ReusePlanner(), new NncPlanner()}) {
    absl::StatusOr<Plan> plan = planner->PlanProblem(problem, PlanContext());
    EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(plan.status().message(),
                HasSubstr("buffers[0] (\"a\"): fixed_offset is set"));
    delete planner;
  }
}

//   bytes ^
//     256 | a [0,2) | b [2,4)        b begins where a ends: it takes a's
//         +---------+---------+      storage. c [1,3) overlaps both; out
//     256 |   c [1,3)   |            [0,1) is an output, never freed, so d
//         +----+--------+            [1,2) cannot take it.
TEST(ReusePlannerTest, PlainBuffersReuseWhereRangesEnd) {
  const Problem problem = BuffersProblem(
      {MakeBuffer("a", 256, 0, 2), MakeBuffer("b", 256, 2, 4),
       MakeBuffer("c", 256, 1, 3), MakeBuffer("out", 512, 0, 1, true),
       MakeBuffer("d", 512, 1, 2)});
  const Plan plan = PlanBuffers(ReusePlanner(), problem);
  ASSERT_NE(plan.decisions, nullptr);
  EXPECT_THAT(plan.decisions->reuse,
              ElementsAre(ReuseDecision{-1, -1, "b", "a"}));
  EXPECT_EQ(plan.assignments[0], plan.assignments[1]);
  EXPECT_EQ(plan.pools.size(), 4u);
}

}  // namespace
}  // namespace memplan
