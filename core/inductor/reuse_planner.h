// Strategies "reuse" and "nnc": the buffer-reuse passes PyTorch's compilers
// run when they do not plan pools, restated so that a worker gets the
// decisions its compiler would make, and a plan of pools and offsets like
// every other strategy's.
//
// "reuse" restates Inductor's default pass (torch 2.11,
// torch/_inductor/codegen/wrapper.py, PythonWrapperCodegen.memory_plan_reuse
// with MemoryPlanningState, AllocateLine.plan, FreeIfNotReusedLine.plan and
// ReuseLine.plan, buffer_reuse_key, and since torch 2.9 (pytorch#159530)
// AllocateLine.should_reuse_buffer with EfficientPeakEstimate):
//   - a FREE_IF_NOT_REUSED line puts its buffer's storage into the planning
//     state's pool under the buffer's reuse key (device, dtype, symbolic
//     size; memplan adds the size in bytes, which equal symbolic sizes share
//     in Inductor anyway);
//   - an ALLOCATE line takes the storage freed last under its key (a stack
//     per key), if the peak check allows it: always when the FREE and the
//     ALLOCATE belong to adjacent scheduler nodes, else only when the
//     allocation's bytes plus the most memory in use at any node between
//     them stay within the graph's peak (the storage is then counted as
//     held at those nodes). Refused, the freed storage goes back. The bytes
//     per node are Inductor's own when the lines carry them
//     (WrapperLine::scheduler_node, WrapperProgram::scheduler_node_bytes):
//     then the decisions are Inductor's (tests/service: 30 of 30 on five
//     graphs captured from torch 2.11). Otherwise every line of another
//     kind counts as a node, with the bytes of the groups held while it
//     runs, which misses graph inputs and extern kernels' outputs: on those
//     five graphs that made Inductor's 30 reuses and 8 more;
//   - ENTER_SUBGRAPH starts a fresh planning state and EXIT_SUBGRAPH drops
//     it: nothing is reused across a subgraph's boundary;
//   - memory-planning lines after the last other line are dropped, unless
//     they name a graph output (Inductor pops them as pointless);
//   - removed buffers' lines do nothing.
// Its stack-allocation decision restates AOT Inductor's CPU ArrayRef wrapper
// (torch/_inductor/codegen/cpp_wrapper_cpu_array_ref.py memory_plan_reuse and
// can_stack_allocate_buffer): summed over every planning state, the elements
// (not bytes: Inductor multiplies the static shape) of the CPU buffers of
// static size that got a fresh allocation must be at most
// MAX_STACK_ALLOCATION_SIZE = 1024 * 100.
//
// "nnc" restates TorchScript NNC's AllocBufsWithMemReuse
// (torch/csrc/jit/tensorexpr/codegen.cpp, CodeGen::allocIntermediateBufs):
// buffers in order of their start; before each static-size buffer, the
// memory of every buffer whose range has ended goes to the front of a
// free list (latest end first); the buffer takes the first memory on the
// list at least as large as itself (first fit by size; NNC compares the
// memory's original owner's size), else memory of its own. A buffer of
// dynamic size gets memory of its own that is never reused; an externally
// allocated buffer never takes freed memory (its kernel allocates it), but
// its memory, once it ends, is up for grabs like any other (NNC puts it in
// the same map). Graph outputs are NNC's buffer arguments, which it does
// not plan: they get memory of their own, never reused.
//
// Both strategies walk the wrapper lines the problem's buffers came from
// (PlanContext::wrapper_program, core/wrapper_lines.h), or, for a problem
// given as plain buffers, lines derived from the live ranges: per timestep t
// in increasing order, a FREE_IF_NOT_REUSED of each non-output buffer whose
// non-empty range ends at t, an ALLOCATE of each buffer beginning at t, a
// FREE of each empty range at t (all in buffer order), then a kernel line.
// So a buffer ending at t may pass its storage to one beginning at t, as the
// half-open ranges allow.
//
// Each storage (a fresh allocation and the buffers that reuse it) becomes
// bytes of the plan, laid out per pool mode so that the validator accepts
// it:
//
//   none, intermediates: one pool per storage, its size the storage's
//                        largest buffer rounded up to the alignment;
//   outputs:             the storages holding an output, back to back in
//                        one pool per device; every other storage a pool;
//   combined:            every storage of a device back to back in one pool.
//
//   offset ^  combined, one device        storage A: a0 then a1 (a1 reuses a0)
//          |          +------+            storage B: b0
//          |   b0     |  a1  |            storage C: c0
//          |   +------+------+--+
//          |   |    a0       |  |  ...
//          +--------------------------> timestep
//
// Storages that reuse the memory of an extern kernel's output (a FREE line
// with has_allocation) get bytes of their own, so that every buffer has a
// place. Pools are named pool0, pool1, ... in the order their first storage
// was made.
#ifndef MEMPLAN_CORE_INDUCTOR_REUSE_PLANNER_H_
#define MEMPLAN_CORE_INDUCTOR_REUSE_PLANNER_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/planner.h"
#include "core/types.h"

namespace memplan {

// MAX_STACK_ALLOCATION_SIZE of torch 2.11's cpp_wrapper_cpu_array_ref.py:
// compared with a count of elements, despite its name.
inline constexpr int64_t kMaxStackAllocationElements = 1024 * 100;

// Strategy "reuse": an allocation that takes a freed buffer's storage (an
// AllocateLine that Inductor's plan turns into a ReuseLine).
struct ReuseDecision {
  // Indices into the wrapper lines (core/wrapper_lines.h) of the ALLOCATE
  // and of the FREE_IF_NOT_REUSED that freed `reused`; -1 when the lines
  // were derived from plain buffers.
  int64_t allocation_line = -1;
  int64_t free_line = -1;
  std::string buffer;  // the allocated buffer (its group's first name)
  std::string reused;  // the freed buffer, as its FREE line names it

  friend bool operator==(const ReuseDecision& a, const ReuseDecision& b) {
    return a.allocation_line == b.allocation_line &&
           a.free_line == b.free_line && a.buffer == b.buffer &&
           a.reused == b.reused;
  }
};

// Prints "buffer@line reuses reused@line".
std::ostream& operator<<(std::ostream& os, const ReuseDecision& decision);

// Strategy "reuse": whether AOT Inductor's CPU wrapper allocates buffers on
// the stack.
struct StackAllocationDecision {
  // total_static_elements <= limit_elements.
  bool allowed = false;
  // Elements of the CPU buffers of static size (symbolic size empty or an
  // integer, size not data-dependent) whose ALLOCATE got a fresh
  // allocation, over every subgraph: bytes / the dtype's item size (1 for
  // dtypes memplan does not know).
  int64_t total_static_elements = 0;
  Bytes total_static_bytes = 0;  // bytes of the same allocations
  int64_t limit_elements = kMaxStackAllocationElements;
  // When allowed: the buffer groups (first names, in order of allocation)
  // whose storage is a fresh CPU allocation of static size, i.e. what
  // can_stack_allocate_buffer puts on the stack (it also asks for
  // contiguous strides, which the lines do not carry).
  std::vector<std::string> buffers;

  friend bool operator==(const StackAllocationDecision& a,
                         const StackAllocationDecision& b) {
    return a.allowed == b.allowed &&
           a.total_static_elements == b.total_static_elements &&
           a.total_static_bytes == b.total_static_bytes &&
           a.limit_elements == b.limit_elements && a.buffers == b.buffers;
  }
};

// Where NNC puts a buffer.
enum class NncPlacement {
  kReused,       // in the freed memory of another buffer (first fit)
  kNoFit,        // memory of its own: no freed memory was large enough
  kDynamicSize,  // memory of its own, never reused: its size is not static
  kExternal,     // allocated by its extern kernel (never takes freed memory)
  kOutput,       // a graph output: a buffer argument NNC does not plan
};

// Returns "reused", "no_fit", "dynamic_size", "external" or "output".
const char* NncPlacementName(NncPlacement placement);

// Strategy "nnc": one buffer's place, as a pair of AllocBufsWithMemReuse's
// result ((buffer, buffer) for memory of its own, (buffer, owner) reused).
struct NncDecision {
  // The group's ALLOCATE line, or an external buffer's FREE_IF_NOT_REUSED
  // line; -1 when the lines were derived from plain buffers.
  int64_t line = -1;
  std::string buffer;     // the group's first name, or the external's name
  NncPlacement placement = NncPlacement::kNoFit;
  std::string memory_of;  // kReused: the buffer that allocated the memory

  friend bool operator==(const NncDecision& a, const NncDecision& b) {
    return a.line == b.line && a.buffer == b.buffer &&
           a.placement == b.placement && a.memory_of == b.memory_of;
  }
};

// Prints "buffer@line placement [memory_of]".
std::ostream& operator<<(std::ostream& os, const NncDecision& decision);

// The decision lists a plan of "reuse" or "nnc" carries (Plan::decisions).
struct ReferenceDecisions {
  std::vector<ReuseDecision> reuse;  // "reuse": in line order
  std::optional<StackAllocationDecision> stack_allocation;  // "reuse"
  std::vector<NncDecision> nnc;  // "nnc": in NNC's order (by start)
};

// Strategy "reuse" (above).
class ReusePlanner : public Planner {
 public:
  absl::string_view name() const override { return "reuse"; }

  // Returns the plan of Inductor's reuse pass over context.wrapper_program
  // (or the lines derived from problem.buffers when it is null), with
  // Plan::decisions holding the reuse decisions and the stack allocation.
  // Returns INVALID_ARGUMENT for a buffer with a fixed offset, for an
  // EXIT_SUBGRAPH without its ENTER_SUBGRAPH or an ENTER_SUBGRAPH never
  // left (naming `events[i]`), or when context.wrapper_lines do not
  // describe problem.buffers; RESOURCE_EXHAUSTED over problem.capacity;
  // DEADLINE_EXCEEDED / CANCELLED from `context`.
  absl::StatusOr<Plan> PlanProblem(const Problem& problem,
                                   const PlanContext& context) const override;
};

// Strategy "nnc" (above).
class NncPlanner : public Planner {
 public:
  absl::string_view name() const override { return "nnc"; }

  // Returns the plan of NNC's AllocBufsWithMemReuse over the buffer groups
  // (O(n log n) plus, as in NNC, a scan of the free list per buffer)
  // (live ranges half-open: a buffer ending at t frees its memory for one
  // starting at t), ties in start broken by external buffers first, then
  // group order; memory of another device never fits. Plan::decisions holds
  // one NncDecision per group and external buffer. External buffers are
  // FREE_IF_NOT_REUSED lines with has_allocation in context.wrapper_program,
  // live up to their line's timestep. Errors as ReusePlanner's (subgraph
  // lines are ignored: NNC has none).
  absl::StatusOr<Plan> PlanProblem(const Problem& problem,
                                   const PlanContext& context) const override;
};

}  // namespace memplan

#endif  // MEMPLAN_CORE_INDUCTOR_REUSE_PLANNER_H_
