#include "core/placement/time_sweep.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace memplan {
namespace best_fit_internal {

void TimeSweep::Start(const std::vector<Job>& jobs,
                      const std::vector<uint64_t>& rank, size_t leaves) {
  leaf_start_.assign(leaves + 1, 0);
  for (const Job& job : jobs) ++leaf_start_[job.first_leaf + 1];
  for (size_t l = 0; l < leaves; ++l) leaf_start_[l + 1] += leaf_start_[l];
  width_ = 1;
  while (width_ < jobs.size()) width_ *= 2;
  tree_.assign(2 * width_, kDone);
  laid_.resize(jobs.size());
  next_.assign(leaf_start_.begin(), leaf_start_.end() - 1);
  for (const Job& job : jobs) {
    const uint32_t place = next_[job.first_leaf]++;
    laid_[place] = job;
    tree_[width_ + place] = rank[job.item];
  }
  for (size_t v = width_; v-- > 1;) {
    tree_[v] = std::min(tree_[2 * v], tree_[2 * v + 1]);
  }
  first_ = 0;
  stack_.clear();
}

size_t TimeSweep::YieldedBefore() const {
  const uint32_t taken = stack_.empty() ? first_ : stack_.front().place;
  // The jobs beginning before leaf b fill places [0, leaf_start_[b]).
  return static_cast<size_t>(
      std::upper_bound(leaf_start_.begin(), leaf_start_.end(), taken) -
      leaf_start_.begin() - 1);
}

void TimeSweep::NextPeakFirst(uint32_t peak, uint32_t max_span,
                              std::vector<Job>& out) {
  std::vector<uint32_t> candidates;  // places in the layout
  std::vector<uint32_t> set;         // places, by falling rank
  uint32_t window_lo = peak;
  uint32_t window_hi = peak + 1;
  for (;;) {
    candidates.clear();
    // Jobs meeting the window begin after window_lo - max_span.
    const uint32_t from =
        leaf_start_[window_lo - std::min(window_lo, max_span - 1)];
    for (uint32_t place = from; place < leaf_start_[window_hi]; ++place) {
      if (laid_[place].end_leaf > window_lo) candidates.push_back(place);
    }
    if (candidates.size() > laid_.size() / 2) return;
    std::sort(candidates.begin(), candidates.end(),
              [&](uint32_t a, uint32_t b) {
                return tree_[width_ + a] > tree_[width_ + b];
              });
    set.clear();
    uint32_t lo = 0;
    uint32_t hi = 0;  // [lo, hi): the leaves the set covers
    for (const uint32_t place : candidates) {
      const Job& job = laid_[place];
      const bool covers_peak = job.first_leaf <= peak && peak < job.end_leaf;
      const bool meets =
          !set.empty() && job.first_leaf < hi && lo < job.end_leaf;
      if (!covers_peak && !meets) continue;
      lo = set.empty() ? job.first_leaf : std::min(lo, job.first_leaf);
      hi = set.empty() ? job.end_leaf : std::max(hi, job.end_leaf);
      set.push_back(place);
    }
    if (set.empty() || (window_lo <= lo && hi <= window_hi)) break;
    // Twice as far from the peak as the set reaches, on each side.
    if (lo < window_lo) window_lo = lo - std::min(lo, peak - lo);
    if (hi > window_hi) {
      window_hi = static_cast<uint32_t>(std::min<uint64_t>(
          leaf_start_.size() - 1, uint64_t{hi} + (hi - peak)));
    }
  }
  for (size_t k = set.size(); k-- > 0;) {
    out.push_back(laid_[set[k]]);
    Take(set[k]);
  }
}

void TimeSweep::Next(std::vector<Job>& out, size_t steps) {
  for (; steps > 0 && !done(); --steps) {
    if (stack_.empty()) {
      const uint32_t first = first_++;
      if (tree_[width_ + first] != kDone) stack_.push_back({first, first + 1});
      continue;
    }
    Entry& top = stack_.back();
    const uint32_t to = leaf_start_[laid_[top.place].end_leaf];
    const uint32_t held_by =
        FirstBelow(top.from, to, tree_[width_ + top.place]);
    if (held_by < to) {
      top.from = held_by + 1;  // the places between are clear
      stack_.push_back({held_by, held_by + 1});
      continue;
    }
    out.push_back(laid_[top.place]);
    Take(top.place);
    stack_.pop_back();
  }
}

uint32_t TimeSweep::FirstBelow(size_t from, size_t to, uint64_t rank) const {
  size_t right[64];
  size_t right_count = 0;
  size_t hit = 0;  // a node holding one
  for (size_t l = from + width_, r = to + width_; l < r; l >>= 1, r >>= 1) {
    if ((l & 1) != 0) {
      if (tree_[l] < rank) {
        hit = l;
        break;
      }
      ++l;
    }
    if ((r & 1) != 0) right[right_count++] = --r;
  }
  for (size_t k = right_count; hit == 0 && k-- > 0;) {
    if (tree_[right[k]] < rank) hit = right[k];
  }
  if (hit == 0) return static_cast<uint32_t>(to);
  while (hit < width_) {
    hit *= 2;
    if (tree_[hit] >= rank) ++hit;
  }
  return static_cast<uint32_t>(hit - width_);
}

void TimeSweep::Take(size_t place) {
  size_t v = width_ + place;
  tree_[v] = kDone;
  for (v >>= 1; v >= 1; v >>= 1) {
    const uint64_t least = std::min(tree_[2 * v], tree_[2 * v + 1]);
    if (tree_[v] == least) break;
    tree_[v] = least;
  }
}

}  // namespace best_fit_internal
}  // namespace memplan
