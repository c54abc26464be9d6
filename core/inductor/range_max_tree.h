// Range add and range maximum over a fixed array of byte counts, in O(log n)
// per operation and without recursion: what strategy "reuse" needs for
// Inductor's EfficientPeakEstimate (core/inductor/reuse_planner.h), which keeps
// the memory in use per kernel and adds a held storage over a range of kernels.
//
// A perfect binary tree in one array, leaves [L, 2L) for the smallest power
// of two L >= n (the leaves past n hold 0 and are never asked for): an inner
// node p holds the maximum of its two children plus `pending_[p]`, what was
// added to its whole range and not yet pushed down. A node that an update
// or a query touches has a parent that is not inside the range, so every
// ancestor of it is an ancestor of the range's first or last leaf: queries
// push those two paths down first, and updates rebuild them after.
#ifndef MEMPLAN_CORE_INDUCTOR_RANGE_MAX_TREE_H_
#define MEMPLAN_CORE_INDUCTOR_RANGE_MAX_TREE_H_

#include <algorithm>
#include <cstddef>
#include <limits>
#include <vector>

#include "core/types.h"

namespace memplan {

class RangeMaxTree {
 public:
  // Holds `values` (bytes), one per position 0 .. values.size() - 1.
  explicit RangeMaxTree(const std::vector<Bytes>& values) : n_(values.size()) {
    while ((size_t{1} << height_) < n_) ++height_;
    leaves_ = size_t{1} << height_;
    max_.assign(2 * leaves_, 0);
    pending_.assign(leaves_, 0);
    std::copy(values.begin(), values.end(), max_.begin() + leaves_);
    for (size_t p = leaves_; p-- > 1;) {
      max_[p] = std::max(max_[2 * p], max_[2 * p + 1]);
    }
  }

  size_t size() const { return n_; }

  // Adds `value` bytes to every position in [begin, end) (begin <= end <=
  // size()).
  void Add(size_t begin, size_t end, Bytes value) {
    if (begin >= end) return;
    size_t left = begin + leaves_;
    size_t right = end + leaves_;
    const size_t first_leaf = left;
    const size_t last_leaf = right - 1;
    for (; left < right; left >>= 1, right >>= 1) {
      if (left & 1) Apply(left++, value);
      if (right & 1) Apply(--right, value);
    }
    Rebuild(first_leaf);
    Rebuild(last_leaf);
  }

  // Returns the maximum over [begin, end) (begin < end <= size()); the
  // lowest Bytes for an empty range.
  Bytes Max(size_t begin, size_t end) {
    Bytes result = std::numeric_limits<Bytes>::min();
    if (begin >= end) return result;
    size_t left = begin + leaves_;
    size_t right = end + leaves_;
    PushDown(left);
    PushDown(right - 1);
    for (; left < right; left >>= 1, right >>= 1) {
      if (left & 1) result = std::max(result, max_[left++]);
      if (right & 1) result = std::max(result, max_[--right]);
    }
    return result;
  }

 private:
  // Adds `value` to node p's whole range.
  void Apply(size_t p, Bytes value) {
    max_[p] += value;
    if (p < leaves_) pending_[p] += value;
  }

  // Recomputes the ancestors of leaf p from their children.
  void Rebuild(size_t p) {
    for (p >>= 1; p >= 1; p >>= 1) {
      max_[p] = std::max(max_[2 * p], max_[2 * p + 1]) + pending_[p];
    }
  }

  // Pushes the pending adds of the ancestors of leaf p down, root first.
  void PushDown(size_t p) {
    for (int shift = height_; shift > 0; --shift) {
      const size_t node = p >> shift;
      if (node == 0 || pending_[node] == 0) continue;
      Apply(2 * node, pending_[node]);
      Apply(2 * node + 1, pending_[node]);
      pending_[node] = 0;
    }
  }

  size_t n_;
  int height_ = 0;  // leaves_ = 2^height_
  size_t leaves_ = 1;
  std::vector<Bytes> max_;      // [1, leaves_): inner nodes; then leaves
  std::vector<Bytes> pending_;  // per inner node
};

}  // namespace memplan

#endif  // MEMPLAN_CORE_INDUCTOR_RANGE_MAX_TREE_H_
