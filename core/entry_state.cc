#include "core/entry_state.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "core/inductor/wrapper_memory.h"

namespace memplan {
namespace {

// Replays `memory` (one device's blocks), frees the blocks in use that
// `keeps` (per block index: it holds an output) does not keep, and records
// the model in `end` with each output name's block.
void ReplayToReturn(
    const DeviceMemory& memory,
    const absl::flat_hash_map<std::string, int32_t>& output_block,
    ForwardEnd& end) {
  CachingAllocatorModel model;
  const AllocatorReplay replay = ReplayCachingAllocator(
      memory.blocks, memory.cached, memory.start.get(), &model);
  std::vector<bool> keeps(memory.blocks.size(), false);
  for (const auto& [name, index] : output_block) {
    if (replay.handles[index] >= 0) keeps[index] = true;
  }
  const size_t device = end.models.size();
  for (size_t i = 0; i < memory.blocks.size(); ++i) {
    const MemoryBlock& block = memory.blocks[i];
    const int32_t handle = replay.handles[i];
    if (handle < 0 || block.freed_input || block.end != kNeverFreed) continue;
    if (!keeps[i] && model.in_use(handle)) model.Free(handle);
  }
  for (const auto& [name, index] : output_block) {
    const int32_t handle = replay.handles[index];
    if (handle >= 0 && model.in_use(handle)) {
      end.block_of[name] = {device, handle};
    }
  }
  end.models.emplace_back(
      memory.device, std::make_shared<CachingAllocatorModel>(std::move(model)));
}

// Per output name held at the return, the index of its block in `memory`
// (only blocks never freed while the graph runs).
absl::flat_hash_map<std::string, int32_t> HeldOutputs(
    const DeviceMemory& memory,
    const absl::flat_hash_set<std::string>& outputs) {
  absl::flat_hash_map<std::string, int32_t> held;
  for (const auto& [name, index] : memory.held_at_end) {
    if (outputs.contains(name) && memory.blocks[index].end == kNeverFreed &&
        !memory.blocks[index].freed_input) {
      held[name] = index;
    }
  }
  return held;
}

// The state the forward leaves with its plan's pools: the unplanned
// blocks come first in each device's blocks (PlanMemory), so
// held_at_end's indices stand; each pool holding an output group holds
// every name of the group.
ForwardEnd PlannedForwardEnd(const Problem& forward, const Plan& plan,
                             const GraphTimeline& timeline,
                             const absl::flat_hash_set<std::string>& outputs) {
  ForwardEnd end;
  std::vector<int32_t> pool_blocks;
  const std::vector<DeviceMemory> predicted =
      PlanMemory(forward, plan, timeline, &pool_blocks);
  for (const DeviceMemory& memory : predicted) {
    absl::flat_hash_map<std::string, int32_t> held;
    for (const DeviceMemory& unplanned : timeline.unplanned) {
      if (unplanned.device == memory.device) {
        held = HeldOutputs(unplanned, outputs);
      }
    }
    for (size_t g = 0; g < forward.buffers.size(); ++g) {
      const int32_t pool = plan.assignments[g].pool;
      const int32_t index = pool_blocks[pool];
      if (index < 0 || plan.pools[pool].device != memory.device ||
          memory.blocks[index].end != kNeverFreed) {
        continue;
      }
      for (const std::string& name : forward.buffers[g].names) {
        if (outputs.contains(name)) held[name] = index;
      }
    }
    ReplayToReturn(memory, held, end);
  }
  return end;
}

// The state default torch.compile's storages leave.
ForwardEnd BaselineForwardEnd(const GraphTimeline& timeline,
                              const absl::flat_hash_set<std::string>& outputs) {
  ForwardEnd end;
  for (const DeviceMemory& memory : timeline.baseline) {
    ReplayToReturn(memory, HeldOutputs(memory, outputs), end);
  }
  return end;
}

// The segments `end`'s model of `device` took (0: none for it).
Bytes ReservedOn(const ForwardEnd& end, const std::string& device) {
  for (const auto& [name, model] : end.models) {
    if (name == device) return model->stats().reserved;
  }
  return 0;
}

}  // namespace

ForwardState ForwardEndState(const Problem& forward, const Plan& plan,
                             const GraphTimeline& timeline,
                             const std::vector<std::string>& output_names) {
  const absl::flat_hash_set<std::string> outputs(output_names.begin(),
                                                 output_names.end());
  return ForwardState{PlannedForwardEnd(forward, plan, timeline, outputs),
                      BaselineForwardEnd(timeline, outputs)};
}

namespace {

EntrySide SideOf(const ForwardEnd& end,
                 const std::vector<std::string>& output_names,
                 const std::vector<InputSource>& sources) {
  EntrySide side;
  side.models = end.models;
  absl::flat_hash_set<std::string> sourced;
  for (const InputSource& source : sources) {
    auto it = end.block_of.find(source.forward_output);
    if (it == end.block_of.end()) continue;
    side.input_block[source.input] = it->second;
    ++side.references[it->second];
    sourced.insert(source.forward_output);
  }
  absl::flat_hash_set<std::string> seen;
  for (const std::string& name : output_names) {
    if (sourced.contains(name) || !seen.insert(name).second) continue;
    auto it = end.block_of.find(name);
    if (it != end.block_of.end())
      side.references[it->second] += EntrySide::kHeld;
  }
  return side;
}

}  // namespace

EntryState BackwardEntryState(const ForwardState& forward,
                              const std::vector<std::string>& output_names,
                              const std::vector<InputSource>& sources) {
  return EntryState{SideOf(forward.predicted, output_names, sources),
                    SideOf(forward.baseline, output_names, sources)};
}

std::shared_ptr<const CachingAllocatorModel> StepStartAfter(
    const DeviceMemory& memory, const std::vector<int32_t>& kept) {
  CachingAllocatorModel model;
  const AllocatorReplay replay = ReplayCachingAllocator(
      memory.blocks, memory.cached, memory.start.get(), &model);
  absl::flat_hash_set<int32_t> held;
  for (const int32_t index : kept) {
    const int32_t handle = replay.handles[index];
    if (handle >= 0 && model.in_use(handle)) held.insert(handle);
  }
  for (int32_t handle : model.InUse()) {
    if (!held.contains(handle)) model.Free(handle);
  }
  model.EmptyCache();
  for (int32_t handle : model.InUse()) model.Free(handle);
  model.ResetStats();
  return std::make_shared<CachingAllocatorModel>(std::move(model));
}

std::shared_ptr<const CachingAllocatorModel> NextStepStart(
    const DeviceMemory& backward, const std::vector<std::string>& outputs) {
  std::vector<int32_t> kept;
  for (const std::string& name : outputs) {
    auto it = backward.held_at_end.find(name);
    if (it != backward.held_at_end.end()) kept.push_back(it->second);
  }
  return StepStartAfter(backward, kept);
}

namespace {

// Starts `timeline`'s forward on `device` (both sides) from `start` (null:
// an empty cache), whose cached blocks stand for the request's own.
void StartFrom(GraphTimeline& timeline, const std::string& device,
               const std::shared_ptr<const CachingAllocatorModel>& start) {
  for (std::vector<DeviceMemory>* side :
       {&timeline.unplanned, &timeline.baseline}) {
    for (DeviceMemory& memory : *side) {
      if (memory.device != device) continue;
      memory.start = start;
      memory.cached.clear();
    }
  }
}

// The backward's timeline from `entry`: of its lines with the reuse-pass
// decisions `reuse` where given, else WholeGraphTimeline's.
GraphTimeline BackwardTimeline(const Problem& backward,
                               const WrapperProgram* program,
                               const PoolLines* lines,
                               const std::vector<ReuseDecision>* reuse,
                               const EntryState* entry) {
  if (reuse != nullptr && program != nullptr && lines != nullptr) {
    return TimelineOfLines(backward, *program, *lines, *reuse, entry);
  }
  return WholeGraphTimeline(backward, program, lines, entry);
}

}  // namespace

SteadyStep SteadyTrainingStep(const Problem& forward, const Plan& forward_plan,
                              const GraphTimeline& forward_timeline,
                              const std::vector<std::string>& forward_outputs,
                              const std::vector<InputSource>& sources,
                              const Problem& backward,
                              const WrapperProgram* program,
                              const PoolLines* lines,
                              const std::vector<std::string>& backward_outputs,
                              const std::vector<ReuseDecision>* reuse) {
  SteadyStep steady;
  steady.forward_timeline = forward_timeline;
  steady.entry = BackwardEntryState(
      ForwardEndState(forward, forward_plan, forward_timeline, forward_outputs),
      forward_outputs, sources);
  // Per step replayed: per device of the backward's baseline, the cached
  // segments the step leaves the next one.
  using Segments = std::pair<std::vector<Bytes>, std::vector<Bytes>>;
  std::vector<std::vector<Segments>> seen;
  while (steady.steps < SteadyStep::kMaxSteps) {
    ++steady.steps;
    GraphTimeline step =
        BackwardTimeline(backward, program, lines, reuse, &steady.entry);
    GraphTimeline next = forward_timeline;
    std::vector<Segments> starts;
    for (const DeviceMemory& memory : step.baseline) {
      const std::shared_ptr<const CachingAllocatorModel> start =
          NextStepStart(memory, backward_outputs);
      starts.push_back(start->FreeBlockSizes());
      // The start holds the cached blocks already (EmptyCache keeps
      // them): the forward's request named them once.
      StartFrom(next, memory.device, start);
    }
    // A start seen before: the steps from here repeat.
    const auto repeated = std::find(seen.begin(), seen.end(), starts);
    if (repeated != seen.end()) {
      steady.converged = true;
      steady.period = static_cast<int>(seen.end() - repeated);
      steady.backward_timeline = std::move(step);
      break;
    }
    seen.push_back(std::move(starts));
    steady.forward_timeline = std::move(next);
    steady.entry = BackwardEntryState(
        ForwardEndState(forward, forward_plan, steady.forward_timeline,
                        forward_outputs),
        forward_outputs, sources);
  }
  return steady;
}

namespace {

// The caching allocator's statistics of the backward planned as `memory`
// (one device's blocks: its unplanned blocks, then the plan's pools) on
// that device, replayed from the state the forward left (`end`), above it.
CachingAllocatorStats BackwardAfter(
    const TrainingStep& step, const ForwardEnd& end, const Problem& backward,
    const WrapperProgram* program, const PoolLines* lines,
    const DeviceMemory& memory,
    std::optional<CachingAllocatorModel>* after = nullptr) {
  EntryState entry;
  entry.predicted = SideOf(end, step.forward_outputs, step.sources);
  entry.baseline = entry.predicted;
  const GraphTimeline timeline = BackwardTimeline(
      backward, program, lines,
      step.backward_reuse.has_value() ? &*step.backward_reuse : nullptr,
      &entry);
  for (const DeviceMemory& unplanned : timeline.unplanned) {
    if (unplanned.device != memory.device) continue;
    DeviceMemory replay = unplanned;
    // The plan's blocks follow the unplanned ones in `memory`; the lines
    // give the same unplanned blocks from any entry (only the handles of
    // the entry's blocks differ).
    const size_t first =
        std::min(unplanned.blocks.size(), memory.blocks.size());
    replay.blocks.insert(replay.blocks.end(), memory.blocks.begin() + first,
                         memory.blocks.end());
    CachingAllocatorModel* end = nullptr;
    if (after != nullptr) end = &after->emplace();
    return ReplayCachingAllocator(replay.blocks, replay.cached,
                                  replay.start.get(), end)
        .stats;
  }
  return CachingAllocatorStats{};
}

}  // namespace

StepReserved NextStepReserved(const TrainingStep& step, const Problem& backward,
                              const WrapperProgram* program,
                              const PoolLines* lines,
                              const DeviceMemory& memory,
                              const std::vector<int32_t>& kept) {
  StepReserved reserved;
  GraphTimeline next = step.forward_timeline;
  const std::shared_ptr<const CachingAllocatorModel> start =
      StepStartAfter(memory, kept);
  reserved.start = start->CachedBytes();
  for (DeviceMemory& device : next.unplanned) {
    if (device.device == memory.device) device.start = start;
  }
  const absl::flat_hash_set<std::string> outputs(step.forward_outputs.begin(),
                                                 step.forward_outputs.end());
  const ForwardEnd end =
      PlannedForwardEnd(step.forward, step.forward_plan, next, outputs);
  reserved.forward = ReservedOn(end, memory.device);
  reserved.backward =
      BackwardAfter(step, end, backward, program, lines, memory).reserved;
  return reserved;
}

PrivateStep PrivatePoolStep(const TrainingStep& step, const Problem& backward,
                            const WrapperProgram* program,
                            const PoolLines* lines, const DeviceMemory& memory,
                            Bytes forward_reservation) {
  Plan plan = step.forward_plan;
  plan.reservations.erase(
      std::remove_if(plan.reservations.begin(), plan.reservations.end(),
                     [&](const SegmentReservation& reservation) {
                       return reservation.device == memory.device;
                     }),
      plan.reservations.end());
  if (forward_reservation > 0) {
    plan.reservations.push_back(
        SegmentReservation{memory.device, forward_reservation});
  }
  const absl::flat_hash_set<std::string> outputs(step.forward_outputs.begin(),
                                                 step.forward_outputs.end());
  PrivateStep result;
  // The first step from an empty pool: nothing cached on the device. Each
  // later one from the segments the step before left (PoolNextStep), until
  // a step takes no segment: its start, and every start after it, is then
  // the same.
  std::shared_ptr<const CachingAllocatorModel> start;
  while (result.steps < PrivateStep::kMaxSteps) {
    ++result.steps;
    GraphTimeline forward = step.forward_timeline;
    StartFrom(forward, memory.device, start);
    const ForwardEnd end =
        PlannedForwardEnd(step.forward, plan, forward, outputs);
    Bytes taken = 0;
    Bytes held = 0;  // in use at the forward's return, above its start
    Bytes peak = 0;
    const CachingAllocatorModel* forward_end = nullptr;
    for (const auto& [name, model] : end.models) {
      if (name != memory.device) continue;
      taken = model->stats().reserved;
      peak = model->stats().peak_allocated;
      held = model->stats().allocated;
      forward_end = model.get();
    }
    // The pool after the step: the backward's end where it replays on the
    // device (from the forward's end), else the forward's.
    std::optional<CachingAllocatorModel> backward_end;
    const CachingAllocatorStats stats = BackwardAfter(
        step, end, backward, program, lines, memory, &backward_end);
    const CachingAllocatorModel* after =
        backward_end.has_value() ? &*backward_end : forward_end;
    taken += stats.reserved;
    peak = std::max(peak, held + stats.peak_allocated);
    result.peak_allocated = std::max(result.peak_allocated, peak);
    if (after == nullptr) break;  // nothing on the device
    result.reserved = after->PoolSegmentBytes();
    if (taken == 0 && result.steps > 1) break;
    start =
        std::make_shared<const CachingAllocatorModel>(after->PoolNextStep());
  }
  return result;
}

StepReservationChoice StepReservation(const TrainingStep& step,
                                      const Problem& backward,
                                      const WrapperProgram* program,
                                      const PoolLines* lines,
                                      const DeviceMemory& memory) {
  constexpr Bytes kRound = CachingAllocatorModel::kRoundLarge;
  StepReservationChoice choice;
  Bytes own = 0;
  for (const SegmentReservation& reservation : step.forward_plan.reservations) {
    if (reservation.device == memory.device) own = reservation.size;
  }
  if (own <= 0) return choice;
  const PrivateStep with_own =
      PrivatePoolStep(step, backward, program, lines, memory, own);
  choice.reserved = with_own.reserved;
  choice.peak_allocated = with_own.peak_allocated;
  const Bytes ceiling = with_own.peak_allocated / kRound * kRound;
  const Bytes beyond = with_own.reserved - own;  // the other segments' bytes
  if (ceiling <= own || beyond <= 0) return choice;
  std::vector<Bytes> sizes;
  for (int quarters = 1; quarters <= 4; ++quarters) {
    sizes.push_back(own + beyond * quarters / 4 / kRound * kRound);
  }
  sizes.push_back(ceiling);
  for (Bytes& size : sizes) size = std::min(size, ceiling);
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  Bytes to_beat = with_own.reserved - kRound;  // at least 2 MiB less
  for (const Bytes size : sizes) {
    if (size <= own) continue;
    const PrivateStep with =
        PrivatePoolStep(step, backward, program, lines, memory, size);
    if (with.peak_allocated > with_own.peak_allocated) continue;
    if (with.reserved <= to_beat) {  // the smallest of the least
      choice.reservation = size;
      choice.reserved = with.reserved;
      choice.peak_allocated = with.peak_allocated;
      to_beat = with.reserved - 1;
    }
  }
  return choice;
}

EntryReleases::EntryReleases(const EntrySide* side) : side_(side) {
  if (side_ != nullptr) references_ = side_->references;
}

bool EntryReleases::Sourced(const std::string& input) const {
  return side_ != nullptr && side_->input_block.contains(input);
}

EntryReleases::Release EntryReleases::Free(const std::string& input) {
  Release release;
  if (side_ == nullptr) return release;
  auto it = side_->input_block.find(input);
  if (it == side_->input_block.end() || !freed_.insert(input).second) {
    return release;
  }
  const auto key = it->second;
  int64_t& left = references_[key];
  if (left <= 0 || --left > 0) return release;
  const auto& [device, model] = side_->models[key.first];
  release.device = device;
  release.handle = key.second;
  release.size = model->size(key.second);
  return release;
}

std::shared_ptr<const CachingAllocatorModel> EntryReleases::Start(
    const std::string& device) const {
  if (side_ == nullptr) return nullptr;
  for (const auto& [name, model] : side_->models) {
    if (name == device) return model;
  }
  return nullptr;
}

}  // namespace memplan
