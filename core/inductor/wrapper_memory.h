// The whole graph's memory read off Inductor's wrapper lines: the timeline
// (core/graph_memory.h) of a request given as lines, positions being line
// indices. What each line does to memory, as the code torch.compile
// (torch 2.11) generates runs it, a storage being freed once no name holds
// it:
//
//   line              default (the baseline)        with pools
//   ALLOCATE g        allocates g's storage, or     nothing: g's pool is
//                     takes the storage the reuse   created at its first
//                     pass hands it                 buffer's ALLOCATE
//   FREE_IF_NOT_      frees the name's storage,     a group's name:
//   REUSED n          unless the reuse pass hands   nothing (its pool is
//                     it on                         freed at its last
//                                                   buffer's FREE); any
//                                                   other name's storage
//                                                   is freed
//   REUSE a -> b      b takes a's storage           b joins a's group, or
//                                                   takes a's storage
//   EXTERN_ALLOCATE e allocates e's storage (each output of a multi-output
//                     kernel alone), held by e; its workspace (if any) is
//                     allocated at that line only
//   MULTI_OUTPUT      m holds output i of e too (e's tuple still holds it)
//     e -> m
//   FREE_INPUT x      x's returned bytes count negative from here on
//
// Lines of removed buffers do nothing; the trailing memory-planning lines
// torch's reuse pass pops (after the last other line, naming no output) do
// nothing in the baseline.
#ifndef MEMPLAN_CORE_INDUCTOR_WRAPPER_MEMORY_H_
#define MEMPLAN_CORE_INDUCTOR_WRAPPER_MEMORY_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/entry_state.h"
#include "core/graph_memory.h"
#include "core/inductor/wrapper_lines.h"
#include "core/reference_decisions.h"
#include "core/types.h"

namespace memplan {

// Returns the timeline of `problem`, whose buffers are `lines.buffers`,
// GroupWrapperLines(program)'s groups: each group's span from its ALLOCATE
// line to its last FREE_IF_NOT_REUSED line (kNeverFreed for an output or a
// group never freed), the unplanned blocks as the pooled code allocates
// them, and the baseline's blocks with the reuse pass's `reuse` decisions
// (Inductor's own, as strategy "reuse" restates them: each takes the
// storage freed at its free_line at its allocation_line). Devices in the
// order of the groups' first buffers, then of the lines that name others.
// With `entry` (a training backward's, core/entry_state.h): each side
// starts from the state its forward left (DeviceMemory::start), and an
// input sourced to a forward output frees, at its FREE_INPUT (or when the
// buffer that took it over in place is freed), that output's block where
// it is the block's last reference, else nothing; its size_bytes is not
// used.
GraphTimeline TimelineOfLines(const Problem& problem,
                              const WrapperProgram& program,
                              const PoolLines& lines,
                              const std::vector<ReuseDecision>& reuse,
                              const EntryState* entry = nullptr);

// Returns OK when the lines outside the plan are well formed, else
// INVALID_ARGUMENT naming the line (`<label>[i] ("name")`) and the field:
// an EXTERN_ALLOCATE without a name, with bytes or workspace_bytes outside
// [0, 2^40], with output_bytes outside that range or not summing to its bytes,
// or of a name an earlier ALLOCATE or EXTERN_ALLOCATE allocated; a MULTI_OUTPUT
// whose name is no earlier multi-output EXTERN_ALLOCATE, whose
// output_index is not one of its outputs, or without reused_as; a
// FREE_INPUT, or a REUSE of a graph input, with bytes outside [0, 2^40].
absl::Status CheckLinesOutsideThePlan(const WrapperProgram& program,
                                      absl::string_view label = "lines");

// The decisions of Inductor's reuse pass on `problem`'s wrapper lines
// (`lines` being GroupWrapperLines(program)), as strategy "reuse"
// restates them; none when it cannot plan the lines (e.g. an EXIT_SUBGRAPH
// without its ENTER_SUBGRAPH). They do not depend on an entry state, so a
// caller building several timelines of one graph (TimelineOfLines) from
// different entries computes them once.
std::vector<ReuseDecision> ReuseDecisionsOf(const Problem& problem,
                                            const WrapperProgram& program,
                                            const PoolLines& lines);

// Returns the timeline of `problem` (core/graph_memory.h): of its wrapper
// lines when `program` is not null (`lines` being
// GroupWrapperLines(*program)), with the decisions of Inductor's reuse pass
// as strategy "reuse" restates them (none when it cannot plan the lines,
// e.g. an EXIT_SUBGRAPH without its ENTER_SUBGRAPH); else of its buffers
// (TimelineOfBuffers). `entry`: as TimelineOfLines' (lines only).
GraphTimeline WholeGraphTimeline(const Problem& problem,
                                 const WrapperProgram* program,
                                 const PoolLines* lines,
                                 const EntryState* entry = nullptr);

}  // namespace memplan

#endif  // MEMPLAN_CORE_INDUCTOR_WRAPPER_MEMORY_H_
