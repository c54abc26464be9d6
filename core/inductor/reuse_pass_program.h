// The program the two reuse passes walk, strategies "reuse"
// (core/inductor/reuse_planner.h) and "nnc" (core/nnc/nnc_planner.h): the
// wrapper lines that matter to them, as steps; and the rest the two share,
// the checks and the run over a program. Internal to core/inductor/ and
// core/nnc/.
//
// Both strategies walk the wrapper lines the problem's buffers came from
// (PlanContext::wrapper_program, core/inductor/wrapper_lines.h), or, for a
// problem given as plain buffers, lines derived from the live ranges: per
// timestep t in increasing order, a FREE_IF_NOT_REUSED of each non-output
// buffer whose non-empty range ends at t, an ALLOCATE of each buffer
// beginning at t, a FREE of each empty range at t (all in buffer order),
// then a kernel line. So a buffer ending at t may pass its storage to one
// beginning at t, as the half-open ranges allow.
#ifndef MEMPLAN_CORE_INDUCTOR_REUSE_PASS_PROGRAM_H_
#define MEMPLAN_CORE_INDUCTOR_REUSE_PASS_PROGRAM_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/inductor/wrapper_lines.h"
#include "core/planner.h"
#include "core/types.h"

namespace memplan {
namespace reuse_internal {

// How often (in steps) the planners look at the deadline.
inline constexpr size_t kCheckEvery = 256;

// What a step of the program is.
enum class StepKind : uint8_t {
  kAllocate,       // an ALLOCATE of a group
  kFree,           // a FREE_IF_NOT_REUSED of a group or an external buffer
  kKernel,         // any other line: a scheduler node's kernel
  kEnterSubgraph,  // ENTER_SUBGRAPH
  kExitSubgraph,   // EXIT_SUBGRAPH
};

// One line of the program that matters to the passes.
struct Step {
  StepKind kind = StepKind::kKernel;
  int32_t group = -1;  // kAllocate, kFree: the group; -1: an external buffer
  int64_t line = -1;   // index into the caller's lines; -1: from buffers
  // False for a trailing memory-planning line that memory_plan_reuse pops.
  bool planned = true;
  // kFree: the name the line frees. Points into the program or problem.
  const std::string* name = nullptr;
  // kFree of an external buffer: what the line says of it, whether it is
  // the last FREE of that name (only that one frees the storage, so that a
  // storage is never handed out twice), and its timestep.
  const AllocationInfo* external = nullptr;
  bool last_external_free = false;
  Timestep timestep = 0;
  int64_t scheduler_node = -1;  // kAllocate, kFree: the line's; -1: unknown
};

// The steps of one problem's lines, in line order.
struct Program {
  std::vector<Step> steps;
  // Inductor's bytes in use per scheduler node, when the lines carry them
  // (and every ALLOCATE and FREE its node); null: estimate from the lines.
  const std::vector<Bytes>* scheduler_node_bytes = nullptr;
  std::vector<size_t> allocate_step;  // per group: its ALLOCATE step
  std::vector<size_t> last_step;      // per group: its last ALLOCATE or FREE
};

// Returns the program for `problem` and `context` (its wrapper lines, or
// lines derived from the buffers). Returns INVALID_ARGUMENT when
// context.wrapper_program is set without context.wrapper_lines, when the
// lines do not describe problem.buffers, or when an ALLOCATE or FREE lacks
// its scheduler node while the program gives Inductor's per-node bytes.
absl::StatusOr<Program> MakeProgram(const Problem& problem,
                                    const PlanContext& context);

// Returns INVALID_ARGUMENT for a buffer with a fixed offset: the passes
// place every storage themselves.
absl::Status CheckNoFixedOffsets(const Problem& problem,
                                 absl::string_view strategy);

// Whether a size is known at compile time: no symbols, no data dependence.
bool IsStaticSize(const std::string& symbolic_size, bool data_dependent);

// The part the two planners share: the checks, Inductor's program of the
// problem, `pass` (the program to a plan), and the planner run over all
// devices named `name`.
template <typename Pass>
absl::StatusOr<Plan> PlanOverProgram(const Problem& problem,
                                     const PlanContext& context,
                                     absl::string_view name, Pass pass) {
  absl::Status status = CheckNoFixedOffsets(problem, name);
  if (!status.ok()) return status;
  const absl::Time start = absl::Now();
  absl::StatusOr<Program> program = MakeProgram(problem, context);
  if (!program.ok()) return program.status();
  absl::StatusOr<Plan> plan = pass(*program);
  if (plan.ok()) AddRunOverAllDevices(name, start, *plan);
  return plan;
}

}  // namespace reuse_internal
}  // namespace memplan

#endif  // MEMPLAN_CORE_INDUCTOR_REUSE_PASS_PROGRAM_H_
