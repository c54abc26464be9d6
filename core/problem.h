// Checks that a Problem is well formed before any planner sees it.
#ifndef MEMPLAN_CORE_PROBLEM_H_
#define MEMPLAN_CORE_PROBLEM_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "core/types.h"

namespace memplan {

// Returns OK when every planner may plan `problem`, else INVALID_ARGUMENT
// with a message naming the buffer (index and first name) and the field, in
// the wire's field names, e.g.
//   buffers[3] ("buf7"): size_bytes must be in [0, 1099511627776], got -5
// Checks: at least one buffer; every buffer has at least one name, names
// non-empty and unique across all buffers (one name in two groups is an
// error); 0 <= size <= kMaxBufferBytes; 0 <= begin <= end <= kMaxTimestep;
// alignment a power of two in [1, kMaxAlignment]; a buffer's own alignment
// 0 or such a power of two; fixed_offset unset or in [0, kMaxBufferBytes]
// and a multiple of the buffer's alignment; capacity >= 0; allocator_block
// a power of two in [1, kMaxAlignment]; every unplanned buffer's size in
// [0, kMaxBufferBytes] and 0 <= begin <= end <= kMaxTimestep (named
// `unplanned[i] ("name")`); every cached block with a device and a size
// that is a positive multiple of 512 up to kMaxBufferBytes (at most 2 MiB
// in the small pool; named `cached_blocks[i]`); symbolic_size "" or an
// expression in sympy's syntax that, when constant, equals the size
// (core/symbolic/symbolic_plan.h SymbolicSizeChecker), e.g.
//   buffers[3] ("buf7"): symbolic_size: at position 5: expected an integer,
//   a symbol, a function call, '(' or a sign, got '*'
absl::Status ValidateProblem(const Problem& problem);

// Returns OK when every cached block (Problem::cached_blocks) has a device
// and a size that is a positive multiple of 512 up to kMaxBufferBytes (at
// most 2 MiB in the small pool), else INVALID_ARGUMENT naming
// `cached_blocks[i]`, e.g.
//   cached_blocks[2]: device is required
// Part of ValidateProblem.
absl::Status ValidateCachedBlocks(const Problem& problem);

// Returns `buffers[i] ("first name")`, or `buffers[i]` for a nameless
// buffer: how errors about buffer i (i < problem.buffers.size()) name it.
std::string BufferLabel(const Problem& problem, size_t i);

}  // namespace memplan

#endif  // MEMPLAN_CORE_PROBLEM_H_
