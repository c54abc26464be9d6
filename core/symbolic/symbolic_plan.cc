#include "core/symbolic/symbolic_plan.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/problem.h"

namespace memplan {
namespace {

bool IsDecimal(absl::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return absl::ascii_isdigit(static_cast<unsigned char>(c));
  });
}

// A plain decimal number of at most 18 digits: Inductor's static sizes.
bool IsSmallDecimal(absl::string_view text, int64_t* value) {
  if (!IsDecimal(text) || text.size() > 18) return false;
  *value = 0;
  for (char c : text) *value = *value * 10 + (c - '0');
  return true;
}

absl::Status TooMuchText() {
  return absl::ResourceExhaustedError(absl::StrCat(
      "the symbolic pool sizes and offsets would take more than ",
      kMaxSymbolicPlanChars,
      " characters of sympy text (shared subexpressions are written out "
      "each time); send fewer buffers with symbolic sizes per request"));
}

absl::Status ConstantMismatch(int64_t constant, Bytes size) {
  return absl::InvalidArgumentError(absl::StrCat(
      "symbolic_size: the constant ", constant, " is not size_bytes ", size));
}

// Returns the expression `text` (not empty) spells in `arena`, parsing it
// once per distinct text (`parsed`); the error says what is wrong without
// naming the buffer.
absl::StatusOr<ExprId> ParseSize(
    ExprArena& arena, absl::flat_hash_map<std::string, ExprId>& parsed,
    absl::string_view text, Bytes size) {
  ExprId id = -1;
  if (const auto it = parsed.find(text); it != parsed.end()) {
    id = it->second;
  } else {
    absl::StatusOr<ExprId> made = arena.Parse(text);
    if (!made.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("symbolic_size: ", made.status().message()));
    }
    id = *made;
    parsed.emplace(std::string(text), id);
  }
  int64_t constant = 0;
  if (arena.IsInteger(id, &constant) && constant != size) {
    return ConstantMismatch(constant, size);
  }
  return id;
}

// The buffers of one pool, bottom first: by hint offset, then hint size,
// then buffer index.
std::vector<int32_t> BottomFirst(const Problem& problem, const Plan& plan,
                                 std::vector<int32_t> members) {
  std::sort(members.begin(), members.end(), [&](int32_t a, int32_t b) {
    const Bytes oa = plan.assignments[a].offset;
    const Bytes ob = plan.assignments[b].offset;
    if (oa != ob) return oa < ob;
    const Bytes sa = problem.buffers[a].size;
    const Bytes sb = problem.buffers[b].size;
    if (sa != sb) return sa < sb;
    return a < b;
  });
  return members;
}

// The topmost buffer at each timestep of one pool, as buffers are stacked
// bottom first: piecewise constant, a map from the first timestep of each
// piece to its buffer (-1: none).
class Skyline {
 public:
  Skyline() { top_[std::numeric_limits<Timestep>::min()] = -1; }

  // Returns the distinct buffers on top somewhere in [begin, end) (begin <
  // end), in time order, and puts `buffer` on top there. Amortized
  // O(log n) plus the pieces returned, which the call removes.
  std::vector<int32_t> Stack(int32_t buffer, LiveRange range) {
    Split(range.begin);
    Split(range.end);
    auto first = top_.find(range.begin);
    auto last = top_.find(range.end);
    std::vector<int32_t> below;
    seen_.clear();
    for (auto it = first; it != last; ++it) {
      if (it->second >= 0 && seen_.insert(it->second).second) {
        below.push_back(it->second);
      }
    }
    top_.erase(first, last);
    top_[range.begin] = buffer;
    return below;
  }

  // Returns the distinct buffers on top somewhere, in time order.
  std::vector<int32_t> Visible() const {
    std::vector<int32_t> visible;
    absl::flat_hash_set<int32_t> seen;
    for (const auto& [begin, buffer] : top_) {
      if (buffer >= 0 && seen.insert(buffer).second) visible.push_back(buffer);
    }
    return visible;
  }

 private:
  // Makes `t` the first timestep of a piece.
  void Split(Timestep t) {
    auto it = std::prev(top_.upper_bound(t));
    if (it->first != t) top_.emplace_hint(std::next(it), t, it->second);
  }

  std::map<Timestep, int32_t> top_;
  absl::flat_hash_set<int32_t> seen_;  // scratch for Stack
};

}  // namespace

absl::Status SymbolicSizeChecker::Check(absl::string_view text, Bytes size) {
  if (text.empty()) return absl::OkStatus();
  int64_t constant = 0;
  if (IsSmallDecimal(text, &constant)) {
    return constant == size ? absl::OkStatus()
                            : ConstantMismatch(constant, size);
  }
  return ParseSize(arena_, parsed_, text, size).status();
}

bool MayHaveSymbols(const Problem& problem) {
  for (const Buffer& buffer : problem.buffers) {
    if (!buffer.symbolic_size.empty() && !IsDecimal(buffer.symbolic_size)) {
      return true;
    }
  }
  return false;
}

bool IsDynamic(const Problem& problem) {
  if (MayHaveSymbols(problem)) return true;
  for (const Buffer& buffer : problem.buffers) {
    if (buffer.size_is_data_dependent) return true;
  }
  return false;
}

absl::StatusOr<SymbolicSizes> ParseSymbolicSizes(const Problem& problem) {
  SymbolicSizes symbolic;
  symbolic.sizes.reserve(problem.buffers.size());
  absl::flat_hash_map<std::string, ExprId> parsed;
  for (size_t i = 0; i < problem.buffers.size(); ++i) {
    const Buffer& buffer = problem.buffers[i];
    if (buffer.symbolic_size.empty()) {
      symbolic.sizes.push_back(symbolic.arena.Integer(buffer.size));
      continue;
    }
    absl::StatusOr<ExprId> id =
        ParseSize(symbolic.arena, parsed, buffer.symbolic_size, buffer.size);
    if (!id.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(BufferLabel(problem, i), ": ", id.status().message()));
    }
    symbolic.any_symbol |= !symbolic.arena.IsInteger(*id);
    symbolic.sizes.push_back(*id);
  }
  return symbolic;
}

absl::Status SetSymbolicPlan(const ExprArena& arena,
                             absl::Span<const ExprId> pool_sizes,
                             absl::Span<const ExprId> offsets, Plan& plan) {
  size_t total = 0;
  // Many buffers share an offset (0, or the end of one split): print each
  // expression once.
  absl::flat_hash_map<ExprId, const std::string*> printed;
  auto print = [&](ExprId id, std::string* text) -> absl::Status {
    if (const auto it = printed.find(id); it != printed.end()) {
      if (it->second->size() > kMaxSymbolicPlanChars - total) {
        return TooMuchText();
      }
      *text = *it->second;
      total += text->size();
      return absl::OkStatus();
    }
    if (!arena.PrintWithin(id, kMaxSymbolicPlanChars - total, text)) {
      return TooMuchText();
    }
    total += text->size();
    printed.emplace(id, text);
    return absl::OkStatus();
  };
  for (size_t p = 0; p < plan.pools.size(); ++p) {
    absl::Status status = print(pool_sizes[p], &plan.pools[p].symbolic_size);
    if (!status.ok()) return status;
  }
  // Sized before printing: `printed` points into it.
  plan.symbolic_offsets.assign(offsets.size(), std::string());
  for (size_t i = 0; i < offsets.size(); ++i) {
    absl::Status status = print(offsets[i], &plan.symbolic_offsets[i]);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

// A storage of a pool that strategies reuse and nnc lay out: the buffers
// that share one offset, its bytes the largest of theirs.
struct Storage {
  Bytes hint_offset = 0;
  Bytes hint_size = 0;
  std::vector<int32_t> buffers;
};

// Returns `members` (one pool's buffers) as storages by offset when each
// buffer starts at its storage's offset, no storage overlaps the next in
// bytes and no buffer is pinned: then stacking storages one on the next
// keeps the plan valid at every symbol value, whatever the live ranges.
// Empty otherwise.
std::vector<Storage> DisjointStorages(const Problem& problem, const Plan& plan,
                                      const std::vector<int32_t>& members) {
  std::vector<Storage> storages;
  std::vector<int32_t> by_offset = members;
  std::sort(by_offset.begin(), by_offset.end(), [&](int32_t a, int32_t b) {
    return plan.assignments[a].offset != plan.assignments[b].offset
               ? plan.assignments[a].offset < plan.assignments[b].offset
               : a < b;
  });
  for (int32_t b : by_offset) {
    if (problem.buffers[b].fixed_offset) return {};
    const Bytes offset = plan.assignments[b].offset;
    if (storages.empty() || storages.back().hint_offset != offset) {
      if (!storages.empty() &&
          storages.back().hint_offset + storages.back().hint_size > offset) {
        return {};
      }
      storages.push_back(Storage{offset, 0, {}});
    }
    storages.back().hint_size =
        std::max(storages.back().hint_size, problem.buffers[b].size);
    storages.back().buffers.push_back(b);
  }
  return storages;
}

absl::Status AddSymbolicPlan(const Problem& problem, Plan& plan) {
  if (!MayHaveSymbols(problem) || !plan.symbolic_offsets.empty()) {
    return absl::OkStatus();
  }
  absl::StatusOr<SymbolicSizes> parsed = ParseSymbolicSizes(problem);
  if (!parsed.ok()) return parsed.status();
  if (!parsed->any_symbol) return absl::OkStatus();
  ExprArena& arena = parsed->arena;
  const std::vector<ExprId>& sizes = parsed->sizes;

  const size_t n = problem.buffers.size();
  if (plan.assignments.size() != n) {
    return absl::InternalError(
        absl::StrCat("plan has ", plan.assignments.size(), " assignments for ",
                     n, " buffers"));
  }
  std::vector<std::vector<int32_t>> members(plan.pools.size());
  for (size_t i = 0; i < n; ++i) {
    const int32_t pool = plan.assignments[i].pool;
    if (pool < 0 || static_cast<size_t>(pool) >= plan.pools.size()) {
      return absl::InternalError(absl::StrCat(
          "plan assigns ", BufferLabel(problem, i), " to pool #", pool));
    }
    members[pool].push_back(static_cast<int32_t>(i));
  }

  auto hint_end = [&](int32_t b) {
    return plan.assignments[b].offset + problem.buffers[b].size;
  };
  std::vector<ExprId> offsets(n, -1);
  std::vector<ExprId> pool_sizes(plan.pools.size(), -1);
  // Strategies reuse and nnc (whose plans carry their decisions) give each
  // buffer a storage of its own or one it takes over, storages back to
  // back: a storage's bytes are the Max of its buffers' (equal under
  // reuse's key), each storage starts where the one below ends (aligned,
  // keeping the plan's gap), as the compilers allocate them; stacking buffer by
  // buffer would nest a Max per storage.
  const bool stacks_storages = plan.decisions != nullptr;
  for (size_t p = 0; p < plan.pools.size(); ++p) {
    if (stacks_storages) {
      const std::vector<Storage> storages =
          DisjointStorages(problem, plan, members[p]);
      if (!storages.empty()) {
        ExprId end = -1;
        Bytes hint_end_below = 0;
        for (const Storage& storage : storages) {
          int64_t alignment = 1;
          std::vector<ExprId> member_sizes;
          for (int32_t b : storage.buffers) {
            alignment = std::max(alignment, problem.AlignmentOf(b));
            member_sizes.push_back(sizes[b]);
          }
          const ExprId offset =
              end < 0 ? arena.Integer(storage.hint_offset)
                      : arena.Align(
                            arena.Add(end, arena.Integer(storage.hint_offset -
                                                         hint_end_below)),
                            alignment);
          for (int32_t b : storage.buffers) offsets[b] = offset;
          end = arena.Add(offset, arena.Max(member_sizes));
          hint_end_below = storage.hint_offset + storage.hint_size;
        }
        pool_sizes[p] =
            arena.Add(end, arena.Integer(std::max<Bytes>(
                               0, plan.pools[p].size - hint_end_below)));
        continue;
      }
    }
    Skyline skyline;
    std::vector<int32_t> never_stacked;  // empty live ranges
    for (int32_t b : BottomFirst(problem, plan, members[p])) {
      const Buffer& buffer = problem.buffers[b];
      const Bytes hint_offset = plan.assignments[b].offset;
      std::vector<int32_t> below;
      if (buffer.live_range.begin < buffer.live_range.end) {
        below = skyline.Stack(b, buffer.live_range);
      } else {
        never_stacked.push_back(b);
      }
      if (below.empty()) {
        offsets[b] = arena.Integer(hint_offset);
        continue;
      }
      std::vector<ExprId> terms;
      terms.reserve(below.size());
      for (int32_t c : below) {
        const Bytes gap = std::max<Bytes>(0, hint_offset - hint_end(c));
        terms.push_back(arena.Add({offsets[c], sizes[c], arena.Integer(gap)}));
      }
      const ExprId stacked =
          arena.Align(arena.Max(terms), problem.AlignmentOf(b));
      if (!buffer.fixed_offset) {
        offsets[b] = stacked;
        continue;
      }
      int64_t lowest = 0;
      if (!arena.IsInteger(stacked, &lowest) || lowest > *buffer.fixed_offset) {
        return absl::InvalidArgumentError(absl::StrCat(
            BufferLabel(problem, b), ": fixed_offset ", *buffer.fixed_offset,
            " cannot hold under symbolic sizes: the buffers below it in ",
            plan.pools[p].name, " end at ", arena.Snippet(stacked),
            ", which may exceed it"));
      }
      offsets[b] = arena.Integer(*buffer.fixed_offset);
    }
    // The pool ends at the highest end of a buffer on top somewhere: each
    // other buffer lies below one of those.
    std::vector<int32_t> top = skyline.Visible();
    top.insert(top.end(), never_stacked.begin(), never_stacked.end());
    std::vector<ExprId> ends;
    Bytes hint_top = 0;
    for (int32_t b : top) {
      ends.push_back(arena.Add(offsets[b], sizes[b]));
      hint_top = std::max(hint_top, hint_end(b));
    }
    const Bytes slack = std::max<Bytes>(0, plan.pools[p].size - hint_top);
    pool_sizes[p] = ends.empty()
                        ? arena.Integer(plan.pools[p].size)
                        : arena.Add(arena.Max(ends), arena.Integer(slack));
  }
  return SetSymbolicPlan(arena, pool_sizes, offsets, plan);
}

}  // namespace memplan
