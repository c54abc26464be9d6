// Symbolic sizes of a plan (dynamic shapes): each pool's bytes and each
// buffer's offset as a sympy expression over the buffers' size symbols, so
// that a compiled graph can size its pools for the shapes it meets at run
// time. Plans are made from the size hints; these expressions keep them
// valid for every symbol value.
//
// Three rules, by how the plan was made:
//
//   Strategy inductor (and pool mode none, which every strategy plans with
//   Inductor's algorithm): exactly as torch 2.11's memory_planning.py, from
//   the planner's TemporalSplit / SpatialSplit tree
//   (core/inductor/pool_planner.h): an Allocation's size is its buffer's
//   symbolic size, a TemporalSplit's the Max over its children, a
//   SpatialSplit's align(left) + right (left alone once finalize dropped an
//   empty right); offsets add align(left) down every right branch; a pool's
//   size is its root's.
//
//   Every other plan (AddSymbolicPlan): the plan at the size hints gives,
//   in each pool, an order of the buffers by (offset, size, index); of two
//   buffers whose live ranges overlap, the one earlier in that order lies
//   below. A buffer's symbolic offset stacks it on the buffers below it
//   that it overlaps in time, keeping the gap the hint plan leaves:
//
//     offset(b) = align_b(Max over c below b, live at a timestep of b where
//                 c is the topmost such buffer, of
//                 offset(c) + size(c) + max(0, hint_offset(b) -
//                 hint_offset(c) - hint_size(c)))
//
//   or hint_offset(b) when nothing lies below it. A pool's size is the Max
//   over its buffers that end up on top somewhere of offset + size, plus
//   what the hint plan leaves free above them. For every symbol value at
//   which every size is >= 0, no two buffers of a pool overlap in bytes
//   while their live ranges overlap, and every buffer lies inside its pool:
//   each buffer starts at or above the end of every buffer below it (by
//   induction along the order). At the size hints the expressions give the
//   plan's own offsets and pool sizes (unless a zero-byte buffer lies
//   inside another, where the gap would be negative).
//
//   Plans of strategies reuse and nnc (core/inductor/storage_layout.h), whose
//   pools hold storages back to back, each taken by buffers at one offset: a
//   storage's size is the Max of its buffers' sizes (equal under reuse's key)
//   and each starts at align(the end of the one below + the hint plan's gap),
//   whatever the live ranges, as the compilers allocate them (stacking buffer
//   by buffer would nest one Max per storage below).
//
// A buffer pinned at a fixed_offset stays there only when what lies below
// it cannot grow (INVALID_ARGUMENT otherwise). The capacity and the stats
// are the size hints' (the plan's integer sizes).
#ifndef MEMPLAN_CORE_SYMBOLIC_SYMBOLIC_PLAN_H_
#define MEMPLAN_CORE_SYMBOLIC_SYMBOLIC_PLAN_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/symbolic/symbolic.h"
#include "core/types.h"

namespace memplan {

// The most characters of expression text one plan may carry, pool sizes and
// offsets together (shared subexpressions are written out every time).
inline constexpr size_t kMaxSymbolicPlanChars = size_t{2} << 20;

// Checks the symbolic sizes of one request, parsing each distinct text
// once (a graph's buffers share a few sizes).
class SymbolicSizeChecker {
 public:
  // Returns OK when `text` is "" or an expression (core/symbolic/symbolic.h)
  // that, if it is a constant, equals `size` bytes. Else INVALID_ARGUMENT,
  // e.g.
  //   symbolic_size: at position 5: expected an integer, ..., got '*'
  //   symbolic_size: the constant 96 is not size_bytes 128
  // The caller prefixes the buffer, event or write it belongs to.
  absl::Status Check(absl::string_view text, Bytes size);

 private:
  ExprArena arena_;
  absl::flat_hash_map<std::string, ExprId> parsed_;  // text -> expression
};

// Returns whether some buffer's symbolic_size may name a symbol (it is not
// empty and not a plain decimal number). False: no plan of `problem` gets
// symbolic sizes.
bool MayHaveSymbols(const Problem& problem);

// Returns whether the plan of `problem` may depend on more than its size
// hints: some buffer's size depends on data, or its symbolic_size may name
// a symbol (MayHaveSymbols). The graph hash's dynamic format
// (proto/graph_hash.h) and the segment reservations (none for such a
// problem, core/partition/partition_planner.h) follow it.
bool IsDynamic(const Problem& problem);

// The symbolic sizes of a problem's buffers, parsed.
struct SymbolicSizes {
  ExprArena arena;
  // Per buffer: its symbolic_size, or the constant size_bytes when empty.
  std::vector<ExprId> sizes;
  // Some size depends on a symbol: plans get symbolic sizes and offsets.
  bool any_symbol = false;
};

// Returns the parsed sizes of `problem`'s buffers. Returns INVALID_ARGUMENT
// as SymbolicSizeChecker::Check, naming the buffer:
//   buffers[3] ("buf7"): symbolic_size: at position 5: ...
absl::StatusOr<SymbolicSizes> ParseSymbolicSizes(const Problem& problem);

// Sets plan.pools[p].symbolic_size and plan.symbolic_offsets from the
// expressions `pool_sizes` (parallel to plan.pools) and `offsets` (parallel
// to plan.assignments) of `arena`. Returns RESOURCE_EXHAUSTED when the text
// would exceed kMaxSymbolicPlanChars.
absl::Status SetSymbolicPlan(const ExprArena& arena,
                             absl::Span<const ExprId> pool_sizes,
                             absl::Span<const ExprId> offsets, Plan& plan);

// Gives `plan`, a valid plan of `problem` (core/validator.h), its symbolic
// pool sizes and offsets by the stacking rule above, unless the problem has
// no symbol (MayHaveSymbols false, or no size depends on one: the plan is
// left as it is) or the plan has them already (its planner set them, as
// strategy inductor does). O(n log n) per pool for n buffers. Returns
// INVALID_ARGUMENT for a malformed symbolic size (ParseSymbolicSizes) or a
// pinned buffer that buffers below it could grow into, RESOURCE_EXHAUSTED
// as SetSymbolicPlan, INTERNAL when `plan` does not fit `problem`.
absl::Status AddSymbolicPlan(const Problem& problem, Plan& plan);

}  // namespace memplan

#endif  // MEMPLAN_CORE_SYMBOLIC_SYMBOLIC_PLAN_H_
