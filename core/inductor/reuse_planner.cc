#include "core/inductor/reuse_planner.h"

#include <algorithm>
#include <cstddef>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "core/inductor/range_max_tree.h"
#include "core/inductor/reuse_pass_program.h"
#include "core/inductor/storage_layout.h"
#include "core/inductor/wrapper_lines.h"
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

// Whether `group` is freed by its last line: a FREE that is the last
// ALLOCATE or FREE line of a group that is no output. Only such a FREE
// frees the storage (another would free bytes that are still in use, by
// the group's live range).
bool FreedBy(const Problem& problem, const Program& program, size_t step) {
  const Step& free = program.steps[step];
  return free.kind == StepKind::kFree && free.group >= 0 &&
         program.last_step[free.group] == step &&
         !problem.buffers[free.group].is_output;
}

bool IsCpu(const std::string& device) {
  return device == "cpu" || absl::StartsWith(device, "cpu:");
}

// Returns the bytes of one element of `dtype` ("torch.float32" or
// "float32"), or 1 for a dtype memplan does not know.
int64_t ItemSize(absl::string_view dtype) {
  absl::ConsumePrefix(&dtype, "torch.");
  static const auto* const kSizes =
      new absl::flat_hash_map<std::string, int64_t>{
          {"bool", 1},
          {"uint8", 1},
          {"int8", 1},
          {"float8_e4m3fn", 1},
          {"float8_e5m2", 1},
          {"float8_e4m3fnuz", 1},
          {"float8_e5m2fnuz", 1},
          {"float8_e8m0fnu", 1},
          {"int16", 2},
          {"short", 2},
          {"uint16", 2},
          {"float16", 2},
          {"half", 2},
          {"bfloat16", 2},
          {"int32", 4},
          {"int", 4},
          {"uint32", 4},
          {"float32", 4},
          {"float", 4},
          {"complex32", 4},
          {"chalf", 4},
          {"int64", 8},
          {"long", 8},
          {"uint64", 8},
          {"float64", 8},
          {"double", 8},
          {"complex64", 8},
          {"cfloat", 8},
          {"complex128", 16},
          {"cdouble", 16},
      };
  const auto it = kSizes->find(std::string(dtype));
  return it == kSizes->end() ? 1 : it->second;
}

// buffer_reuse_key: device, dtype, symbolic size (the size in bytes when
// there is none), and the size in bytes.
using ReuseKey = std::tuple<std::string, std::string, std::string, Bytes>;

ReuseKey KeyOf(const std::string& device, const std::string& dtype,
               const std::string& symbolic_size, Bytes size) {
  return ReuseKey(device, dtype,
                  symbolic_size.empty() ? absl::StrCat(size) : symbolic_size,
                  size);
}

ReuseKey KeyOf(const Buffer& buffer) {
  return KeyOf(buffer.device, buffer.dtype, buffer.symbolic_size, buffer.size);
}

ReuseKey KeyOf(const AllocationInfo& allocation) {
  return KeyOf(allocation.device, allocation.dtype, allocation.symbolic_size,
               allocation.size);
}

// Inductor's EfficientPeakEstimate (torch >= 2.9): bytes in use per
// position, the peak over all, and per step where a FREE's storage starts
// to be held and where an ALLOCATE takes it. Positions are Inductor's
// scheduler nodes when the lines carry them with Inductor's per-node bytes
// (exact); else the kernel lines (every line of another kind), with the
// bytes of the groups held while each runs (a group from its ALLOCATE to
// the FREE that ends it, or to the end). Inductor's own estimate also
// counts graph inputs that can be freed and extern kernels' outputs, and
// (torch 2.11's estimate_peak_memory) counts each output negatively before
// it is made; the lines alone do not show those.
class PeakEstimate {
 public:
  PeakEstimate(const Problem& problem, const Program& program)
      : position_(program.steps.size(), 0),
        tree_(BytesPerPosition(problem, program)) {}

  // AllocateLine.should_reuse_buffer: reuse when the FREE and the ALLOCATE
  // belong to adjacent scheduler nodes (no kernel between them), or when
  // holding `size` more bytes over the positions between them keeps every
  // one within the peak. (With no position between them but not adjacent,
  // where Inductor's segment tree would raise, the reuse is allowed.)
  bool Allows(size_t free_step, size_t allocate_step, Bytes size) {
    const size_t from = position_[free_step];
    const size_t to = position_[allocate_step];
    return from >= to || size + tree_.Max(from, to) <= peak_;
  }

  // update_peak_between: the storage is held between them.
  void Hold(size_t free_step, size_t allocate_step, Bytes size) {
    tree_.Add(position_[free_step], position_[allocate_step], size);
  }

 private:
  // Fills position_ (for a FREE, the first position after it; for an
  // ALLOCATE, its own) and peak_; returns the bytes per position.
  std::vector<Bytes> BytesPerPosition(const Problem& problem,
                                      const Program& program) {
    const std::vector<Step>& steps = program.steps;
    if (program.scheduler_node_bytes != nullptr) {
      for (size_t s = 0; s < steps.size(); ++s) {
        const int64_t node = steps[s].scheduler_node;
        if (node < 0) continue;
        position_[s] = static_cast<size_t>(node) +
                       (steps[s].kind == StepKind::kFree ? 1 : 0);
      }
      const std::vector<Bytes>& bytes = *program.scheduler_node_bytes;
      peak_ = std::max<Bytes>(0, *std::max_element(bytes.begin(), bytes.end()));
      return bytes;
    }
    size_t kernels = 0;
    for (size_t s = 0; s < steps.size(); ++s) {
      position_[s] = kernels;
      if (steps[s].kind == StepKind::kKernel) ++kernels;
    }
    std::vector<Bytes> delta(kernels + 1, 0);
    for (size_t g = 0; g < problem.buffers.size(); ++g) {
      const size_t last = program.last_step[g];
      const size_t from = position_[program.allocate_step[g]];
      const size_t to =
          FreedBy(problem, program, last) ? position_[last] : kernels;
      if (from >= to) continue;
      delta[from] += problem.buffers[g].size;
      delta[to] -= problem.buffers[g].size;
    }
    std::vector<Bytes> held(kernels, 0);
    Bytes running = 0;
    for (size_t k = 0; k < kernels; ++k) {
      running += delta[k];
      held[k] = running;
      peak_ = std::max(peak_, running);
    }
    return held;
  }

  std::vector<size_t> position_;  // per step
  Bytes peak_ = 0;
  RangeMaxTree tree_;
};

// memory_plan_reuse over a program: one planning state per open subgraph.
class ReusePass {
 public:
  ReusePass(const Problem& problem, const Program& program)
      : problem_(problem),
        program_(program),
        estimate_(problem, program),
        storages_(problem),
        states_(1) {}

  absl::StatusOr<Plan> Run(const PlanContext& context) {
    const std::vector<Step>& steps = program_.steps;
    for (size_t s = 0; s < steps.size(); ++s) {
      if (s % kCheckEvery == 0) {
        absl::Status status = context.Check();
        if (!status.ok()) return status;
      }
      absl::Status status = PlanStep(s);
      if (!status.ok()) return status;
    }
    if (!open_subgraphs_.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("events[", open_subgraphs_.back(),
                       "]: ENTER_SUBGRAPH without an EXIT_SUBGRAPH after it"));
    }
    FinishStackAllocation();
    return Finish(problem_, storages_, "reuse", std::move(decisions_));
  }

 private:
  // A freed storage waiting in a planning state's pool.
  struct Freed {
    size_t step;      // its FREE step
    int32_t storage;  // its storage; -1: an external buffer's, made on use
  };
  using State = absl::flat_hash_map<ReuseKey, std::vector<Freed>>;

  // Plans the step at s.
  absl::Status PlanStep(size_t s) {
    const Step& step = program_.steps[s];
    switch (step.kind) {
      case StepKind::kKernel:
        break;
      case StepKind::kEnterSubgraph:
        states_.emplace_back();
        open_subgraphs_.push_back(step.line);
        break;
      case StepKind::kExitSubgraph:
        if (states_.size() == 1) {
          return absl::InvalidArgumentError(absl::StrCat(
              "events[", step.line,
              "]: EXIT_SUBGRAPH without an ENTER_SUBGRAPH before it"));
        }
        states_.pop_back();
        open_subgraphs_.pop_back();
        break;
      case StepKind::kFree:
        Free(s);
        break;
      case StepKind::kAllocate:
        Allocate(s);
        break;
    }
    return absl::OkStatus();
  }

  // FreeIfNotReusedLine.plan: the storage joins the pool under its key.
  void Free(size_t s) {
    const Step& step = program_.steps[s];
    if (!step.planned) return;
    if (step.group >= 0) {
      if (!FreedBy(problem_, program_, s)) return;
      states_.back()[KeyOf(problem_.buffers[step.group])].push_back(
          {s, storages_.storage_of(step.group)});
    } else if (step.last_external_free) {
      states_.back()[KeyOf(*step.external)].push_back({s, -1});
    }
  }

  // AllocateLine.plan: take the storage freed last under the key, if the
  // peak estimate allows; else a fresh allocation, counted for the stack
  // unless a reuse was refused (as Inductor returns before counting).
  void Allocate(size_t s) {
    const Step& step = program_.steps[s];
    const Buffer& buffer = problem_.buffers[step.group];
    if (!step.planned) {  // popped: Inductor never allocates it
      NewStorage(step.group, /*stack_candidate=*/false);
      return;
    }
    bool refused = false;
    const auto pool = states_.back().find(KeyOf(buffer));
    if (pool != states_.back().end() && !pool->second.empty()) {
      const Freed freed = pool->second.back();
      if (estimate_.Allows(freed.step, s, buffer.size)) {
        pool->second.pop_back();
        estimate_.Hold(freed.step, s, buffer.size);
        Reuse(s, freed);
        return;
      }
      refused = true;
    }
    const bool on_stack =
        IsCpu(buffer.device) &&
        IsStaticSize(buffer.symbolic_size, buffer.size_is_data_dependent);
    NewStorage(step.group, on_stack);
    if (on_stack && !refused) {
      stack_.total_static_elements += buffer.size / ItemSize(buffer.dtype);
      stack_.total_static_bytes += buffer.size;
    }
  }

  // The ReuseLine: the allocation at step s takes `freed`'s storage.
  void Reuse(size_t s, const Freed& freed) {
    const Step& step = program_.steps[s];
    const Step& free = program_.steps[freed.step];
    decisions_.reuse.push_back({step.line, free.line,
                                problem_.buffers[step.group].names[0],
                                *free.name});
    int32_t storage = freed.storage;
    if (storage < 0) {
      const auto it = external_storage_.find(freed.step);
      if (it == external_storage_.end()) {
        external_storage_[freed.step] = NewStorage(step.group, false);
        return;
      }
      storage = it->second;
    }
    const int32_t joined = storages_.Join(storage, step.group);
    if (static_cast<size_t>(joined) == stack_candidate_.size()) {
      stack_candidate_.push_back(false);  // Join made a storage of its own
    }
  }

  int32_t NewStorage(int32_t group, bool stack_candidate) {
    stack_candidate_.push_back(stack_candidate);
    return storages_.Create(group);
  }

  // MAX_STACK_ALLOCATION_SIZE against the elements counted over every
  // planning state; when allowed, the groups whose storage is a fresh CPU
  // allocation of static size, in order of allocation.
  void FinishStackAllocation() {
    stack_.allowed = stack_.total_static_elements <= stack_.limit_elements;
    if (stack_.allowed) {
      for (const Step& step : program_.steps) {
        if (step.kind == StepKind::kAllocate && step.planned &&
            stack_candidate_[storages_.storage_of(step.group)]) {
          stack_.buffers.push_back(problem_.buffers[step.group].names[0]);
        }
      }
    }
    decisions_.stack_allocation = std::move(stack_);
  }

  const Problem& problem_;
  const Program& program_;
  PeakEstimate estimate_;
  Storages storages_;
  std::vector<bool> stack_candidate_;  // per storage: fresh, CPU, static
  absl::flat_hash_map<size_t, int32_t> external_storage_;  // by FREE step
  std::vector<State> states_;            // the planning states, innermost last
  std::vector<int64_t> open_subgraphs_;  // lines of unmatched ENTERs
  ReferenceDecisions decisions_;
  StackAllocationDecision stack_;
};

}  // namespace

absl::StatusOr<Plan> ReusePlanner::PlanProblem(
    const Problem& problem, const PlanContext& context) const {
  return PlanOverProgram(problem, context, name(), [&](const Program& program) {
    return ReusePass(problem, program).Run(context);
  });
}

}  // namespace memplan
