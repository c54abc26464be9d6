// Strategy "nnc" (NNC's AllocBufsWithMemReuse): plain buffers and
// hand-written wrapper lines, one per rule of the reference code, each
// checked for its decisions and for a plan the independent validator
// accepts. Line numbers in the comments are indices into program.lines;
// "|" marks a kernel (a line of another kind).
#include "core/nnc/nnc_planner.h"

#include <vector>

#include "core/reference_decisions.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/inductor/planned_programs.h"
#include "tests/core/inductor/wrapper_line_builders.h"
#include "tests/core/random_problems.h"

namespace memplan {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

using wrapper_line_builders::Allocate;
using wrapper_line_builders::Free;
using wrapper_line_builders::FreeExternal;
using wrapper_line_builders::Kernel;

std::vector<NncDecision> NncOf(const Plan& plan) {
  return plan.decisions == nullptr ? std::vector<NncDecision>()
                                   : plan.decisions->nnc;
}

//   a [0,1) 256 and b [0,2) 1024 are released at c's start 2, b (ended
//   later) at the front of the list: c (256) takes b's memory, the first
//   that fits, though a's fits exactly. d [2,3) 2048 fits nowhere; e [2,3)
//   256 takes a's.
TEST(NncPlannerTest, BuffersByStartTakeTheFirstFreedMemoryThatFits) {
  const Problem problem =
      BuffersProblem({MakeBuffer("a", 256, 0, 1), MakeBuffer("b", 1024, 0, 2),
                      MakeBuffer("c", 256, 2, 3), MakeBuffer("d", 2048, 2, 3),
                      MakeBuffer("e", 256, 2, 3)});
  const Plan plan = PlanBuffers(NncPlanner(), problem);
  EXPECT_EQ(plan.planner, "nnc");
  EXPECT_THAT(NncOf(plan),
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
  EXPECT_THAT(
      NncOf(plan),
      ElementsAre(NncDecision{-1, "early", NncPlacement::kNoFit, ""},
                  NncDecision{-1, "late", NncPlacement::kReused, "early"}));
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
                  NncDecision{-1, "static", NncPlacement::kReused, "after_dyn"},
                  NncDecision{-1, "dyn2", NncPlacement::kDynamicSize, ""}));
}

// Outputs are NNC's buffer arguments: memory of their own, never reused.
TEST(NncPlannerTest, OutputsAreNotPlanned) {
  const Problem problem = BuffersProblem({MakeBuffer("a", 256, 0, 1),
                                          MakeBuffer("out", 256, 1, 3, true),
                                          MakeBuffer("b", 256, 3, 4)});
  const Plan plan = PlanBuffers(NncPlanner(), problem);
  EXPECT_THAT(NncOf(plan),
              ElementsAre(NncDecision{-1, "a", NncPlacement::kNoFit, ""},
                          NncDecision{-1, "out", NncPlacement::kOutput, ""},
                          NncDecision{-1, "b", NncPlacement::kReused, "a"}));
}

// Memory of another device never fits.
TEST(NncPlannerTest, MemoryOfAnotherDeviceNeverFits) {
  const Problem problem =
      BuffersProblem({MakeBuffer("a", 256, 0, 1, false, "cuda:1"),
                      MakeBuffer("b", 256, 1, 2)});
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
  EXPECT_THAT(planned.decisions().nnc,
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
  const Planned planned =
      PlanNnc(Program({Allocate("a", 256), Kernel(), Free("a"),
                       Allocate("b", 128), Kernel(), Free("b"), Kernel()}));
  ASSERT_TRUE(planned.plan.ok()) << planned.plan.status();
  EXPECT_THAT(planned.decisions().nnc,
              ElementsAre(NncDecision{0, "a", NncPlacement::kNoFit, ""},
                          NncDecision{3, "b", NncPlacement::kReused, "a"}));
  EXPECT_TRUE(planned.SameStorage("a", "b"));
}

}  // namespace
}  // namespace memplan
