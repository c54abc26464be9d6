#include "core/inductor/reuse_planner.h"

#include <algorithm>
#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <queue>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/inductor/range_max_tree.h"
#include "core/bounds.h"
#include "core/inductor/wrapper_lines.h"

namespace memplan {
namespace {

// How often (in steps) the planners look at the deadline.
constexpr size_t kCheckEvery = 256;

// ---------------------------------------------------------------------------
// The program both strategies walk: the wrapper lines that matter to them.

enum class StepKind : uint8_t {
  kAllocate,       // an ALLOCATE of a group
  kFree,           // a FREE_IF_NOT_REUSED of a group or an external buffer
  kKernel,         // any other line: a scheduler node's kernel
  kEnterSubgraph,  // ENTER_SUBGRAPH
  kExitSubgraph,   // EXIT_SUBGRAPH
};

struct Step {
  StepKind kind = StepKind::kKernel;
  int32_t group = -1;  // kAllocate, kFree: the group; -1: an external buffer
  int64_t line = -1;   // index into the caller's lines; -1: from buffers
  // False for a trailing memory-planning line that memory_plan_reuse pops.
  bool planned = true;
  // kFree: the name the line frees. Points into the program or problem.
  const std::string* name = nullptr;
  // kFree of an external buffer: what the line says of it, whether it is
  // the last FREE of that name (only that one frees the storage, so that a
  // storage is never handed out twice), and its timestep.
  const AllocationInfo* external = nullptr;
  bool last_external_free = false;
  Timestep timestep = 0;
  int64_t scheduler_node = -1;  // kAllocate, kFree: the line's; -1: unknown
};

struct Program {
  std::vector<Step> steps;
  // Inductor's bytes in use per scheduler node, when the lines carry them
  // (and every ALLOCATE and FREE its node); null: estimate from the lines.
  const std::vector<Bytes>* scheduler_node_bytes = nullptr;
  std::vector<size_t> allocate_step;  // per group: its ALLOCATE step
  std::vector<size_t> last_step;      // per group: its last ALLOCATE or FREE
};

bool IsMemoryPlanningLine(const WrapperLine& line) {
  return line.kind == WrapperLineKind::kAllocate ||
         line.kind == WrapperLineKind::kFreeIfNotReused ||
         line.kind == WrapperLineKind::kReuse;
}

// Fills allocate_step and last_step from the steps.
void IndexGroups(size_t num_groups, Program& program) {
  program.allocate_step.assign(num_groups, 0);
  program.last_step.assign(num_groups, 0);
  for (size_t s = 0; s < program.steps.size(); ++s) {
    const Step& step = program.steps[s];
    if (step.group < 0) continue;
    if (step.kind == StepKind::kAllocate) program.allocate_step[step.group] = s;
    if (step.kind == StepKind::kAllocate || step.kind == StepKind::kFree) {
      program.last_step[step.group] = s;
    }
  }
}

// Returns INVALID_ARGUMENT when line i, an ALLOCATE or FREE, lacks a
// scheduler node in [0, scheduler_node_bytes.size()) although the program
// gives Inductor's per-node bytes.
absl::Status CheckSchedulerNode(const WrapperProgram& wrapper, size_t i) {
  const size_t nodes = wrapper.scheduler_node_bytes.size();
  const int64_t node = wrapper.lines[i].scheduler_node;
  if (nodes == 0 || (node >= 0 && static_cast<size_t>(node) < nodes)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "events[", i, "].scheduler_node: ",
      node < 0 ? std::string("is missing")
               : absl::StrCat(node, " is not below"),
      " while scheduler_node_bytes gives ", nodes,
      " entries (every ALLOCATE and FREE_IF_NOT_REUSED needs its node)"));
}

// Returns the steps of the caller's lines: pool lines of groups, FREEs of
// external buffers that say their allocation (removed ones dropped), other
// lines as kernels. Lines after the last non-memory-planning line are not
// planned unless they name an output, as memory_plan_reuse pops them.
absl::StatusOr<Program> ProgramFromLines(const Problem& problem,
                                         const WrapperProgram& wrapper,
                                         const PoolLines& lines) {
  const std::vector<WrapperLine>& source = wrapper.lines;
  if (lines.group_of_line.size() != source.size() ||
      lines.timestep_of_line.size() != source.size() ||
      lines.buffers.size() != problem.buffers.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "context.wrapper_lines (", lines.group_of_line.size(), " lines, ",
        lines.buffers.size(), " groups) do not describe the ",
        source.size(), " lines and ", problem.buffers.size(),
        " buffers given"));
  }
  const absl::flat_hash_set<std::string> outputs(wrapper.output_names.begin(),
                                                 wrapper.output_names.end());
  const absl::flat_hash_set<std::string> removed(
      wrapper.removed_buffers.begin(), wrapper.removed_buffers.end());
  size_t first_trailing = source.size();
  while (first_trailing > 0 &&
         IsMemoryPlanningLine(source[first_trailing - 1]) &&
         !outputs.contains(source[first_trailing - 1].name)) {
    --first_trailing;
  }
  absl::flat_hash_map<std::string, size_t> last_external_free;
  for (size_t i = 0; i < source.size(); ++i) {
    const WrapperLine& line = source[i];
    if (line.kind == WrapperLineKind::kFreeIfNotReused &&
        lines.group_of_line[i] < 0 && line.has_allocation) {
      last_external_free[line.name] = i;
    }
  }

  Program program;
  program.steps.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    const WrapperLine& line = source[i];
    Step step;
    step.line = static_cast<int64_t>(i);
    step.planned = i < first_trailing;
    step.group = lines.group_of_line[i];
    switch (line.kind) {
      case WrapperLineKind::kAllocate:
        if (step.group < 0) continue;  // a removed buffer's
        step.kind = StepKind::kAllocate;
        break;
      case WrapperLineKind::kFreeIfNotReused:
        if (step.group < 0 &&
            (!line.has_allocation || removed.contains(line.name))) {
          continue;
        }
        step.kind = StepKind::kFree;
        step.name = &line.name;
        if (step.group < 0) {
          step.external = &line.allocation;
          step.last_external_free = last_external_free.at(line.name) == i;
          step.timestep = lines.timestep_of_line[i];
        }
        break;
      case WrapperLineKind::kReuse:
        continue;  // ReuseLine.plan leaves the planning state alone
      case WrapperLineKind::kOther:
        step.kind = StepKind::kKernel;
        break;
      case WrapperLineKind::kEnterSubgraph:
        step.kind = StepKind::kEnterSubgraph;
        break;
      case WrapperLineKind::kExitSubgraph:
        step.kind = StepKind::kExitSubgraph;
        break;
    }
    if (step.kind == StepKind::kAllocate || step.kind == StepKind::kFree) {
      step.scheduler_node = line.scheduler_node;
      absl::Status status = CheckSchedulerNode(wrapper, i);
      if (!status.ok()) return status;
    }
    program.steps.push_back(step);
  }
  if (!wrapper.scheduler_node_bytes.empty()) {
    program.scheduler_node_bytes = &wrapper.scheduler_node_bytes;
  }
  IndexGroups(problem.buffers.size(), program);
  return program;
}

// Returns the steps of lines derived from the buffers' live ranges
// (core/reuse_planners.h): per timestep, FREEs of the non-empty ranges
// ending there, ALLOCATEs of those beginning there, FREEs of the empty
// ranges there, then a kernel. Outputs are never freed.
Program ProgramFromBuffers(const Problem& problem) {
  struct Event {
    Timestep time;
    int phase;  // 0: FREE of a non-empty range, 1: ALLOCATE, 2: FREE
    int32_t group;
  };
  std::vector<Event> events;
  for (size_t i = 0; i < problem.buffers.size(); ++i) {
    const Buffer& buffer = problem.buffers[i];
    const auto group = static_cast<int32_t>(i);
    const LiveRange& range = buffer.live_range;
    events.push_back({range.begin, 1, group});
    if (!buffer.is_output) {
      events.push_back({range.end, range.begin < range.end ? 0 : 2, group});
    }
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return std::tie(a.time, a.phase, a.group) <
           std::tie(b.time, b.phase, b.group);
  });
  Program program;
  program.steps.reserve(events.size() * 2);
  for (size_t e = 0; e < events.size(); ++e) {
    const Event& event = events[e];
    Step step;
    step.group = event.group;
    if (event.phase == 1) {
      step.kind = StepKind::kAllocate;
    } else {
      step.kind = StepKind::kFree;
      step.name = &problem.buffers[event.group].names.back();
    }
    program.steps.push_back(step);
    if (e + 1 == events.size() || events[e + 1].time != event.time) {
      program.steps.push_back(Step{});  // the kernel of this timestep
    }
  }
  IndexGroups(problem.buffers.size(), program);
  return program;
}

// Returns the program for `problem` and `context` (its wrapper lines, or
// lines derived from the buffers).
absl::StatusOr<Program> MakeProgram(const Problem& problem,
                                    const PlanContext& context) {
  if (context.wrapper_program == nullptr) return ProgramFromBuffers(problem);
  if (context.wrapper_lines == nullptr) {
    return absl::InvalidArgumentError(
        "context.wrapper_program is set without context.wrapper_lines");
  }
  return ProgramFromLines(problem, *context.wrapper_program,
                          *context.wrapper_lines);
}

// Returns INVALID_ARGUMENT for a buffer with a fixed offset: the passes
// place every storage themselves.
absl::Status CheckNoFixedOffsets(const Problem& problem,
                                 absl::string_view strategy) {
  for (size_t i = 0; i < problem.buffers.size(); ++i) {
    const Buffer& buffer = problem.buffers[i];
    if (buffer.fixed_offset >= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "buffers[", i, "] (\"", buffer.names[0],
          "\"): fixed_offset is set, which strategy ", strategy,
          " cannot honour (the compiler pass it restates places every "
          "storage itself); use best_fit, optimal or auto"));
    }
  }
  return absl::OkStatus();
}

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

// Whether a size is known at compile time: no symbols, no data dependence.
bool IsStaticSize(const std::string& symbolic_size, bool data_dependent) {
  if (data_dependent) return false;
  return std::all_of(symbolic_size.begin(), symbolic_size.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
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
          {"bool", 1},           {"uint8", 1},          {"int8", 1},
          {"float8_e4m3fn", 1},  {"float8_e5m2", 1},    {"float8_e4m3fnuz", 1},
          {"float8_e5m2fnuz", 1}, {"float8_e8m0fnu", 1}, {"int16", 2},
          {"short", 2},          {"uint16", 2},         {"float16", 2},
          {"half", 2},           {"bfloat16", 2},       {"int32", 4},
          {"int", 4},            {"uint32", 4},         {"float32", 4},
          {"float", 4},          {"complex32", 4},      {"chalf", 4},
          {"int64", 8},          {"long", 8},           {"uint64", 8},
          {"float64", 8},        {"double", 8},         {"complex64", 8},
          {"cfloat", 8},         {"complex128", 16},    {"cdouble", 16},
      };
  const auto it = kSizes->find(std::string(dtype));
  return it == kSizes->end() ? 1 : it->second;
}

// ---------------------------------------------------------------------------
// Storages and their layout.

// Which buffer groups share a storage (one allocation), in creation order.
class Storages {
 public:
  explicit Storages(const Problem& problem)
      : problem_(problem), storage_of_(problem.buffers.size(), -1) {}

  // Starts a storage holding `group` alone; returns its index.
  int32_t Create(int32_t group) {
    const auto storage = static_cast<int32_t>(members_.size());
    members_.push_back({group});
    storage_of_[group] = storage;
    return storage;
  }

  // Adds `group` to `storage` and returns it, or, when `group` would
  // overlap in time the storage's last buffer or is of another device
  // (only in malformed programs: a buffer freed before it is allocated),
  // starts a storage of its own and returns that.
  int32_t Join(int32_t storage, int32_t group) {
    const Buffer& last = problem_.buffers[members_[storage].back()];
    const Buffer& buffer = problem_.buffers[group];
    if (last.live_range.end > buffer.live_range.begin ||
        last.device != buffer.device) {
      return Create(group);
    }
    members_[storage].push_back(group);
    storage_of_[group] = storage;
    return storage;
  }

  int32_t storage_of(int32_t group) const { return storage_of_[group]; }
  const std::vector<std::vector<int32_t>>& members() const { return members_; }

 private:
  const Problem& problem_;
  std::vector<int32_t> storage_of_;
  std::vector<std::vector<int32_t>> members_;
};

// Returns the plan that gives each storage its bytes, per pool mode
// (core/reuse_planners.h): in none and intermediates one pool per storage;
// in outputs the storages holding an output back to back in one pool per
// device; in combined all storages of a device back to back. Every buffer
// of a storage sits at the storage's offset.
Plan LayOut(const Problem& problem, const Storages& storages) {
  Plan plan;
  plan.assignments.resize(problem.buffers.size());
  absl::flat_hash_map<std::string, int32_t> shared_pool;  // by device
  const auto new_pool = [&plan](const std::string& device) {
    plan.pools.push_back(
        Pool{absl::StrCat("pool", plan.pools.size()), device, 0});
    return static_cast<int32_t>(plan.pools.size() - 1);
  };
  for (const std::vector<int32_t>& members : storages.members()) {
    const std::string& device = problem.buffers[members[0]].device;
    Bytes size = 0;
    Bytes alignment = problem.alignment;
    bool holds_output = false;
    for (const int32_t group : members) {
      size = std::max(size, problem.buffers[group].size);
      alignment = std::max(alignment, problem.AlignmentOf(group));
      holds_output = holds_output || problem.buffers[group].is_output;
    }
    const bool shared =
        problem.pool_mode == PoolMode::kCombined ||
        (problem.pool_mode == PoolMode::kOutputs && holds_output);
    int32_t pool;
    if (shared) {
      const auto it = shared_pool.find(device);
      pool = it != shared_pool.end() ? it->second : new_pool(device);
      shared_pool.emplace(device, pool);
    } else {
      pool = new_pool(device);
    }
    const Bytes offset = AlignUp(plan.pools[pool].size, alignment);
    plan.pools[pool].size = offset + size;
    for (const int32_t group : members) {
      plan.assignments[group] = Assignment{pool, offset};
    }
  }
  for (Pool& pool : plan.pools) {
    pool.size = AlignUp(pool.size, problem.alignment);
  }
  return plan;
}

// Returns the laid-out plan named `strategy` with `decisions`, or
// RESOURCE_EXHAUSTED when it exceeds problem.capacity.
absl::StatusOr<Plan> Finish(const Problem& problem, const Storages& storages,
                            absl::string_view strategy,
                            ReferenceDecisions decisions) {
  Plan plan = LayOut(problem, storages);
  plan.planner = std::string(strategy);
  plan.decisions =
      std::make_shared<const ReferenceDecisions>(std::move(decisions));
  absl::Status capacity = CapacityStatus(problem, plan, /*proven=*/false);
  if (!capacity.ok()) return capacity;
  return plan;
}

// ---------------------------------------------------------------------------
// Strategy "reuse".

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
      return absl::InvalidArgumentError(absl::StrCat(
          "events[", open_subgraphs_.back(),
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
  std::vector<State> states_;          // the planning states, innermost last
  std::vector<int64_t> open_subgraphs_;  // lines of unmatched ENTERs
  ReferenceDecisions decisions_;
  StackAllocationDecision stack_;
};

// ---------------------------------------------------------------------------
// Strategy "nnc".

// One buffer AllocBufsWithMemReuse places: a group, or an external buffer.
struct NncItem {
  Timestep begin = 0;
  Timestep end = 0;     // half-open: its memory is free for a buffer at end
  int32_t group = -1;   // -1: an external buffer
  size_t step = 0;      // an external buffer's FREE step
};

// A memory allocation NNC hands out.
struct NncMemory {
  Bytes size;            // its owner's size: what first fit compares
  const std::string* device;
  const std::string* owner;  // the buffer that allocated it
  int32_t storage;       // its storage; -1: an external's, made on use
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
    const Step* external =
        item.group < 0 ? &program.steps[item.step] : nullptr;
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
    const Bytes size = external != nullptr ? external->external->size
                                           : buffer->size;
    const std::string& device = external != nullptr
                                    ? external->external->device
                                    : buffer->device;
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
        memories.push_back({size, &device, &buffer->names[0],
                            storages.Create(item.group)});
      }
    }
    held.emplace(item.end, taken++, memory);
  }
  return Finish(problem, storages, "nnc", std::move(decisions));
}

}  // namespace

std::ostream& operator<<(std::ostream& os, const ReuseDecision& decision) {
  return os << decision.buffer << "@" << decision.allocation_line
            << " reuses " << decision.reused << "@" << decision.free_line;
}

const char* NncPlacementName(NncPlacement placement) {
  switch (placement) {
    case NncPlacement::kReused:
      return "reused";
    case NncPlacement::kNoFit:
      return "no_fit";
    case NncPlacement::kDynamicSize:
      return "dynamic_size";
    case NncPlacement::kExternal:
      return "external";
    case NncPlacement::kOutput:
      return "output";
  }
  return "unknown";
}

std::ostream& operator<<(std::ostream& os, const NncDecision& decision) {
  os << decision.buffer << "@" << decision.line << " "
     << NncPlacementName(decision.placement);
  if (!decision.memory_of.empty()) os << " " << decision.memory_of;
  return os;
}

namespace {

// The part the two planners share: the checks, Inductor's program of the
// problem, `pass` (the program to a plan), and the planner run over all
// devices named `name`.
template <typename Pass>
absl::StatusOr<Plan> PlanOverProgram(const Problem& problem,
                                     const PlanContext& context,
                                     absl::string_view name, Pass pass) {
  absl::Status status = CheckNoFixedOffsets(problem, name);
  if (!status.ok()) return status;
  const absl::Time start = absl::Now();
  absl::StatusOr<Program> program = MakeProgram(problem, context);
  if (!program.ok()) return program.status();
  absl::StatusOr<Plan> plan = pass(*program);
  if (plan.ok()) AddRunOverAllDevices(name, start, *plan);
  return plan;
}

}  // namespace

absl::StatusOr<Plan> ReusePlanner::PlanProblem(
    const Problem& problem, const PlanContext& context) const {
  return PlanOverProgram(problem, context, name(), [&](const Program& program) {
    return ReusePass(problem, program).Run(context);
  });
}

absl::StatusOr<Plan> NncPlanner::PlanProblem(
    const Problem& problem, const PlanContext& context) const {
  return PlanOverProgram(problem, context, name(), [&](const Program& program) {
    return PlanNnc(problem, program, context);
  });
}

}  // namespace memplan
