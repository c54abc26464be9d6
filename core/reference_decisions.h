// The decisions a plan of strategy "reuse" or "nnc" carries
// (Plan::decisions, core/types.h): what the compiler pass each strategy
// restates decided, buffer by buffer. Strategy "reuse"
// (core/inductor/reuse_planner.h) fills the reuse and stack-allocation
// decisions, strategy "nnc" (core/nnc/nnc_planner.h) NNC's; proto/ sends
// them on the wire.
#ifndef MEMPLAN_CORE_REFERENCE_DECISIONS_H_
#define MEMPLAN_CORE_REFERENCE_DECISIONS_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/types.h"

namespace memplan {

// MAX_STACK_ALLOCATION_SIZE of torch 2.11's cpp_wrapper_cpu_array_ref.py:
// compared with a count of elements, despite its name.
inline constexpr int64_t kMaxStackAllocationElements = 1024 * 100;

// Strategy "reuse": an allocation that takes a freed buffer's storage (an
// AllocateLine that Inductor's plan turns into a ReuseLine).
struct ReuseDecision {
  // Indices into the wrapper lines (core/inductor/wrapper_lines.h) of the
  // ALLOCATE and of the FREE_IF_NOT_REUSED that freed `reused`; -1 when
  // the lines were derived from plain buffers.
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
  std::string buffer;  // the group's first name, or the external's name
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

}  // namespace memplan

#endif  // MEMPLAN_CORE_REFERENCE_DECISIONS_H_
