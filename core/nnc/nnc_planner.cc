#include "core/nnc/nnc_planner.h"

#include <algorithm>
#include <cstddef>
#include <functional>
#include <list>
#include <queue>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "core/inductor/reuse_pass_program.h"
#include "core/inductor/storage_layout.h"
#include "core/reference_decisions.h"

namespace memplan {
namespace {

using reuse_internal::Finish;
using reuse_internal::IsStaticSize;
using reuse_internal::kCheckEvery;
using reuse_internal::PlanOverProgram;
using reuse_internal::Program;
using reuse_internal::Step;
using reuse_internal::StepKind;
using reuse_internal::Storages;

// One buffer AllocBufsWithMemReuse places: a group, or an external buffer.
struct NncItem {
  Timestep begin = 0;
  Timestep end = 0;    // half-open: its memory is free for a buffer at end
  int32_t group = -1;  // -1: an external buffer
  size_t step = 0;     // an external buffer's FREE step
};

// A memory allocation NNC hands out.
struct NncMemory {
  Bytes size;  // its owner's size: what first fit compares
  const std::string* device;
  const std::string* owner;  // the buffer that allocated it
  int32_t storage;           // its storage; -1: an external's, made on use
};

absl::StatusOr<Plan> PlanNnc(const Problem& problem, const Program& program,
                             const PlanContext& context) {
  std::vector<NncItem> items;
  items.reserve(problem.buffers.size());
  for (size_t g = 0; g < problem.buffers.size(); ++g) {
    const LiveRange& range = problem.buffers[g].live_range;
    items.push_back({range.begin, range.end, static_cast<int32_t>(g), 0});
  }
  for (size_t s = 0; s < program.steps.size(); ++s) {
    const Step& step = program.steps[s];
    if (step.kind == StepKind::kFree && step.group < 0 &&
        step.last_external_free) {
      items.push_back({step.timestep, step.timestep, -1, s});
    }
  }
  // By start; at equal starts external buffers (made before their FREE)
  // first, then groups in order.
  std::stable_sort(items.begin(), items.end(),
                   [](const NncItem& a, const NncItem& b) {
                     return std::make_pair(a.begin, a.group >= 0 ? 1 : 0) <
                            std::make_pair(b.begin, b.group >= 0 ? 1 : 0);
                   });

  Storages storages(problem);
  ReferenceDecisions decisions;
  std::vector<NncMemory> memories;
  std::list<int32_t> up_for_grabs;  // front: released last
  // (end, order taken, memory) of every placed static buffer, earliest end
  // on top.
  using Held = std::tuple<Timestep, size_t, int32_t>;
  std::priority_queue<Held, std::vector<Held>, std::greater<Held>> held;
  size_t taken = 0;

  for (size_t i = 0; i < items.size(); ++i) {
    if (i % kCheckEvery == 0) {
      absl::Status status = context.Check();
      if (!status.ok()) return status;
    }
    const NncItem& item = items[i];
    const Step* external = item.group < 0 ? &program.steps[item.step] : nullptr;
    const Buffer* buffer =
        item.group >= 0 ? &problem.buffers[item.group] : nullptr;
    NncDecision& decision = decisions.nnc.emplace_back();
    decision.line = external != nullptr
                        ? external->line
                        : program.steps[program.allocate_step[item.group]].line;
    decision.buffer = external != nullptr ? *external->name : buffer->names[0];
    if (buffer != nullptr && buffer->is_output) {
      decision.placement = NncPlacement::kOutput;
      storages.Create(item.group);
      continue;
    }
    const bool dynamic =
        external != nullptr
            ? !IsStaticSize(external->external->symbolic_size,
                            external->external->size_is_data_dependent)
            : !IsStaticSize(buffer->symbolic_size,
                            buffer->size_is_data_dependent);
    if (dynamic) {
      decision.placement = NncPlacement::kDynamicSize;
      if (buffer != nullptr) storages.Create(item.group);
      continue;
    }
    while (!held.empty() && std::get<0>(held.top()) <= item.begin) {
      up_for_grabs.push_front(std::get<2>(held.top()));
      held.pop();
    }
    const Bytes size =
        external != nullptr ? external->external->size : buffer->size;
    const std::string& device =
        external != nullptr ? external->external->device : buffer->device;
    int32_t memory = -1;
    if (external == nullptr) {
      for (auto it = up_for_grabs.begin(); it != up_for_grabs.end(); ++it) {
        if (memories[*it].size >= size && *memories[*it].device == device) {
          memory = *it;
          up_for_grabs.erase(it);
          break;
        }
      }
    }
    if (memory >= 0) {
      NncMemory& reused = memories[memory];
      decision.placement = NncPlacement::kReused;
      decision.memory_of = *reused.owner;
      reused.storage = reused.storage < 0
                           ? storages.Create(item.group)
                           : storages.Join(reused.storage, item.group);
    } else {
      memory = static_cast<int32_t>(memories.size());
      if (external != nullptr) {
        decision.placement = NncPlacement::kExternal;
        memories.push_back({size, &device, external->name, -1});
      } else {
        decision.placement = NncPlacement::kNoFit;
        memories.push_back(
            {size, &device, &buffer->names[0], storages.Create(item.group)});
      }
    }
    held.emplace(item.end, taken++, memory);
  }
  return Finish(problem, storages, "nnc", std::move(decisions));
}

}  // namespace

absl::StatusOr<Plan> NncPlanner::PlanProblem(const Problem& problem,
                                             const PlanContext& context) const {
  return PlanOverProgram(problem, context, name(), [&](const Program& program) {
    return PlanNnc(problem, program, context);
  });
}

}  // namespace memplan
