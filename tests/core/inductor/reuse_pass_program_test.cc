// The program the reuse passes walk (core/inductor/reuse_pass_program.h):
// the steps of wrapper lines and the lines derived from plain buffers, as
// the header orders them; the checks; and, through the two strategies that
// walk it, the same problem giving the same plan and decisions every time.
#include "core/inductor/reuse_pass_program.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/inductor/reuse_planner.h"
#include "core/inductor/wrapper_lines.h"
#include "core/nnc/nnc_planner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/inductor/planned_programs.h"
#include "tests/core/inductor/wrapper_line_builders.h"
#include "tests/core/random_problems.h"

namespace memplan {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using reuse_internal::CheckNoFixedOffsets;
using reuse_internal::IsStaticSize;
using reuse_internal::MakeProgram;
using reuse_internal::Step;
using reuse_internal::StepKind;
using wrapper_line_builders::Allocate;
using wrapper_line_builders::Free;
using wrapper_line_builders::Kernel;

// A step as "A buf" (ALLOCATE), "F buf" (FREE), "K" (kernel), with "?"
// after a line memory_plan_reuse pops.
std::string Describe(const Problem& problem, const Step& step) {
  std::string text;
  switch (step.kind) {
    case StepKind::kAllocate:
      text = "A " + problem.buffers[step.group].names[0];
      break;
    case StepKind::kFree:
      text = "F " + *step.name;
      break;
    case StepKind::kKernel:
      text = "K";
      break;
    case StepKind::kEnterSubgraph:
      text = "enter";
      break;
    case StepKind::kExitSubgraph:
      text = "exit";
      break;
  }
  return step.planned ? text : text + "?";
}

// Plain buffers: per timestep, FREEs of the non-empty ranges ending there,
// ALLOCATEs of those beginning there, FREEs of the empty ranges there, each
// in buffer order, then a kernel; outputs are never freed.
//
//   a [0,2)  b [2,4)  out [0,1) (output)  e [1,1) (empty)
TEST(ReusePassProgramTest, LinesDerivedFromBuffersAsTheHeaderOrdersThem) {
  Problem problem;
  problem.buffers = {MakeBuffer("a", 64, 0, 2), MakeBuffer("b", 64, 2, 4),
                     MakeBuffer("out", 64, 0, 1, /*is_output=*/true),
                     MakeBuffer("e", 64, 1, 1)};
  absl::StatusOr<reuse_internal::Program> program =
      MakeProgram(problem, PlanContext());
  ASSERT_TRUE(program.ok()) << program.status();
  std::vector<std::string> steps;
  for (const Step& step : program->steps) {
    steps.push_back(Describe(problem, step));
    EXPECT_EQ(step.line, -1);
  }
  EXPECT_THAT(steps, ElementsAre("A a", "A out", "K", "A e", "F e", "K", "F a",
                                 "A b", "K", "F b", "K"));
  EXPECT_THAT(program->allocate_step, ElementsAre(0, 7, 1, 3));
  EXPECT_THAT(program->last_step, ElementsAre(6, 9, 1, 4));
  EXPECT_EQ(program->scheduler_node_bytes, nullptr);
}

// The caller's lines: pool lines of groups and kernels, each with its line
// index; memory-planning lines after the last kernel are popped.
TEST(ReusePassProgramTest, StepsOfTheCallersLines) {
  const WrapperProgram wrapper =
      Program({Allocate("a", 64), Kernel(), Free("a"), Kernel(),
               Allocate("t", 64), Free("t")});
  absl::StatusOr<PoolLines> lines = GroupWrapperLines(wrapper, "events");
  ASSERT_TRUE(lines.ok()) << lines.status();
  Problem problem;
  problem.buffers = lines->buffers;
  PlanContext context;
  context.wrapper_program = &wrapper;
  context.wrapper_lines = &*lines;
  absl::StatusOr<reuse_internal::Program> program =
      MakeProgram(problem, context);
  ASSERT_TRUE(program.ok()) << program.status();
  std::vector<std::string> steps;
  std::vector<int64_t> line_of_step;
  for (const Step& step : program->steps) {
    steps.push_back(Describe(problem, step));
    line_of_step.push_back(step.line);
  }
  EXPECT_THAT(steps, ElementsAre("A a", "K", "F a", "K", "A t?", "F t?"));
  EXPECT_THAT(line_of_step, ElementsAre(0, 1, 2, 3, 4, 5));
}

TEST(ReusePassProgramTest, LinesWithoutTheirGroupsAreRefused) {
  const WrapperProgram wrapper = Program({Allocate("a", 64), Kernel()});
  Problem problem;
  problem.buffers = {MakeBuffer("a", 64, 1, 2)};
  PlanContext context;
  context.wrapper_program = &wrapper;
  absl::StatusOr<reuse_internal::Program> program =
      MakeProgram(problem, context);
  EXPECT_EQ(program.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(program.status().message(),
              HasSubstr("context.wrapper_program is set without "
                        "context.wrapper_lines"));
}

TEST(ReusePassProgramTest, FixedOffsetsAreRefusedNamingTheBuffer) {
  Problem problem;
  problem.buffers = {MakeBuffer("a", 64, 0, 1), MakeBuffer("b", 64, 0, 1)};
  EXPECT_TRUE(CheckNoFixedOffsets(problem, "reuse").ok());
  problem.buffers[1].fixed_offset = 0;
  const absl::Status status = CheckNoFixedOffsets(problem, "nnc");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr("buffers[1] (\"b\"): fixed_offset is set, which "
                        "strategy nnc cannot honour"));
}

TEST(ReusePassProgramTest, StaticSizesHaveNoSymbolsAndNoDataDependence) {
  EXPECT_TRUE(IsStaticSize("", false));
  EXPECT_TRUE(IsStaticSize("1024", false));
  EXPECT_FALSE(IsStaticSize("1024", true));
  EXPECT_FALSE(IsStaticSize("4*s0", false));
}

TEST(ReusePassProgramTest, BothPassesAreDeterministic) {
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
