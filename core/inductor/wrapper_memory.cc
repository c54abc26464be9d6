#include "core/inductor/wrapper_memory.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/inductor/reuse_planner.h"
#include "core/planner.h"

namespace memplan {
namespace {

// The devices of a timeline: the groups' first, then the others lines
// name.
DeviceOrder DevicesOf(const Problem& problem, const WrapperProgram& program) {
  DeviceOrder devices;
  for (const Buffer& buffer : problem.buffers) devices.Add(buffer.device);
  for (const WrapperLine& line : program.lines) {
    if (line.kind == WrapperLineKind::kExternAllocate ||
        line.kind == WrapperLineKind::kFreeInput || line.reuses_input) {
      devices.Add(line.allocation.device);
    }
  }
  return devices;
}

// Storages and the names that hold them, as Python's references do: a
// storage is freed at the line where its last holder lets it go.
class Storages {
 public:
  // `releases`: the entry state's references to the forward's blocks
  // (TakeSourcedInput), `devices` their device indices; not owned.
  Storages(std::vector<DeviceMemory>& memory, EntryReleases& releases,
           const DeviceOrder& devices)
      : memory_(memory), releases_(releases), devices_(devices) {}

  // New storages of `sizes` bytes each on device `device` (an index), held
  // by `name`, allocated at `line`, storage k at step steps[k] of it
  // (MemoryBlock::step; empty: step 0).
  void Allocate(const std::string& name, size_t device,
                const std::vector<Bytes>& sizes, int64_t line,
                const std::vector<int32_t>& steps = {}) {
    std::vector<size_t>& held = held_[name];
    for (size_t k = 0; k < sizes.size(); ++k) {
      storages_.push_back(Held(device, sizes[k], line, /*input=*/false));
      if (k < steps.size()) storages_.back().step = steps[k];
      held.push_back(storages_.size() - 1);
    }
  }
  // A graph input's storage of `size` bytes, allocated before the graph
  // ran, now held by `name` (which took it over in place): freed, it
  // counts negative from then on. `start_block`: its block in the entry
  // state (MemoryBlock::start_block), or -1.
  void TakeInput(const std::string& name, size_t device, Bytes size,
                 int32_t start_block = -1) {
    storages_.push_back(Held(device, size, 0, /*input=*/true, start_block));
    held_[name].push_back(storages_.size() - 1);
  }
  // `name` takes over in place the graph input `input`, which `releases`
  // sources to a block of the forward's: `name` holds the input's
  // reference to that block, so the block returns where the last of its
  // references goes, this one (when `name` lets go) or another input's
  // FREE_INPUT. A pool of the forward holding several saved activations
  // stays while a buffer holds one of them in place:
  //
  //   forward pool  [ relu | cat ]
  //   backward      buf14 = relu; del relu   (reuse: buf14 holds the pool)
  //                 del cat                  (the pool stays: buf14)
  //                 del buf14                (the pool returns here)
  void TakeSourcedInput(const std::string& name, const std::string& input) {
    storages_.push_back(Held(0, 0, 0, /*input=*/true));
    storages_.back().entry_input = input;
    held_[name].push_back(storages_.size() - 1);
  }
  // `holder` holds the storage number `part` of `name`'s too.
  void Share(const std::string& name, size_t part, const std::string& holder) {
    auto it = held_.find(name);
    if (it == held_.end() || part >= it->second.size()) return;
    const size_t storage = it->second[part];
    ++storages_[storage].holders;
    held_[holder].push_back(storage);
  }
  // `to` takes everything `from` holds (`to = from; del from`).
  void Move(const std::string& from, const std::string& to) {
    auto it = held_.find(from);
    if (it == held_.end() || from == to) return;
    std::vector<size_t> storages = std::move(it->second);
    held_.erase(it);
    std::vector<size_t>& into = held_[to];
    into.insert(into.end(), storages.begin(), storages.end());
  }
  // `name` lets go of what it holds at `line`.
  void Release(const std::string& name, int64_t line) {
    auto it = held_.find(name);
    if (it == held_.end()) return;
    for (size_t storage : it->second) {
      Storage& s = storages_[storage];
      if (--s.holders == 0) Emit(s, line);
    }
    held_.erase(it);
  }
  bool Holds(const std::string& name) const { return held_.contains(name); }
  // Every storage still held: never freed while the graph runs; each
  // name still holding one noted in its device's held_at_end.
  void Finish() {
    for (Storage& s : storages_) {
      if (s.holders > 0 && !s.input) Emit(s, kNeverFreed);
    }
    for (const auto& [name, held] : held_) {
      if (held.empty()) continue;
      const Storage& s = storages_[held.front()];
      if (s.block >= 0) memory_[s.device].held_at_end[name] = s.block;
    }
  }

 private:
  struct Storage {
    size_t device = 0;
    Bytes size = 0;
    int64_t begin = 0;
    int holders = 0;
    bool input = false;  // a graph input's, allocated before the entry
    int32_t start_block = -1;
    int32_t block = -1;  // its index in its device's blocks, once emitted
    int32_t step = 0;    // MemoryBlock::step of its allocation
    // TakeSourcedInput's input: its block (device, size, start_block) is
    // known once its last reference goes.
    std::string entry_input;
  };
  // A storage of one holder.
  static Storage Held(size_t device, Bytes size, int64_t begin, bool input,
                      int32_t start_block = -1) {
    Storage s;
    s.device = device;
    s.size = size;
    s.begin = begin;
    s.holders = 1;
    s.input = input;
    s.start_block = start_block;
    return s;
  }
  void Emit(Storage& s, int64_t end) {
    s.holders = 0;
    if (!s.entry_input.empty()) {
      const EntryReleases::Release release = releases_.Free(s.entry_input);
      if (release.handle < 0 || !devices_.Has(release.device)) return;
      s.device = devices_[release.device];
      s.size = release.size;
      s.start_block = release.handle;
    }
    std::vector<MemoryBlock>& blocks = memory_[s.device].blocks;
    s.block = static_cast<int32_t>(blocks.size());
    blocks.push_back(s.input ? MemoryBlock{end, kNeverFreed, s.size,
                                           /*freed_input=*/true, s.start_block}
                             : MemoryBlock{s.begin, end, s.size,
                                           /*freed_input=*/false,
                                           /*start_block=*/-1, s.step});
  }
  std::vector<DeviceMemory>& memory_;
  EntryReleases& releases_;
  const DeviceOrder& devices_;
  std::vector<Storage> storages_;
  absl::flat_hash_map<std::string, std::vector<size_t>> held_;
};

// Applies a line outside the plan (extern allocation, multi-output binding,
// input free, an input taken over in place) to `storages`; true when it was
// one. An input `releases` sources to a forward output's block frees that
// block (when it is its last reference) instead of its own bytes.
bool ApplyUnplanned(const WrapperLine& line, int64_t i,
                    const DeviceOrder& devices, Storages& storages,
                    std::vector<DeviceMemory>& memory,
                    EntryReleases& releases) {
  switch (line.kind) {
    case WrapperLineKind::kExternAllocate: {
      const size_t device = devices[line.allocation.device];
      const std::vector<Bytes> outputs =
          line.output_bytes.empty() ? std::vector<Bytes>{line.allocation.size}
                                    : line.output_bytes;
      // The call's allocations one by one: allocation k at step k + 1 (the
      // outputs it does not name at step 0), scratch freed at the step of
      // the allocation it is freed before.
      std::vector<int32_t> steps(outputs.size(), 0);
      for (size_t k = 0; k < line.call.size(); ++k) {
        const CallAllocation& call = line.call[k];
        const int32_t step = static_cast<int32_t>(k) + 1;
        if (call.output >= 0) {
          steps[call.output] = step;
          continue;
        }
        MemoryBlock scratch{i, i + 1, call.scratch};
        scratch.step = step;
        scratch.free_step = static_cast<int32_t>(call.freed_before) + 1;
        memory[device].blocks.push_back(scratch);
      }
      storages.Allocate(line.name, device, outputs, i, steps);
      // The workspace: allocated and freed inside the call, beside the
      // outputs, so at this line only.
      if (line.workspace > 0) {
        memory[device].blocks.push_back(MemoryBlock{i, i + 1, line.workspace});
      }
      return true;
    }
    case WrapperLineKind::kReuse: {
      if (!line.reuses_input) return false;
      if (!releases.Sourced(line.name)) {
        storages.TakeInput(line.reused_as, devices[line.allocation.device],
                           line.allocation.size);
        return true;
      }
      storages.TakeSourcedInput(line.reused_as, line.name);
      return true;
    }
    case WrapperLineKind::kMultiOutput:
      storages.Share(line.name, static_cast<size_t>(line.output_index),
                     line.reused_as);
      return true;
    case WrapperLineKind::kFreeInput: {
      if (!releases.Sourced(line.name)) {
        memory[devices[line.allocation.device]].blocks.push_back(MemoryBlock{
            i, kNeverFreed, line.allocation.size, /*freed_input=*/true});
        return true;
      }
      const EntryReleases::Release release = releases.Free(line.name);
      if (release.handle >= 0 && devices.Has(release.device)) {
        memory[devices[release.device]].blocks.push_back(
            MemoryBlock{i, kNeverFreed, release.size, /*freed_input=*/true,
                        release.handle});
      }
      return true;
    }
    default:
      return false;
  }
}

// The errors of an EXTERN_ALLOCATE's call allocations (`label` names the
// line): an output index out of range or named twice, scratch bytes
// outside (0, kMaxBufferBytes], freed_before outside (its index, the
// number of allocations], or a workspace beside them.
absl::Status CheckCall(const WrapperLine& line, const std::string& label) {
  if (line.call.empty()) return absl::OkStatus();
  if (line.workspace != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        label, ": workspace_bytes and call_allocations are exclusive"));
  }
  const size_t outputs = std::max<size_t>(1, line.output_bytes.size());
  std::vector<bool> named(outputs, false);
  const int64_t count = static_cast<int64_t>(line.call.size());
  for (int64_t k = 0; k < count; ++k) {
    const CallAllocation& call = line.call[k];
    const std::string field =
        absl::StrCat(label, ": call_allocations[", k, "]");
    if (call.output >= 0) {
      if (static_cast<size_t>(call.output) >= outputs) {
        return absl::InvalidArgumentError(
            absl::StrCat(field, ".output_index must be in [0, ", outputs,
                         "), got ", call.output));
      }
      if (named[call.output]) {
        return absl::InvalidArgumentError(absl::StrCat(
            field, ".output_index ", call.output, " is named twice"));
      }
      named[call.output] = true;
      continue;
    }
    if (call.scratch <= 0 || call.scratch > kMaxBufferBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".scratch_bytes must be in (0, ", kMaxBufferBytes,
                       "], got ", call.scratch));
    }
    if (call.freed_before <= k || call.freed_before > count) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".freed_before must be in (", k, ", ", count,
                       "], got ", call.freed_before));
    }
  }
  return absl::OkStatus();
}

}  // namespace

GraphTimeline TimelineOfLines(const Problem& problem,
                              const WrapperProgram& program,
                              const PoolLines& lines,
                              const std::vector<ReuseDecision>& reuse,
                              const EntryState* entry) {
  const DeviceOrder devices = DevicesOf(problem, program);
  GraphTimeline timeline;
  timeline.unplanned = devices.Empty();
  timeline.baseline = devices.Empty();
  EntryReleases predicted_releases(entry ? &entry->predicted : nullptr);
  EntryReleases baseline_releases(entry ? &entry->baseline : nullptr);
  for (DeviceMemory& memory : timeline.unplanned) {
    memory.start = predicted_releases.Start(memory.device);
  }
  for (DeviceMemory& memory : timeline.baseline) {
    memory.start = baseline_releases.Start(memory.device);
  }
  const size_t num_groups = problem.buffers.size();
  const auto num_lines = static_cast<int64_t>(program.lines.size());

  // Spans: from the group's ALLOCATE to its last FREE.
  timeline.spans.assign(num_groups, GraphTimeline::Span{0, kNeverFreed});
  std::vector<int64_t> last_free(num_groups, -1);
  for (int64_t i = 0; i < num_lines; ++i) {
    const int32_t group = lines.group_of_line[i];
    if (group < 0) continue;
    if (lines.allocates[i]) {
      timeline.spans[group].begin = i;
    } else {
      last_free[group] = std::max(last_free[group], i);
    }
  }
  for (size_t g = 0; g < num_groups; ++g) {
    if (!problem.buffers[g].is_output && last_free[g] >= 0) {
      timeline.spans[g].end = last_free[g];
    }
  }
  // Held: from the last line of the ALLOCATE's run to the first line of
  // the last FREE's run (lines of one run share a timestep).
  {
    std::vector<int64_t> run_first(num_lines), run_last(num_lines);
    for (int64_t i = 0; i < num_lines; ++i) {
      const Timestep t = lines.timestep_of_line[i];
      run_first[i] = i > 0 && t != 0 && lines.timestep_of_line[i - 1] == t
                         ? run_first[i - 1]
                         : i;
    }
    for (int64_t i = num_lines - 1; i >= 0; --i) {
      const Timestep t = lines.timestep_of_line[i];
      run_last[i] =
          i + 1 < num_lines && t != 0 && lines.timestep_of_line[i + 1] == t
              ? run_last[i + 1]
              : i;
    }
    timeline.held = timeline.spans;
    for (size_t g = 0; g < num_groups; ++g) {
      GraphTimeline::Span& held = timeline.held[g];
      if (held.begin >= held.end || held.begin >= num_lines) continue;
      held.begin = run_last[held.begin];
      if (held.end != kNeverFreed && held.end < num_lines) {
        held.end = std::max(held.begin, run_first[held.end]);
      }
    }
  }

  const absl::flat_hash_set<std::string> removed(
      program.removed_buffers.begin(), program.removed_buffers.end());
  absl::flat_hash_set<std::string> grouped;
  for (const Buffer& buffer : problem.buffers) {
    for (const std::string& name : buffer.names) grouped.insert(name);
  }

  // With pools: what no pool holds.
  {
    Storages storages(timeline.unplanned, predicted_releases, devices);
    for (int64_t i = 0; i < num_lines; ++i) {
      const WrapperLine& line = program.lines[i];
      if (ApplyUnplanned(line, i, devices, storages, timeline.unplanned,
                         predicted_releases)) {
        continue;
      }
      if (removed.contains(line.name)) continue;
      if (line.kind == WrapperLineKind::kFreeIfNotReused &&
          !grouped.contains(line.name)) {
        storages.Release(line.name, i);
      } else if (line.kind == WrapperLineKind::kReuse &&
                 !grouped.contains(line.name)) {
        storages.Move(line.name, line.reused_as);
      }
    }
    storages.Finish();
  }

  // The baseline: every storage, handed on as the reuse pass decided.
  {
    absl::flat_hash_map<int64_t, const ReuseDecision*> taken_at;
    absl::flat_hash_set<int64_t> handed_on_at;
    for (const ReuseDecision& decision : reuse) {
      taken_at[decision.allocation_line] = &decision;
      handed_on_at.insert(decision.free_line);
    }
    // The trailing memory-planning lines the reuse pass pops.
    const absl::flat_hash_set<std::string> outputs(program.output_names.begin(),
                                                   program.output_names.end());
    int64_t last_other = -1;
    for (int64_t i = 0; i < num_lines; ++i) {
      if (!IsMemoryPlanningLine(program.lines[i])) last_other = i;
    }
    for (const ReuseDecision& decision : reuse) {
      if (decision.allocation_line < 0 || decision.free_line < 0 ||
          decision.allocation_line >= num_lines ||
          decision.free_line >= num_lines) {
        continue;
      }
      const int32_t to = lines.group_of_line[decision.allocation_line];
      const int32_t from = lines.group_of_line[decision.free_line];
      if (to < 0 || from < 0 || to == from) continue;
      if (timeline.storage_from.empty()) {
        timeline.storage_from.assign(num_groups, -1);
      }
      timeline.storage_from[to] = from;
    }
    Storages storages(timeline.baseline, baseline_releases, devices);
    for (int64_t i = 0; i < num_lines; ++i) {
      const WrapperLine& line = program.lines[i];
      if (ApplyUnplanned(line, i, devices, storages, timeline.baseline,
                         baseline_releases)) {
        continue;
      }
      if (removed.contains(line.name)) continue;
      if (i > last_other && IsMemoryPlanningLine(line) &&
          !outputs.contains(line.name) && !outputs.contains(line.reused_as)) {
        continue;
      }
      switch (line.kind) {
        case WrapperLineKind::kAllocate: {
          auto taken = taken_at.find(i);
          if (taken != taken_at.end()) {
            storages.Move(taken->second->reused, line.name);
          } else {
            const int32_t group = lines.group_of_line[i];
            const Bytes size =
                group >= 0 ? problem.buffers[group].size : line.allocation.size;
            storages.Allocate(line.name, devices[line.allocation.device],
                              {size}, i);
          }
          break;
        }
        case WrapperLineKind::kFreeIfNotReused:
          if (!handed_on_at.contains(i)) storages.Release(line.name, i);
          break;
        case WrapperLineKind::kReuse:
          storages.Move(line.name, line.reused_as);
          break;
        default:
          break;
      }
    }
    storages.Finish();
  }
  AddCachedBlocks(problem, timeline);
  return timeline;
}

absl::Status CheckLinesOutsideThePlan(const WrapperProgram& program,
                                      absl::string_view label) {
  // Names allocated so far, to the number of outputs of a multi-output
  // EXTERN_ALLOCATE (0 for any other allocation).
  absl::flat_hash_map<std::string, size_t> allocated;
  auto line_label = [&](size_t i) {
    const std::string& name = program.lines[i].name;
    return name.empty() ? absl::StrCat(label, "[", i, "]")
                        : absl::StrCat(label, "[", i, "] (\"", name, "\")");
  };
  auto check_bytes = [&](size_t i, const char* field,
                         Bytes bytes) -> absl::Status {
    if (bytes >= 0 && bytes <= kMaxBufferBytes) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat(line_label(i), ": ", field, " must be in [0, ",
                     kMaxBufferBytes, "], got ", bytes));
  };
  for (size_t i = 0; i < program.lines.size(); ++i) {
    const WrapperLine& line = program.lines[i];
    switch (line.kind) {
      case WrapperLineKind::kAllocate:
        allocated.try_emplace(line.name, 0);
        break;
      case WrapperLineKind::kExternAllocate: {
        if (line.name.empty()) {
          return absl::InvalidArgumentError(
              absl::StrCat(line_label(i), ": name is missing"));
        }
        if (absl::Status status =
                check_bytes(i, "size_bytes", line.allocation.size);
            !status.ok()) {
          return status;
        }
        Bytes sum = 0;
        for (size_t k = 0; k < line.output_bytes.size(); ++k) {
          if (absl::Status status =
                  check_bytes(i, absl::StrCat("output_bytes[", k, "]").c_str(),
                              line.output_bytes[k]);
              !status.ok()) {
            return status;
          }
          sum += line.output_bytes[k];
        }
        if (absl::Status status =
                check_bytes(i, "workspace_bytes", line.workspace);
            !status.ok()) {
          return status;
        }
        if (absl::Status status = CheckCall(line, line_label(i));
            !status.ok()) {
          return status;
        }
        if (!line.output_bytes.empty() && sum != line.allocation.size) {
          return absl::InvalidArgumentError(absl::StrCat(
              line_label(i), ": size_bytes must be the sum of output_bytes (",
              sum, "), got ", line.allocation.size));
        }
        if (!allocated.try_emplace(line.name, line.output_bytes.size())
                 .second) {
          return absl::InvalidArgumentError(absl::StrCat(
              line_label(i), ": name is allocated by an earlier event"));
        }
        break;
      }
      case WrapperLineKind::kMultiOutput: {
        auto it = allocated.find(line.name);
        if (it == allocated.end() || it->second == 0) {
          return absl::InvalidArgumentError(absl::StrCat(
              line_label(i),
              ": name is no earlier EXTERN_ALLOCATE with output_bytes"));
        }
        if (line.output_index < 0 ||
            static_cast<size_t>(line.output_index) >= it->second) {
          return absl::InvalidArgumentError(
              absl::StrCat(line_label(i), ": output_index must be in [0, ",
                           it->second, "), got ", line.output_index));
        }
        if (line.reused_as.empty()) {
          return absl::InvalidArgumentError(
              absl::StrCat(line_label(i), ": reused_as is missing"));
        }
        break;
      }
      case WrapperLineKind::kFreeInput:
        if (absl::Status status =
                check_bytes(i, "size_bytes", line.allocation.size);
            !status.ok()) {
          return status;
        }
        break;
      case WrapperLineKind::kReuse:
        if (line.reuses_input) {
          if (absl::Status status =
                  check_bytes(i, "size_bytes", line.allocation.size);
              !status.ok()) {
            return status;
          }
        }
        break;
      default:
        break;
    }
  }
  return absl::OkStatus();
}

std::vector<ReuseDecision> ReuseDecisionsOf(const Problem& problem,
                                            const WrapperProgram& program,
                                            const PoolLines& lines) {
  PlanContext context;
  context.wrapper_program = &program;
  context.wrapper_lines = &lines;
  // The reuse pass's decisions do not depend on a capacity, which would
  // only turn its plan into RESOURCE_EXHAUSTED.
  std::optional<Problem> uncapped;
  if (problem.capacity > 0) {
    uncapped = problem;
    uncapped->capacity = 0;
  }
  absl::StatusOr<Plan> reuse = ReusePlanner().PlanProblem(
      uncapped.has_value() ? *uncapped : problem, context);
  std::vector<ReuseDecision> decisions;
  if (reuse.ok() && reuse->decisions != nullptr) {
    decisions = reuse->decisions->reuse;
  }
  return decisions;
}

GraphTimeline WholeGraphTimeline(const Problem& problem,
                                 const WrapperProgram* program,
                                 const PoolLines* lines,
                                 const EntryState* entry) {
  if (program == nullptr || lines == nullptr) return TimelineOfBuffers(problem);
  return TimelineOfLines(problem, *program, *lines,
                         ReuseDecisionsOf(problem, *program, *lines), entry);
}

}  // namespace memplan
