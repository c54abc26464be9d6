// Strategies "reuse" (Inductor's memory_plan_reuse) and "nnc" (NNC's
// AllocBufsWithMemReuse): hand-written wrapper lines, one per rule of the
// reference code, each checked for its decisions and for a plan the
// independent validator accepts. Line numbers in the comments are indices
// into program.lines; "|" marks a kernel (a line of another kind).
#include "core/inductor/reuse_planner.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/inductor/wrapper_lines.h"
#include "core/nnc/nnc_planner.h"
#include "core/problem.h"
#include "core/reference_decisions.h"
#include "core/validator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/random_problems.h"
#include "tests/planner/wrapper_line_builders.h"

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
using wrapper_line_builders::Line;
using wrapper_line_builders::Reuse;

// A program planned by one strategy.
struct Planned {
  Problem problem;
  absl::StatusOr<Plan> plan;

  const ReferenceDecisions& decisions() const { return *plan->decisions; }

  size_t Group(const std::string& name) const {
    for (size_t i = 0; i < problem.buffers.size(); ++i) {
      if (problem.buffers[i].names[0] == name) return i;
    }
    ADD_FAILURE() << "no group " << name;
    return 0;
  }

  // Whether the two groups share a storage: one pool, one offset.
  bool SameStorage(const std::string& a, const std::string& b) const {
    return plan->assignments[Group(a)] == plan->assignments[Group(b)];
  }
};

// Plans `program` with `planner` in `mode`, and checks that the plan passes
// the validator when there is one.
Planned PlanLines(const Planner& planner, const WrapperProgram& program,
                  PoolMode mode = PoolMode::kIntermediates) {
  Planned planned;
  absl::StatusOr<PoolLines> lines = GroupWrapperLines(program, "events");
  EXPECT_TRUE(lines.ok()) << lines.status();
  if (!lines.ok()) return planned;
  planned.problem.buffers = lines->buffers;
  planned.problem.pool_mode = mode;
  EXPECT_TRUE(ValidateProblem(planned.problem).ok());
  PlanContext context;
  context.wrapper_program = &program;
  context.wrapper_lines = &*lines;
  planned.plan = planner.PlanProblem(planned.problem, context);
  if (planned.plan.ok()) {
    EXPECT_TRUE(ValidatePlan(planned.problem, *planned.plan).ok())
        << ValidatePlan(planned.problem, *planned.plan) << "\n"
        << *planned.plan;
    EXPECT_NE(planned.plan->decisions, nullptr);
  }
  return planned;
}

Planned PlanReuse(const WrapperProgram& program,
                  PoolMode mode = PoolMode::kIntermediates) {
  return PlanLines(ReusePlanner(), program, mode);
}

Planned PlanNnc(const WrapperProgram& program,
                PoolMode mode = PoolMode::kIntermediates) {
  return PlanLines(NncPlanner(), program, mode);
}

WrapperProgram Program(std::vector<WrapperLine> lines,
                       std::vector<std::string> outputs = {}) {
  WrapperProgram program;
  program.lines = std::move(lines);
  program.output_names = std::move(outputs);
  return program;
}

// ---------------------------------------------------------------------------
// reuse

//   0 ALLOCATE buf0 | 2 FREE buf0, 3 ALLOCATE buf1 | 5 FREE buf1 |
// buf1 has buf0's key: it takes buf0's storage.
TEST(ReusePlannerTest, AnAllocationTakesAFreedStorageOfItsKey) {
  const Planned planned = PlanReuse(Program(
      {Allocate("buf0", 256), Kernel(), Free("buf0"), Allocate("buf1", 256),
       Kernel(), Free("buf1"), Kernel()}));
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
  const Planned planned = PlanReuse(Program(
      {Allocate("a", 256), Allocate("b", 256), Kernel(), Free("a"), Free("b"),
       Allocate("c", 256), Allocate("d", 256), Kernel(), Free("c"), Free("d"),
       Kernel()}));
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
  const Planned planned = PlanReuse(Program(
      {Allocate("a", 256), Kernel(), Free("a"),
       Allocate("half", 256, "torch.float16"),
       Allocate("other_device", 256, "torch.float32", "cuda:1"),
       Allocate("larger", 512), Allocate("smaller", 128),
       Allocate("symbolic", 256, "torch.float32", "cuda:0", "4*s0"),
       Allocate("same", 256), Kernel(), Free("half"), Free("other_device"),
       Free("larger"), Free("smaller"), Free("symbolic"), Free("same"),
       Kernel()}));
  ASSERT_TRUE(planned.plan.ok()) << planned.plan.status();
  EXPECT_THAT(planned.decisions().reuse,
              ElementsAre(ReuseDecision{8, 2, "same", "a"}));
  EXPECT_EQ(planned.plan->pools.size(), 6u);
}

// Symbolic sizes are compared as written: a storage of s0 is not one of s1,
// even when the size hints agree (buffer_reuse_key's comment).
TEST(ReusePlannerTest, SymbolicSizesMustMatch) {
  const Planned planned = PlanReuse(Program(
      {Allocate("a", 64, "torch.float32", "cuda:0", "4*s0"), Kernel(),
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
  const Planned planned = PlanReuse(Program(
      {Allocate("a", 256), Kernel(), Reuse("a", "b"), Kernel(), Free("b"),
       Allocate("c", 256), Kernel(), Free("c"), Kernel()}));
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
  const Planned planned = PlanReuse(Program(
      {Allocate("big", 4096, "torch.int8"), Kernel(), Free("big"),
       Allocate("a", 256), Kernel(), Free("a"), Enter(), Allocate("b", 256),
       Kernel(), Free("b"), Exit(), Allocate("c", 256), Kernel(), Free("c"),
       Kernel()}));
  ASSERT_TRUE(planned.plan.ok()) << planned.plan.status();
  EXPECT_THAT(planned.decisions().reuse,
              ElementsAre(ReuseDecision{11, 5, "c", "a"}));
  EXPECT_FALSE(planned.SameStorage("a", "b"));
  EXPECT_FALSE(planned.SameStorage("b", "c"));
  EXPECT_TRUE(planned.SameStorage("a", "c"));
}

TEST(ReusePlannerTest, StoragesFreedInASubgraphAreReusedInside) {
  const Planned planned = PlanReuse(Program(
      {Kernel(), Enter(), Allocate("a", 256), Kernel(), Free("a"),
       Allocate("b", 256), Kernel(), Free("b"), Exit(), Kernel()}));
  ASSERT_TRUE(planned.plan.ok()) << planned.plan.status();
  EXPECT_THAT(planned.decisions().reuse,
              ElementsAre(ReuseDecision{5, 4, "b", "a"}));
}

// An output is never freed: even a FREE line naming it gives nothing back.
TEST(ReusePlannerTest, OutputsAreNeverFreed) {
  const Planned planned = PlanReuse(Program(
      {Allocate("out", 256), Kernel(), Free("out"), Allocate("b", 256),
       Kernel(), Free("b"), Kernel()},
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
    const Planned planned = PlanReuse(
        Program({Allocate("a", 256), Kernel(), Free("a"),
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
  const Planned planned = PlanReuse(Program(
      {Allocate("a1", 256), Allocate("a2", 256), Kernel(), Free("a1"),
       Free("a2"), Allocate("big", 1700, "torch.int8"), Kernel(), Free("big"),
       Allocate("b1", 256), Allocate("b2", 256), Kernel(), Free("b1"),
       Free("b2"), Allocate("huge", 2048, "torch.int8"), Kernel(),
       Free("huge"), Kernel()}));
  ASSERT_TRUE(planned.plan.ok()) << planned.plan.status();
  EXPECT_THAT(planned.decisions().reuse,
              ElementsAre(ReuseDecision{8, 4, "b1", "a2"}));
  EXPECT_FALSE(planned.SameStorage("a1", "b2"));
}

// With the FREE and the ALLOCATE between the same two kernels, the reuse
// is always allowed (should_reuse_buffer's adjacent scheduler nodes).
TEST(ReusePlannerTest, AReuseBetweenTheSameKernelsIsAlwaysAllowed) {
  const Planned planned = PlanReuse(Program(
      {Allocate("a", 256), Kernel(), Free("a"),
       Allocate("b", 4096, "torch.int8"), Allocate("c", 256), Kernel(),
       Free("b"), Free("c"), Kernel()}));
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
  const Planned planned = PlanReuse(Program(
      {Allocate("a", 256), Kernel(), Free("a"), Kernel(), Free("a"),
       Allocate("b", 256), Allocate("c", 256), Kernel(), Free("b"),
       Free("c"), Kernel()}));
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
  const Planned planned = PlanReuse(Program(
      {Allocate("a", 100000, "torch.uint8", "cpu"),
       Allocate("gpu", 1 << 20, "torch.uint8", "cuda:0"),
       Allocate("dynamic", 100000, "torch.uint8", "cpu", "s0"), Kernel(),
       Free("a"), Allocate("b", 100000, "torch.uint8", "cpu"), Kernel(),
       Free("b"), Free("gpu"), Free("dynamic"), Kernel()}));
  ASSERT_TRUE(planned.plan.ok()) << planned.plan.status();
  const StackAllocationDecision& stack = *planned.decisions().stack_allocation;
  EXPECT_TRUE(stack.allowed);
  EXPECT_EQ(stack.total_static_elements, 100000);
  EXPECT_THAT(stack.buffers, ElementsAre("a", "b"));
}

// Subgraphs count too: the sum over every planning state.
TEST(ReusePlannerTest, StackAllocationSumsOverSubgraphs) {
  const Planned planned = PlanReuse(Program(
      {Allocate("a", 60000, "torch.uint8", "cpu"), Kernel(), Enter(),
       Allocate("b", 60000, "torch.uint8", "cpu"), Kernel(), Free("b"),
       Exit(), Free("a"), Kernel()}));
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

// ---------------------------------------------------------------------------
// Plain buffers: lines derived from the live ranges.

Problem BuffersProblem(std::vector<Buffer> buffers,
                       PoolMode mode = PoolMode::kIntermediates) {
  Problem problem;
  problem.buffers = std::move(buffers);
  problem.pool_mode = mode;
  for (Buffer& buffer : problem.buffers) buffer.dtype = "torch.float32";
  return problem;
}

Plan PlanBuffers(const Planner& planner, const Problem& problem) {
  return PlanAndValidate(planner, problem);
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

// Every pool mode: the storages laid out so that the validator accepts them.
//   a [0,2) 256 -> b [2,4) 256 (reuses a); c [0,4) 128; out1, out2 outputs.
TEST(ReusePlannerTest, StoragesAreLaidOutPerPoolMode) {
  const std::vector<Buffer> buffers = {
      MakeBuffer("a", 256, 0, 2), MakeBuffer("b", 256, 2, 4),
      MakeBuffer("c", 128, 0, 4), MakeBuffer("out1", 64, 1, 5, true),
      MakeBuffer("out2", 100, 3, 5, true)};
  const struct {
    PoolMode mode;
    size_t pools;
  } kCases[] = {{PoolMode::kNone, 4},
                {PoolMode::kIntermediates, 4},
                {PoolMode::kOutputs, 3},
                {PoolMode::kCombined, 1}};
  for (const auto& c : kCases) {
    const Problem problem = BuffersProblem(buffers, c.mode);
    for (const Planner* planner :
         std::vector<const Planner*>{new ReusePlanner(), new NncPlanner()}) {
      const Plan plan = PlanBuffers(*planner, problem);
      EXPECT_EQ(plan.pools.size(), c.pools) << c.mode << " " << planner->name();
      EXPECT_EQ(plan.assignments[0], plan.assignments[1])
          << c.mode << " " << planner->name();
      delete planner;
    }
  }
}

// A buffer's own alignment is honoured where storages lie back to back.
TEST(ReusePlannerTest, StoragesKeepTheirBuffersAlignments) {
  std::vector<Buffer> buffers = {MakeBuffer("a", 100, 0, 4),
                                 MakeBuffer("b", 64, 0, 4),
                                 MakeBuffer("c", 64, 4, 6)};
  buffers[1].alignment = 1024;
  for (const PoolMode mode : {PoolMode::kNone, PoolMode::kCombined}) {
    const Problem problem = BuffersProblem(buffers, mode);
    for (const Planner* planner :
         std::vector<const Planner*>{new ReusePlanner(), new NncPlanner()}) {
      const Plan plan = PlanBuffers(*planner, problem);
      ASSERT_EQ(plan.assignments.size(), 3u);
      EXPECT_EQ(plan.assignments[1].offset % 1024, 0) << mode;
      if (mode == PoolMode::kCombined) {
        EXPECT_EQ(plan.assignments[1].offset, 1024) << planner->name();
      }
      delete planner;
    }
  }
}

// ---------------------------------------------------------------------------
// nnc

std::vector<NncDecision> NncOf(const Plan& plan) {
  return plan.decisions == nullptr ? std::vector<NncDecision>()
                                   : plan.decisions->nnc;
}

//   a [0,1) 256 and b [0,2) 1024 are released at c's start 2, b (ended
//   later) at the front of the list: c (256) takes b's memory, the first
//   that fits, though a's fits exactly. d [2,3) 2048 fits nowhere; e [2,3)
//   256 takes a's.
TEST(NncPlannerTest, BuffersByStartTakeTheFirstFreedMemoryThatFits) {
  const Problem problem = BuffersProblem(
      {MakeBuffer("a", 256, 0, 1), MakeBuffer("b", 1024, 0, 2),
       MakeBuffer("c", 256, 2, 3), MakeBuffer("d", 2048, 2, 3),
       MakeBuffer("e", 256, 2, 3)});
  const Plan plan = PlanBuffers(NncPlanner(), problem);
  EXPECT_EQ(plan.planner, "nnc");
  EXPECT_THAT(
      NncOf(plan),
      ElementsAre(NncDecision{-1, "a", NncPlacement::kNoFit, ""},
                  NncDecision{-1, "b", NncPlacement::kNoFit, ""},
                  NncDecision{-1, "c", NncPlacement::kReused, "b"},
                  NncDecision{-1, "d", NncPlacement::kNoFit, ""},
                  NncDecision{-1, "e", NncPlacement::kReused, "a"}));
  EXPECT_EQ(plan.assignments[2], plan.assignments[1]);
  EXPECT_EQ(plan.assignments[4], plan.assignments[0]);
}

// Start order, not request order: c starts first.
TEST(NncPlannerTest, OrdersBuffersByStart) {
  const Problem problem = BuffersProblem(
      {MakeBuffer("late", 256, 5, 6), MakeBuffer("early", 256, 0, 2)});
  const Plan plan = PlanBuffers(NncPlanner(), problem);
  EXPECT_THAT(NncOf(plan),
              ElementsAre(NncDecision{-1, "early", NncPlacement::kNoFit, ""},
                          NncDecision{-1, "late", NncPlacement::kReused,
                                      "early"}));
}

// A buffer of dynamic size gets memory of its own that no one reuses, and
// takes no freed memory either.
TEST(NncPlannerTest, DynamicSizesAreNeverReused) {
  std::vector<Buffer> buffers = {
      MakeBuffer("dyn", 256, 0, 1), MakeBuffer("after_dyn", 256, 1, 2),
      MakeBuffer("static", 256, 2, 3), MakeBuffer("dyn2", 256, 3, 4)};
  buffers[0].symbolic_size = "4*s0";
  buffers[3].size_is_data_dependent = true;
  const Plan plan = PlanBuffers(NncPlanner(), BuffersProblem(buffers));
  EXPECT_THAT(
      NncOf(plan),
      ElementsAre(NncDecision{-1, "dyn", NncPlacement::kDynamicSize, ""},
                  NncDecision{-1, "after_dyn", NncPlacement::kNoFit, ""},
                  NncDecision{-1, "static", NncPlacement::kReused,
                              "after_dyn"},
                  NncDecision{-1, "dyn2", NncPlacement::kDynamicSize, ""}));
}

// Outputs are NNC's buffer arguments: memory of their own, never reused.
TEST(NncPlannerTest, OutputsAreNotPlanned) {
  const Problem problem = BuffersProblem(
      {MakeBuffer("a", 256, 0, 1), MakeBuffer("out", 256, 1, 3, true),
       MakeBuffer("b", 256, 3, 4)});
  const Plan plan = PlanBuffers(NncPlanner(), problem);
  EXPECT_THAT(NncOf(plan),
              ElementsAre(NncDecision{-1, "a", NncPlacement::kNoFit, ""},
                          NncDecision{-1, "out", NncPlacement::kOutput, ""},
                          NncDecision{-1, "b", NncPlacement::kReused, "a"}));
}

// Memory of another device never fits.
TEST(NncPlannerTest, MemoryOfAnotherDeviceNeverFits) {
  const Problem problem = BuffersProblem(
      {MakeBuffer("a", 256, 0, 1, false, "cuda:1"), MakeBuffer("b", 256, 1, 2)});
  const Plan plan = PlanBuffers(NncPlanner(), problem);
  EXPECT_THAT(NncOf(plan),
              ElementsAre(NncDecision{-1, "a", NncPlacement::kNoFit, ""},
                          NncDecision{-1, "b", NncPlacement::kNoFit, ""}));
}

//   0 ALLOCATE a | 2 FREE a, 3 FREE ext (an extern kernel's output) |
//   5 ALLOCATE b | 7 FREE b |
// ext never takes freed memory (a's, free when ext is placed, would fit),
// but once it ends its memory is up for grabs, at the front of the list:
// b takes it. (AllocBufsWithMemReuse maps an external buffer to itself like
// any other, so its memory is released like any other.)
TEST(NncPlannerTest, ExternalBuffersNeverTakeFreedMemory) {
  const Planned planned = PlanNnc(Program(
      {Allocate("a", 1024), Kernel(), Free("a"), FreeExternal("ext", 256),
       Kernel(), Allocate("b", 256), Kernel(), Free("b"), Kernel()}));
  ASSERT_TRUE(planned.plan.ok()) << planned.plan.status();
  EXPECT_THAT(
      planned.decisions().nnc,
      ElementsAre(NncDecision{0, "a", NncPlacement::kNoFit, ""},
                  NncDecision{3, "ext", NncPlacement::kExternal, ""},
                  NncDecision{5, "b", NncPlacement::kReused, "ext"}));
  EXPECT_FALSE(planned.SameStorage("a", "b"));
  EXPECT_THAT(planned.decisions().reuse, IsEmpty());
  EXPECT_FALSE(planned.decisions().stack_allocation.has_value());
}

// In wrapper lines, a buffer freed at a timestep passes its memory to one
// allocated at that timestep (its first kernel comes after the other's
// last).
TEST(NncPlannerTest, LinesFreeMemoryForTheNextKernel) {
  const Planned planned = PlanNnc(Program(
      {Allocate("a", 256), Kernel(), Free("a"), Allocate("b", 128), Kernel(),
       Free("b"), Kernel()}));
  ASSERT_TRUE(planned.plan.ok()) << planned.plan.status();
  EXPECT_THAT(planned.decisions().nnc,
              ElementsAre(NncDecision{0, "a", NncPlacement::kNoFit, ""},
                          NncDecision{3, "b", NncPlacement::kReused, "a"}));
  EXPECT_TRUE(planned.SameStorage("a", "b"));
}

TEST(ReferencePlannersTest, AreDeterministicAndNamedInStats) {
  RandomProblemOptions options;
  options.min_buffers = 20;
  options.max_buffers = 60;
  options.num_devices = 2;
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    const Problem problem = RandomProblem(seed, options);
    for (const Planner* planner :
         std::vector<const Planner*>{new ReusePlanner(), new NncPlanner()}) {
      const Plan first = PlanBuffers(*planner, problem);
      const Plan second = PlanBuffers(*planner, problem);
      EXPECT_EQ(first, second) << "seed " << seed;
      ASSERT_NE(first.decisions, nullptr);
      EXPECT_EQ(first.decisions->reuse, second.decisions->reuse);
      EXPECT_EQ(first.decisions->nnc, second.decisions->nnc);
      delete planner;
    }
  }
}

}  // namespace
}  // namespace memplan
