// The whole graph's memory: what is allocated while a graph runs, above
// what was allocated at its entry, with a plan's pools and without them.
// A plan's own stats (core/stats.h) see only the pooled buffers on their
// own timesteps; a GPU sees more. While a compiled graph runs, memory that
// no pool holds is live beside the pools: the outputs extern kernels
// allocate themselves (convolutions, attention), and the graph inputs it
// frees as it goes (a backward graph frees its saved activations). A pool
// holds its whole size from its creation to its release:
//
//   bytes ^
//         |        +--------------+            pool0 [1, 6): 4 units
//         |   +----+              |
//         |   |    |    pool0     +-----+      extern output [3, 7)
//         |   |    +-----------+  |  ext|
//         |   |ext |           |  |     |      input freed at 5: -1 unit
//         +---+----+-----------+--+-----+---> position
//         0   1    3           5  6     7
//
// The model counts allocations as a caching allocator does: each one
// rounded up to the allocator's block (PyTorch's CUDA caching allocator:
// 512 bytes; with that block, replayed through core/caching_allocator.h,
// which also counts the rests it does not split off), a pool as one
// allocation. Positions are the wrapper's events
// (with events: after each event) or the plan's timesteps (with buffers:
// frees at t before allocations at t); a block is allocated over the
// half-open [begin, end) of positions. docs/DESIGN.md, "Whole-graph
// memory", gives the semantics of the two peaks.
#ifndef MEMPLAN_CORE_GRAPH_MEMORY_H_
#define MEMPLAN_CORE_GRAPH_MEMORY_H_

#include <cstdint>
#include <limits>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "core/types.h"

namespace memplan {

// A position no block reaches: a block ending there is never freed while
// the graph runs (an output, a storage the graph returns).
inline constexpr int64_t kNeverFreed = std::numeric_limits<int64_t>::max();

// One allocation of the whole-graph model: `size` bytes (not yet rounded)
// over the half-open [begin, end) of positions. A graph input the graph
// frees at position p is the block [p, kNeverFreed) of its size counted
// negative (its bytes were allocated before the entry).
struct MemoryBlock {
  int64_t begin = 0;
  int64_t end = kNeverFreed;
  Bytes size = 0;
  bool freed_input = false;  // counts -size from begin on
  // A freed input that is a block of the allocator state at the entry
  // (DeviceMemory::start): that block's handle (its size is `size`); -1:
  // a block of its own.
  int32_t start_block = -1;
  // The order inside position `begin`, for the allocations one extern
  // kernel's call makes one after another (WrapperLine::call): the
  // allocation happens at step `step` of its position (steps in
  // increasing order, 0 first; at each step the frees before the
  // allocations). `free_step` > step (scratch memory the call frees
  // before it returns; `end` is then begin + 1): the block is freed at
  // step `free_step` of position `begin`, not at `end`. Readers that
  // see positions only take such a block as live over [begin, begin + 1),
  // beside everything else allocated there:
  //
  //   position i, steps:   0     1     2     3     4      position i + 1
  //   output 0            [+-----------------------------------
  //   scratch                   [+----)                     (free_step 2)
  //   output 1                        [+----------------------
  //   scratch                               [+----)         (free_step 4)
  int32_t step = 0;
  int32_t free_step = 0;

  // Where the block is freed: (begin, free_step) for scratch freed inside
  // its position, else (end, 0); end may be kNeverFreed (never freed).
  std::pair<int64_t, int32_t> FreedAt() const {
    if (free_step > step) return {begin, free_step};
    return {end, 0};
  }

  friend bool operator==(const MemoryBlock& a, const MemoryBlock& b) {
    return a.begin == b.begin && a.end == b.end && a.size == b.size &&
           a.freed_input == b.freed_input && a.start_block == b.start_block &&
           a.step == b.step && a.free_step == b.free_step;
  }
};

// Prints "[begin,end)+size" ("-size" for a freed input; "never" for
// kNeverFreed).
std::ostream& operator<<(std::ostream& os, const MemoryBlock& block);

class CachingAllocatorModel;  // core/caching_allocator.h

// The blocks of one device, and the caching allocator's free blocks cached
// on it at the graph's entry (Problem::cached_blocks of the device).
struct DeviceMemory {
  std::string device;
  std::vector<MemoryBlock> blocks;
  std::vector<CachedBlock> cached;
  // The allocator's state at the entry where known (a training backward's:
  // what its forward left, core/entry_state.h); null: an empty cache but
  // for `cached`.
  std::shared_ptr<const CachingAllocatorModel> start;
  // Per name that still holds a storage when the graph returns (an output,
  // with wrapper lines): the index in `blocks` of that storage's block
  // (its first, for a name holding several). Filled by TimelineOfLines.
  absl::flat_hash_map<std::string, int32_t> held_at_end;
};

// Devices in the order they are first added, each with its index: the
// order of a timeline's DeviceMemory lists.
class DeviceOrder {
 public:
  // Adds `device` unless it is there already.
  void Add(const std::string& device) {
    if (index_.try_emplace(device, names_.size()).second) {
      names_.push_back(device);
    }
  }
  // One empty DeviceMemory per device, in order.
  std::vector<DeviceMemory> Empty() const {
    std::vector<DeviceMemory> memory;
    for (const std::string& device : names_) {
      memory.emplace_back();
      memory.back().device = device;
    }
    return memory;
  }

  // Whether `device` was added.
  bool Has(const std::string& device) const { return index_.contains(device); }
  // The index of `device`, which must have been added.
  size_t operator[](const std::string& device) const {
    return index_.at(device);
  }

 private:
  std::vector<std::string> names_;
  absl::flat_hash_map<std::string, size_t> index_;
};

// Returns `size` rounded up to a multiple of `block` (> 0), and at least
// one block for a positive size; 0 for 0 (the caching allocator allocates
// nothing for an empty tensor).
Bytes AllocatorBytes(Bytes size, Bytes block);

// Returns the most bytes allocated at once over the positions, above the
// entry (never below 0): the maximum over positions p of the summed
// allocator bytes (AllocatorBytes(size, block)) of the blocks with
// begin <= p < end, freed inputs counting negative; inside a position, the
// maximum over its steps (MemoryBlock::step, free_step). O(k log k) for k
// blocks.
Bytes PeakAboveEntry(const std::vector<MemoryBlock>& blocks, Bytes block);

// The whole-graph peaks of one device, in bytes above the graph's entry.
struct DevicePeaks {
  std::string device;
  Bytes predicted = 0;  // with the plan's pools
  Bytes baseline = 0;   // without pools, as default torch.compile
  // No plan's predicted peak can be lower: the most bytes at once of the
  // unplanned blocks and the buffers' own sizes (a pool holds at least its
  // live buffers' bytes wherever it is charged).
  Bytes lower_bound = 0;
  // The segments the CUDA caching allocator would reserve while the graph
  // runs, from the cache at its entry (Problem::cached_blocks; none: an
  // empty cache; core/caching_allocator.h), with the plan's pools and
  // without them.
  Bytes predicted_reserved = 0;
  Bytes baseline_reserved = 0;
  // The caching allocator's allocations (Malloc calls) while the graph
  // runs, with the plan's pools (one per pool that allocates bytes, plus
  // the unplanned blocks) and without them (default's storages plus the
  // unplanned blocks); freed inputs count none.
  int64_t predicted_allocations = 0;
  int64_t baseline_allocations = 0;

  friend bool operator==(const DevicePeaks& a, const DevicePeaks& b) {
    return a.device == b.device && a.predicted == b.predicted &&
           a.baseline == b.baseline && a.lower_bound == b.lower_bound &&
           a.predicted_reserved == b.predicted_reserved &&
           a.baseline_reserved == b.baseline_reserved &&
           a.predicted_allocations == b.predicted_allocations &&
           a.baseline_allocations == b.baseline_allocations;
  }
};

// A graph's memory outside its plan, on one time axis of positions:
// where each buffer group is allocated and freed, the unplanned blocks as
// the pooled code allocates them, and default torch.compile's blocks (the
// baseline). Built once per request (TimelineOfBuffers, or from wrapper
// lines: core/inductor/wrapper_memory.h); read by the whole-graph peaks
// and by the planners that minimize them.
struct GraphTimeline {
  // Per buffer group (parallel to Problem::buffers): allocated over
  // [begin, end) of positions (end kNeverFreed: never freed while the graph
  // runs, e.g. an output).
  struct Span {
    int64_t begin = 0;
    int64_t end = kNeverFreed;
  };
  std::vector<Span> spans;
  // Per buffer group (parallel to spans, or empty: the spans): where every
  // plan holds the group's bytes apart from every other group's, for the
  // lower bound on the predicted peak. Within one run of planning lines
  // (one timestep) a plan may give a group freed there and one allocated
  // there the same bytes, whatever the lines' order, so from the end of
  // the run of the group's ALLOCATE to the start of the run of its last
  // FREE (empty when both are one run: an empty live range).
  std::vector<Span> held;
  // Per device, in the order of the devices' first buffers: the blocks no
  // pool holds, with pools (extern outputs, freed inputs).
  std::vector<DeviceMemory> unplanned;
  // Per device (same order): everything default torch.compile allocates,
  // each buffer group its own storage as its reuse pass hands them on,
  // the unplanned blocks included.
  std::vector<DeviceMemory> baseline;
  // Per buffer group (parallel to spans): the group whose storage default
  // torch.compile's reuse pass hands on to this one (a ReuseDecision,
  // core/reference_decisions.h: the earlier group freed, this one
  // allocated in its storage), or -1 (its own allocation). Empty when no
  // group takes another's storage.
  std::vector<int32_t> storage_from;
};

// Gives each device of `timeline` (its unplanned and baseline memory) the
// problem's cached blocks of that device, in request order; a cached block
// of a device the graph allocates nothing on is left out.
void AddCachedBlocks(const Problem& problem, GraphTimeline& timeline);

// Returns the timeline of a problem given as plain buffers, positions being
// timesteps: each buffer over its live range (empty or of size 0: nothing),
// the unplanned buffers over theirs (an input freed at its end), and as the
// baseline each buffer alone (no reuse) plus the unplanned ones.
GraphTimeline TimelineOfBuffers(const Problem& problem);

// Returns the block of a segment reservation (core/types.h) of `size`
// bytes among `blocks` (one device's): over [b - 1, b) for the least
// begin b of the blocks (0 when there are none), so that it is allocated
// and freed before anything else, frees and inputs included.
MemoryBlock ReservationBlock(const std::vector<MemoryBlock>& blocks,
                             Bytes size);

// Returns the blocks of `calls` (>= 1) calls of a graph one after another,
// as a loop `out = graph(x)` makes them: each call's `blocks` (one
// device's) after the previous call's, positions shifted past them; a
// block the graph holds at its return (end kNeverFreed, no freed input:
// an output) is freed as the next call returns (the loop's assignment
// drops the previous output), the last call's never. Freed inputs repeat
// per call (each call's inputs, adopted before the start). O(calls * k).
std::vector<MemoryBlock> LoopBlocks(const std::vector<MemoryBlock>& blocks,
                                    int calls);

// Returns the blocks `plan` (a plan of `problem`) allocates on each device
// (the timeline's order): each pool over the hull of its buffers' spans
// (from the first begin to the last end; buffers of size 0 or with an
// empty span allocate nothing), plus the timeline's unplanned blocks,
// plus the plan's segment reservations (ReservationBlock, last).
// `pool_blocks` (not null): receives per pool of the plan the index of its
// block in its device's blocks (-1: a pool that allocates nothing).
std::vector<DeviceMemory> PlanMemory(
    const Problem& problem, const Plan& plan, const GraphTimeline& timeline,
    std::vector<int32_t>* pool_blocks = nullptr);

// Returns, per device (the timeline's order), the allocated peak of
// PlanMemory (predicted) and of the baseline: with problem.allocator_block
// 512 (CUDA's), the peak_allocated of ReplayCachingAllocator (a block whose
// rest the allocator does not split off counts whole), else PeakAboveEntry
// with allocations rounded up to problem.allocator_block; the lower bound
// of the predicted peak (the unplanned blocks rounded, each buffer's size
// as it is, over its span; a buffer that is no output and never freed
// counts nowhere: a plan may reuse its bytes after its live range), and the
// reserved bytes and allocations of both (ReplayCachingAllocator's,
// core/caching_allocator.h).
std::vector<DevicePeaks> WholeGraphPeaks(const Problem& problem,
                                         const Plan& plan,
                                         const GraphTimeline& timeline);

}  // namespace memplan

#endif  // MEMPLAN_CORE_GRAPH_MEMORY_H_
