// Unions of byte intervals, the sets of bytes best fit's segment tree keeps
// at each node, and the arena their intervals live in: internal to
// core/placement/best_fit.cc (and program_order_sweep.cc, for ByteInterval
// and AlignUpPow2). AddToUnion is out of line (byte_unions.cc), as it was
// when best_fit.cc held it: inlined, the engine ran more instructions.
#ifndef MEMPLAN_CORE_PLACEMENT_BYTE_UNIONS_H_
#define MEMPLAN_CORE_PLACEMENT_BYTE_UNIONS_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/placement/huge_pages.h"
#include "core/types.h"

namespace memplan {
namespace best_fit_internal {

// A half-open interval [lo, hi) of bytes.
struct ByteInterval {
  Bytes lo;
  Bytes hi;
};

// Returns `bytes` rounded up to a multiple of `alignment`, a power of two.
inline Bytes AlignUpPow2(Bytes bytes, Bytes alignment) {
  return (bytes + alignment - 1) & ~(alignment - 1);
}

// Storage of the engine's unions of byte intervals: blocks of 2^k
// intervals, with a free list per k, so that a union that outgrows its
// block gives the block back for the next one of that size. Blocks are
// cut from chunks of one size that never move (a block larger than that
// gets a chunk of its own), so memory grows by a chunk at a time, not by
// copying all of it. Clear keeps the shared chunks for the next Place.
// BestFitEngine sizes the chunks to its problem (ChunkIntervals).
class IntervalArena {
 public:
  // Chunks hold `chunk_intervals` (a power of two, at most 2^31).
  explicit IntervalArena(uint64_t chunk_intervals)
      : chunk_intervals_(chunk_intervals) {}

  void Clear() {
    large_.clear();
    for (std::vector<ByteInterval*>& free : free_) free.clear();
    current_ = 0;
    used_ = 0;
  }

  // Returns a block of 2^capacity_log2 intervals; it stays where it is
  // until released or cleared.
  ByteInterval* Allocate(uint32_t capacity_log2) {
    std::vector<ByteInterval*>& free = free_[capacity_log2];
    if (!free.empty()) {
      ByteInterval* const block = free.back();
      free.pop_back();
      return block;
    }
    const uint64_t capacity = uint64_t{1} << capacity_log2;
    if (capacity > chunk_intervals_) {
      large_.push_back(AllocateHuge<ByteInterval>(capacity));
      return large_.back().get();
    }
    if (used_ + capacity > chunk_intervals_) {
      ++current_;
      used_ = 0;
    }
    if (current_ == shared_.size()) {
      shared_.push_back(AllocateHuge<ByteInterval>(chunk_intervals_));
    }
    ByteInterval* const block = shared_[current_].get() + used_;
    used_ += capacity;
    return block;
  }

  void Release(ByteInterval* block, uint32_t capacity_log2) {
    free_[capacity_log2].push_back(block);
  }

 private:
  const uint64_t chunk_intervals_;
  std::vector<HugeArray<ByteInterval>> shared_;  // kept by Clear
  std::vector<HugeArray<ByteInterval>> large_;   // a block each
  uint64_t current_ = 0;                 // the shared chunk blocks are cut from
  uint64_t used_ = 0;                    // intervals of it handed out
  std::vector<ByteInterval*> free_[64];  // by capacity_log2
};

// Returns the chunk size of an IntervalArena for `items` items: about 16
// intervals an item (what the engine's unions hold at the end of an order
// on large random problems when nothing is freed, as in the order
// schedule), a power of two from 2^10 (16 KiB) to 2^20 (16 MiB). A time
// sweep frees blocks as it goes and touches only the start of its first
// chunk; mapped memory is faulted in only where touched.
inline uint64_t ChunkIntervals(size_t items) {
  uint64_t intervals = uint64_t{1} << 10;
  while (intervals < (uint64_t{1} << 20) && intervals < 16 * items) {
    intervals *= 2;
  }
  return intervals;
}

// A union of byte intervals: sorted by lo, pairwise disjoint and not
// touching (an interval ending at x and one beginning at x are merged).
// A union of one interval is its span alone; larger ones keep their
// intervals in an IntervalArena block.
struct ByteUnion {
  // [first interval's lo, last interval's hi); with size 1, the interval.
  ByteInterval span = {0, 0};
  ByteInterval* block = nullptr;  // the intervals, from the arena; size >= 2
  uint32_t size = 0;              // number of intervals
  uint32_t capacity_log2 = 0;     // the block holds 2^capacity_log2

  Bytes hi() const { return span.hi; }
};

// Returns the first of the intervals [first, last), sorted and disjoint,
// whose hi exceeds x; last if none does. A binary search without branches
// on the data: its trip count depends on the length alone, so it costs no
// mispredicted branches (the searches here are short and unpredictable).
template <typename Interval>
Interval* FirstEndingAfter(Interval* first, Interval* last, Bytes x) {
  size_t n = static_cast<size_t>(last - first);
  while (n > 1) {
    const size_t half = n / 2;
    // A product, not a conditional: compilers turn the latter into a branch.
    first += half * static_cast<size_t>(first[half - 1].hi <= x);
    n -= half;
  }
  return first + (n == 1 && first->hi <= x ? 1 : 0);
}

// Adds [lo, hi) (lo < hi) to `byte_union`. O(log n) plus the moves of the
// tail, amortized.
void AddToUnion(ByteUnion& byte_union, Bytes lo, Bytes hi,
                IntervalArena& arena);

}  // namespace best_fit_internal
}  // namespace memplan

#endif  // MEMPLAN_CORE_PLACEMENT_BYTE_UNIONS_H_
