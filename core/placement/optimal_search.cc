#include "core/placement/optimal_search.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/placement/best_fit.h"
#include "core/placement/best_fit_portfolio.h"

namespace memplan {
namespace {

// Search nodes between two looks at the clock and the cancellation flag:
// few enough that a search notices its deadline well within the
// millisecond OptimalPlace promises, at the cost per node measured on the
// MiniMalloc instances (docs/benchmarks.md, "Exact search").
constexpr int64_t kNodesPerClockCheck = 128;

// A part of the problem whose overlap lists would exceed this many entries
// is not searched: it keeps the seed's placement (the lists stay below
// 32 MB).
constexpr int64_t kMaxNeighborEntries = int64_t{8} << 20;

// Each search's table of partial states proven to lead nowhere stops
// growing here (24 bytes a state plus the table's overhead: about 16 MB;
// a portfolio has three).
constexpr size_t kMaxFailedStates = size_t{1} << 19;

// The portfolio runs its searches in turns of this many nodes each.
constexpr int64_t kNodesPerTurn = 20000;

// The restarting search's budgets are this many nodes times Luby's
// sequence 1 1 2 1 1 2 4 ...
constexpr int64_t kNodesPerRestartUnit = 20000;

// When minimizing, each capacity probed gets this many nodes in the first
// pass of the bisection, twice as many in the next, and so on.
constexpr int64_t kNodesPerMinimizeProbe = 20000;

// Largest pinned offset accepted, so that offset + size cannot overflow.
constexpr Bytes kMaxFixedOffset = Bytes{1} << 50;

// splitmix64's finalizer.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

bool IsPowerOfTwo(Bytes x) { return x > 0 && (x & (x - 1)) == 0; }

absl::Status ValidateInput(const PlacementProblem& problem,
                           const SearchOptions& options) {
  if (problem.capacity < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("capacity ", problem.capacity, " is negative"));
  }
  for (size_t i = 0; i < problem.items.size(); ++i) {
    const PlacementItem& item = problem.items[i];
    if (item.size < 0 || item.size > kMaxBufferBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("items[", i, "].size: ", item.size, " is not in [0, ",
                       kMaxBufferBytes, "]"));
    }
    if (item.live_range.begin > item.live_range.end) {
      return absl::InvalidArgumentError(
          absl::StrCat("items[", i, "].live_range: [", item.live_range.begin,
                       ",", item.live_range.end, ") ends before it begins"));
    }
    if (!IsPowerOfTwo(item.alignment) || item.alignment > kMaxAlignment) {
      return absl::InvalidArgumentError(
          absl::StrCat("items[", i, "].alignment: ", item.alignment,
                       " is not a power of two in [1, ", kMaxAlignment, "]"));
    }
    if (item.pinned()) {
      if (item.fixed_offset > kMaxFixedOffset) {
        return absl::InvalidArgumentError(
            absl::StrCat("items[", i, "].fixed_offset: ", item.fixed_offset,
                         " exceeds ", kMaxFixedOffset));
      }
      if (item.fixed_offset % item.alignment != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "items[", i, "].fixed_offset: ", item.fixed_offset,
            " is not a multiple of its alignment ", item.alignment));
      }
    }
  }

  // Pinned items must not overlap each other: sweep time with the live
  // pinned items ordered by offset; a new one can only collide with its
  // neighbours in that order.
  struct Event {
    Timestep time;
    int is_begin;  // ends first at equal times: [0,3) and [3,6) may share
    size_t item;
    bool operator<(const Event& other) const {
      if (time != other.time) return time < other.time;
      if (is_begin != other.is_begin) return is_begin < other.is_begin;
      return item < other.item;
    }
  };
  std::vector<Event> events;
  for (size_t i = 0; i < problem.items.size(); ++i) {
    const PlacementItem& item = problem.items[i];
    if (!item.pinned() || !item.occupies()) continue;
    events.push_back({item.live_range.begin, 1, i});
    events.push_back({item.live_range.end, 0, i});
  }
  std::sort(events.begin(), events.end());
  std::set<std::pair<Bytes, size_t>> live;
  for (const Event& event : events) {
    const PlacementItem& item = problem.items[event.item];
    if (!event.is_begin) {
      live.erase({item.fixed_offset, event.item});
      continue;
    }
    auto it = live.insert({item.fixed_offset, event.item}).first;
    size_t other = event.item;
    if (it != live.begin()) {
      auto below = std::prev(it);
      if (below->first + problem.items[below->second].size >
          item.fixed_offset) {
        other = below->second;
      }
    }
    auto above = std::next(it);
    if (other == event.item && above != live.end() &&
        item.fixed_offset + item.size > above->first) {
      other = above->second;
    }
    if (other != event.item) {
      return absl::InvalidArgumentError(absl::StrCat(
          "items[", std::max(other, event.item), "].fixed_offset: pinned ",
          "items ", std::min(other, event.item), " and ",
          std::max(other, event.item), " overlap"));
    }
  }

  if (options.incumbent != nullptr) {
    PlacementProblem unbounded = problem;
    unbounded.capacity = kUnboundedCapacity;
    absl::Status status = ValidatePlacement(unbounded, *options.incumbent);
    if (!status.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("incumbent: ", status.message()));
    }
  }
  return absl::OkStatus();
}

// The outcome of a decision search.
enum class Outcome {
  kFound,        // a placement under the capacity
  kExhausted,    // none exists
  kInterrupted,  // the context's deadline passed or it was cancelled
  kOutOfNodes,   // the node budget of this turn ran out (search resumable)
};

// What the searches of one independent part share: its items (those that
// occupy bytes, connected in time) and how they meet.
//
// Sections are the spans of time between consecutive begins and ends of
// the part's items. Items are identified by their index in `members`.
struct PartData {
  std::vector<size_t> members;  // index -> index in PlacementProblem::items
  int n = 0;
  std::vector<Bytes> size;
  std::vector<Bytes> alignment;
  std::vector<Bytes> fixed;         // -1 when not pinned
  std::vector<int> first_section;   // the item covers sections
  std::vector<int> end_section;     //   [first_section, end_section)
  std::vector<Timestep> length;     // timesteps live
  std::vector<Bytes> pressure;      // highest section load it covers
  std::vector<int> twin_before;     // identical unpinned item before, or -1
  std::vector<int> neighbor_begin;  // neighbors[neighbor_begin[x]..[x+1])
  std::vector<int> neighbors;       // items that meet x in time
  std::vector<int> by_first;        // items by first section
  std::vector<int> by_first_at;     // by_first index of section s's first
  std::vector<Bytes> section_load;
  int num_sections = 0;
  Bytes lower_bound = 0;  // highest section load or pinned top
};

// Fills `data` for the items `members` (all occupying bytes). Returns false
// when their overlap lists would exceed kMaxNeighborEntries, or when
// `context` stops it.
bool BuildPartData(const PlacementProblem& problem, std::vector<size_t> members,
                   const PlanContext& context, PartData* data) {
  const std::vector<PlacementItem>& items = problem.items;
  PartData& d = *data;
  d.members = std::move(members);
  const int n = d.n = static_cast<int>(d.members.size());
  std::vector<Timestep> times;
  times.reserve(2 * n);
  for (size_t i : d.members) {
    times.push_back(items[i].live_range.begin);
    times.push_back(items[i].live_range.end);
  }
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  d.num_sections = std::max(static_cast<int>(times.size()) - 1, 0);
  auto section_of = [&](Timestep t) {
    return static_cast<int>(std::lower_bound(times.begin(), times.end(), t) -
                            times.begin());
  };

  d.size.resize(n);
  d.alignment.resize(n);
  d.fixed.resize(n);
  d.first_section.resize(n);
  d.end_section.resize(n);
  d.length.resize(n);
  d.section_load.assign(d.num_sections, 0);
  for (int x = 0; x < n; ++x) {
    const PlacementItem& item = items[d.members[x]];
    d.size[x] = item.size;
    d.alignment[x] = item.alignment;
    d.fixed[x] = item.pinned() ? item.fixed_offset : -1;
    d.first_section[x] = section_of(item.live_range.begin);
    d.end_section[x] = section_of(item.live_range.end);
    d.length[x] = item.live_range.length();
    for (int s = d.first_section[x]; s < d.end_section[x]; ++s) {
      d.section_load[s] += item.size;
    }
    if (item.pinned()) {
      d.lower_bound = std::max(d.lower_bound, item.fixed_offset + item.size);
    }
  }
  for (Bytes load : d.section_load) {
    d.lower_bound = std::max(d.lower_bound, load);
  }
  d.pressure.assign(n, 0);
  for (int x = 0; x < n; ++x) {
    for (int s = d.first_section[x]; s < d.end_section[x]; ++s) {
      d.pressure[x] = std::max(d.pressure[x], d.section_load[s]);
    }
  }

  d.by_first.resize(n);
  for (int x = 0; x < n; ++x) d.by_first[x] = x;
  std::stable_sort(d.by_first.begin(), d.by_first.end(), [&](int a, int b) {
    return d.first_section[a] < d.first_section[b];
  });
  d.by_first_at.assign(d.num_sections + 1, n);
  for (int k = n - 1; k >= 0; --k)
    d.by_first_at[d.first_section[d.by_first[k]]] = k;
  for (int s = d.num_sections - 1; s >= 0; --s) {
    d.by_first_at[s] = std::min(d.by_first_at[s], d.by_first_at[s + 1]);
  }

  // Overlap lists by a sweep over first sections.
  std::vector<std::pair<int, int>> pairs;
  std::vector<int> active;
  for (int x : d.by_first) {
    if (x % 1024 == 0 && !context.Check().ok()) return false;
    size_t kept = 0;
    for (int y : active) {
      if (d.end_section[y] > d.first_section[x]) active[kept++] = y;
    }
    active.resize(kept);
    if (static_cast<int64_t>(pairs.size() + active.size()) * 2 >
        kMaxNeighborEntries) {
      return false;
    }
    for (int y : active) pairs.push_back({x, y});
    active.push_back(x);
  }
  d.neighbor_begin.assign(n + 1, 0);
  for (const auto& [x, y] : pairs) {
    ++d.neighbor_begin[x + 1];
    ++d.neighbor_begin[y + 1];
  }
  for (int x = 0; x < n; ++x) d.neighbor_begin[x + 1] += d.neighbor_begin[x];
  d.neighbors.resize(d.neighbor_begin[n]);
  std::vector<int> fill(d.neighbor_begin.begin(), d.neighbor_begin.end() - 1);
  for (const auto& [x, y] : pairs) {
    d.neighbors[fill[x]++] = y;
    d.neighbors[fill[y]++] = x;
  }
  for (int x = 0; x < n; ++x) {
    std::sort(d.neighbors.begin() + d.neighbor_begin[x],
              d.neighbors.begin() + d.neighbor_begin[x + 1]);
  }

  // Identical unpinned items are interchangeable: place them in index order.
  d.twin_before.assign(n, -1);
  std::vector<int> by_shape(n);
  for (int x = 0; x < n; ++x) by_shape[x] = x;
  auto shape = [&](int x) {
    return std::make_tuple(d.first_section[x], d.end_section[x], d.size[x],
                           d.alignment[x], d.fixed[x]);
  };
  std::stable_sort(by_shape.begin(), by_shape.end(),
                   [&](int a, int b) { return shape(a) < shape(b); });
  for (int k = 1; k < n; ++k) {
    const int a = by_shape[k - 1];
    const int b = by_shape[k];
    if (d.fixed[b] < 0 && shape(a) == shape(b)) d.twin_before[b] = a;
  }
  return true;
}

// Returns each item's rank in the order in which a search tries the items
// that could go at the same offset: an order of decreasing "pressure" (the
// highest load of a section the item covers), length in time and area in
// time and bytes, lexicographic in one of four ways for `order` 0 to 3,
// and for larger `order` by a weighted sum with weights and noise drawn
// from a splitmix64 stream seeded with `order`. Deterministic.
std::vector<int> Priorities(const PartData& d, int order) {
  const int n = d.n;
  std::vector<double> pressure(n), length(n), area(n);
  double max_pressure = 1, max_length = 1, max_area = 1;
  for (int x = 0; x < n; ++x) {
    pressure[x] = static_cast<double>(d.pressure[x]);
    length[x] = static_cast<double>(d.length[x]);
    area[x] = length[x] * static_cast<double>(d.size[x]);
    max_pressure = std::max(max_pressure, pressure[x]);
    max_length = std::max(max_length, length[x]);
    max_area = std::max(max_area, area[x]);
  }
  uint64_t state = Mix(static_cast<uint64_t>(order));
  auto uniform = [&]() {  // in [0, 1)
    state = Mix(state);
    return static_cast<double>(state >> 11) * 0x1.0p-53;
  };
  const double weight_pressure = uniform();
  const double weight_length = uniform();
  const double weight_area = uniform();
  std::vector<std::tuple<double, double, double>> key(n);
  for (int x = 0; x < n; ++x) {
    switch (order) {
      case 0:
        key[x] = {-pressure[x], -length[x], -area[x]};
        break;
      case 1:
        key[x] = {-area[x], -pressure[x], -length[x]};
        break;
      case 2:
        key[x] = {-length[x], -area[x], -pressure[x]};
        break;
      case 3:
        key[x] = {-pressure[x], -area[x], -length[x]};
        break;
      default:
        key[x] = {-(weight_pressure * pressure[x] / max_pressure +
                    weight_length * length[x] / max_length +
                    weight_area * area[x] / max_area) *
                      (1 + 0.2 * uniform()),
                  0, 0};
        break;
    }
  }
  std::vector<int> by_key(n);
  for (int x = 0; x < n; ++x) by_key[x] = x;
  std::stable_sort(by_key.begin(), by_key.end(),
                   [&](int a, int b) { return key[a] < key[b]; });
  std::vector<int> rank(n);
  for (int k = 0; k < n; ++k) rank[by_key[k]] = k;
  return rank;
}

// A depth-first search for a placement of one part under a capacity, on an
// explicit stack, resumable in turns of a given number of nodes.
//
// It enumerates canonical placements: listed by (offset, rank), each item
// sits at the aligned top of the highest earlier item it meets in time (or
// at 0, or at its pin), so a node only chooses which item comes next. State:
// which items are placed; for each unplaced item its floor (the highest top
// of the placed items it meets), its canonical offset being the floor
// aligned up; and the last (offset, rank) placed, which every later item
// must exceed. An unplaced item whose canonical offset is below that is
// "stuck": a later item has to come between it and what lies below it.
//
// Once no unplaced item crosses some boundary between sections, the items
// on either side no longer interact: each side is then a problem of its own
// (its items above their floors, under the capacity), solved one after the
// other; when a side has no placement, neither has the node, whatever the
// sides solved before it did. Within such a group, items that cover every
// section with items left are set aside for its top (see Expand).
class PartSearch {
 public:
  explicit PartSearch(const PartData& data) : d_(data) {
    priority_.resize(d_.n);
    for (int x = 0; x < d_.n; ++x) priority_[x] = x;
  }

  // Sets the rank of each item among items at equal offsets. Forgets the
  // states proven to fail (they were proven under the old ranks).
  void SetPriority(std::vector<int> priority) {
    priority_ = std::move(priority);
    failed_.clear();
  }

  // Starts a new search for a placement of height <= capacity. States
  // proven to fail under a capacity at least as large stay proven.
  void Start(Bytes capacity);

  // Goes on with the search for up to `node_budget` nodes; on kFound writes
  // the offsets of the part's items into `offsets` (indexed like
  // PlacementProblem::items).
  Outcome Run(const PlanContext& context, int64_t node_budget,
              std::vector<Bytes>* offsets);

  int64_t nodes() const { return nodes_; }

 private:
  using Key = std::pair<uint64_t, uint64_t>;

  // One node on the stack: a partial placement, the sections [lo, hi)
  // whose unplaced items it still has to place under `capacity`, and either
  // the candidates for its next item or, once those items split into
  // independent groups (or some are set aside for the top), the groups.
  struct Frame {
    int item = -1;            // placed to reach this node; -1 for none
    size_t undo_mark = 0;     // undo_ size before placing it
    Bytes prev_last = 0;      // last_ before this node
    int prev_last_rank = -1;  // last_rank_ before this node
    int lo = 0;               // sections [lo, hi) of the group it places
    int hi = 0;
    Bytes capacity = 0;  // less what enclosing nodes set aside
    int group_of = -1;   // stack index of the split frame, or -1
    int tops_of = -1;    // places the items this split frame set aside
    bool expanded = false;
    bool split = false;
    bool closed = false;        // pruned, or its group complete
    bool tops_started = false;  // a split frame: its set-aside items are out
    size_t cand_begin = 0;      // candidates_ [cand_begin, cand_end)
    size_t cand_end = 0;
    size_t next = 0;          // next candidate, or current group of a split
    size_t groups_begin = 0;  // groups_ [groups_begin, groups_end)
    size_t groups_end = 0;
    size_t tops_begin = 0;  // tops_ [tops_begin, tops_end): set aside
    size_t tops_end = 0;
    Key key;
  };

  enum class Expansion { kPruned, kCandidates, kSplit, kComplete };

  Bytes CanonicalOffset(int x) const {
    return d_.fixed[x] >= 0 ? d_.fixed[x] : AlignUp(floor_[x], d_.alignment[x]);
  }
  // (offset, rank of x) precedes (last_, last_rank_): x cannot come next.
  bool Stuck(Bytes offset, int x) const {
    return offset < last_ || (offset == last_ && priority_[x] < last_rank_);
  }
  bool Active(int x) const { return !placed_[x] && !aside_[x]; }
  void Place(int y);
  void Unplace(int y, size_t undo_mark);
  // Takes the items tops_[begin, end) out of the search (SetAside) or puts
  // them back (Restore): their loads leave or rejoin remaining_ and
  // crossing_.
  void SetAside(size_t begin, size_t end);
  void Restore(size_t begin, size_t end);
  // Evaluates the node of `frame`: prunes it, or sets its candidates (in
  // the order to try), or its independent groups, or reports that its
  // sections have nothing left to place. Sets its key.
  Expansion Expand(Frame* frame);
  // Pushes the root of the current group of the split frame at `split`.
  void StartGroup(int split);
  // Pushes a frame that places the items the split frame at `split` set
  // aside, on top of everything else in its sections.
  void StartTops(int split);
  // Pops the top frame, undoing what it placed or set aside.
  void Pop();
  void RememberFailure(const Key& key) {
    if (failed_.size() >= kMaxFailedStates && !failed_.contains(key)) return;
    Bytes& capacity = failed_[key];
    capacity = std::max(capacity, capacity_);
  }

  const PartData& d_;
  std::vector<int> priority_;

  std::vector<char> placed_;
  std::vector<char> aside_;  // set aside for the top of its group
  std::vector<Bytes> floor_;
  std::vector<Bytes> offset_;
  std::vector<std::pair<int, Bytes>> undo_;  // (item, previous floor)
  std::vector<Bytes> remaining_;             // active load per section
  std::vector<int> crossing_;  // active items crossing each boundary
  Bytes last_ = 0;
  int last_rank_ = -1;
  Bytes capacity_ = 0;

  std::vector<Frame> stack_;
  std::vector<int> candidates_;
  std::vector<std::pair<int, int>> groups_;  // sections [lo, hi)
  std::vector<int> tops_;                    // items set aside
  std::vector<Bytes> stack_top_;             // per section, look-ahead
  std::vector<std::pair<Bytes, int>> starts_;
  // States proven to fail, with the highest capacity they failed under
  // (they fail under any lower one too).
  absl::flat_hash_map<Key, Bytes> failed_;
  int64_t nodes_ = 0;
};

void PartSearch::Place(int y) {
  const Bytes offset = CanonicalOffset(y);
  const Bytes top = offset + d_.size[y];
  offset_[y] = offset;
  placed_[y] = 1;
  for (int k = d_.neighbor_begin[y]; k < d_.neighbor_begin[y + 1]; ++k) {
    const int w = d_.neighbors[k];
    if (!placed_[w] && floor_[w] < top) {
      undo_.push_back({w, floor_[w]});
      floor_[w] = top;
    }
  }
  for (int s = d_.first_section[y]; s < d_.end_section[y]; ++s) {
    remaining_[s] -= d_.size[y];
  }
  for (int b = d_.first_section[y] + 1; b < d_.end_section[y]; ++b) {
    --crossing_[b];
  }
  last_ = offset;
  last_rank_ = priority_[y];
}

void PartSearch::Unplace(int y, size_t undo_mark) {
  while (undo_.size() > undo_mark) {
    floor_[undo_.back().first] = undo_.back().second;
    undo_.pop_back();
  }
  for (int s = d_.first_section[y]; s < d_.end_section[y]; ++s) {
    remaining_[s] += d_.size[y];
  }
  for (int b = d_.first_section[y] + 1; b < d_.end_section[y]; ++b) {
    ++crossing_[b];
  }
  placed_[y] = 0;
}

void PartSearch::SetAside(size_t begin, size_t end) {
  for (size_t k = begin; k < end; ++k) {
    const int x = tops_[k];
    aside_[x] = 1;
    for (int s = d_.first_section[x]; s < d_.end_section[x]; ++s) {
      remaining_[s] -= d_.size[x];
    }
    for (int b = d_.first_section[x] + 1; b < d_.end_section[x]; ++b) {
      --crossing_[b];
    }
  }
}

void PartSearch::Restore(size_t begin, size_t end) {
  for (size_t k = begin; k < end; ++k) {
    const int x = tops_[k];
    aside_[x] = 0;
    for (int s = d_.first_section[x]; s < d_.end_section[x]; ++s) {
      remaining_[s] += d_.size[x];
    }
    for (int b = d_.first_section[x] + 1; b < d_.end_section[x]; ++b) {
      ++crossing_[b];
    }
  }
}

PartSearch::Expansion PartSearch::Expand(Frame* frame) {
  const int lo = frame->lo;
  const int hi = frame->hi;
  const Bytes capacity = frame->capacity;
  // Section load: the next item's offset becomes a level below which no
  // section gains anything, so with R the highest remaining load of a
  // section the next offset is at most capacity - R.
  Bytes max_remaining = 0;
  int used_lo = hi;  // sections with items left: [used_lo, used_hi)
  int used_hi = lo;
  for (int s = lo; s < hi; ++s) {
    max_remaining = std::max(max_remaining, remaining_[s]);
    if (remaining_[s] > 0) {
      used_lo = std::min(used_lo, s);
      used_hi = s + 1;
    }
  }
  if (max_remaining == 0) return Expansion::kComplete;
  const Bytes highest_next = capacity - max_remaining;
  if (last_ > highest_next) return Expansion::kPruned;

  // One pass over the active items: the checks of each, the state's key,
  // the two lowest canonical tops, and the items' starts.
  Bytes top1 = kUnboundedCapacity;
  Bytes top2 = kUnboundedCapacity;
  int top1_item = -1;
  // The capacity less what enclosing nodes set aside is part of the state.
  uint64_t hash1 = Mix(static_cast<uint64_t>(capacity_ - capacity));
  uint64_t hash2 = 0;
  bool may_set_aside = true;  // no pinned or aligned item
  int spanning = 0;           // items covering [used_lo, used_hi)
  starts_.clear();
  for (int k = d_.by_first_at[lo]; k < d_.by_first_at[hi]; ++k) {
    const int x = d_.by_first[k];
    if (!Active(x)) continue;
    const Bytes offset = CanonicalOffset(x);
    const bool stuck = Stuck(offset, x);
    if (d_.fixed[x] >= 0) {
      // A pinned item must still fit at its offset, after the last one.
      if (floor_[x] > d_.fixed[x] || stuck) return Expansion::kPruned;
      may_set_aside = false;
    } else if (stuck) {
      // Dominance: a stuck item must still be lifted by a later item that
      // comes between. Else the space [offset, offset + size) above its
      // floor stays empty for its whole live range and it could move down
      // there: a placement with a lower sum of offsets, found elsewhere.
      const Bytes top = offset + d_.size[x];
      if (top <= last_) return Expansion::kPruned;
      bool lifted = false;
      for (int j = d_.neighbor_begin[x]; j < d_.neighbor_begin[x + 1]; ++j) {
        const int w = d_.neighbors[j];
        if (Active(w) && CanonicalOffset(w) < top) {
          lifted = true;
          break;
        }
      }
      if (!lifted) return Expansion::kPruned;
    }
    if (d_.alignment[x] != 1) may_set_aside = false;
    if (d_.first_section[x] <= used_lo && d_.end_section[x] >= used_hi) {
      ++spanning;
    }
    const Bytes start = std::max(offset, last_);
    if (start + d_.size[x] > capacity) return Expansion::kPruned;
    starts_.push_back({start, x});
    const uint64_t mark = static_cast<uint64_t>(offset) * 2 + (stuck ? 1 : 0);
    const uint64_t h = Mix(mark ^ Mix(static_cast<uint64_t>(x)));
    hash1 ^= h;
    hash2 ^= Mix(h ^ 0x5851f42d4c957f2dULL);
    if (d_.fixed[x] < 0) {
      const Bytes top = offset + d_.size[x];
      if (top < top1) {
        top2 = top1;
        top1 = top;
        top1_item = x;
      } else if (top < top2) {
        top2 = top;
      }
    }
  }

  // Look-ahead: each section's active items stack above their starts. The
  // lowest such stack takes them in order of start (a one-machine schedule
  // with release times) and must stay under the capacity.
  std::sort(starts_.begin(), starts_.end());
  for (int s = lo; s < hi; ++s) stack_top_[s] = 0;
  for (const auto& [start, x] : starts_) {
    for (int s = d_.first_section[x]; s < d_.end_section[x]; ++s) {
      stack_top_[s] = std::max(stack_top_[s], start) + d_.size[x];
      if (stack_top_[s] > capacity) return Expansion::kPruned;
    }
  }

  frame->key = {hash1, hash2};
  const auto failed = failed_.find(frame->key);
  if (failed != failed_.end() && failed->second >= capacity_) {
    return Expansion::kPruned;
  }

  // Set aside: an item x covering every section with items left divides
  // any placement of the group into the items below x and those above.
  // Moving those above down by x's size and x to the top keeps the
  // placement valid and no higher (offsets stay above every floor, as x
  // meets every placed item that any active item meets). So the items
  // covering the group can wait for its top while the others are placed
  // under a capacity lower by their sizes. Needs unaligned, unpinned items.
  const size_t tops_begin = tops_.size();
  if (may_set_aside && spanning > 0 &&
      spanning < static_cast<int>(starts_.size())) {
    for (const auto& [start, x] : starts_) {
      if (d_.first_section[x] <= used_lo && d_.end_section[x] >= used_hi) {
        tops_.push_back(x);
      }
    }
    std::sort(tops_.begin() + tops_begin, tops_.end());
    SetAside(tops_begin, tops_.size());
  }

  // Independent groups: runs of sections with items left, joined where an
  // active item crosses the boundary between two sections.
  const size_t groups_begin = groups_.size();
  for (int s = lo; s < hi; ++s) {
    if (remaining_[s] == 0) continue;
    if (groups_.size() > groups_begin && groups_.back().second == s &&
        crossing_[s] > 0) {
      groups_.back().second = s + 1;
    } else {
      groups_.push_back({s, s + 1});
    }
  }
  if (groups_.size() - groups_begin > 1 || tops_.size() > tops_begin) {
    // Most loaded group first: it is the likeliest to fail.
    auto load = [&](const std::pair<int, int>& group) {
      Bytes most = 0;
      for (int s = group.first; s < group.second; ++s) {
        most = std::max(most, remaining_[s]);
      }
      return most;
    };
    std::stable_sort(
        groups_.begin() + groups_begin, groups_.end(),
        [&](const std::pair<int, int>& a, const std::pair<int, int>& b) {
          return load(a) > load(b);
        });
    frame->groups_begin = groups_begin;
    frame->groups_end = groups_.size();
    frame->tops_begin = tops_begin;
    frame->tops_end = tops_.size();
    return Expansion::kSplit;
  }
  groups_.resize(groups_begin);

  // Candidates: items that may come next, at or below the highest next
  // offset, after their identical twins, and not at or above another
  // item's canonical top (which would strand that item above empty space:
  // dominance as above); by offset, then rank.
  const size_t cand_begin = candidates_.size();
  for (const auto& [start, x] : starts_) {
    const Bytes offset = CanonicalOffset(x);
    if (Stuck(offset, x) || offset > highest_next ||
        (d_.twin_before[x] >= 0 && !placed_[d_.twin_before[x]])) {
      continue;
    }
    if (offset >= (x == top1_item ? top2 : top1)) continue;
    candidates_.push_back(x);
  }
  std::sort(candidates_.begin() + cand_begin, candidates_.end(),
            [&](int a, int b) {
              const Bytes offset_a = CanonicalOffset(a);
              const Bytes offset_b = CanonicalOffset(b);
              return offset_a < offset_b ||
                     (offset_a == offset_b && priority_[a] < priority_[b]);
            });
  frame->cand_begin = cand_begin;
  frame->cand_end = candidates_.size();
  frame->next = cand_begin;
  return Expansion::kCandidates;
}

void PartSearch::StartGroup(int split) {
  const Frame& at = stack_[split];
  Frame group;
  group.undo_mark = undo_.size();
  group.prev_last = last_;
  group.prev_last_rank = last_rank_;
  group.lo = groups_[at.next].first;
  group.hi = groups_[at.next].second;
  group.capacity = at.capacity;
  for (size_t k = at.tops_begin; k < at.tops_end; ++k) {
    group.capacity -= d_.size[tops_[k]];
  }
  group.group_of = split;
  // A group is a problem of its own: its order starts afresh.
  last_ = 0;
  last_rank_ = -1;
  stack_.push_back(group);
}

void PartSearch::StartTops(int split) {
  Frame& at = stack_[split];
  at.tops_started = true;
  Restore(at.tops_begin, at.tops_end);
  Frame tops;
  tops.undo_mark = undo_.size();
  tops.prev_last = last_;
  tops.prev_last_rank = last_rank_;
  tops.lo = at.lo;
  tops.hi = at.hi;
  tops.capacity = at.capacity;
  tops.group_of = split;
  tops.tops_of = split;
  last_ = 0;
  last_rank_ = -1;
  stack_.push_back(tops);
}

void PartSearch::Pop() {
  Frame& frame = stack_.back();
  if (frame.item >= 0) Unplace(frame.item, frame.undo_mark);
  last_ = frame.prev_last;
  last_rank_ = frame.prev_last_rank;
  if (frame.tops_of >= 0) {
    Frame& split = stack_[frame.tops_of];
    SetAside(split.tops_begin, split.tops_end);
    split.tops_started = false;
  }
  if (frame.split) {
    if (!frame.tops_started) Restore(frame.tops_begin, frame.tops_end);
    tops_.resize(frame.tops_begin);
    groups_.resize(frame.groups_begin);
  } else if (frame.expanded && frame.cand_end > frame.cand_begin) {
    candidates_.resize(frame.cand_begin);
  }
  stack_.pop_back();
}

void PartSearch::Start(Bytes capacity) {
  const int n = d_.n;
  capacity_ = capacity;
  placed_.assign(n, 0);
  aside_.assign(n, 0);
  floor_.assign(n, 0);
  offset_.assign(n, 0);
  undo_.clear();
  remaining_ = d_.section_load;
  crossing_.assign(d_.num_sections + 1, 0);
  for (int x = 0; x < n; ++x) {
    for (int b = d_.first_section[x] + 1; b < d_.end_section[x]; ++b) {
      ++crossing_[b];
    }
  }
  stack_top_.assign(d_.num_sections, 0);
  last_ = 0;
  last_rank_ = -1;
  candidates_.clear();
  groups_.clear();
  tops_.clear();
  stack_.clear();
  Frame root;
  root.lo = 0;
  root.hi = d_.num_sections;
  root.capacity = capacity;
  stack_.push_back(root);
}

Outcome PartSearch::Run(const PlanContext& context, int64_t node_budget,
                        std::vector<Bytes>* offsets) {
  const int64_t stop = nodes_ + node_budget;
  while (!stack_.empty()) {
    if (nodes_ >= stop) return Outcome::kOutOfNodes;
    if (++nodes_ % kNodesPerClockCheck == 0 && !context.Check().ok()) {
      return Outcome::kInterrupted;
    }
    const int top = static_cast<int>(stack_.size()) - 1;
    Frame& frame = stack_.back();
    if (!frame.expanded) {
      frame.expanded = true;
      switch (Expand(&frame)) {
        case Expansion::kPruned:
          frame.closed = true;
          break;
        case Expansion::kCandidates:
          break;
        case Expansion::kSplit:
          frame.split = true;
          frame.next = frame.groups_begin;
          if (frame.groups_begin < frame.groups_end) {
            StartGroup(top);
          } else {
            StartTops(top);
          }
          break;
        case Expansion::kComplete: {
          // The group is placed: go on with the next group of the innermost
          // split that has one left, or with the items it set aside. This
          // frame is never resumed: a later failure unwinds past it.
          frame.closed = true;
          int split = frame.group_of;
          while (split >= 0) {
            Frame& at = stack_[split];
            if (at.next + 1 < at.groups_end) {
              ++at.next;
              StartGroup(split);
              break;
            }
            if (at.tops_begin < at.tops_end && !at.tops_started) {
              at.next = at.groups_end;
              StartTops(split);
              break;
            }
            split = at.group_of;
          }
          if (split < 0) {
            for (int x = 0; x < d_.n; ++x) {
              (*offsets)[d_.members[x]] = offset_[x];
            }
            return Outcome::kFound;
          }
          break;
        }
      }
      continue;
    }
    if (!frame.closed && !frame.split && frame.next < frame.cand_end) {
      const int y = candidates_[frame.next++];
      Frame child;
      child.item = y;
      child.undo_mark = undo_.size();
      child.prev_last = last_;
      child.prev_last_rank = last_rank_;
      child.lo = frame.lo;
      child.hi = frame.hi;
      child.capacity = frame.capacity;
      child.group_of = frame.group_of;
      Place(y);
      stack_.push_back(child);
      continue;
    }
    // The node has no (more) ways to go on: remember that it fails.
    if (!frame.closed) RememberFailure(frame.key);
    const int group_of = frame.group_of;
    const bool group_root = frame.item < 0;
    Pop();
    if (group_root && group_of >= 0) {
      // A group has no placement: neither has the node that split.
      while (static_cast<int>(stack_.size()) > group_of + 1) Pop();
      RememberFailure(stack_.back().key);
      Pop();
    }
  }
  return Outcome::kExhausted;
}

// Returns the i-th term (from 1) of Luby's sequence 1 1 2 1 1 2 4 1 1 2 ...
int64_t Luby(int64_t i) {
  while (true) {
    int64_t power = 2;
    while (power - 1 < i) power *= 2;
    if (power - 1 == i) return power / 2;
    i -= power / 2 - 1;
  }
}

// Decides one part with a portfolio: two searches that try items at equal
// offsets in different fixed orders, and one that restarts with ever new
// orders after budgets following Luby's sequence. They take turns of
// kNodesPerTurn nodes, the restarting one every other turn (a fixed order
// either succeeds soon or stays stuck for long; restarts are what get
// through the hard instances); the first to find a placement or to exhaust
// its search space answers (each search is complete on its own). The fixed
// searches keep their tables of failed states across capacities.
class Portfolio {
 public:
  explicit Portfolio(const PartData& data) : d_(data) {
    for (int order = 0; order < 3; ++order) {
      searches_.emplace_back(d_);
    }
    searches_[0].SetPriority(Priorities(d_, 0));
    searches_[1].SetPriority(Priorities(d_, 1));
  }

  // Searches for a placement of height <= capacity for at most
  // `node_budget` nodes in all (kOutOfNodes after that).
  Outcome Decide(Bytes capacity, const PlanContext& context,
                 int64_t node_budget, std::vector<Bytes>* offsets) {
    for (PartSearch& search : searches_) search.Start(capacity);
    restart_left_ = 0;
    int64_t left = node_budget;
    // Turns: the first fixed order, the restarting search, the second
    // fixed order, the restarting search again.
    constexpr size_t kTurns[] = {0, 2, 1, 2};
    while (true) {
      for (size_t k : kTurns) {
        if (left <= 0) return Outcome::kOutOfNodes;
        PartSearch& search = searches_[k];
        if (k == 2 && restart_left_ <= 0) {
          // The restarting search: a new order (from 2 on), a new budget.
          search.SetPriority(Priorities(d_, 2 + restarts_));
          search.Start(capacity);
          ++restarts_;
          restart_left_ = kNodesPerRestartUnit * Luby(restarts_);
        }
        const int64_t before = search.nodes();
        int64_t turn = std::min(kNodesPerTurn, left);
        if (k == 2) turn = std::min(turn, restart_left_);
        const Outcome outcome = search.Run(context, turn, offsets);
        const int64_t used = search.nodes() - before;
        left -= used;
        if (k == 2) restart_left_ -= used;
        if (outcome != Outcome::kOutOfNodes) return outcome;
      }
    }
  }

  int64_t nodes() const {
    int64_t total = 0;
    for (const PartSearch& search : searches_) total += search.nodes();
    return total;
  }

 private:
  const PartData& d_;
  std::vector<PartSearch> searches_;
  int restarts_ = 0;
  int64_t restart_left_ = 0;
};

// Lowers the height of the part `data`, now `*height` with the offsets in
// `*offsets`, while it is above `enough` (bytes): probes capacities by
// bisection between the highest one proven infeasible and the best height,
// each probe with a node budget that doubles on every pass (the first probe
// of a pass tries the lowest capacity left). Sets `*proven` when no lower
// height exists. Adds the nodes searched to `*nodes`. Returns false when
// the context stopped it.
bool Minimize(const PartData& data, Bytes enough, const PlanContext& context,
              std::vector<Bytes>* offsets, Bytes* height, bool* proven,
              int64_t* nodes) {
  // Every offset and top is a multiple of the granule.
  Bytes granule = 0;
  for (int x = 0; x < data.n; ++x) {
    granule = std::gcd(granule, data.size[x]);
    granule = std::gcd(granule, data.alignment[x]);
    if (data.fixed[x] >= 0) granule = std::gcd(granule, data.fixed[x]);
  }
  Bytes lowest = AlignUp(data.lower_bound, granule);  // none lower exists
  // Heights at most `enough` are as good as any: the highest multiple.
  const Bytes good = std::max(lowest, enough / granule * granule);
  Portfolio portfolio(data);
  bool stopped = false;
  for (int64_t budget = kNodesPerMinimizeProbe;
       *height > good && lowest < *height && !stopped; budget *= 2) {
    Bytes low = good;  // this pass probes [low, *height)
    bool first = true;
    while (low<*height&& * height> good && !stopped) {
      const Bytes steps = (*height - low) / granule;  // >= 1
      const Bytes target = first ? low : low + (steps - 1) / 2 * granule;
      first = false;
      std::vector<Bytes> lower = *offsets;
      switch (portfolio.Decide(target, context, budget, &lower)) {
        case Outcome::kFound:
          *offsets = std::move(lower);
          *height = 0;
          for (int x = 0; x < data.n; ++x) {
            *height =
                std::max(*height, (*offsets)[data.members[x]] + data.size[x]);
          }
          break;
        case Outcome::kExhausted:
          lowest = std::max(lowest, target + granule);
          low = target + granule;
          break;
        case Outcome::kOutOfNodes:
          low = target + granule;
          break;
        case Outcome::kInterrupted:
          stopped = true;
          break;
      }
    }
  }
  *nodes += portfolio.nodes();
  *proven = lowest >= *height;
  return !stopped;
}

// Windows around the peak tried by ImproveAroundPeak, as multiples of the
// number of items live at the peak timestep.
constexpr int64_t kPeakWindowFactors[] = {1, 2, 4, 8, 16, 32};

// The largest window searched. Setting up and probing a window grows
// faster than its size, and a larger window overran its share of the time
// budget on the idealloc traces (docs/benchmarks.md, "Plan quality").
constexpr size_t kMaxPeakWindowItems = 2048;

// The best-fit orders that place a part around its pinned peak window:
// size descending (XLA's and MiniMalloc's greedy), and program order, which
// fills the memory on either side of the window as time moves away from
// it, as an allocator would, where (away from the peak) there is room to
// spare. Two of the portfolio's six, so that each window costs little.
constexpr BestFitOrder kOrdersAroundPeak[] = {BestFitOrder::kSizeDescending,
                                              BestFitOrder::kProgramOrder};

// Returns the first timestep at which the items `members` (all occupying
// bytes) have their highest total size live.
Timestep PeakTimestep(const PlacementProblem& problem,
                      const std::vector<size_t>& members) {
  std::vector<std::pair<Timestep, Bytes>> events;  // (time, size change)
  events.reserve(2 * members.size());
  for (size_t i : members) {
    const PlacementItem& item = problem.items[i];
    events.push_back({item.live_range.begin, item.size});
    events.push_back({item.live_range.end, -item.size});
  }
  // At equal times ends (negative changes) come first: ranges are half-open.
  std::sort(events.begin(), events.end());
  Bytes load = 0;
  Bytes peak = -1;
  Timestep at = 0;
  for (const auto& [time, change] : events) {
    load += change;
    if (load > peak) {
      peak = load;
      at = time;
    }
  }
  return at;
}

// For a part too large to search whole (its overlap lists exceed
// kMaxNeighborEntries): packs the items nearest its peak timestep exactly
// (Minimize on that window alone), pins them there, and places the rest of
// the part around them by best fit (kOrdersAroundPeak); keeps the lowest
// part found over windows of growing size (kPeakWindowFactors). The height
// of a large trace is often decided at its peak, where best fit in every
// order can leave a hole that an exact packing of the few hundred items
// around the peak avoids; which window size gives the lowest part varies,
// hence several. `offsets` (global item indices) and `height` hold the
// part's best placement, and are replaced only by a lower one. Windows
// stop once the height reaches `enough`, once a window cannot be searched,
// and when `context` stops (then returns false).
bool ImproveAroundPeak(const PlacementProblem& problem,
                       const std::vector<size_t>& members, Bytes enough,
                       const PlanContext& context, std::vector<Bytes>* offsets,
                       Bytes* height, int64_t* nodes) {
  const std::vector<PlacementItem>& items = problem.items;
  const Timestep peak = PeakTimestep(problem, members);
  // Timesteps between an item's live range and the peak (0: live there).
  const auto distance = [&](size_t i) -> Timestep {
    const LiveRange& range = items[i].live_range;
    if (range.end <= peak) return peak - range.end + 1;
    if (range.begin > peak) return range.begin - peak;
    return 0;
  };
  // Positions in `members`, nearest the peak first.
  std::vector<size_t> nearest(members.size());
  std::iota(nearest.begin(), nearest.end(), size_t{0});
  std::stable_sort(nearest.begin(), nearest.end(), [&](size_t a, size_t b) {
    return distance(members[a]) < distance(members[b]);
  });
  const size_t at_peak = static_cast<size_t>(
      std::count_if(members.begin(), members.end(),
                    [&](size_t i) { return distance(i) == 0; }));

  // The part alone, as a problem of its own (item k is members[k]): the
  // window's items get pinned.
  PlacementProblem part;
  part.items.reserve(members.size());
  for (size_t i : members) part.items.push_back(items[i]);

  for (const int64_t factor : kPeakWindowFactors) {
    if (*height <= enough) break;
    const size_t size =
        std::min(static_cast<size_t>(factor) * at_peak, members.size());
    // The whole part is not searchable; a window this large is too slow.
    if (size == members.size() || size > kMaxPeakWindowItems) break;
    std::vector<size_t> window_members;
    window_members.reserve(size);
    for (size_t k = 0; k < size; ++k) {
      window_members.push_back(members[nearest[k]]);
    }
    PartData window;
    if (!BuildPartData(problem, std::move(window_members), context, &window)) {
      break;  // too large to search, or stopped (seen below)
    }
    // The window starts from the part's placement, valid for any subset.
    std::vector<Bytes> packed = *offsets;
    Bytes window_height = 0;
    for (size_t i : window.members) {
      window_height = std::max(window_height, packed[i] + items[i].size);
    }
    // Two thirds of the time and work left: the rest for placing the part
    // around the window, and for larger windows when this one ends early.
    PlanContext share = context;
    int64_t share_work = 0;
    if (context.work_left != nullptr) {
      share_work = std::max<int64_t>(*context.work_left / 3 * 2, 0);
      share.work_left = &share_work;
    }
    const int64_t share_granted = share_work;
    if (context.deadline != absl::InfiniteFuture()) {
      const absl::Time now = absl::Now();
      share.deadline = now + (context.deadline - now) * 2 / 3;
    }
    bool proven = false;
    Minimize(window, window.lower_bound, share, &packed, &window_height,
             &proven, nodes);
    if (context.work_left != nullptr) {
      *context.work_left -= share_granted - std::max<int64_t>(share_work, 0);
    }
    for (size_t k = 0; k < size; ++k) {
      part.items[nearest[k]].fixed_offset = packed[members[nearest[k]]];
    }
    for (const BestFitOrder order : kOrdersAroundPeak) {
      absl::StatusOr<Placement> around = BestFitPlace(part, order, context);
      if (!around.ok()) return false;  // `context` stopped
      if (around->height < *height) {
        *height = around->height;
        for (size_t k = 0; k < members.size(); ++k) {
          (*offsets)[members[k]] = around->offsets[k];
        }
      }
    }
    for (size_t k = 0; k < size; ++k) {
      part.items[nearest[k]].fixed_offset =
          items[members[nearest[k]]].fixed_offset;
    }
  }
  return context.Check().ok();
}

}  // namespace

std::ostream& operator<<(std::ostream& os, const SearchResult& result) {
  os << "height=" << result.placement.height << " found=" << result.found
     << " proven_optimal=" << result.proven_optimal
     << " infeasible_proven=" << result.infeasible_proven << " offsets=[";
  for (size_t i = 0; i < result.placement.offsets.size(); ++i) {
    if (i > 0) os << ",";
    os << result.placement.offsets[i];
  }
  return os << "]";
}

absl::StatusOr<SearchResult> OptimalPlace(const PlacementProblem& problem,
                                          const SearchOptions& options,
                                          const PlanContext& context) {
  absl::Status status = ValidateInput(problem, options);
  if (!status.ok()) return status;
  const std::vector<PlacementItem>& items = problem.items;
  const Bytes capacity = problem.capacity;
  const bool decide = capacity != kUnboundedCapacity;

  // The seed: the incumbent, or best-fit's best placement (or, once the
  // context has stopped that, its quick program-order sweep).
  std::vector<Bytes> offsets;
  if (options.incumbent != nullptr) {
    offsets = options.incumbent->offsets;
  } else {
    absl::StatusOr<Placement> seed = BestFitPortfolio(problem, context);
    if (!seed.ok()) {
      seed = BestFitPlace(problem, BestFitOrder::kProgramOrder, PlanContext());
    }
    if (!seed.ok()) return seed.status();
    offsets = std::move(seed->offsets);
  }
  // No placement is lower than the highest load, a pinned item's top, or
  // the size of an item that occupies nothing (which goes as low as it can).
  Bytes lower_bound = PlacementLowerBound(problem);
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].pinned()) {
      lower_bound =
          std::max(lower_bound, items[i].fixed_offset + items[i].size);
    }
    if (!items[i].occupies()) {
      offsets[i] = items[i].pinned() ? items[i].fixed_offset : 0;
      lower_bound = std::max(lower_bound, offsets[i] + items[i].size);
    }
  }

  // Independent parts: items connected in time, split where nothing lives.
  std::vector<size_t> by_begin;
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].occupies()) by_begin.push_back(i);
  }
  std::stable_sort(by_begin.begin(), by_begin.end(), [&](size_t a, size_t b) {
    return items[a].live_range.begin < items[b].live_range.begin;
  });
  std::vector<std::vector<size_t>> parts;
  Timestep part_end = std::numeric_limits<Timestep>::min();
  for (size_t i : by_begin) {
    if (parts.empty() || items[i].live_range.begin >= part_end) {
      parts.emplace_back();
    }
    parts.back().push_back(i);
    part_end = std::max(part_end, items[i].live_range.end);
  }

  struct PartState {
    PartData data;
    bool searchable = false;
    Bytes height = 0;
    bool proven = false;  // no lower placement of this part exists
  };
  auto part_height = [&](const PartData& data) {
    Bytes height = 0;
    for (size_t i : data.members) {
      height = std::max(height, offsets[i] + items[i].size);
    }
    return height;
  };
  std::vector<PartState> states(parts.size());
  for (size_t p = 0; p < parts.size(); ++p) {
    PartState& state = states[p];
    state.searchable =
        BuildPartData(problem, std::move(parts[p]), context, &state.data);
    state.height = part_height(state.data);
    state.proven = state.height <= state.data.lower_bound;
  }
  // Parts are searched in order of decreasing height.
  std::vector<size_t> order(states.size());
  for (size_t p = 0; p < states.size(); ++p) order[p] = p;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return states[a].height > states[b].height;
  });

  SearchResult result;
  bool interrupted = false;
  if (decide) {
    bool infeasible = lower_bound > capacity;
    bool unknown = false;
    for (size_t p : order) {
      PartState& state = states[p];
      if (infeasible || interrupted) break;
      if (state.height <= capacity) continue;
      if (!state.searchable) {
        unknown = true;
        continue;
      }
      Portfolio portfolio(state.data);
      std::vector<Bytes> fitted = offsets;
      const Outcome outcome = portfolio.Decide(
          capacity, context, std::numeric_limits<int64_t>::max(), &fitted);
      result.nodes += portfolio.nodes();
      if (outcome == Outcome::kFound) {
        offsets = std::move(fitted);
        state.height = part_height(state.data);
      } else if (outcome == Outcome::kExhausted) {
        infeasible = true;
      } else {
        interrupted = true;
      }
    }
    result.infeasible_proven = infeasible;
    result.found = !infeasible && !interrupted && !unknown;
  } else {
    // A part need not go below the height that the lower bound, or a part
    // proven optimal, forces on the whole placement.
    Bytes enough = lower_bound;
    for (size_t p : order) {
      PartState& state = states[p];
      if (!state.proven && state.height > enough && !interrupted) {
        interrupted =
            state.searchable
                ? !Minimize(state.data, enough, context, &offsets,
                            &state.height, &state.proven, &result.nodes)
                : !ImproveAroundPeak(problem, state.data.members, enough,
                                     context, &offsets, &state.height,
                                     &result.nodes);
      }
      if (state.proven) enough = std::max(enough, state.height);
    }
    result.found = true;
    result.proven_optimal = true;
    for (const PartState& state : states) {
      if (!state.proven && state.height > enough) {
        result.proven_optimal = false;
      }
    }
  }

  result.placement.offsets = std::move(offsets);
  result.placement.height = PlacementHeight(problem, result.placement.offsets);
  if (result.placement.height <= lower_bound) result.proven_optimal = true;
  if (decide && !result.found) result.proven_optimal = false;
  PlacementProblem check = problem;
  if (!result.found) check.capacity = kUnboundedCapacity;
  status = ValidatePlacement(check, result.placement);
  if (!status.ok()) {
    return absl::InternalError(absl::StrCat(
        "optimal search made an invalid placement: ", status.message()));
  }
  return result;
}

}  // namespace memplan
