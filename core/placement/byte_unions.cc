#include "core/placement/byte_unions.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace memplan {
namespace best_fit_internal {

void AddToUnion(ByteUnion& byte_union, Bytes lo, Bytes hi,
                IntervalArena& arena) {
  ByteUnion& u = byte_union;
  if (u.size == 0) {
    u = ByteUnion{{lo, hi}, nullptr, 1, 0};
    return;
  }
  if (u.size == 1) {
    if (lo <= u.span.hi && u.span.lo <= hi) {  // overlapping or touching
      u.span.lo = std::min(u.span.lo, lo);
      u.span.hi = std::max(u.span.hi, hi);
      return;
    }
    u.block = arena.Allocate(1);
    u.capacity_log2 = 1;
    u.size = 2;
    ByteInterval* const intervals = u.block;
    const ByteInterval old{u.span.lo, u.span.hi};
    const ByteInterval added{lo, hi};
    intervals[0] = lo < old.lo ? added : old;
    intervals[1] = lo < old.lo ? old : added;
    u.span.lo = intervals[0].lo;
    u.span.hi = intervals[1].hi;
    return;
  }
  ByteInterval* intervals = u.block;
  ByteInterval* const end = intervals + u.size;
  // The first interval that reaches lo: every one before it ends below lo.
  ByteInterval* const first = FirstEndingAfter(intervals, end, lo - 1);
  ByteInterval* last = first;
  while (last != end && last->lo <= hi) {
    lo = std::min(lo, last->lo);
    hi = std::max(hi, last->hi);
    ++last;
  }
  if (first != last) {  // merges [first, last) into one
    *first = ByteInterval{lo, hi};
    std::copy(last, end, first + 1);
    u.size -= static_cast<uint32_t>(last - first - 1);
  } else {  // a new interval before `first`
    const size_t position = static_cast<size_t>(first - intervals);
    if (u.size == (uint32_t{1} << u.capacity_log2)) {
      ByteInterval* const grown = arena.Allocate(u.capacity_log2 + 1);
      ByteInterval* const copy = grown;
      std::copy(intervals, intervals + position, copy);
      std::copy(intervals + position, intervals + u.size, copy + position + 1);
      arena.Release(u.block, u.capacity_log2);
      u.block = grown;
      ++u.capacity_log2;
      intervals = copy;
    } else {
      std::copy_backward(intervals + position, intervals + u.size,
                         intervals + u.size + 1);
    }
    intervals[position] = ByteInterval{lo, hi};
    ++u.size;
  }
  u.span.lo = intervals[0].lo;
  u.span.hi = intervals[u.size - 1].hi;
  if (u.size == 1) {
    arena.Release(u.block, u.capacity_log2);
    u.block = nullptr;
    u.capacity_log2 = 0;
  }
}

}  // namespace best_fit_internal
}  // namespace memplan
