// The sequence in which best fit's engine places the items of an order: a
// sweep over time that keeps every overlapping pair in the order's rank
// order (BestFitSchedule::kTimeSweep and kPeakFirst, core/placement/
// best_fit.h). Internal to core/placement/best_fit.cc.
#ifndef MEMPLAN_CORE_PLACEMENT_TIME_SWEEP_H_
#define MEMPLAN_CORE_PLACEMENT_TIME_SWEEP_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/types.h"

namespace memplan {
namespace best_fit_internal {

// One item to place, with what placing it reads, so that the loop over
// items in order reads memory in sequence.
struct Job {
  uint32_t item;            // index into PlacementProblem::items
  uint32_t first_leaf;      // first leaf its live range covers
  uint32_t end_leaf;        // one past its last leaf
  uint32_t alignment_log2;  // of the alignment in bytes
  Bytes size;               // bytes

  Bytes alignment() const { return Bytes{1} << alignment_log2; }
};

// Yields the jobs of an order, given in the order's ranks, in a sweep over
// time instead of jumps across it, so that the engine reads nodes and
// unions it has just read, from cache. The placement stays the same: a
// job's offset depends only on the jobs placed before it whose live ranges
// overlap its own, so any sequence that keeps every overlapping pair in
// rank order places every job at the same offset.
//
// The jobs are laid out by first leaf, and taken in that layout; a job is
// due once no job of lower rank that overlaps it is left. Until then, the
// first such job in the layout is taken first, on an explicit stack (ranks
// fall from bottom to top, so it ends). Every job before the stack's
// bottom is done, and every one left between two stack entries outranks
// the upper one, so the jobs that can hold back the top are those laid out
// after it that begin before it ends (a job laid out before it is done or
// outranks it, whatever the order within a leaf): a run of the layout,
// searched for its first rank below the top's in a minimum tree over the
// layout. O(n log n) time in all, O(n) memory. The jobs are yielded a
// batch at a time, so that an order stopped early (one that cannot win)
// sweeps no further than it places.
class TimeSweep {
 public:
  // Starts a sweep over `jobs`, in any order; `rank[job.item]`: its rank,
  // distinct and below 2^63; `leaves`: the engine's leaf count (every
  // job's leaves lie in [0, leaves)). Keeps the memory of the last sweep.
  void Start(const std::vector<Job>& jobs, const std::vector<uint64_t>& rank,
             size_t leaves);

  bool done() const { return first_ == laid_.size() && stack_.empty(); }

  // Returns a leaf b such that every job beginning before leaf b has been
  // yielded. Jobs are taken in the layout, so the places before the
  // stack's bottom (or, with the stack empty, before the next place) are
  // all taken.
  size_t YieldedBefore() const;

  // Appends to `out`, in rank order, the jobs covering leaf `peak` and
  // every job they wait for: the set closed under "overlaps a job of the
  // set and ranks below it" (BestFitSchedule::kPeakFirst); the sweep then
  // passes over them. Call it first, if at all. `max_span`: no job covers
  // more leaves. Appends nothing where the set would hold more than half
  // of the jobs (placing it first then gains little).
  //
  // Taken by falling rank, a job belongs to the set if it covers the peak
  // or overlaps a job of the set already taken (all of which rank above
  // it). The set's jobs all meet at the peak or through each other, so
  // the leaves they cover form one run [lo, hi), and "overlaps a job of
  // the set" is "overlaps [lo, hi)": one pass over the jobs by falling
  // rank. Only the jobs meeting a window around the peak are passed over
  // (a run of the layout, less those ending before the window); a set that
  // reaches past the window's edge may have missed jobs beyond it, so the
  // window then grows to twice the set's reach and the pass is made again.
  // O(m log m) a pass, m jobs in the run, O(log n) passes.
  void NextPeakFirst(uint32_t peak, uint32_t max_span, std::vector<Job>& out);

  // Appends the next jobs in the sweep to `out`, taking at most `steps`
  // steps (each yields a job or holds one back); possibly none.
  void Next(std::vector<Job>& out, size_t steps);

 private:
  static constexpr uint64_t kDone = std::numeric_limits<uint64_t>::max();

  // A job held back, at `place` in the layout, and where the search for
  // what holds it back resumes.
  struct Entry {
    uint32_t place;
    uint32_t from;
  };

  // Returns the first place in [from, to) whose rank is below `rank`, or
  // `to`: the nodes covering the run, left to right, then down the first
  // that holds one.
  uint32_t FirstBelow(size_t from, size_t to, uint64_t rank) const;

  // Marks the job at `place` taken.
  void Take(size_t place);

  // leaf_start_[l]: the first place whose job begins at leaf l or later.
  std::vector<uint32_t> leaf_start_;
  std::vector<Job> laid_;  // the layout
  // Leaf p (at width_ + p) holds the rank of the job at place p, kDone
  // once taken; a node, its children's minimum.
  size_t width_ = 1;
  std::vector<uint64_t> tree_;
  std::vector<uint32_t> next_;  // Start's scratch
  uint32_t first_ = 0;          // the next place the sweep itself visits
  std::vector<Entry> stack_;
};

}  // namespace best_fit_internal
}  // namespace memplan

#endif  // MEMPLAN_CORE_PLACEMENT_TIME_SWEEP_H_
