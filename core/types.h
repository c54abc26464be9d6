// Value types of the planning core: buffers, live ranges, pools, plans.
//
// The vocabulary follows PyTorch Inductor's memory_planning.py: a buffer
// group (several names, one storage) lives over a half-open live range of
// timesteps; a plan puts every buffer into a pool of one device at a byte
// offset.
//
//   offset ^
//          |        +------+
//          |  +-----+  b1  |        b0 and b2 share bytes: their live
//          |  |  b0 +------+        ranges [0,3) and [3,6) do not intersect.
//          |  +-----+--------+
//          |        |   b2   |
//          +--------+--------+----> timestep
//          0        3        6
#ifndef MEMPLAN_CORE_TYPES_H_
#define MEMPLAN_CORE_TYPES_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"

namespace memplan {

using Bytes = int64_t;     // a size or a byte offset in a pool
using Timestep = int64_t;  // a point in the caller's schedule

// Every offset is a multiple of this unless the request says otherwise, as
// Inductor's ALIGN_BYTES.
inline constexpr Bytes kDefaultAlignment = 64;

// Largest buffer size accepted (1 TiB), so that sums over millions of
// buffers stay far from int64 overflow.
inline constexpr Bytes kMaxBufferBytes = Bytes{1} << 40;

// Largest timestep accepted (2^53), so that lengths and sums cannot overflow.
inline constexpr Timestep kMaxTimestep = Timestep{1} << 53;

// Largest alignment accepted (1 GiB).
inline constexpr Bytes kMaxAlignment = Bytes{1} << 30;

// Returns `bytes` rounded up to a multiple of `alignment` (> 0), as
// Inductor's `_align` for alignment 64.
inline Bytes AlignUp(Bytes bytes, Bytes alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

// A half-open interval [begin, end) of timesteps during which a buffer is
// live, as Inductor's LiveRange. Invariant: begin <= end. A buffer ending at
// t and one beginning at t may share bytes.
struct LiveRange {
  Timestep begin = 0;  // first timestep live (inclusive)
  Timestep end = 0;    // first timestep no longer live (exclusive)

  // Number of timesteps, as Inductor's `len(LiveRange)`.
  Timestep length() const { return end - begin; }

  friend bool operator==(const LiveRange& a, const LiveRange& b) {
    return a.begin == b.begin && a.end == b.end;
  }
  friend bool operator!=(const LiveRange& a, const LiveRange& b) {
    return !(a == b);
  }
};

// Prints "[begin,end)".
std::ostream& operator<<(std::ostream& os, const LiveRange& range);

// How buffers may share pools, as Inductor's `config.memory_pool`.
enum class PoolMode {
  // Pools never grow past their first buffer; every output has its own pool.
  kNone,
  // Every output has a pool of its own, its size rounded up at most to the
  // alignment, holding no other output; intermediates may use any pool
  // while they fit. Inductor's default.
  kIntermediates,
  // All outputs of a device in one pool; intermediates in others (or in
  // gaps of the outputs' pool).
  kOutputs,
  // One growing pool per device for outputs and intermediates.
  kCombined,
};

// Returns "none", "intermediates", "outputs" or "combined".
const char* PoolModeName(PoolMode mode);
std::ostream& operator<<(std::ostream& os, PoolMode mode);

// One buffer group: one allocation that may carry several names through
// in-place reuse, as Inductor's BufferGroup.
struct Buffer {
  std::vector<std::string> names;  // first is the allocating buffer; unique
  Bytes size = 0;                  // bytes (Inductor's size hint); >= 0
  std::string symbolic_size;       // sympy expression of the bytes, or ""
  LiveRange live_range;            // half-open, in timesteps
  bool is_output = false;          // a graph output (lives to the last step)
  std::string device;              // e.g. "cuda:0"; pools hold one device
  std::string dtype;               // e.g. "torch.float32"; informational
  // The size depends on data (Inductor's unbacked symbols): as torch 2.11,
  // the buffer may only join a pool whose first use is not earlier than its
  // own begin (Allocation.earliest_available).
  bool size_is_data_dependent = false;
  // The buffer's offset is a multiple of this many bytes (a power of two);
  // 0: the problem's alignment. The effective alignment is the larger.
  Bytes alignment = 0;
  // The byte offset of its pool the buffer is pinned at (as MiniMalloc's
  // fixed offsets), in [0, kMaxBufferBytes]; nullopt: the planner chooses.
  std::optional<Bytes> fixed_offset;
  // Of an output: its release group, >= 0, where the caller releases it at
  // the same point as the other outputs of that group (a training
  // forward's saved activations whose last use in the backward is one
  // kernel, so that the backward frees them together); -1: released on
  // its own. In pool mode intermediates, strategy "partition" may put the
  // outputs of one group in one pool (Problem::OutputsReleasedTogether).
  int32_t release_group = -1;

  friend bool operator==(const Buffer& a, const Buffer& b);
};

// Prints "name[begin,end)+size@device".
std::ostream& operator<<(std::ostream& os, const Buffer& buffer);

// The granularity of PyTorch's CUDA caching allocator (kMinBlockSize):
// every allocation takes a multiple of it, at least one.
inline constexpr Bytes kDefaultAllocatorBlock = 512;

// Memory the plan does not place, given with plain buffers (with wrapper
// lines, their EXTERN_ALLOCATE, MULTI_OUTPUT and FREE_INPUT lines say it):
// an extern kernel's output, allocated over `live_range` (timesteps,
// half-open; an end past the last timestep: never freed while the graph
// runs), or a graph input (is_input), allocated before the graph runs and
// freed at live_range.end. Only the whole-graph peaks
// (core/graph_memory.h) read it; no planner does.
struct UnplannedBuffer {
  std::string name;  // informational; errors name it
  Bytes size = 0;    // bytes, in [0, kMaxBufferBytes]
  std::string device;
  LiveRange live_range;
  bool is_input = false;

  friend bool operator==(const UnplannedBuffer& a, const UnplannedBuffer& b) {
    return a.name == b.name && a.size == b.size && a.device == b.device &&
           a.live_range == b.live_range && a.is_input == b.is_input;
  }
};

// A free block the caller's caching allocator holds cached at the graph's
// entry (in torch.cuda.memory_snapshot(): an "inactive" block of a
// segment): the graph's allocations on `device` may take it, or split it,
// without a new segment. Only the whole-graph model's allocator replay
// (core/caching_allocator.h) reads it; it changes the predicted and
// baseline reserved bytes, and the allocated peaks where a block's rest is
// too small to split off (counted whole, as the allocator does).
struct CachedBlock {
  std::string device;
  Bytes size = 0;  // bytes, a positive multiple of 512, at most kMaxBufferBytes
  // Of a small-pool segment (2 MiB; requests of at most 1 MiB), else of a
  // large-pool one.
  bool small_pool = false;

  friend bool operator==(const CachedBlock& a, const CachedBlock& b) {
    return a.device == b.device && a.size == b.size &&
           a.small_pool == b.small_pool;
  }
};

// A planning problem: the buffers of one graph and how they may share.
struct Problem {
  std::vector<Buffer> buffers;
  PoolMode pool_mode = PoolMode::kIntermediates;
  Bytes alignment = kDefaultAlignment;  // bytes; a power of two
  // Most bytes the pools of one device may total; 0: no limit.
  Bytes capacity = 0;
  // The graph's memory outside the plan, for the whole-graph peaks.
  std::vector<UnplannedBuffer> unplanned;
  // The caching allocator's free blocks at the graph's entry, for the
  // whole-graph model's allocator replay; empty: an empty cache.
  std::vector<CachedBlock> cached_blocks;
  // The request describes the memory outside the plan (unplanned buffers,
  // or wrapper lines with extern allocations and input frees): strategy
  // "auto" then minimizes the whole graph's peak (core/strategies.h).
  bool whole_graph = false;
  // Bytes, a power of two: the whole-graph peaks round every allocation up
  // to a multiple of it (core/graph_memory.h).
  Bytes allocator_block = kDefaultAllocatorBlock;
  // The caller releases the graph's outputs together once it returns, not
  // one by one (a training backward's gradients, which autograd takes as
  // the backward returns and zero_grad releases together). In pool mode
  // intermediates, strategy "partition" may then put several outputs in
  // one pool (outputs only: such a pool is never released before the graph
  // returns), so that the mode's bound no longer holds (core/bounds.h) and
  // the validator bounds a pool by all its outputs; other strategies and
  // modes keep one pool per output.
  bool outputs_released_together = false;
  // The caller runs the plan's segment reservations (Plan::reservations)
  // at the graph's entry, so strategy "partition" may name them. Off: a
  // plan has none (a caller that does not run them would reserve other
  // segments than the stats predict). For graphs outside a training step
  // (inference): a training forward starts from the previous step's
  // cached segments, which persistent tensors allocated between steps
  // (an optimizer's state) may split, so that a reservation there takes a
  // second segment (up to +53% reserved with Adam or SGD with momentum on
  // the GPU suite, docs/gpu.md "Runs U6, W5, V12, P5, P6, R1 and R2"),
  // unless the step's graphs run in a private pool (private_pool below).
  bool reserve_segments = false;
  // The caller runs the graph, and every other compiled graph of its
  // training step, in a private pool of the caching allocator that only
  // those graphs allocate from (torch.cuda.MemPool, entered around each
  // graph's call): tensors allocated between the steps (an optimizer's
  // state, the loss) cannot split its segments, and the pool's segments
  // are those the step's graphs left. With reserve_segments, strategy
  // "partition" then reserves, for a graph not judged by its step (a
  // training forward), its predicted peak per device rounded down to 2 MiB
  // (at least 10 MiB), where the allocator model's start state (the
  // default pool's cached blocks) says nothing about the private pool: one
  // segment that the forward's pools, extern outputs and saved activations
  // split and the backward reuses, found free again at the next step's
  // forward (measured on the GPU suite's CNN training rows with and
  // without Adam and SGD with momentum; on its transformer rows up to
  // 1.89x default's reserved, where work outside the compiled graphs and
  // outputs held into the next step cannot share the pool: docs/gpu.md
  // "Runs R3, T1, U7, W6 and V13 to V15"). Plans of other graphs are as
  // without it.
  bool private_pool = false;

  // Returns the alignment buffer `index` must have: the larger of the
  // problem's and its own, in bytes.
  Bytes AlignmentOf(size_t index) const {
    return buffers[index].alignment > alignment ? buffers[index].alignment
                                                : alignment;
  }

  // Whether outputs `a` and `b` are released by the caller at one point,
  // so that one pool may hold both in pool mode intermediates: all
  // outputs with outputs_released_together, else those of one release
  // group (Buffer::release_group).
  bool ReleasedTogether(const Buffer& a, const Buffer& b) const {
    return outputs_released_together ||
           (a.release_group >= 0 && a.release_group == b.release_group);
  }
  // Whether some outputs may share a pool (ReleasedTogether): with
  // outputs_released_together, or an output of a release group.
  bool OutputsMayShare() const;
};

// One allocation the caller makes for a device.
struct Pool {
  Pool() = default;
  Pool(std::string name, std::string device, Bytes size,
       std::string symbolic_size = std::string())
      : name(std::move(name)),
        device(std::move(device)),
        size(size),
        symbolic_size(std::move(symbolic_size)) {}

  std::string name;    // "pool0", "pool1", ... in creation order
  std::string device;  // the device of every buffer in the pool
  Bytes size = 0;      // bytes the caller allocates
  // Under dynamic shapes (core/symbolic/symbolic_plan.h): the bytes as a
  // sympy expression over the buffers' size symbols, valid for every value
  // of them, equal to `size` at the size hints; "" otherwise.
  std::string symbolic_size;

  friend bool operator==(const Pool& a, const Pool& b) {
    return a.name == b.name && a.device == b.device && a.size == b.size &&
           a.symbolic_size == b.symbolic_size;
  }
};

// Prints "name@device+size" (and "+(symbolic size)" when there is one).
std::ostream& operator<<(std::ostream& os, const Pool& pool);

// Where one buffer lives.
struct Assignment {
  int32_t pool = -1;  // index into Plan::pools
  Bytes offset = 0;   // bytes from the start of the pool

  friend bool operator==(const Assignment& a, const Assignment& b) {
    return a.pool == b.pool && a.offset == b.offset;
  }
};

// Prints "pool#index@offset".
std::ostream& operator<<(std::ostream& os, const Assignment& assignment);

// A segment reservation: `size` bytes the caller allocates and frees on
// `device` at the graph's entry, before anything the graph allocates, so
// that the CUDA caching allocator takes one segment of that size (or
// finds it cached) and serves the graph's pools and extern outputs by
// splitting it, instead of segments of their own sizes that later, larger
// pools cannot reuse (core/caching_allocator.h). It costs no allocated
// bytes above the graph's peak (size is at most the predicted peak) and
// one allocation:
//
//   reserved ^  without: pool a's segment, then pool b's (a + b)
//            |  with:    [ a | free ] freed, then [ b      ] (one segment)
//            +---------------------------------------> position
struct SegmentReservation {
  std::string device;
  Bytes size = 0;  // bytes, a positive multiple of 2 MiB

  friend bool operator==(const SegmentReservation& a,
                         const SegmentReservation& b) {
    return a.device == b.device && a.size == b.size;
  }
};

struct ReferenceDecisions;  // core/reference_decisions.h
struct PlacementSeed;       // core/placement/placement_planners.h

// One run of a planner inside a plan, for traces: which strategy placed
// which device's buffers, and when (wall clock, absl::Now()).
struct PlannerRun {
  std::string strategy;  // "inductor", "best_fit", "optimal", "reuse", "nnc"
  // The device whose buffers it placed; several joined by ',' when one run
  // places them all (Inductor's algorithm walks every device's pools in
  // one pass over the buffers).
  std::string device;
  absl::Time start;
  absl::Time end;
};

// A plan: pools, and one assignment per buffer, parallel to
// Problem::buffers.
struct Plan {
  std::vector<Pool> pools;
  std::vector<Assignment> assignments;
  // Under dynamic shapes (core/symbolic/symbolic_plan.h): each assignment's
  // offset as a sympy expression, parallel to `assignments`; empty
  // otherwise.
  std::vector<std::string> symbolic_offsets;
  // At most one per device, only where Problem::reserve_segments.
  std::vector<SegmentReservation> reservations;
  // A training backward in a private pool (Problem::private_pool) whose
  // forward reserves a segment (the forward's plan's reservations): per
  // device, at most one, the reservation its forward should make instead,
  // sized for the whole step (core/entry_state.h StepReservation). The
  // caller's forward runs it from the next call on.
  std::vector<SegmentReservation> forward_reservations;
  // How the plan was found (not compared by ==): the strategy that made it,
  // e.g. "inductor" or "best_fit(size)", and whether it is proven minimal.
  std::string planner;
  bool proven_optimal = false;
  // A search proved that no plan of the problem fits Problem::capacity
  // (not compared by ==).
  bool infeasibility_proven = false;
  // The single-pool placements the plan was read from (strategies best_fit
  // and optimal), from which a search may start (PlanContext::incumbent);
  // null otherwise (not compared by ==).
  std::shared_ptr<const PlacementSeed> placements;
  // Strategies "reuse" and "nnc" (core/reference_decisions.h): the
  // decisions of the compiler pass they restate (not compared by ==); null
  // otherwise.
  std::shared_ptr<const ReferenceDecisions> decisions;
  // Every planner run that made or competed for this plan, in the order
  // they ran (not compared by ==): auto's candidates' runs included.
  std::vector<PlannerRun> runs;

  friend bool operator==(const Plan& a, const Plan& b) {
    return a.pools == b.pools && a.assignments == b.assignments &&
           a.symbolic_offsets == b.symbolic_offsets &&
           a.reservations == b.reservations &&
           a.forward_reservations == b.forward_reservations;
  }
};

// Prints the pools and the assignments, one per line.
std::ostream& operator<<(std::ostream& os, const Plan& plan);

}  // namespace memplan

#endif  // MEMPLAN_CORE_TYPES_H_
