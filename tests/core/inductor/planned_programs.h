// Plans of wrapper-line programs and of plain buffers by strategies "reuse"
// and "nnc", for their tests (core/inductor/reuse_planner.h,
// core/nnc/nnc_planner.h, and what the two share).
#ifndef MEMPLAN_TESTS_CORE_INDUCTOR_PLANNED_PROGRAMS_H_
#define MEMPLAN_TESTS_CORE_INDUCTOR_PLANNED_PROGRAMS_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/inductor/wrapper_lines.h"
#include "core/planner.h"
#include "core/reference_decisions.h"
#include "core/types.h"

namespace memplan {

// A program planned by one strategy.
struct Planned {
  Problem problem;
  absl::StatusOr<Plan> plan;

  const ReferenceDecisions& decisions() const { return *plan->decisions; }

  // Returns the index of the group whose first name is `name` (a test
  // failure and 0 when there is none).
  size_t Group(const std::string& name) const;

  // Whether the two groups share a storage: one pool, one offset.
  bool SameStorage(const std::string& a, const std::string& b) const;
};

// Plans `program` with `planner` in `mode`, and checks that the plan passes
// the validator when there is one.
Planned PlanLines(const Planner& planner, const WrapperProgram& program,
                  PoolMode mode = PoolMode::kIntermediates);

// PlanLines with strategy "reuse" and with strategy "nnc".
Planned PlanReuse(const WrapperProgram& program,
                  PoolMode mode = PoolMode::kIntermediates);
Planned PlanNnc(const WrapperProgram& program,
                PoolMode mode = PoolMode::kIntermediates);

// Returns the program of `lines` with graph outputs `outputs`.
WrapperProgram Program(std::vector<WrapperLine> lines,
                       std::vector<std::string> outputs = {});

// Plain buffers: lines derived from the live ranges. Returns the problem
// of `buffers` in `mode`, every buffer of dtype torch.float32.
Problem BuffersProblem(std::vector<Buffer> buffers,
                       PoolMode mode = PoolMode::kIntermediates);

// Returns `planner`'s plan of `problem`, checked by the validator
// (PlanAndValidate).
Plan PlanBuffers(const Planner& planner, const Problem& problem);

}  // namespace memplan

#endif  // MEMPLAN_TESTS_CORE_INDUCTOR_PLANNED_PROGRAMS_H_
