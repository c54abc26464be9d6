#include "core/placement/best_fit.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <queue>
#include <system_error>
#include <utility>
#include <thread>
#include <vector>

#ifdef __linux__
#include <sys/mman.h>
#endif

#include "absl/container/btree_set.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"

namespace memplan {
namespace {

// Items placed between two checks of the deadline and cancellation.
constexpr size_t kCheckInterval = 4096;

// Steps of a TimeSweep between two releases of the unions it has passed
// (BestFitEngine::ReleaseBefore); kCheckInterval is a multiple of it.
constexpr size_t kSweepBatch = 256;
static_assert(kCheckInterval % kSweepBatch == 0);

// How a portfolio stops an order that can no longer win. Either may be
// null.
struct OrderStop {
  const std::atomic<bool>* abandoned = nullptr;  // set: stop
  // Stop once the height so far exceeds it: a placement's height only
  // grows as items are placed, so the order would end above a placement
  // another order has finished.
  const std::atomic<Bytes>* ceiling = nullptr;

  // Returns whether a placement `height` bytes high so far cannot win.
  // Cheap enough for every item.
  bool Exceeded(Bytes height) const {
    return ceiling != nullptr &&
           height > ceiling->load(std::memory_order_relaxed);
  }
};

// The status of an order stopped by OrderStop::Exceeded.
absl::Status CannotWin() {
  return absl::AbortedError("this order cannot beat one that finished");
}

// Returns context.Check(), or ABORTED when `stop` says the portfolio no
// longer needs the order.
absl::Status CheckOrder(const PlanContext& context, const OrderStop& stop) {
  if (stop.abandoned != nullptr &&
      stop.abandoned->load(std::memory_order_relaxed)) {
    return absl::AbortedError("the portfolio no longer needs this order");
  }
  return context.Check();
}

// Unions this short are cut from the free gaps interval by interval.
constexpr size_t kFewIntervals = 4;

// Place fetches the nodes of the job kNodesAhead places ahead, and the
// blocks of the job kBlocksAhead ahead, in a ring of kLookahead NodeLists.
constexpr size_t kNodesAhead = 6;
constexpr size_t kBlocksAhead = 3;
constexpr size_t kLookahead = 8;

// BestFitEngine keeps nodes on every kLevelStride-th level of its binary
// tree only (0, 3, 6, ...): a tree of fanout 8. A canonical node on a
// level between is replaced by its descendants on the kept level below
// it. Fewer levels mean fewer ancestors to read and write per item, for
// more canonical nodes. One thread, the bench's 1M random items, the
// whole portfolio: stride 1: 4.8 to 5.3 s; 2: 4.2 to 4.5 s; 3: 4.0 to
// 4.3 s; 4: 4.1 to 4.6 s; 5: 4.9 to 5.1 s; 6: 6.1 to 6.5 s.
constexpr int kLevelStride = 3;

// Returns the kept level that a canonical node on `level` is replaced
// from: the highest kept level at or below it.
constexpr int KeptLevel(int level) { return level - level % kLevelStride; }

// The most canonical nodes of one item after replacement: at most one a
// level on each side, each replaced by up to 2^(kLevelStride - 1) nodes,
// over at most 64 levels.
constexpr size_t MaxCanonicalNodes() {
  size_t nodes = 0;
  for (int level = 0; level < 64; ++level) {
    nodes += 2 * (size_t{1} << (level - KeptLevel(level)));
  }
  return nodes;
}

// A half-open interval [lo, hi) of bytes.
struct ByteInterval {
  Bytes lo;
  Bytes hi;
};

// Memory for the engine's interval blocks, which it reads at random. From
// 8 MiB up, on Linux, it is mapped on its own and marked for transparent huge
// pages, so that a read misses the TLB far less often than with 4 KiB
// pages, and it goes back to the system when freed (malloc keeps large
// freed blocks once its threshold has grown). Smaller arrays come from
// malloc. The contents are uninitialized.
class HugeMemory {
 public:
  void operator()(void* memory) const {
#ifdef __linux__
    if (mapped_bytes_ > 0) {
      munmap(memory, mapped_bytes_);
      return;
    }
#endif
    std::free(memory);
  }

  static std::pair<void*, HugeMemory> Allocate(size_t bytes) {
    HugeMemory owner;
#ifdef __linux__
    constexpr size_t kMapFrom = size_t{8} << 20;
    if (bytes >= kMapFrom) {
      void* const memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (memory == MAP_FAILED) throw std::bad_alloc();
      // A hint: where it fails, the memory is used as it is.
      madvise(memory, bytes, MADV_HUGEPAGE);
      owner.mapped_bytes_ = bytes;
      return {memory, owner};
    }
#endif
    // Cache-line aligned, as Node asks.
    void* const memory =
        std::aligned_alloc(64, (std::max<size_t>(bytes, 1) + 63) / 64 * 64);
    if (memory == nullptr) throw std::bad_alloc();
    return {memory, owner};
  }

 private:
  size_t mapped_bytes_ = 0;  // 0: from malloc
};
template <typename T>
using HugeArray = std::unique_ptr<T[], HugeMemory>;

template <typename T>
HugeArray<T> AllocateHuge(size_t count) {
  static_assert(alignof(T) <= 64);
  auto [memory, owner] = HugeMemory::Allocate(count * sizeof(T));
  return HugeArray<T>(static_cast<T*>(memory), owner);
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
  uint64_t current_ = 0;  // the shared chunk blocks are cut from
  uint64_t used_ = 0;     // intervals of it handed out
  std::vector<ByteInterval*> free_[64];  // by capacity_log2
};

// Returns the chunk size of an IntervalArena for `items` items: about 16
// intervals an item (what the engine's unions hold at the end of an order
// on large random problems when nothing is freed, as in the order
// schedule), a power of two from 2^10 (16 KiB) to 2^20 (16 MiB). A time
// sweep frees blocks as it goes and touches only the start of its first
// chunk; mapped memory is faulted in only where touched.
uint64_t ChunkIntervals(size_t items) {
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
  uint32_t size = 0;           // number of intervals
  uint32_t capacity_log2 = 0;  // the block holds 2^capacity_log2

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
      std::copy(intervals + position, intervals + u.size,
                copy + position + 1);
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

// The end of the gap above every item.
constexpr Bytes kUnbounded = std::numeric_limits<Bytes>::max();

// Returns `bytes` rounded up to a multiple of `alignment`, a power of two.
inline Bytes AlignUpPow2(Bytes bytes, Bytes alignment) {
  return (bytes + alignment - 1) & ~(alignment - 1);
}

// Maps a signed key to an unsigned one of the same order.
uint64_t Ordered(int64_t key) {
  return static_cast<uint64_t>(key) ^ (uint64_t{1} << 63);
}

// The place of one item in an order: sorted ascending by (a, b, c, item),
// so every order is total and the sort's result unique.
struct OrderKey {
  uint64_t a;
  uint64_t b;
  uint64_t c;
  uint32_t item;

  bool operator<(const OrderKey& other) const {
    if (a != other.a) return a < other.a;
    if (b != other.b) return b < other.b;
    if (c != other.c) return c < other.c;
    return item < other.item;
  }
};

// A key of at most 64 bits and its item, sorted by (key, item).
struct PackedKey {
  uint64_t key;
  uint32_t item;
};

// Sorts `keys`, listed by ascending item, by their words from the most
// significant down (`word(key, w)`: word w of kWords, 0 the least
// significant), ties keeping the item order: a least significant digit
// first radix sort in 11-bit digits, each pass stable. Digits that every
// key shares are skipped: the orders' keys are sizes, lengths and products
// of them, so most digits are. O(n) a digit that differs.
template <int kWords, typename Key, typename Word>
void RadixSort(std::vector<Key>& keys, Word word) {
  constexpr int kDigitBits = 11;
  constexpr size_t kBuckets = size_t{1} << kDigitBits;
  // The bits where some two keys differ, per word, in one pass.
  uint64_t all[kWords];
  uint64_t any[kWords];
  for (int w = 0; w < kWords; ++w) {
    all[w] = ~uint64_t{0};
    any[w] = 0;
  }
  for (const Key& key : keys) {
    for (int w = 0; w < kWords; ++w) {
      all[w] &= word(key, w);
      any[w] |= word(key, w);
    }
  }
  std::vector<Key> buffer;
  std::vector<uint32_t> start(kBuckets);
  for (int w = 0; w < kWords; ++w) {
    const uint64_t differ = keys.empty() ? 0 : all[w] ^ any[w];
    for (int shift = 0; shift < 64; shift += kDigitBits) {
      if (((differ >> shift) & (kBuckets - 1)) == 0) continue;
      const auto digit = [&](const Key& key) {
        return static_cast<size_t>((word(key, w) >> shift) & (kBuckets - 1));
      };
      std::fill(start.begin(), start.end(), 0);
      for (const Key& key : keys) ++start[digit(key)];
      uint32_t next = 0;  // start becomes each bucket's first slot
      for (uint32_t& count : start) {
        const uint32_t here = count;
        count = next;
        next += here;
      }
      buffer.resize(keys.size());
      for (const Key& key : keys) buffer[start[digit(key)]++] = key;
      keys.swap(buffer);
    }
  }
}

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
             size_t leaves) {
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

  bool done() const { return first_ == laid_.size() && stack_.empty(); }

  // Returns a leaf b such that every job beginning before leaf b has been
  // yielded. Jobs are taken in the layout, so the places before the
  // stack's bottom (or, with the stack empty, before the next place) are
  // all taken.
  size_t YieldedBefore() const {
    const uint32_t taken = stack_.empty() ? first_ : stack_.front().place;
    // The jobs beginning before leaf b fill places [0, leaf_start_[b]).
    return static_cast<size_t>(
        std::upper_bound(leaf_start_.begin(), leaf_start_.end(), taken) -
        leaf_start_.begin() - 1);
  }

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
  void NextPeakFirst(uint32_t peak, uint32_t max_span, std::vector<Job>& out) {
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

  // Appends the next jobs in the sweep to `out`, taking at most `steps`
  // steps (each yields a job or holds one back); possibly none.
  void Next(std::vector<Job>& out, size_t steps) {
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
  uint32_t FirstBelow(size_t from, size_t to, uint64_t rank) const {
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

  // Marks the job at `place` taken.
  void Take(size_t place) {
    size_t v = width_ + place;
    tree_[v] = kDone;
    for (v >>= 1; v >= 1; v >>= 1) {
      const uint64_t least = std::min(tree_[2 * v], tree_[2 * v + 1]);
      if (tree_[v] == least) break;
      tree_[v] = least;
    }
  }

  // leaf_start_[l]: the first place whose job begins at leaf l or later.
  std::vector<uint32_t> leaf_start_;
  std::vector<Job> laid_;  // the layout
  // Leaf p (at width_ + p) holds the rank of the job at place p, kDone
  // once taken; a node, its children's minimum.
  size_t width_ = 1;
  std::vector<uint64_t> tree_;
  std::vector<uint32_t> next_;  // Start's scratch
  uint32_t first_ = 0;  // the next place the sweep itself visits
  std::vector<Entry> stack_;
};

// A node of BestFitEngine's tree above the leaves. One cache line: a visit
// that needs only the spans reads nothing else.
struct alignas(64) Node {
  ByteUnion own;  // items stored here: each covers the node's span
  ByteUnion sub;  // items stored here or below it
};

// Pages of a tree level: kPageNodes consecutive nodes of one level.
constexpr size_t kPageLog2 = 6;
constexpr size_t kPageNodes = size_t{1} << kPageLog2;

// Pages of T (Node, or ByteUnion for leaves), all empty when taken: cut
// from slabs of kSlabPages that are kept until the pool goes, and given
// back once emptied.
template <typename T>
class PagePool {
 public:
  T* Take() {
    if (free_.empty()) {
      constexpr size_t kSlabPages = 16;
      // Value-initialized: every union empty.
      slabs_.push_back(std::make_unique<T[]>(kSlabPages * kPageNodes));
      for (size_t p = kSlabPages; p-- > 0;) {
        free_.push_back(slabs_.back().get() + p * kPageNodes);
      }
    }
    T* const page = free_.back();
    free_.pop_back();
    return page;
  }

  // Takes back a page whose every element is T{}.
  void Give(T* page) { free_.push_back(page); }

 private:
  std::vector<std::unique_ptr<T[]>> slabs_;
  std::vector<T*> free_;
};

// One level of the tree: its nodes in pages, taken from `pool` when first
// reached. Elements of pages not taken are empty.
template <typename T>
class PagedLevel {
 public:
  // `nodes`: the level's node count.
  void Resize(size_t nodes) {
    pages_.assign((nodes + kPageNodes - 1) >> kPageLog2, nullptr);
  }

  T& At(size_t j, PagePool<T>& pool) {
    T*& page = pages_[j >> kPageLog2];
    if (page == nullptr) page = pool.Take();
    return page[j & (kPageNodes - 1)];
  }

  // Calls empty(node) on every taken node in [from, to), which must leave
  // it T{}, and gives back the pages that end by `to`.
  template <typename Empty>
  void EmptyRange(size_t from, size_t to, PagePool<T>& pool, Empty empty) {
    for (size_t p = from >> kPageLog2; p << kPageLog2 < to; ++p) {
      T* const page = pages_[p];
      if (page == nullptr) continue;
      const size_t first = p << kPageLog2;
      const size_t end = std::min(to, first + kPageNodes);
      for (size_t j = std::max(from, first); j < end; ++j) {
        empty(page[j - first]);
      }
      if (end == first + kPageNodes) {
        pool.Give(page);
        pages_[p] = nullptr;
      }
    }
  }

  // Empties every page taken and gives it back.
  void Clear(PagePool<T>& pool) {
    for (T*& page : pages_) {
      if (page == nullptr) continue;
      std::fill_n(page, kPageNodes, T{});
      pool.Give(page);
      page = nullptr;
    }
  }

 private:
  std::vector<T*> pages_;  // null: not taken
};

// Best-fit placement over a segment tree on (compressed) time.
//
// Time is cut into elementary intervals (leaves) at every begin and end.
// An item covering leaves [l, r) is stored at the O(log n) canonical nodes
// whose spans partition [l, r), as in any segment tree:
//
//   level 2     [----------------- 1 -----------------]
//   level 1     [------- 2 --------][------- 3 --------]
//   level 0     [   4    ][   5    ][   6    ][   7    ]
//   item [1,4)            [   5    ][------- 3 --------]  canonical: 5, 3
//                                                         ancestors: 2, 1
//
// Each node keeps two unions of byte intervals:
//   own: items stored at the node (each covers the node's whole span), and
//   sub: items stored at the node or below it (each intersects its span).
// The items whose live ranges intersect a query range [l, r) are exactly
// those in sub of the query's canonical nodes plus those in own of the
// canonical nodes' strict ancestors; the bytes they occupy, merged, leave
// the gaps free during the whole range. Inserting an item adds it to own
// and sub of its canonical nodes and to sub of their strict ancestors.
//
// Nodes are kept on every kLevelStride-th level only (a canonical node
// between is replaced by its descendants on the kept level below), and of
// those, only on levels that hold a canonical node of some item: no item
// is stored anywhere else, so the other levels are skipped. A leaf keeps
// one union: with no children, its own and sub are the same. Items are
// taken in a TimeSweep (after the peak's set, with kPeakFirst) unless the
// caller asks for the order itself (BestFitSchedule). In a sweep, the
// unions of nodes that every job left to place begins after are freed as
// it goes (ReleaseBefore), so the arena holds the unions near the sweep,
// not all of them, and reuses blocks still in cache. The nodes themselves
// live in pages per level (PagedLevel), taken when the sweep reaches them
// and given back once it has passed them, so that they too are few and
// warm. On the bench's 1M random items the two took the portfolio's peak
// memory from 887 to 266 MiB.
class BestFitEngine {
 public:
  explicit BestFitEngine(const PlacementProblem& problem)
      : problem_(problem), arena_(ChunkIntervals(problem.items.size())) {
    const std::vector<PlacementItem>& items = problem.items;
    first_leaf_.assign(items.size(), 0);
    end_leaf_.assign(items.size(), 0);
    const size_t num_leaves = FindLeaves();
    leaves_ = 1;
    levels_ = 1;
    while (leaves_ < num_leaves) {
      leaves_ *= 2;
      ++levels_;
    }
    level_read_ = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].occupies()) continue;
      max_span_ = std::max(max_span_, end_leaf_[i] - first_leaf_[i]);
      size_t l = first_leaf_[i] + leaves_;
      size_t r = end_leaf_[i] + leaves_;
      for (int level = 0; l < r; ++level, l >>= 1, r >>= 1) {
        if ((l & 1) != 0 || (r & 1) != 0) {
          level_read_ |= uint64_t{1} << KeptLevel(level);
        }
        if ((l & 1) != 0) ++l;
        if ((r & 1) != 0) --r;
      }
    }
    while (read_levels_end_ < levels_ && (level_read_ >> read_levels_end_) != 0) {
      ++read_levels_end_;
    }
    leaf_level_.Resize(leaves_);
    inner_levels_.resize(std::max(read_levels_end_, 1));
    for (int level = 1; level < read_levels_end_; ++level) {
      if (LevelRead(level)) inner_levels_[level].Resize(leaves_ >> level);
    }
  }

  // Cuts time into leaves at every begin and end of a spatial item: sets
  // first_leaf_ and end_leaf_ to each such item's leaf range, and returns
  // the number of leaves (at least 1). Where the times are dense
  // (SpatialTimes::dense), a table over their span gives each time its
  // leaf in O(n + span); else a sort and binary searches do, O(n log n).
  size_t FindLeaves() {
    const std::vector<PlacementItem>& items = problem_.items;
    const SpatialTimes spatial_times = FindSpatialTimes(problem_);
    if (spatial_times.ends == 0) return 1;
    if (spatial_times.dense()) {
      // table[t - lo]: 1 where a time is used, then the used times before t.
      std::vector<uint32_t> table(spatial_times.span(), 0);
      const auto at = [&](Timestep t) -> uint32_t& {
        return table[spatial_times.at(t)];
      };
      for (const PlacementItem& item : items) {
        if (!item.occupies()) continue;
        at(item.live_range.begin) = 1;
        at(item.live_range.end) = 1;
      }
      uint32_t used = 0;
      for (uint32_t& entry : table) {
        const uint32_t here = entry;
        entry = used;
        used += here;
      }
      for (size_t i = 0; i < items.size(); ++i) {
        if (!items[i].occupies()) continue;
        first_leaf_[i] = at(items[i].live_range.begin);
        end_leaf_[i] = at(items[i].live_range.end);
      }
      return used - 1;
    }
    std::vector<Timestep> times;
    times.reserve(spatial_times.ends);
    for (const PlacementItem& item : items) {
      if (!item.occupies()) continue;
      times.push_back(item.live_range.begin);
      times.push_back(item.live_range.end);
    }
    std::sort(times.begin(), times.end());
    times.erase(std::unique(times.begin(), times.end()), times.end());
    const auto leaf = [&](Timestep t) {
      return static_cast<uint32_t>(
          std::lower_bound(times.begin(), times.end(), t) - times.begin());
    };
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].occupies()) continue;
      first_leaf_[i] = leaf(items[i].live_range.begin);
      end_leaf_[i] = leaf(items[i].live_range.end);
    }
    return times.size() - 1;
  }

  // Places the items in `order`; stops with ABORTED when `stop` says so,
  // as with a deadline.
  absl::StatusOr<Placement> Place(
      BestFitOrder order, const PlanContext& context,
      const OrderStop& stop = OrderStop(),
      BestFitSchedule schedule = BestFitSchedule::kTimeSweep) {
    absl::Status status = CheckOrder(context, stop);
    if (!status.ok()) return status;
    leaf_level_.Clear(leaf_pool_);
    for (PagedLevel<Node>& level : inner_levels_) level.Clear(node_pool_);
    arena_.Clear();
    released_before_ = 0;  // before any Insert, the pinned items' too

    const std::vector<PlacementItem>& items = problem_.items;
    Placement placement;
    placement.offsets.assign(items.size(), 0);
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].pinned()) continue;
      placement.offsets[i] = items[i].fixed_offset;
      if (items[i].occupies()) {
        const Job job = MakeJob(i);
        Decompose(job, lookahead_[0]);
        Insert(job, items[i].fixed_offset, lookahead_[0]);
      }
    }
    std::vector<Job>& jobs = jobs_;  // by item, then in the sequence
    jobs.clear();
    jobs.reserve(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      if (Placed(i)) jobs.push_back(MakeJob(i));
    }
    Ranks(order, rank_);
    // With a sweep, jobs fills as the loop below reaches its end, after
    // the peak's set with kPeakFirst.
    const bool sweep = schedule != BestFitSchedule::kOrder;
    if (sweep) {
      sweep_.Start(jobs, rank_, leaves_);
      jobs.clear();
      if (schedule == BestFitSchedule::kPeakFirst) {
        sweep_.NextPeakFirst(PeakLeaf(), max_span_, jobs);
      }
    } else {
      std::sort(jobs.begin(), jobs.end(), [&](const Job& a, const Job& b) {
        return rank_[a.item] < rank_[b.item];
      });
    }
    // (jobs, leaf): once the first `jobs` jobs are placed, every job
    // beginning before `leaf` is, so the unions of nodes ending by then
    // are read no more (ReleaseBefore).
    std::vector<std::pair<size_t, size_t>> checkpoints;
    size_t batches = 0;
    // Returns whether job k exists, sweeping on to it if need be.
    const auto exists = [&](size_t k) {
      while (k >= jobs.size() && sweep && !sweep_.done() && status.ok()) {
        if (!checkpoints.empty() && checkpoints.back().first == jobs.size()) {
          checkpoints.back().second = sweep_.YieldedBefore();
        } else {
          checkpoints.emplace_back(jobs.size(), sweep_.YieldedBefore());
        }
        sweep_.Next(jobs, kSweepBatch);
        if (batches++ % (kCheckInterval / kSweepBatch) == 0) {
          status = CheckOrder(context, stop);
        }
      }
      return k < jobs.size() && status.ok();
    };
    // The nodes of later jobs are found and fetched while this one is
    // placed: the engine waits on memory far more than it computes.
    const auto stage = [&](size_t k) {
      NodeList& nodes = lookahead_[k % kLookahead];
      Decompose(jobs[k], nodes);
      PrefetchNodes(nodes);
    };
    for (size_t k = 0; k < kNodesAhead && exists(k); ++k) stage(k);
    Bytes height = PlacementHeight(problem_, placement.offsets);  // so far
    for (size_t k = 0; exists(k); ++k) {
      if (k % kCheckInterval == kCheckInterval - 1) {
        status = CheckOrder(context, stop);
        if (!status.ok()) return status;
      }
      if (!checkpoints.empty() && checkpoints.front().first <= k) {
        ReleaseBefore(checkpoints.front().second);
        checkpoints.erase(checkpoints.begin());  // one of a few
      }
      if (exists(k + kNodesAhead)) stage(k + kNodesAhead);
      if (exists(k + kBlocksAhead)) {
        PrefetchBlocks(lookahead_[(k + kBlocksAhead) % kLookahead]);
      }
      const Job& job = jobs[k];
      const NodeList& nodes = lookahead_[k % kLookahead];
      const Bytes offset = BestOffset(job, nodes);
      placement.offsets[job.item] = offset;
      height = std::max(height, offset + job.size);
      if (stop.Exceeded(height)) return CannotWin();
      Insert(job, offset, nodes);
    }
    if (!status.ok()) return status;
    placement.height = PlacementHeight(problem_, placement.offsets);
    return placement;
  }

 private:
  // The nodes one job reads and writes (Decompose), each list bottom-up;
  // at most two a level.
  struct NodeList {
    size_t canonical_count = 0;
    size_t ancestor_count = 0;
    // A canonical node's sub (a leaf's one union), and its own (null for
    // a leaf).
    ByteUnion* sub[MaxCanonicalNodes()];
    ByteUnion* own[MaxCanonicalNodes()];
    Node* ancestors[128];
    size_t ancestor_starts[128];  // the first leaf of each one's span
  };

  // Returns whether some item has a canonical node on `level`.
  bool LevelRead(int level) const { return ((level_read_ >> level) & 1) != 0; }

  // Returns the node at heap index v on `level` (1 or more).
  Node& InnerNode(size_t v, int level) {
    return inner_levels_[level].At(v - (leaves_ >> level), node_pool_);
  }

  // Returns whether Place places item i by best fit: it occupies bytes
  // over time and is not pinned.
  bool Placed(size_t i) const {
    return !problem_.items[i].pinned() && problem_.items[i].occupies();
  }

  Job MakeJob(size_t i) const {
    const PlacementItem& item = problem_.items[i];
    return Job{static_cast<uint32_t>(i), first_leaf_[i], end_leaf_[i],
               item.alignment > 1 ? static_cast<uint32_t>(__builtin_ctzll(
                                        static_cast<uint64_t>(item.alignment)))
                                  : 0,
               item.size};
  }

  // Sets rank[i], for each unpinned spatial item i, to its rank in `order`:
  // distinct keys below 2^63 whose ascending order is the order's (other
  // items' are 0). Where the bits in which the items' OrderKeys differ fit
  // in 63 with the item's index, the rank is those bits, packed: no sort.
  // Else the keys are sorted (RadixSort) and the rank is the position.
  void Ranks(BestFitOrder order, std::vector<uint64_t>& rank) const {
    const std::vector<PlacementItem>& items = problem_.items;
    std::vector<uint64_t> contention;
    uint64_t peak = 0;
    if (order == BestFitOrder::kContentionDescending ||
        order == BestFitOrder::kContentionBandDescending) {
      contention = Contention();
      for (const uint64_t c : contention) peak = std::max(peak, c);
    }
    const auto key_of = [&](size_t i) {
      const PlacementItem& item = items[i];
      // Descending keys are complemented.
      const uint64_t size = ~Ordered(item.size);
      const uint64_t length = ~Ordered(item.live_range.length());
      const uint64_t begin = Ordered(item.live_range.begin);
      OrderKey key{0, 0, 0, static_cast<uint32_t>(i)};
      switch (order) {
        case BestFitOrder::kSizeDescending:
          key.a = size;
          break;
        case BestFitOrder::kLengthDescending:
          key.a = length;
          break;
        case BestFitOrder::kAreaDescending: {
          // Both factors are positive here; the product needs 128 bits.
          const unsigned __int128 area =
              static_cast<unsigned __int128>(item.size) *
              static_cast<unsigned __int128>(item.live_range.length());
          key.a = ~static_cast<uint64_t>(area >> 64);
          key.b = ~static_cast<uint64_t>(area);
          break;
        }
        case BestFitOrder::kProgramOrder:
          key.a = begin;
          break;
        case BestFitOrder::kContentionDescending:
          key.a = ~contention[i];
          key.b = length;
          key.c = size;
          break;
        case BestFitOrder::kContentionBandDescending: {
          // In [0, 64): contention * 64 / (peak + 1), in 128 bits.
          const uint64_t band = static_cast<uint64_t>(
              static_cast<unsigned __int128>(contention[i]) * 64 /
              (static_cast<unsigned __int128>(peak) + 1));
          key.a = ~band;
          key.b = length;
          key.c = size;
          break;
        }
      }
      return key;
    };
    // The bits in which some two keys differ, per word: above the highest,
    // all keys agree, so the bits below it order them. (The keys are made
    // again below rather than kept: 32 bytes an item.)
    uint64_t all[3] = {~uint64_t{0}, ~uint64_t{0}, ~uint64_t{0}};
    uint64_t any[3] = {0, 0, 0};
    for (size_t i = 0; i < items.size(); ++i) {
      if (!Placed(i)) continue;
      const OrderKey key = key_of(i);
      const uint64_t words[3] = {key.a, key.b, key.c};
      for (int w = 0; w < 3; ++w) {
        all[w] &= words[w];
        any[w] |= words[w];
      }
    }
    const auto bit_width = [](uint64_t x) {
      return x == 0 ? 0 : 64 - __builtin_clzll(x);
    };
    int width[3];
    for (int w = 0; w < 3; ++w) width[w] = bit_width(all[w] ^ any[w]);
    const int item_width = bit_width(items.size());
    rank.assign(items.size(), 0);
    // The low `bits` bits of x, shifted up by `shift`.
    const auto field = [](uint64_t x, int bits, int shift) {
      return bits == 0 ? 0 : (x & (~uint64_t{0} >> (64 - bits))) << shift;
    };
    // The differing bits of `key`, packed above the low `shift` bits.
    const auto pack = [&](const OrderKey& key, int shift) {
      uint64_t packed = field(key.c, width[2], shift);
      shift += width[2];
      packed |= field(key.b, width[1], shift);
      shift += width[1];
      return packed | field(key.a, width[0], shift);
    };
    if (width[0] + width[1] + width[2] + item_width <= 63) {
      for (size_t i = 0; i < items.size(); ++i) {
        if (Placed(i)) rank[i] = pack(key_of(i), item_width) | i;
      }
      return;
    }
    // The rank is the position in sorted order: of 16-byte keys where the
    // differing bits fit in 64 without the index, else of whole OrderKeys.
    if (width[0] + width[1] + width[2] <= 64) {
      std::vector<PackedKey> keys;
      keys.reserve(items.size());
      for (size_t i = 0; i < items.size(); ++i) {
        if (Placed(i)) {
          keys.push_back(
              PackedKey{pack(key_of(i), 0), static_cast<uint32_t>(i)});
        }
      }
      RadixSort<1>(keys, [](const PackedKey& key, int) { return key.key; });
      for (size_t r = 0; r < keys.size(); ++r) rank[keys[r].item] = r;
      return;
    }
    std::vector<OrderKey> keys;
    keys.reserve(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      if (Placed(i)) keys.push_back(key_of(i));
    }
    RadixSort<3>(keys, [](const OrderKey& key, int w) {
      return w == 0 ? key.c : w == 1 ? key.b : key.a;
    });
    for (size_t r = 0; r < keys.size(); ++r) rank[keys[r].item] = r;
  }

  // Returns each item's contention (core/best_fit.h) in bytes; 0 for items
  // that are not spatial. A sweep gives the load of every leaf, and a
  // range-maximum tree over the leaves the maximum over each live range.
  std::vector<uint64_t> Contention() const {
    const std::vector<PlacementItem>& items = problem_.items;
    std::vector<Bytes> max_load(2 * leaves_, 0);
    const std::vector<Bytes> loads = LeafLoads();
    std::copy(loads.begin(), loads.end(), max_load.begin() + leaves_);
    for (size_t v = leaves_ - 1; v >= 1; --v) {
      max_load[v] = std::max(max_load[2 * v], max_load[2 * v + 1]);
    }
    std::vector<uint64_t> contention(items.size(), 0);
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].occupies()) continue;
      Bytes most = 0;
      size_t l = first_leaf_[i] + leaves_;
      size_t r = end_leaf_[i] + leaves_;
      for (; l < r; l >>= 1, r >>= 1) {
        if ((l & 1) != 0) most = std::max(most, max_load[l++]);
        if ((r & 1) != 0) most = std::max(most, max_load[--r]);
      }
      contention[i] = static_cast<uint64_t>(most);
    }
    return contention;
  }

  // Returns the first leaf of highest load, computed once.
  uint32_t PeakLeaf() {
    if (!peak_leaf_.has_value()) {
      const std::vector<Bytes> loads = LeafLoads();
      peak_leaf_ = static_cast<uint32_t>(
          std::max_element(loads.begin(), loads.end()) - loads.begin());
    }
    return *peak_leaf_;
  }

  // Returns the bytes of the items live during each leaf, by leaf
  // (leaves_ of them; 0 past the last leaf in use).
  std::vector<Bytes> LeafLoads() const {
    const std::vector<PlacementItem>& items = problem_.items;
    std::vector<Bytes> loads(leaves_ + 1, 0);  // first the changes
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].occupies()) continue;
      loads[first_leaf_[i]] += items[i].size;
      loads[end_leaf_[i]] -= items[i].size;
    }
    for (size_t leaf = 1; leaf < leaves_; ++leaf) {
      loads[leaf] += loads[leaf - 1];
    }
    loads.pop_back();
    return loads;
  }

  // Sets `nodes` to the job's canonical nodes (on kept levels) and to
  // their strict ancestors on levels that are read, each bottom-up (the
  // canonical nodes roughly: those replaced from a level come after the
  // ones of the kept level itself).
  //
  // Bottom-up, a canonical node taken on the left at some level has as its
  // ancestor, at every level above, the node just left of the remaining
  // range (l - 1); one taken on the right, the node just right of it (r).
  void Decompose(const Job& job, NodeList& nodes) {
    nodes.canonical_count = 0;
    nodes.ancestor_count = 0;
    int level = 0;
    // Takes the node at heap index v on `level`, or its descendants on
    // the kept level below: the 2^depth nodes from v << depth.
    const auto canonical = [&](size_t v) {
      const int kept = KeptLevel(level);
      const int depth = level - kept;
      for (size_t w = v << depth; w < (v + 1) << depth; ++w) {
        const size_t k = nodes.canonical_count++;
        if (kept == 0) {
          nodes.sub[k] = &leaf_level_.At(w - leaves_, leaf_pool_);
          nodes.own[k] = nullptr;
        } else {
          Node& node = InnerNode(w, kept);
          nodes.sub[k] = &node.sub;
          nodes.own[k] = &node.own;
        }
      }
    };
    const auto ancestor = [&](size_t v) {
      nodes.ancestor_starts[nodes.ancestor_count] = (v - (leaves_ >> level))
                                                    << level;
      nodes.ancestors[nodes.ancestor_count++] = &InnerNode(v, level);
    };
    size_t l = job.first_leaf + leaves_;
    size_t r = job.end_leaf + leaves_;
    bool left = false;   // a canonical node was taken on the left
    bool right = false;  // ... on the right
    for (; l < r; ++level, l >>= 1, r >>= 1) {
      if (LevelRead(level)) {
        if (left) ancestor(l - 1);
        if (right) ancestor(r);
      }
      if ((l & 1) != 0) {
        canonical(l++);
        left = true;
      }
      if ((r & 1) != 0) {
        canonical(--r);
        right = true;
      }
    }
    size_t left_ancestor = left ? l - 1 : 0;  // 0: none
    size_t right_ancestor = right ? r : 0;
    for (; level < read_levels_end_; ++level) {
      if (right_ancestor == left_ancestor) right_ancestor = 0;
      if (LevelRead(level)) {
        if (left_ancestor != 0) ancestor(left_ancestor);
        if (right_ancestor != 0) ancestor(right_ancestor);
      }
      left_ancestor >>= 1;
      right_ancestor >>= 1;
    }
  }

  // Records the job at `offset` in the nodes Decompose(job) found.
  void Insert(const Job& job, Bytes offset, const NodeList& nodes) {
    const Bytes lo = offset;
    const Bytes hi = offset + job.size;
    for (size_t k = 0; k < nodes.canonical_count; ++k) {
      if (nodes.own[k] != nullptr) AddToUnion(*nodes.own[k], lo, hi, arena_);
      AddToUnion(*nodes.sub[k], lo, hi, arena_);
    }
    // A node's sub is read only by jobs that cover its span, which begin
    // at or before its first leaf; once every job beginning before
    // released_before_ is placed, the subs of nodes starting before it are
    // read no more.
    for (size_t k = 0; k < nodes.ancestor_count; ++k) {
      if (nodes.ancestor_starts[k] < released_before_) continue;
      AddToUnion(nodes.ancestors[k]->sub, lo, hi, arena_);
    }
  }

  // Empties every node whose span ends at or before `leaf`, once no job
  // left to place reads or writes it (every job beginning before `leaf` is
  // placed): its unions' blocks go back to the arena, which reuses them
  // while they are still in cache, and its page, once every node of it is
  // passed, to the pool. O(1) amortized a leaf.
  void ReleaseBefore(size_t leaf) {
    if (leaf <= released_before_) return;
    const auto release = [&](ByteUnion& byte_union) {
      if (byte_union.size >= 2) {
        arena_.Release(byte_union.block, byte_union.capacity_log2);
      }
      byte_union = ByteUnion{};
    };
    leaf_level_.EmptyRange(released_before_, leaf, leaf_pool_, release);
    for (int level = 1; level < read_levels_end_; ++level) {
      if (!LevelRead(level)) continue;
      inner_levels_[level].EmptyRange(released_before_ >> level,
                                      leaf >> level, node_pool_,
                                      [&](Node& node) {
                                        release(node.own);
                                        release(node.sub);
                                      });
    }
    released_before_ = leaf;
  }

  void PrefetchNodes(const NodeList& nodes) const {
    for (size_t k = 0; k < nodes.canonical_count; ++k) {
      __builtin_prefetch(nodes.sub[k]);
    }
    for (size_t k = 0; k < nodes.ancestor_count; ++k) {
      __builtin_prefetch(nodes.ancestors[k]);
    }
  }

  // Prefetches the blocks of the unions a job reads and writes, from the
  // nodes PrefetchNodes fetched a few jobs earlier. A block that moves
  // before the job is placed costs a wasted prefetch, nothing else.
  void PrefetchBlocks(const NodeList& nodes) {
    for (size_t k = 0; k < nodes.canonical_count; ++k) {
      PrefetchBlock(*nodes.sub[k]);
      if (nodes.own[k] != nullptr) PrefetchBlock(*nodes.own[k]);
    }
    for (size_t k = 0; k < nodes.ancestor_count; ++k) {
      PrefetchBlock(nodes.ancestors[k]->own);
      PrefetchBlock(nodes.ancestors[k]->sub);
    }
  }

  // Returns the best-fit offset for the job among the items placed so far,
  // from the nodes Decompose(job) found.
  //
  // Starts from all bytes free and subtracts the unions of the ancestors'
  // own and the canonical nodes' sub, one union at a time, dropping every
  // gap that can no longer hold the item (gaps only shrink). What is left
  // are the maximal gaps free during the item's live range that fit it,
  // and the unbounded gap above everything.
  Bytes BestOffset(const Job& job, const NodeList& nodes) {
    free_[0] = ByteInterval{0, kUnbounded};
    free_size_ = 1;
    // Top-down: the owns of ancestors hold items that cover the whole
    // live range, and high canonical nodes the most items, so the gaps
    // shrink soonest this way (12% faster than canonical nodes first on
    // the bench's 1M random items).
    for (size_t k = nodes.ancestor_count; k-- > 0;) {
      Subtract(nodes.ancestors[k]->own, job);
    }
    for (size_t k = nodes.canonical_count; k-- > 0;) {
      Subtract(*nodes.sub[k], job);
    }

    Bytes best_offset = -1;
    Bytes best_waste = std::numeric_limits<Bytes>::max();
    // The last gap is the unbounded one.
    for (size_t g = 0; g + 1 < free_size_; ++g) {
      const Bytes waste = free_[g].hi - free_[g].lo - job.size;
      if (waste < best_waste) {
        best_waste = waste;
        best_offset = AlignUpPow2(free_[g].lo, job.alignment());
      }
    }
    if (best_offset >= 0) return best_offset;
    return AlignUpPow2(free_[free_size_ - 1].lo, job.alignment());
  }

  // Returns the intervals of a non-empty union.
  const ByteInterval* Intervals(const ByteUnion& byte_union) {
    return byte_union.size == 1 ? &byte_union.span : byte_union.block;
  }

  // Prefetches the first lines of a union's block.
  void PrefetchBlock(const ByteUnion& byte_union) {
    if (byte_union.size < 2) return;
    const char* const first =
        reinterpret_cast<const char*>(byte_union.block);
    const size_t bytes =
        std::min<size_t>(byte_union.size, 16) * sizeof(ByteInterval);
    for (size_t line = 0; line < bytes; line += 64) {
      __builtin_prefetch(first + line);
    }
  }

  // Removes `interval` from the free gaps in place, and the pieces of the
  // gaps it cuts that cannot hold the job: a binary search and a short
  // move, cheaper than Subtract's walk over all gaps for a short union.
  void Cut(const ByteInterval& interval, const Job& job) {
    ByteInterval* const gaps = free_.data();
    // The first gap that ends after the interval begins.
    size_t g = static_cast<size_t>(
        FirstEndingAfter(gaps, gaps + free_size_, interval.lo) - gaps);
    const auto fits = [&](Bytes lo, Bytes hi) {
      return lo < hi &&
             (hi == kUnbounded || AlignUpPow2(lo, job.alignment()) + job.size <= hi);
    };
    while (g < free_size_ && gaps[g].lo < interval.hi) {
      const ByteInterval gap = gaps[g];
      const bool keep_left = fits(gap.lo, interval.lo);
      const bool keep_right = fits(interval.hi, gap.hi);
      if (keep_left && keep_right) {  // one gap becomes two
        if (free_.size() < free_size_ + 1) free_.resize(2 * (free_size_ + 1));
        ByteInterval* const moved = free_.data();
        std::copy_backward(moved + g + 1, moved + free_size_,
                           moved + free_size_ + 1);
        moved[g] = ByteInterval{gap.lo, interval.lo};
        moved[g + 1] = ByteInterval{interval.hi, gap.hi};
        ++free_size_;
        return;  // the interval ends inside this gap
      }
      if (keep_left) {
        gaps[g].hi = interval.lo;
        ++g;
      } else if (keep_right) {
        gaps[g].lo = interval.hi;
        return;
      } else {
        std::copy(gaps + g + 1, gaps + free_size_, gaps + g);
        --free_size_;
      }
    }
  }

  // Removes the intervals of `byte_union` from the free gaps, and then the
  // gaps that cannot hold the job.
  void Subtract(const ByteUnion& byte_union, const Job& job) {
    // Below every gap (the last one, unbounded, is never dropped).
    if (byte_union.size == 0 || byte_union.hi() <= free_[0].lo) return;
    const ByteInterval* const intervals = Intervals(byte_union);
    const size_t count = byte_union.size;
    if (count <= kFewIntervals) {
      for (size_t k = 0; k < count; ++k) Cut(intervals[k], job);
      return;
    }
    if (next_free_.size() < free_size_ + count) {
      next_free_.resize(2 * (free_size_ + count));
    }
    ByteInterval* out = next_free_.data();
    const auto keep = [&](Bytes lo, Bytes hi) {
      if (hi == kUnbounded || AlignUpPow2(lo, job.alignment()) + job.size <= hi) {
        *out++ = ByteInterval{lo, hi};
      }
    };
    const ByteInterval* it = intervals;
    const ByteInterval* const end = intervals + count;
    for (size_t g = 0; g < free_size_; ++g) {
      const ByteInterval gap = free_[g];
      // The first interval that ends after the gap begins.
      while (it != end && it->hi <= gap.lo) ++it;
      if (it == end || it->lo >= gap.hi) {  // untouched
        *out++ = gap;
        continue;
      }
      Bytes lo = gap.lo;
      while (it != end && it->lo < gap.hi) {
        if (it->lo > lo) keep(lo, it->lo);
        lo = it->hi;
        // An interval reaching past the gap may cut the next gap too.
        if (it->hi >= gap.hi) break;
        ++it;
      }
      if (lo < gap.hi) keep(lo, gap.hi);
    }
    free_size_ = static_cast<size_t>(out - next_free_.data());
    free_.swap(next_free_);
  }

  const PlacementProblem& problem_;
  size_t leaves_ = 1;  // a power of two >= the number of elementary intervals
  int levels_ = 1;     // log2(leaves_) + 1
  std::vector<uint32_t> first_leaf_;  // per item: first leaf it covers
  std::vector<uint32_t> end_leaf_;    // per item: one past its last leaf
  uint64_t level_read_ = 0;  // bit per level: a canonical node is there
  int read_levels_end_ = 0;  // 1 + the highest level read, 0 if none
  uint32_t max_span_ = 0;    // the most leaves an item covers
  std::optional<uint32_t> peak_leaf_;  // PeakLeaf's, once computed
  // The tree in heap order, root 1, inner nodes 1 .. leaves_ - 1, leaves
  // leaves_ .. 2 * leaves_ - 1, by level: the leaves in leaf_level_, one
  // union each (a leaf has no children, so own and sub are the same), and
  // the nodes of each level read above them in inner_levels_[level].
  PagePool<ByteUnion> leaf_pool_;
  PagePool<Node> node_pool_;
  PagedLevel<ByteUnion> leaf_level_;
  std::vector<PagedLevel<Node>> inner_levels_;
  // The nodes of the job being placed and of the next few, in a ring.
  std::vector<NodeList> lookahead_ = std::vector<NodeList>(kLookahead);
  // Scratch of BestOffset and Subtract: the free gaps are free_[0, free_size_).
  std::vector<ByteInterval> free_ = std::vector<ByteInterval>(1);
  size_t free_size_ = 0;
  std::vector<ByteInterval> next_free_;
  IntervalArena arena_;  // blocks of the nodes' unions
  // Place's scratch, kept so that later orders reuse its memory.
  std::vector<Job> jobs_;
  std::vector<uint64_t> rank_;
  TimeSweep sweep_;
  // In a sweep, the unions of nodes ending at or before this leaf are
  // released (ReleaseBefore).
  size_t released_before_ = 0;
};

// Best-fit in program order as a sweep over time, for problems without
// pinned items: taking items by (begin, index), the placed items that
// overlap the next one are exactly those still live at its begin, so it
// keeps the live items ordered by offset and the gaps between them ordered
// by (length, offset). Each item then costs O(log n). Places exactly as
// BestFitEngine::Place(kProgramOrder) does.
//
//   offset ^
//          |  +------+                 at t = 4, a has ended: its bytes
//          |  |  b   |  +------+       merge with the gap below it; the
//          |  +------+  |  d   |       new item d takes the tightest gap
//          |  +---+     +------+       among those live at 4.
//          |  | a |  +-----+
//          |  +---+  |  c  |
//          +--+---+--+-----+------> timestep
//             0   2  3     4
class ProgramOrderSweep {
 public:
  explicit ProgramOrderSweep(const PlacementProblem& problem)
      : problem_(problem) {}

  absl::StatusOr<Placement> Place(const PlanContext& context,
                                  const OrderStop& stop = OrderStop()) {
    absl::Status status = CheckOrder(context, stop);
    if (!status.ok()) return status;
    const std::vector<PlacementItem>& items = problem_.items;
    Placement placement;
    placement.offsets.assign(items.size(), 0);
    const std::vector<uint32_t> order = ItemsByBegin();
    // Live items by end, soonest first: (end, offset).
    std::priority_queue<std::pair<Timestep, Bytes>,
                        std::vector<std::pair<Timestep, Bytes>>,
                        std::greater<std::pair<Timestep, Bytes>>>
        ends;
    Bytes height = PlacementHeight(problem_, placement.offsets);  // so far
    for (size_t k = 0; k < order.size(); ++k) {
      if (k % kCheckInterval == kCheckInterval - 1) {
        status = CheckOrder(context, stop);
        if (!status.ok()) return status;
      }
      const uint32_t i = order[k];
      const Timestep begin = items[i].live_range.begin;
      while (!ends.empty() && ends.top().first <= begin) {
        Remove(ends.top().second);
        ends.pop();
      }
      const PlacementItem& item = items[i];
      const Bytes offset = BestOffset(item.size, item.alignment);
      Add(offset, offset + item.size);
      ends.emplace(item.live_range.end, offset);
      placement.offsets[i] = offset;
      height = std::max(height, offset + item.size);
      if (stop.Exceeded(height)) return CannotWin();
    }
    placement.height = PlacementHeight(problem_, placement.offsets);
    return placement;
  }

 private:
  // Returns the items that occupy bytes over time by (begin, index): where
  // the times are dense (SpatialTimes::dense), a count of the items
  // beginning at each time places them in O(n + span); else a sort does.
  std::vector<uint32_t> ItemsByBegin() const {
    const std::vector<PlacementItem>& items = problem_.items;
    std::vector<uint32_t> order;
    order.reserve(items.size());
    const SpatialTimes times = FindSpatialTimes(problem_);
    if (!times.dense()) {
      for (size_t i = 0; i < items.size(); ++i) {
        if (items[i].occupies()) order.push_back(static_cast<uint32_t>(i));
      }
      std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
        const Timestep begin_a = items[a].live_range.begin;
        const Timestep begin_b = items[b].live_range.begin;
        return begin_a != begin_b ? begin_a < begin_b : a < b;
      });
      return order;
    }
    // first[t - lo]: the items beginning at t, then the first slot of them.
    std::vector<uint32_t> first(times.span() + 1, 0);
    for (const PlacementItem& item : items) {
      if (item.occupies()) ++first[times.at(item.live_range.begin) + 1];
    }
    for (size_t t = 1; t < first.size(); ++t) first[t] += first[t - 1];
    order.resize(first.back());
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].occupies()) continue;
      order[first[times.at(items[i].live_range.begin)]++] =
          static_cast<uint32_t>(i);
    }
    return order;
  }

  // Returns the top of the live items: the end of the highest one, or 0.
  Bytes Top() const { return live_.empty() ? 0 : std::prev(live_.end())->hi; }

  Bytes BestOffset(Bytes size, Bytes alignment) const {
    // In (length, offset) order the first gap that fits wastes least, and
    // is the lowest of those that waste as little.
    for (auto it = gaps_.lower_bound({size, 0}); it != gaps_.end(); ++it) {
      const auto [length, lo] = *it;
      const Bytes offset = AlignUpPow2(lo, alignment);
      if (offset + size <= lo + length) return offset;
    }
    return AlignUpPow2(Top(), alignment);
  }

  // Records the live item [lo, hi), which lies in a free gap or at or
  // above the top.
  void Add(Bytes lo, Bytes hi) {
    const auto next = live_.lower_bound(ByteInterval{lo, 0});
    const Bytes below = next == live_.begin() ? 0 : std::prev(next)->hi;
    if (next != live_.end()) {
      gaps_.erase({next->lo - below, below});
      AddGap(hi, next->lo);
    }
    AddGap(below, lo);
    live_.insert(next, ByteInterval{lo, hi});
  }

  // Forgets the live item at offset lo, merging the gaps on its sides.
  void Remove(Bytes lo) {
    const auto it = live_.find(ByteInterval{lo, 0});
    const Bytes below = it == live_.begin() ? 0 : std::prev(it)->hi;
    const auto next = std::next(it);
    gaps_.erase({lo - below, below});
    if (next != live_.end()) {
      gaps_.erase({next->lo - it->hi, it->hi});
      AddGap(below, next->lo);
    }
    live_.erase(it);
  }

  void AddGap(Bytes lo, Bytes hi) {
    if (hi > lo) gaps_.insert({hi - lo, lo});
  }

  struct ByLo {
    bool operator()(const ByteInterval& a, const ByteInterval& b) const {
      return a.lo < b.lo;
    }
  };

  const PlacementProblem& problem_;
  absl::btree_set<ByteInterval, ByLo> live_;  // disjoint, by offset
  absl::btree_set<std::pair<Bytes, Bytes>> gaps_;  // bounded: (length, lo)
};

// Returns whether some item is pinned (the sweep cannot place around
// pinned items that begin later).
bool AnyPinned(const PlacementProblem& problem) {
  for (const PlacementItem& item : problem.items) {
    if (item.pinned()) return true;
  }
  return false;
}

}  // namespace

const char* BestFitOrderName(BestFitOrder order) {
  switch (order) {
    case BestFitOrder::kSizeDescending:
      return "size";
    case BestFitOrder::kLengthDescending:
      return "length";
    case BestFitOrder::kAreaDescending:
      return "area";
    case BestFitOrder::kProgramOrder:
      return "program";
    case BestFitOrder::kContentionDescending:
      return "contention";
    case BestFitOrder::kContentionBandDescending:
      return "contention_band";
  }
  return "unknown";
}

namespace {

// Places with one order: the sweep for program order without pinned
// items, else `engine`, built on first use.
absl::StatusOr<Placement> PlaceOneOrder(
    const PlacementProblem& problem, BestFitOrder order,
    const PlanContext& context, const OrderStop& stop,
    std::optional<BestFitEngine>& engine,
    BestFitSchedule schedule = BestFitSchedule::kTimeSweep) {
  if (order == BestFitOrder::kProgramOrder && !AnyPinned(problem)) {
    return ProgramOrderSweep(problem).Place(context, stop);
  }
  if (!engine.has_value()) engine.emplace(problem);
  return engine->Place(order, context, stop, schedule);
}

}  // namespace

absl::StatusOr<Placement> BestFitPlace(const PlacementProblem& problem,
                                       BestFitOrder order,
                                       const PlanContext& context,
                                       BestFitSchedule schedule) {
  std::optional<BestFitEngine> engine;
  return PlaceOneOrder(problem, order, context, OrderStop(), engine, schedule);
}

namespace {

// Portfolios of at least this many items run their orders on threads.
constexpr size_t kParallelItems = 5000;

// The threads an automatic portfolio uses at most: each holds an engine,
// whose memory grows with the problem.
constexpr int kMaxPortfolioThreads = 2;

// Returns how many threads BestFitPortfolio runs its orders on.
int PortfolioThreads(const PlacementProblem& problem,
                     const PlanContext& context, int threads) {
  // A work cap counts Check() calls, so several threads would spend it in
  // an order that depends on timing.
  if (context.work_left != nullptr) return 1;
  if (threads == 0) {
    if (problem.items.size() < kParallelItems) return 1;
    threads = std::min<int>(kMaxPortfolioThreads,
                            static_cast<int>(std::thread::hardware_concurrency()));
  }
  return std::clamp(threads, 1, static_cast<int>(std::size(kAllBestFitOrders)));
}

}  // namespace

absl::StatusOr<Placement> BestFitPortfolio(const PlacementProblem& problem,
                                           const PlanContext& context,
                                           BestFitOrder* winner,
                                           absl::Time stop_after,
                                           int threads) {
  constexpr size_t kOrders = std::size(kAllBestFitOrders);
  // No placement is lower than the bound, and ties go to the order listed
  // first, so the first order to reach it wins: later ones need not run.
  const Bytes bound = PlacementLowerBound(problem);
  std::atomic<size_t> next{0};  // the next order to start
  std::atomic<size_t> first_at_bound{kOrders};  // lowest order at the bound
  std::atomic<bool> failed{false};  // an order failed: start no more
  // Set for the orders after one that reached the bound: they cannot win.
  std::atomic<bool> abandoned[kOrders] = {};
  // The lowest height an order has finished with: an order whose height so
  // far exceeds it cannot win.
  std::atomic<Bytes> ceiling{std::numeric_limits<Bytes>::max()};
  // The lowest placement so far, ties to the lowest order, and the error of
  // the lowest order that failed: the same whichever thread finishes first.
  // Losing placements are dropped as they come, to bound memory.
  absl::Mutex mutex;
  absl::StatusOr<Placement> best = absl::NotFoundError("no order ran");
  size_t best_order = kOrders;
  absl::Status error;
  size_t error_order = kOrders;
  // Every order but the first stops at stop_after (an anytime step). An
  // order stopped there, not by the context's deadline, is skipped, even
  // while the first is still running on another thread.
  const bool stops_early = stop_after < context.deadline;
  const auto cut_short = [&](size_t k, const absl::Status& status) {
    return k > 0 && stops_early && absl::IsDeadlineExceeded(status) &&
           absl::Now() >= stop_after;
  };
  const auto work = [&] {
    std::optional<BestFitEngine> engine;
    for (size_t k = next++; k < kOrders && !failed.load(); k = next++) {
      if (k > first_at_bound.load()) continue;
      if (k > 0 && absl::Now() >= stop_after) break;
      PlanContext order_context = context;
      if (k > 0 && stops_early) order_context.deadline = stop_after;
      // With a height to beat, the time of the highest load goes first:
      // an order that cannot win is found out there soonest.
      const BestFitSchedule schedule =
          ceiling.load() < std::numeric_limits<Bytes>::max()
              ? BestFitSchedule::kPeakFirst
              : BestFitSchedule::kTimeSweep;
      absl::StatusOr<Placement> placement = PlaceOneOrder(
          problem, kAllBestFitOrders[k], order_context,
          OrderStop{&abandoned[k], &ceiling}, engine, schedule);
      if (!placement.ok()) {
        if (absl::IsAborted(placement.status()) ||
            cut_short(k, placement.status())) {
          continue;
        }
        failed = true;
        absl::MutexLock lock(&mutex);
        if (k < error_order) {
          error = placement.status();
          error_order = k;
        }
        continue;
      }
      Bytes lowest = ceiling.load();
      while (placement->height < lowest &&
             !ceiling.compare_exchange_weak(lowest, placement->height)) {
      }
      if (placement->height <= bound) {
        size_t at = first_at_bound.load();
        while (k < at && !first_at_bound.compare_exchange_weak(at, k)) {
        }
        for (size_t later = k + 1; later < kOrders; ++later) {
          abandoned[later] = true;
        }
      }
      absl::MutexLock lock(&mutex);
      if (best_order == kOrders || placement->height < best->height ||
          (placement->height == best->height && k < best_order)) {
        best = std::move(placement);
        best_order = k;
      }
    }
  };
  const int thread_count = PortfolioThreads(problem, context, threads);
  if (thread_count == 1) {
    work();
  } else {
    std::vector<std::thread> workers;
    for (int t = 1; t < thread_count; ++t) {
      // Out of threads, the orders run on the threads there are.
      try {
        workers.emplace_back(work);
      } catch (const std::system_error&) {
        break;
      }
    }
    work();
    for (std::thread& worker : workers) worker.join();
  }
  if (error_order < kOrders) return error;
  if (best_order == kOrders) return absl::InternalError("no best-fit order ran");
  if (winner != nullptr) *winner = kAllBestFitOrders[best_order];
  return best;
}

}  // namespace memplan
