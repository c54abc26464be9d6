// Inductor's wrapper lines in, buffer groups and live ranges out: what
// Inductor's MemoryPlanner does before it allocates (torch 2.11,
// torch/_inductor/codegen/memory_planning.py: drop_removed_buffers,
// compute_buffer_groups, convert_to_pool_lines, compute_live_ranges), and
// after (mark_first_last_usage).
//
// The lines are the wrapper's, in program order. A run of consecutive
// memory-planning lines (ALLOCATE, FREE_IF_NOT_REUSED, REUSE) is one
// timestep, numbered from 1; any other line (a kernel call, entering or
// leaving a subgraph) only separates runs:
//
//   line  0 ALLOCATE buf0        timestep 1   group buf0, buf2: [1, 3)
//   line  1 ALLOCATE buf1        timestep 1   group buf1: [1, 4) (output)
//   line  2 kernel
//   line  3 REUSE buf0 -> buf2   timestep 2   (buf2 joins buf0's group)
//   line  4 kernel
//   line  5 FREE buf2            timestep 3
//   line  6 kernel                            3 timesteps: outputs end at 4
//
// A group's live range is [first, last] of the timesteps of its ALLOCATE
// and FREE_IF_NOT_REUSED lines (a REUSE line does not use the group), kept
// as Inductor's LiveRange(begin, end) numbers, which memplan reads as the
// half-open [begin, end) of core/types.h with Inductor's overlap rule
// (core/live_ranges.h). Outputs extend to one past the last timestep.
#ifndef MEMPLAN_CORE_INDUCTOR_WRAPPER_LINES_H_
#define MEMPLAN_CORE_INDUCTOR_WRAPPER_LINES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/types.h"

namespace memplan {

// The kind of one wrapper line.
enum class WrapperLineKind {
  kAllocate,         // AllocateLine: a buffer is allocated
  kFreeIfNotReused,  // FreeIfNotReusedLine: a buffer is freed
  kReuse,            // ReuseLine: `name`'s storage is reused as `reused_as`
  kOther,            // any other line, e.g. a kernel call
  kEnterSubgraph,    // EnterSubgraphLine
  kExitSubgraph,     // ExitSubgraphLine
  // Lines that touch memory outside the plan (core/inductor/wrapper_memory.h);
  // like kOther, each separates runs of memory-planning lines.
  kExternAllocate,  // ExternKernelAllocLine: the kernel allocates `name`
  kMultiOutput,     // MultiOutputLine: `reused_as` = `name`[output_index]
  kFreeInput,       // FreeLine: graph input `name` is let go
  // Any other MemoryPlanningLine (ReinterpretLine: a view of another
  // buffer's storage under a new name; NullLine): it allocates and frees
  // nothing, but counts in its run of memory-planning lines.
  kPlanningNoOp,
};

// What allocating a buffer says of it (as the fields of core Buffer).
struct AllocationInfo {
  Bytes size = 0;             // bytes (size hint)
  std::string symbolic_size;  // sympy expression of the bytes, or ""
  std::string device;         // e.g. "cuda:0"
  std::string dtype;          // e.g. "torch.float32"
  bool size_is_data_dependent = false;
};

// One allocation an extern kernel's call makes (Event.call_allocations):
// one of its outputs, or scratch memory it frees before it returns.
struct CallAllocation {
  // An output: its index in the line's outputs (output_bytes, or 0 for a
  // kernel with one output); -1: scratch.
  int64_t output = -1;
  Bytes scratch = 0;  // scratch: bytes (> 0)
  // Scratch: freed before the call's allocation of this index (in (this
  // index, the number of allocations]; that number: when the call
  // returns).
  int64_t freed_before = 0;
};

// One wrapper line. Fields a kind does not use are ignored.
struct WrapperLine {
  WrapperLineKind kind = WrapperLineKind::kOther;
  // kAllocate, kFreeIfNotReused: the buffer; kReuse: the reused buffer.
  std::string name;
  // kReuse: the new buffer's name; kMultiOutput: the name bound to the
  // output.
  std::string reused_as;
  // kAllocate: the buffer; kExternAllocate: its bytes (the sum of
  // output_bytes for a multi-output kernel), device and dtype; kFreeInput:
  // the bytes the free returns to the allocator, and the device; kReuse
  // with reuses_input: the input's bytes and device.
  AllocationInfo allocation;
  // kExternAllocate of a multi-output kernel: each output's bytes, each
  // one allocation; empty: `name` is one allocation of allocation.size.
  std::vector<Bytes> output_bytes;
  // kExternAllocate: bytes the call allocates and frees inside itself (a
  // workspace, Event.workspace_bytes), one allocation at this line only,
  // after its outputs; 0: none.
  Bytes workspace = 0;
  // kExternAllocate: the allocations the call makes, in order
  // (Event.call_allocations; then `workspace` is 0): its outputs the list
  // names and its scratch blocks, one by one inside this line (outputs it
  // does not name first, in order); empty: the outputs, then `workspace`.
  std::vector<CallAllocation> call;
  // kMultiOutput: the index in the kernel's output_bytes.
  int64_t output_index = -1;
  // kReuse: `name` is a graph input whose storage `reused_as` takes over in
  // place (returned to the allocator, allocation.size bytes, once
  // `reused_as` is freed).
  bool reuses_input = false;
  // kFreeIfNotReused of a buffer that no ALLOCATE line names (e.g. an extern
  // kernel's output, which the kernel call allocates): `allocation`
  // describes it, so that strategies "reuse" (core/inductor/reuse_planner.h)
  // and "nnc" (core/nnc/nnc_planner.h) may reuse its storage as Inductor
  // does. Ignored by GroupWrapperLines and for every other line.
  bool has_allocation = false;
  // kAllocate, kFreeIfNotReused: the index of the scheduler node Inductor
  // wrote the line for (the line's scheduler_node_index), for strategy
  // "reuse"'s peak check; -1: unknown.
  int64_t scheduler_node = -1;
};

// A graph's wrapper lines with what Inductor's V.graph tells its planner.
struct WrapperProgram {
  std::vector<WrapperLine> lines;
  std::vector<std::string> output_names;     // V.graph.get_output_names()
  std::vector<std::string> removed_buffers;  // V.graph.removed_buffers
  // Inductor's estimate of the bytes in use at each scheduler node (the
  // second result of torch/_inductor/memory.py estimate_peak_memory, which
  // EfficientPeakEstimate keeps; one entry per node plus one), for strategy
  // "reuse"'s peak check; empty: unknown, strategy "reuse" estimates from
  // the lines instead (core/inductor/reuse_planner.h).
  std::vector<Bytes> scheduler_node_bytes;
};

// Returns whether `line` is one of Inductor's MemoryPlanningLines
// (ALLOCATE, FREE_IF_NOT_REUSED, REUSE, PLANNING_NO_OP): a run of them is
// one timestep, and Inductor's reuse pass pops them from the end of the
// lines unless they name an output.
bool IsMemoryPlanningLine(const WrapperLine& line);

// The buffer groups of a WrapperProgram and which lines touch them.
struct PoolLines {
  // One per group, in Inductor's BufferGroup order (first ALLOCATE first):
  // names (the allocating buffer first, then the names reusing it in
  // order), size, symbolic size, device, dtype and data dependence from the
  // ALLOCATE line, live range and is_output as above.
  std::vector<Buffer> buffers;
  // Per line: the group its AllocFromPoolLine / DeallocFromPoolLine belongs
  // to, or -1 (the line is not a pool line: dropped, reuse, another kind,
  // or a free of a buffer that no group holds).
  std::vector<int32_t> group_of_line;
  // Per line: its timestep (1, 2, ...); 0 for lines outside every run.
  std::vector<Timestep> timestep_of_line;
  // Per line: whether it is an ALLOCATE (true) or FREE_IF_NOT_REUSED line
  // of a group (meaningful where group_of_line >= 0).
  std::vector<bool> allocates;
};

// Derives the buffer groups and live ranges exactly as Inductor's
// MemoryPlanner (drop_removed_buffers, compute_buffer_groups,
// convert_to_pool_lines, compute_live_ranges):
//   - ALLOCATE, FREE_IF_NOT_REUSED and REUSE lines of a removed buffer (for
//     REUSE: the reused one) are dropped, but still count as
//     memory-planning lines of their run;
//   - REUSE old -> new adds `new` to old's group when old has one, and is
//     ignored otherwise;
//   - a group is an output when any of its names is in output_names.
// Returns INVALID_ARGUMENT naming the line (`<label>[i]`, e.g. "lines[3]")
// and field for a buffer allocated twice, an ALLOCATE of a name an earlier
// line already named (freed, reused, or an extern kernel's output: names
// are unique in a graph), an empty name, a REUSE whose new name already has
// a group, or a negative size. Sizes and devices are
// checked further by ValidateProblem.
absl::StatusOr<PoolLines> GroupWrapperLines(const WrapperProgram& program,
                                            absl::string_view label = "lines");

// When a pool is created and destroyed in the wrapper (Inductor's
// mark_first_last_usage): line indices into WrapperProgram::lines.
struct PoolUsage {
  // The first AllocFromPoolLine of a buffer in the pool (where the wrapper
  // creates the pool); -1 when none.
  int64_t first_allocation_line = -1;
  // The last DeallocFromPoolLine of a buffer in the pool, when its timestep
  // is at or after the end of every live range in the pool (where the
  // wrapper frees the pool); -1 otherwise, e.g. for a pool holding an
  // output, which outlives the graph.
  int64_t last_free_line = -1;

  friend bool operator==(const PoolUsage& a, const PoolUsage& b) {
    return a.first_allocation_line == b.first_allocation_line &&
           a.last_free_line == b.last_free_line;
  }
};

// One buffer a scheduled node writes.
struct NodeWrite {
  std::string name;
  AllocationInfo allocation;
  // A buffer the node reads whose storage this write may take over (in
  // place), or "".
  std::string in_place_of;
};

// One scheduled kernel (Inductor's scheduler node), in schedule order.
struct ScheduledNode {
  std::string name;                // e.g. the kernel's name; informational
  std::vector<NodeWrite> writes;   // buffers it creates
  std::vector<std::string> reads;  // buffers it reads (graph inputs too)
};

// Returns the wrapper lines Inductor writes for `nodes`: per node, an
// ALLOCATE per write (or a REUSE of its in_place_of buffer, when that
// buffer's last use is this node, it is no graph output, was written by an
// earlier node, is on the same device and at least as large), the kernel
// call, then a FREE_IF_NOT_REUSED for every buffer whose last use this node
// is. A buffer's last use is the last node that reads or writes it, as
// Inductor's Scheduler.compute_last_usage: walking the nodes backwards, a
// node's last uses are the buffers it reads or writes that no later node
// uses and that are not graph outputs (outputs are never freed).
// Returns INVALID_ARGUMENT naming `nodes[i].writes[j]` and the field for a
// write with an empty name or of a buffer written before, or an in_place_of
// that the node does not read.
absl::StatusOr<WrapperProgram> WrapperLinesFromNodes(
    const std::vector<ScheduledNode>& nodes,
    const std::vector<std::string>& output_names);

// Returns one PoolUsage per pool of `plan`, a plan of `lines.buffers`.
std::vector<PoolUsage> MarkFirstLastUsage(const PoolLines& lines,
                                          const Plan& plan);

}  // namespace memplan

#endif  // MEMPLAN_CORE_INDUCTOR_WRAPPER_LINES_H_
