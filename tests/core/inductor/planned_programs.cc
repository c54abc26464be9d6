#include "tests/core/inductor/planned_programs.h"

#include <string>
#include <utility>
#include <vector>

#include "core/inductor/reuse_planner.h"
#include "core/nnc/nnc_planner.h"
#include "core/problem.h"
#include "core/validator.h"
#include "gtest/gtest.h"
#include "tests/core/random_problems.h"

namespace memplan {

size_t Planned::Group(const std::string& name) const {
  for (size_t i = 0; i < problem.buffers.size(); ++i) {
    if (problem.buffers[i].names[0] == name) return i;
  }
  ADD_FAILURE() << "no group " << name;
  return 0;
}

bool Planned::SameStorage(const std::string& a, const std::string& b) const {
  return plan->assignments[Group(a)] == plan->assignments[Group(b)];
}

Planned PlanLines(const Planner& planner, const WrapperProgram& program,
                  PoolMode mode) {
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

Planned PlanReuse(const WrapperProgram& program, PoolMode mode) {
  return PlanLines(ReusePlanner(), program, mode);
}

Planned PlanNnc(const WrapperProgram& program, PoolMode mode) {
  return PlanLines(NncPlanner(), program, mode);
}

WrapperProgram Program(std::vector<WrapperLine> lines,
                       std::vector<std::string> outputs) {
  WrapperProgram program;
  program.lines = std::move(lines);
  program.output_names = std::move(outputs);
  return program;
}

Problem BuffersProblem(std::vector<Buffer> buffers, PoolMode mode) {
  Problem problem;
  problem.buffers = std::move(buffers);
  problem.pool_mode = mode;
  for (Buffer& buffer : problem.buffers) buffer.dtype = "torch.float32";
  return problem;
}

Plan PlanBuffers(const Planner& planner, const Problem& problem) {
  return PlanAndValidate(planner, problem);
}

}  // namespace memplan
