// The caching allocator's state at a training backward graph's entry: what
// its forward graph left. AOTAutograd compiles a training step's forward
// and backward graphs from one joint graph; the forward returns the user's
// outputs, then the activations it saves, which the backward takes as
// inputs and frees one by one. In a step begun with
// torch.cuda.empty_cache(), the allocator at the backward's entry holds the
// forward's outputs in blocks of the sizes it gave them (a request may take
// a larger cached block whole) and the forward's freed intermediates as
// cached blocks between them; what the backward's requests get, and what
// its frees return, depends on that layout:
//
//   after the forward   [ saved a | free 3 MiB | saved b | user out ]
//   backward frees a:   [ free: a + 3 MiB      | saved b | user out ]
//   its next 4 MiB request takes that block whole where the rest is at
//   most 1 MiB (core/caching_allocator.h): allocated counts all of it
//
// The model replays the forward's blocks from an empty cache (with its
// plan's pools for the predicted peak, default torch.compile's storages
// for the baseline), frees what the forward's return lets go (every block
// that holds no output), and starts the backward's replay from there: a
// backward input sourced to a forward output frees, at its FREE_INPUT,
// the block holding that output once no other reference remains (the
// other backward inputs in the block, and never while the block holds an
// output no backward input is sourced to: a user output, or with pool mode
// combined the forward's one pool). The forward itself starts, in a step
// of a training loop after torch.cuda.empty_cache(), from the segments
// that held the previous step's gradients (NextStepStart), in the loop's
// steady state (SteadyTrainingStep).
#ifndef MEMPLAN_CORE_ENTRY_STATE_H_
#define MEMPLAN_CORE_ENTRY_STATE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "core/caching_allocator.h"
#include "core/graph_memory.h"
#include "core/reference_decisions.h"
#include "core/types.h"

namespace memplan {

struct PoolLines;       // core/inductor/wrapper_lines.h
struct WrapperProgram;  // core/inductor/wrapper_lines.h

// The allocator state one replay of a forward graph leaves.
struct ForwardEnd {
  // Per device (the forward timeline's order): its name and the model's
  // state after the forward returned.
  std::vector<
      std::pair<std::string, std::shared_ptr<const CachingAllocatorModel>>>
      models;
  // Per output name that holds a block at the return: (index in `models`,
  // the model's handle of the block).
  absl::flat_hash_map<std::string, std::pair<size_t, int32_t>> block_of;
};

// What a forward graph leaves with its plan's pools and without pools.
struct ForwardState {
  ForwardEnd predicted;  // with the plan's pools (PlanMemory)
  ForwardEnd baseline;   // default torch.compile's storages
};

// Returns the state `forward` (a problem with its timeline, core/
// inductor/wrapper_memory.h; `plan` a valid plan of it) leaves on each
// side: each device's blocks replayed from an empty cache (or the
// timeline's cached blocks), then every block still in use that holds no
// name of forward.output_names freed (the graph's return drops it), the
// output names mapped to the blocks holding them (a pool holding an
// output group: every name of the group). O(k log k) for k blocks.
ForwardState ForwardEndState(const Problem& forward, const Plan& plan,
                             const GraphTimeline& timeline,
                             const std::vector<std::string>& output_names);

// One backward input that is a forward output (v1::InputSource).
struct InputSource {
  std::string input;           // the backward's input name
  std::string forward_output;  // one of the forward's output names
};

// The entry state of a backward graph on one side: the forward's models
// and, per block of them the backward's inputs refer to, the references
// that hold it.
struct EntrySide {
  std::vector<
      std::pair<std::string, std::shared_ptr<const CachingAllocatorModel>>>
      models;
  // Per sourced input: (index in `models`, handle) of the block holding
  // its forward output.
  absl::flat_hash_map<std::string, std::pair<size_t, int32_t>> input_block;
  // Per (index in `models`, handle): the sourced inputs referring to it,
  // plus kHeld for each output in it no input is sourced to.
  absl::flat_hash_map<std::pair<size_t, int32_t>, int64_t> references;
  static constexpr int64_t kHeld = int64_t{1} << 40;
};

// A backward graph's entry state, on both sides.
struct EntryState {
  EntrySide predicted;
  EntrySide baseline;
};

// Returns the entry state of a backward graph whose inputs `sources`
// names, given what its forward left (`forward`) and the forward's output
// names. Sources of outputs that hold no block (the forward's own inputs
// returned) are left out: their frees return nothing.
EntryState BackwardEntryState(const ForwardState& forward,
                              const std::vector<std::string>& output_names,
                              const std::vector<InputSource>& sources);

// The allocator state the next training step's forward starts from, after
// this step's backward `backward` (one device's blocks, from its start):
// every block but the backward's outputs' (the gradients) freed, then
// torch.cuda.empty_cache() (segments with no block in use released),
// then the gradients set to None: the segments that held them, free.
std::shared_ptr<const CachingAllocatorModel> NextStepStart(
    const DeviceMemory& backward, const std::vector<std::string>& outputs);

// The allocator state after a graph whose blocks are `memory` (one
// device's, from its start), in the next training step: every block but
// those `kept` names (indices in memory.blocks: the gradients) freed, then
// torch.cuda.empty_cache(), then the kept ones freed (the gradients set to
// None). NextStepStart with the kept blocks given by index.
std::shared_ptr<const CachingAllocatorModel> StepStartAfter(
    const DeviceMemory& memory, const std::vector<int32_t>& kept);

// The steady state of a training loop around a backward graph `backward`
// (its timeline's program and lines) whose forward is `forward`, planned
// as `forward_plan`, with `forward_timeline` (its timeline from its own
// start: the cached blocks its request names): each step of the loop
// starts from the segments the previous step's backward leaves
// (NextStepStart, default torch.compile's backward: the baseline side),
// so the step's start is a fixed point of
//
//   start -> forward (its plan's pools; default's storages) -> backward
//         -> NextStepStart -> start
//
// replayed from the forward's own start until a start's cached segments
// (CachingAllocatorModel::FreeBlockSizes) repeat an earlier start's, at
// most kMaxSteps times. The forward's cached blocks (its request's) are
// named once: a replayed start holds them already (EmptyCache keeps
// them). On the GPU suite's 15 backward graphs one step is a fixed point
// on 12; gpt2's reaches one after three, t5's last backward alternates
// between two starts and llama's moves for all 8 (docs/gpu.md, "Runs T1,
// T2, I1 and R"). O(kMaxSteps) timelines of the backward and replays of
// the forward. `reuse` (optional): the backward's reuse-pass decisions
// (ReuseDecisionsOf), so that its timelines do not plan them again.
struct SteadyStep {
  static constexpr int kMaxSteps = 8;
  // The forward's timeline started (DeviceMemory::start, every device of
  // the unplanned and baseline sides) from the steady state's start, its
  // cached blocks in that start.
  GraphTimeline forward_timeline;
  EntryState entry;  // the backward's entry after that forward
  // With converged: the backward's timeline from `entry` (the last step
  // replayed started there), so a caller need not build it again.
  std::optional<GraphTimeline> backward_timeline;
  int steps = 0;           // the steps replayed (1 to kMaxSteps)
  bool converged = false;  // whether a start repeated within kMaxSteps
  int period = 0;  // with converged: 1 a fixed point, k a cycle of k steps
};
SteadyStep SteadyTrainingStep(
    const Problem& forward, const Plan& forward_plan,
    const GraphTimeline& forward_timeline,
    const std::vector<std::string>& forward_outputs,
    const std::vector<InputSource>& sources, const Problem& backward,
    const WrapperProgram* program, const PoolLines* lines,
    const std::vector<std::string>& backward_outputs,
    const std::vector<ReuseDecision>* reuse = nullptr);

// A training step around a backward graph whose request carries its
// forward (v1::ForwardGraph): what a planner needs to replay the step that
// follows the backward with a candidate plan of it. A backward's pools
// decide the segments the next step's forward finds cached (its gradients'
// segments, freed when the gradients are set to None), and so the
// reserved bytes of the whole step, not only the backward's own:
//
//   backward's plan   gradients [g0 g1 | g2 ]   two segments at the end
//   next forward      fits its first allocations in them, or takes new
//                     segments (reserved grows) where they do not fit
//   backward again    from what that forward left
struct TrainingStep {
  Problem forward;    // the forward graph's problem
  Plan forward_plan;  // its plan, as the caller ran it
  // The forward's timeline started (DeviceMemory::start) from the segments
  // default torch.compile's backward leaves in the loop's steady state
  // (SteadyTrainingStep): the measured step's start.
  GraphTimeline forward_timeline;
  std::vector<std::string> forward_outputs;
  std::vector<InputSource> sources;
  std::vector<std::string> backward_outputs;  // the gradients' names
  // The decisions of Inductor's reuse pass on the backward's wrapper lines
  // (core/inductor/wrapper_memory.h ReuseDecisionsOf), which do not depend
  // on the entry: set, the backward's timelines from each replayed entry
  // (NextStepReserved, PrivatePoolStep) take them instead of planning the
  // reuse pass again; unset, they do.
  std::optional<std::vector<ReuseDecision>> backward_reuse;
};

// The reserved bytes of one training step on one device: the segments
// cached at its start (the previous step's gradients', which the plan of
// the backward decides: one block per gradient or pools of them), then
// those the step takes. torch.cuda.max_memory_reserved() in a training
// loop counts all of them: a plan whose gradients leave fewer bytes cached
// costs the step no more for taking more segments in its forward.
struct StepReserved {
  Bytes start = 0;     // the free segments cached at the step's start
  Bytes forward = 0;   // the segments the forward takes
  Bytes backward = 0;  // those the backward takes after it
  Bytes total() const { return start + forward + backward; }
};

// The step after a backward planned as `memory` (one device's blocks of
// `backward`'s timeline from the entry the planner was given: its
// unplanned blocks, then the plan's pools; `kept`: the indices of the
// blocks holding gradients at its return), on that device: the next
// step's start (StepStartAfter), the forward replayed from it with its
// plan, then the backward with the same pools from the state that forward
// leaves (its timeline rebuilt from that entry, core/inductor/
// wrapper_memory.h WholeGraphTimeline of `program` and `lines`, which must
// be the backward's). O(k log k) replays plus one timeline of the lines.
StepReserved NextStepReserved(const TrainingStep& step, const Problem& backward,
                              const WrapperProgram* program,
                              const PoolLines* lines,
                              const DeviceMemory& memory,
                              const std::vector<int32_t>& kept);

// A training loop's steps in a private pool (Problem::private_pool: the
// step's graphs in a torch.cuda.MemPool of their own, which nothing else
// allocates from) on one device: the forward replayed with its plan, its
// segment reservation on that device `forward_reservation` bytes (0: none)
// instead of the plan's, then the backward planned as `memory` (as
// NextStepReserved's: the backward's unplanned blocks, then the plan's
// pools) from the state that forward leaves. The first step starts from an
// empty pool; each later one from the segments the step before left, all
// free (CachingAllocatorModel::PoolNextStep: the gradients are set to None
// and empty_cache() releases none of a live pool's segments), until a step
// takes no segment, whose start every later step repeats:
//
//   step 1  [ reservation 1940            ] [38]            from empty
//   step 2  the forward's 9 MiB blocks best-fit into the free 38 MiB
//           segment, so the backward's pools find other holes: [76]
//   step 3  takes nothing: the steady state, 1940 + 38 + 76 MiB
//
// (vit_b_16's backward on an H100, docs/gpu.md "Steady state"). At most
// PrivateStep::kMaxSteps steps, each O(k log k) replays plus one timeline
// of the lines.
struct PrivateStep {
  static constexpr int kMaxSteps = 8;
  Bytes reserved = 0;        // the pool's segments after the last step, bytes
  Bytes peak_allocated = 0;  // the most bytes in use above a step's start
  int steps = 0;             // steps replayed, at most kMaxSteps
};
PrivateStep PrivatePoolStep(const TrainingStep& step, const Problem& backward,
                            const WrapperProgram* program,
                            const PoolLines* lines, const DeviceMemory& memory,
                            Bytes forward_reservation);

// The segment reservation, in bytes (a multiple of 2 MiB), that a training
// forward running in a private pool should make at its entry so that its
// steps (PrivatePoolStep's steady state, the backward planned as `memory`)
// take the least segments: the forward's own reservation (step.forward_plan's
// on memory.device, its predicted peak rounded down) holds the forward, and the
// backward's requests beyond what the forward's frees leave in it take segments
// of their own (vit_b_16's backward on an H100: a 38 MiB segment beside a 1932
// MiB reservation, docs/gpu.md "Step reservations"). Candidates: the forward's
// reservation enlarged by 1/4 to 4/4 of the bytes of those segments, and the
// step's peak, each rounded down to 2 MiB and at most the step's peak allocated
// (so the reservation, allocated and freed at the forward's entry, never raises
// the step's peak). Returns the least reserving candidate (the smallest of
// those) where it reserves at least 2 MiB less than the forward's own
// reservation does, with the steady state's reserved bytes; reservation 0 where
// none does (`reserved` then the step's with the forward's own), or where the
// forward has no reservation on the device (`reserved` and `peak_allocated`
// 0). At most 6 PrivatePoolStep.
struct StepReservationChoice {
  Bytes reservation = 0;  // bytes; 0: the forward's own reservation stays
  Bytes reserved = 0;     // the pool's steady segments (PrivatePoolStep)
  // The most bytes in use above a step's start with that reservation
  // (PrivatePoolStep::peak_allocated): the step's peak allocated.
  Bytes peak_allocated = 0;
};
StepReservationChoice StepReservation(const TrainingStep& step,
                                      const Problem& backward,
                                      const WrapperProgram* program,
                                      const PoolLines* lines,
                                      const DeviceMemory& memory);

// Releases of a backward's freed inputs against one side's entry state,
// in the order the backward frees them.
class EntryReleases {
 public:
  // `side` may be null (no forward: every input its own block); not owned.
  explicit EntryReleases(const EntrySide* side);

  // Whether `input` is sourced to a forward output's block.
  bool Sourced(const std::string& input) const;
  // The backward lets go of the sourced `input`: when that was the last
  // reference to its block, (the device's name, the handle, the block's
  // bytes); else a handle of -1 (nothing returns).
  struct Release {
    std::string device;
    int32_t handle = -1;
    Bytes size = 0;
  };
  Release Free(const std::string& input);

  // Per device name: the model at the entry (null where the forward has
  // none for it).
  std::shared_ptr<const CachingAllocatorModel> Start(
      const std::string& device) const;

 private:
  const EntrySide* side_;
  absl::flat_hash_map<std::pair<size_t, int32_t>, int64_t> references_;
  absl::flat_hash_set<std::string> freed_;  // each input frees once
};

}  // namespace memplan

#endif  // MEMPLAN_CORE_ENTRY_STATE_H_
