#include "proto/convert.h"

#include <cstddef>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/bounds.h"
#include "core/entry_state.h"
#include "core/inductor/wrapper_lines.h"
#include "core/inductor/wrapper_memory.h"
#include "core/problem.h"
#include "core/reference_decisions.h"
#include "core/symbolic/symbolic_plan.h"
#include "core/validator.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "proto/status_details.h"

namespace memplan {
namespace {

// Returns `buffers[i] ("first name")`, or `buffers[i]` for a nameless
// buffer, as core ValidateProblem names buffers.
std::string BufferLabel(const v1::PlanMemoryRequest& request, int i) {
  const v1::Buffer& buffer = request.buffers(i);
  if (buffer.names().empty()) return absl::StrCat("buffers[", i, "]");
  return absl::StrCat("buffers[", i, "] (\"", buffer.names(0), "\")");
}

// Returns the allocation fields of a v1::Event or v1::NodeWrite, which
// spell them alike.
template <typename WireAllocation>
AllocationInfo AllocationFromWire(const WireAllocation& wire) {
  AllocationInfo allocation;
  allocation.size = wire.size_bytes();
  allocation.symbolic_size = wire.symbolic_size();
  allocation.device = wire.device();
  allocation.dtype = wire.dtype();
  allocation.size_is_data_dependent = wire.size_is_data_dependent();
  return allocation;
}

// Returns `events[i] ("name")`, or `events[i]` for an event without a name.
std::string EventLabel(const v1::PlanMemoryRequest& request, int i) {
  const v1::Event& event = request.events(i);
  if (event.name().empty()) return absl::StrCat("events[", i, "]");
  return absl::StrCat("events[", i, "] (\"", event.name(), "\")");
}

// Returns the core's wrapper program for the request's events, output names
// and removed buffers; INVALID_ARGUMENT naming the event and field for an
// undefined kind or an ALLOCATE without size_bytes.
absl::StatusOr<WrapperProgram> EventsToProgram(
    const v1::PlanMemoryRequest& request) {
  WrapperProgram program;
  program.lines.reserve(request.events_size());
  SymbolicSizeChecker symbolic_sizes;
  for (int i = 0; i < request.events_size(); ++i) {
    const v1::Event& event = request.events(i);
    WrapperLine& line = program.lines.emplace_back();
    switch (event.kind()) {
      case v1::EVENT_KIND_ALLOCATE:
        line.kind = WrapperLineKind::kAllocate;
        if (!event.has_size_bytes()) {
          return absl::InvalidArgumentError(
              absl::StrCat(EventLabel(request, i), ": size_bytes is missing"));
        }
        if (absl::Status status =
                symbolic_sizes.Check(event.symbolic_size(), event.size_bytes());
            !status.ok()) {
          return absl::InvalidArgumentError(
              absl::StrCat(EventLabel(request, i), ": ", status.message()));
        }
        break;
      case v1::EVENT_KIND_FREE_IF_NOT_REUSED:
        line.kind = WrapperLineKind::kFreeIfNotReused;
        break;
      case v1::EVENT_KIND_REUSE:
        line.kind = WrapperLineKind::kReuse;
        break;
      case v1::EVENT_KIND_OTHER:
        line.kind = WrapperLineKind::kOther;
        break;
      case v1::EVENT_KIND_ENTER_SUBGRAPH:
        line.kind = WrapperLineKind::kEnterSubgraph;
        break;
      case v1::EVENT_KIND_EXIT_SUBGRAPH:
        line.kind = WrapperLineKind::kExitSubgraph;
        break;
      case v1::EVENT_KIND_EXTERN_ALLOCATE:
        line.kind = WrapperLineKind::kExternAllocate;
        if (!event.has_size_bytes()) {
          return absl::InvalidArgumentError(
              absl::StrCat(EventLabel(request, i), ": size_bytes is missing"));
        }
        break;
      case v1::EVENT_KIND_MULTI_OUTPUT:
        line.kind = WrapperLineKind::kMultiOutput;
        if (!event.has_output_index()) {
          return absl::InvalidArgumentError(absl::StrCat(
              EventLabel(request, i), ": output_index is missing"));
        }
        line.output_index = event.output_index();
        break;
      case v1::EVENT_KIND_PLANNING_NO_OP:
        line.kind = WrapperLineKind::kPlanningNoOp;
        break;
      case v1::EVENT_KIND_FREE_INPUT:
        line.kind = WrapperLineKind::kFreeInput;
        if (!event.has_size_bytes()) {
          return absl::InvalidArgumentError(
              absl::StrCat(EventLabel(request, i), ": size_bytes is missing"));
        }
        break;
      default:
        return absl::InvalidArgumentError(absl::StrCat(
            EventLabel(request, i), ": kind ", static_cast<int>(event.kind()),
            " is not an EventKind (EVENT_KIND_UNSPECIFIED is not one either)"));
    }
    line.name = event.name();
    line.reused_as = event.reused_as();
    line.allocation = AllocationFromWire(event);
    line.has_allocation = line.kind == WrapperLineKind::kFreeIfNotReused &&
                          event.has_size_bytes();
    line.reuses_input =
        line.kind == WrapperLineKind::kReuse && event.has_size_bytes();
    line.output_bytes.assign(event.output_bytes().begin(),
                             event.output_bytes().end());
    if (event.workspace_bytes() != 0) {
      if (line.kind != WrapperLineKind::kExternAllocate) {
        return absl::InvalidArgumentError(
            absl::StrCat(EventLabel(request, i),
                         ": workspace_bytes is for EXTERN_ALLOCATE events "
                         "only"));
      }
      line.workspace = event.workspace_bytes();
    }
    if (event.call_allocations_size() > 0) {
      if (line.kind != WrapperLineKind::kExternAllocate) {
        return absl::InvalidArgumentError(
            absl::StrCat(EventLabel(request, i),
                         ": call_allocations is for EXTERN_ALLOCATE events "
                         "only"));
      }
      const int64_t count = event.call_allocations_size();
      for (const v1::CallAllocation& wire : event.call_allocations()) {
        CallAllocation& call = line.call.emplace_back();
        if (wire.allocation_case() == v1::CallAllocation::kOutputIndex) {
          call.output = wire.output_index();
          if (call.output < 0) {
            return absl::InvalidArgumentError(
                absl::StrCat(EventLabel(request, i), ": call_allocations[",
                             line.call.size() - 1,
                             "].output_index must be >= 0, got ", call.output));
          }
        } else {
          call.scratch = wire.scratch_bytes();
          call.freed_before =
              wire.has_freed_before() ? wire.freed_before() : count;
        }
      }
    }
    if (event.has_scheduler_node()) {
      if (event.scheduler_node() < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            EventLabel(request, i), ": scheduler_node must be >= 0, got ",
            event.scheduler_node()));
      }
      line.scheduler_node = event.scheduler_node();
    }
  }
  program.output_names.assign(request.output_names().begin(),
                              request.output_names().end());
  program.removed_buffers.assign(request.removed_buffers().begin(),
                                 request.removed_buffers().end());
  constexpr int64_t kMaxNodeBytes = int64_t{1} << 60;
  for (int i = 0; i < request.scheduler_node_bytes_size(); ++i) {
    const int64_t bytes = request.scheduler_node_bytes(i);
    if (bytes < -kMaxNodeBytes || bytes > kMaxNodeBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("scheduler_node_bytes[", i,
                       "]: must be in [-2^60, 2^60], got ", bytes));
    }
  }
  program.scheduler_node_bytes.assign(request.scheduler_node_bytes().begin(),
                                      request.scheduler_node_bytes().end());
  return program;
}

// Returns the core's scheduled nodes of the request; INVALID_ARGUMENT naming
// a write without size_bytes.
absl::StatusOr<std::vector<ScheduledNode>> NodesFromRequest(
    const v1::PlanMemoryRequest& request) {
  std::vector<ScheduledNode> nodes;
  nodes.reserve(request.nodes_size());
  SymbolicSizeChecker symbolic_sizes;
  for (int i = 0; i < request.nodes_size(); ++i) {
    const v1::Node& wire = request.nodes(i);
    ScheduledNode& node = nodes.emplace_back();
    node.name = wire.name();
    node.reads.assign(wire.reads().begin(), wire.reads().end());
    for (int j = 0; j < wire.writes_size(); ++j) {
      const v1::NodeWrite& wire_write = wire.writes(j);
      if (!wire_write.has_size_bytes()) {
        return absl::InvalidArgumentError(
            absl::StrCat("nodes[", i, "].writes[", j, "] (\"",
                         wire_write.name(), "\"): size_bytes is missing"));
      }
      if (absl::Status status = symbolic_sizes.Check(wire_write.symbolic_size(),
                                                     wire_write.size_bytes());
          !status.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("nodes[", i, "].writes[", j, "] (\"",
                         wire_write.name(), "\"): ", status.message()));
      }
      NodeWrite& write = node.writes.emplace_back();
      write.name = wire_write.name();
      write.allocation = AllocationFromWire(wire_write);
      write.in_place_of = wire_write.in_place_of();
    }
  }
  return nodes;
}

v1::NncPlacement NncPlacementToProto(NncPlacement placement) {
  switch (placement) {
    case NncPlacement::kReused:
      return v1::NNC_PLACEMENT_REUSED;
    case NncPlacement::kNoFit:
      return v1::NNC_PLACEMENT_NO_FIT;
    case NncPlacement::kDynamicSize:
      return v1::NNC_PLACEMENT_DYNAMIC_SIZE;
    case NncPlacement::kExternal:
      return v1::NNC_PLACEMENT_EXTERNAL;
    case NncPlacement::kOutput:
      return v1::NNC_PLACEMENT_OUTPUT;
  }
  return v1::NNC_PLACEMENT_UNSPECIFIED;  // unreachable: the switch is
                                         // exhaustive
}

// Adds the decision lists of strategies reuse and nnc to `response`; line
// indices become event indices only when `events` (the lines are the
// request's events).
void AddDecisions(const ReferenceDecisions& decisions, bool events,
                  v1::PlanMemoryResponse& response) {
  for (const ReuseDecision& decision : decisions.reuse) {
    v1::ReuseDecision* wire = response.add_reuse_decisions();
    wire->set_buffer(decision.buffer);
    wire->set_reused(decision.reused);
    if (events && decision.allocation_line >= 0) {
      wire->set_allocation_event(decision.allocation_line);
    }
    if (events && decision.free_line >= 0) {
      wire->set_free_event(decision.free_line);
    }
  }
  if (decisions.stack_allocation.has_value()) {
    const StackAllocationDecision& stack = *decisions.stack_allocation;
    v1::StackAllocation* wire = response.mutable_stack_allocation();
    wire->set_allowed(stack.allowed);
    wire->set_total_static_elements(stack.total_static_elements);
    wire->set_total_static_bytes(stack.total_static_bytes);
    wire->set_limit_elements(stack.limit_elements);
    for (const std::string& name : stack.buffers) wire->add_buffers(name);
  }
  for (const NncDecision& decision : decisions.nnc) {
    v1::NncDecision* wire = response.add_nnc_decisions();
    wire->set_buffer(decision.buffer);
    wire->set_placement(NncPlacementToProto(decision.placement));
    wire->set_memory_of(decision.memory_of);
    if (events && decision.line >= 0) wire->set_event(decision.line);
  }
}

}  // namespace

// Sets each output buffer group's Buffer::release_group from
// request.release_groups (the group's index), as the proto documents:
// every name an output (of output_names with events or nodes, else of a
// buffer with is_output); names of outputs no buffer group holds are
// ignored. Returns INVALID_ARGUMENT naming release_groups[i].outputs[j].
absl::Status ApplyReleaseGroups(const v1::PlanMemoryRequest& request,
                                Problem& problem) {
  if (request.release_groups().empty()) return absl::OkStatus();
  absl::flat_hash_map<std::string, int32_t> buffer_of;
  absl::flat_hash_set<std::string> outputs(request.output_names().begin(),
                                           request.output_names().end());
  const bool lines = request.events_size() > 0 || request.nodes_size() > 0;
  for (size_t b = 0; b < problem.buffers.size(); ++b) {
    for (const std::string& name : problem.buffers[b].names) {
      buffer_of.try_emplace(name, static_cast<int32_t>(b));
      if (!lines && problem.buffers[b].is_output) outputs.insert(name);
    }
  }
  absl::flat_hash_map<std::string, int> named_by;  // name -> its group
  std::vector<int32_t> group_of_buffer(problem.buffers.size(), -1);
  for (int g = 0; g < request.release_groups_size(); ++g) {
    const v1::ReleaseGroup& group = request.release_groups(g);
    if (group.outputs().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("release_groups[", g, "]: outputs is empty"));
    }
    for (int j = 0; j < group.outputs_size(); ++j) {
      const std::string& name = group.outputs(j);
      const std::string label = absl::StrCat("release_groups[", g, "].outputs[",
                                             j, "] (\"", name, "\")");
      if (!outputs.contains(name)) {
        return absl::InvalidArgumentError(absl::StrCat(
            label, ": not an output (",
            lines ? "one of output_names" : "a name of a buffer with is_output",
            ")"));
      }
      if (auto [it, added] = named_by.try_emplace(name, g); !added) {
        return absl::InvalidArgumentError(absl::StrCat(
            label, ": named already by release_groups[", it->second, "]"));
      }
      auto it = buffer_of.find(name);
      if (it == buffer_of.end()) continue;  // an output the plan does not place
      int32_t& of = group_of_buffer[it->second];
      if (of >= 0 && of != g) {
        return absl::InvalidArgumentError(
            absl::StrCat(label, ": its buffer group (\"",
                         problem.buffers[it->second].names.front(),
                         "\") is in release_groups[", of, "] already"));
      }
      of = g;
    }
  }
  for (size_t b = 0; b < problem.buffers.size(); ++b) {
    problem.buffers[b].release_group = group_of_buffer[b];
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> StrategyName(v1::Strategy strategy) {
  switch (strategy) {
    case v1::STRATEGY_UNSPECIFIED:
      return std::string(kDefaultStrategy);
    case v1::STRATEGY_INDUCTOR:
      return std::string("inductor");
    case v1::STRATEGY_BEST_FIT:
      return std::string("best_fit");
    case v1::STRATEGY_OPTIMAL:
      return std::string("optimal");
    case v1::STRATEGY_AUTO:
      return std::string("auto");
    case v1::STRATEGY_REUSE:
      return std::string("reuse");
    case v1::STRATEGY_NNC:
      return std::string("nnc");
    case v1::STRATEGY_PARTITION:
      return std::string("partition");
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "options.strategy: unknown value ", static_cast<int>(strategy)));
  }
}

absl::StatusOr<absl::Duration> TimeBudget(const v1::PlanOptions& options) {
  if (!options.has_time_budget()) return kDefaultTimeBudget;
  const int64_t seconds = options.time_budget().seconds();
  const int32_t nanos = options.time_budget().nanos();
  if (nanos <= -1000000000 || nanos >= 1000000000 ||
      (seconds > 0 && nanos < 0) || (seconds < 0 && nanos > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.time_budget is not a valid Duration: seconds ",
                     seconds, ", nanos ", nanos));
  }
  if (seconds < 0 || nanos < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.time_budget must be >= 0, got ",
                     absl::FormatDuration(absl::Seconds(seconds) +
                                          absl::Nanoseconds(nanos))));
  }
  // Compared in seconds first: Seconds() of a huge count saturates.
  const absl::Duration budget =
      seconds > absl::ToInt64Seconds(kMaxTimeBudget)
          ? absl::InfiniteDuration()
          : absl::Seconds(seconds) + absl::Nanoseconds(nanos);
  if (budget > kMaxTimeBudget) {
    return absl::InvalidArgumentError(absl::StrCat(
        "options.time_budget must be at most ",
        absl::FormatDuration(kMaxTimeBudget), ", got ",
        budget == absl::InfiniteDuration() ? absl::StrCat(seconds, "s")
                                           : absl::FormatDuration(budget)));
  }
  return budget;
}

absl::StatusOr<PoolMode> PoolModeFromProto(v1::PoolMode mode) {
  switch (mode) {
    case v1::POOL_MODE_UNSPECIFIED:
    case v1::POOL_MODE_INTERMEDIATES:
      return PoolMode::kIntermediates;
    case v1::POOL_MODE_NONE:
      return PoolMode::kNone;
    case v1::POOL_MODE_OUTPUTS:
      return PoolMode::kOutputs;
    case v1::POOL_MODE_COMBINED:
      return PoolMode::kCombined;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "options.pool_mode: unknown value ", static_cast<int>(mode)));
  }
}

v1::PoolMode PoolModeToProto(PoolMode mode) {
  switch (mode) {
    case PoolMode::kNone:
      return v1::POOL_MODE_NONE;
    case PoolMode::kIntermediates:
      return v1::POOL_MODE_INTERMEDIATES;
    case PoolMode::kOutputs:
      return v1::POOL_MODE_OUTPUTS;
    case PoolMode::kCombined:
      return v1::POOL_MODE_COMBINED;
  }
  return v1::POOL_MODE_UNSPECIFIED;  // unreachable: the switch is exhaustive
}

absl::StatusOr<Problem> RequestToProblem(const v1::PlanMemoryRequest& request,
                                         PoolLines* lines,
                                         WrapperProgram* program_out) {
  const v1::PlanOptions& options = request.options();
  if (absl::StatusOr<std::string> strategy = StrategyName(options.strategy());
      !strategy.ok()) {
    return strategy.status();
  }
  absl::StatusOr<PoolMode> pool_mode = PoolModeFromProto(options.pool_mode());
  if (!pool_mode.ok()) return pool_mode.status();
  if (options.alignment() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.alignment must be >= 0 (bytes; 0 means ",
                     kDefaultAlignment, "), got ", options.alignment()));
  }
  if (absl::StatusOr<absl::Duration> budget = TimeBudget(options);
      !budget.ok()) {
    return budget.status();
  }

  Problem problem;
  problem.pool_mode = *pool_mode;
  problem.alignment =
      options.alignment() == 0 ? kDefaultAlignment : options.alignment();
  problem.capacity = options.capacity_bytes();
  if (options.allocator_block_bytes() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "options.allocator_block_bytes must be >= 0 (bytes; 0 means ",
        kDefaultAllocatorBlock, "), got ", options.allocator_block_bytes()));
  }
  problem.allocator_block = options.allocator_block_bytes() == 0
                                ? kDefaultAllocatorBlock
                                : options.allocator_block_bytes();
  problem.outputs_released_together = options.outputs_released_together();
  problem.reserve_segments = options.reserve_segments();
  problem.private_pool = options.private_pool();
  problem.cached_blocks.reserve(request.cached_blocks_size());
  for (int i = 0; i < request.cached_blocks_size(); ++i) {
    const v1::CachedBlock& wire = request.cached_blocks(i);
    if (!wire.has_size_bytes()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cached_blocks[", i, "]: size_bytes is missing"));
    }
    problem.cached_blocks.push_back(
        CachedBlock{wire.device(), wire.size_bytes(), wire.small_pool()});
  }
  if (absl::Status status = ValidateCachedBlocks(problem); !status.ok()) {
    return status;
  }
  const int forms = (request.buffers_size() > 0 ? 1 : 0) +
                    (request.events_size() > 0 ? 1 : 0) +
                    (request.nodes_size() > 0 ? 1 : 0);
  if (forms > 1) {
    return absl::InvalidArgumentError(
        "buffers, events, nodes: a request gives one of them, not several");
  }
  if (request.events_size() > 0 || request.nodes_size() > 0) {
    absl::StatusOr<WrapperProgram> program;
    if (request.events_size() > 0) {
      program = EventsToProgram(request);
    } else if (!request.scheduler_node_bytes().empty()) {
      return absl::InvalidArgumentError(
          "scheduler_node_bytes: given with nodes (only events have them)");
    } else {
      if (!request.removed_buffers().empty()) {
        return absl::InvalidArgumentError(
            "removed_buffers: given with nodes (only events have them)");
      }
      absl::StatusOr<std::vector<ScheduledNode>> nodes =
          NodesFromRequest(request);
      if (!nodes.ok()) return nodes.status();
      program = WrapperLinesFromNodes(*nodes, {request.output_names().begin(),
                                               request.output_names().end()});
    }
    if (!program.ok()) return program.status();
    absl::StatusOr<PoolLines> pool_lines =
        GroupWrapperLines(*program, "events");
    if (!pool_lines.ok()) return pool_lines.status();
    if (absl::Status status = CheckLinesOutsideThePlan(*program, "events");
        !status.ok()) {
      return status;
    }
    if (!request.unplanned().empty()) {
      return absl::InvalidArgumentError(
          "unplanned: given with events or nodes (events say it themselves: "
          "EXTERN_ALLOCATE, MULTI_OUTPUT, FREE_INPUT)");
    }
    problem.buffers = pool_lines->buffers;
    for (const WrapperLine& line : program->lines) {
      if (line.kind == WrapperLineKind::kExternAllocate ||
          line.kind == WrapperLineKind::kMultiOutput ||
          line.kind == WrapperLineKind::kFreeInput || line.reuses_input) {
        problem.whole_graph = true;
      }
    }
    if (absl::Status status = ValidateProblem(problem); !status.ok()) {
      // The groups are no field of the request: the violation names the
      // field they come from.
      const char* form = request.events_size() > 0 ? "events" : "nodes";
      const std::string message =
          absl::StrCat("the buffer groups of ", form,
                       " (in order of their allocation): ", status.message());
      return WithFieldViolations(absl::InvalidArgumentError(message),
                                 {FieldViolation{form, message}});
    }
    if (absl::Status status = ApplyReleaseGroups(request, problem);
        !status.ok()) {
      return status;
    }
    if (lines != nullptr) *lines = *std::move(pool_lines);
    if (program_out != nullptr) *program_out = *std::move(program);
    return problem;
  }
  if (!request.output_names().empty() || !request.removed_buffers().empty() ||
      !request.scheduler_node_bytes().empty()) {
    return absl::InvalidArgumentError(
        "output_names, removed_buffers, scheduler_node_bytes: given without "
        "events or nodes (buffers say is_output themselves)");
  }
  problem.buffers.reserve(request.buffers_size());
  for (int i = 0; i < request.buffers_size(); ++i) {
    const v1::Buffer& wire = request.buffers(i);
    if (!wire.has_size_bytes()) {
      return absl::InvalidArgumentError(
          absl::StrCat(BufferLabel(request, i), ": size_bytes is missing"));
    }
    if (!wire.has_live_range()) {
      return absl::InvalidArgumentError(
          absl::StrCat(BufferLabel(request, i), ": live_range is missing"));
    }
    // -1 is the core's "free": an explicit negative offset must not become it.
    if (wire.has_fixed_offset() && wire.fixed_offset() < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          BufferLabel(request, i), ": fixed_offset must be in [0, ",
          kMaxBufferBytes, "], got ", wire.fixed_offset()));
    }
    Buffer& buffer = problem.buffers.emplace_back();
    buffer.names.assign(wire.names().begin(), wire.names().end());
    buffer.size = wire.size_bytes();
    buffer.symbolic_size = wire.symbolic_size();
    buffer.live_range.begin = wire.live_range().begin();
    buffer.live_range.end = wire.live_range().end();
    buffer.is_output = wire.is_output();
    buffer.device = wire.device();
    buffer.dtype = wire.dtype();
    buffer.size_is_data_dependent = wire.size_is_data_dependent();
    buffer.alignment = wire.alignment();
    if (wire.has_fixed_offset()) buffer.fixed_offset = wire.fixed_offset();
  }
  problem.unplanned.reserve(request.unplanned_size());
  for (int i = 0; i < request.unplanned_size(); ++i) {
    const v1::UnplannedBuffer& wire = request.unplanned(i);
    const std::string label =
        wire.name().empty()
            ? absl::StrCat("unplanned[", i, "]")
            : absl::StrCat("unplanned[", i, "] (\"", wire.name(), "\")");
    if (!wire.has_size_bytes()) {
      return absl::InvalidArgumentError(
          absl::StrCat(label, ": size_bytes is missing"));
    }
    if (!wire.has_live_range()) {
      return absl::InvalidArgumentError(
          absl::StrCat(label, ": live_range is missing"));
    }
    UnplannedBuffer& buffer = problem.unplanned.emplace_back();
    buffer.name = wire.name();
    buffer.size = wire.size_bytes();
    buffer.device = wire.device();
    buffer.live_range.begin = wire.live_range().begin();
    buffer.live_range.end = wire.live_range().end();
    buffer.is_input = wire.is_input();
  }
  problem.whole_graph = !problem.unplanned.empty();
  if (absl::Status status = ValidateProblem(problem); !status.ok()) {
    return status;
  }
  if (absl::Status status = ApplyReleaseGroups(request, problem);
      !status.ok()) {
    return status;
  }
  return problem;
}

namespace {

absl::Status Prefixed(absl::string_view prefix, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(prefix, status.message()));
}

}  // namespace

absl::StatusOr<ForwardGraphState> ForwardEntryState(
    const v1::PlanMemoryRequest& request) {
  const v1::ForwardGraph& forward = request.forward();
  if (request.events_size() == 0) {
    return absl::InvalidArgumentError(
        "forward: only a request with events may carry a forward");
  }
  if (forward.request().events_size() == 0) {
    return absl::InvalidArgumentError("forward.request: events are missing");
  }
  if (forward.request().has_forward()) {
    return absl::InvalidArgumentError(
        "forward.request.forward: a forward's request carries no forward of "
        "its own");
  }
  PoolLines lines;
  WrapperProgram program;
  absl::StatusOr<Problem> problem =
      RequestToProblem(forward.request(), &lines, &program);
  if (!problem.ok()) return Prefixed("forward.request.", problem.status());
  if (!forward.has_plan()) {
    return absl::InvalidArgumentError("forward.plan: is missing");
  }
  absl::StatusOr<Plan> plan = ResponseToPlan(forward.plan());
  if (!plan.ok()) return Prefixed("forward.plan.", plan.status());
  if (absl::Status status = ValidatePlan(*problem, *plan); !status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("forward.plan: not a valid plan of forward.request: ",
                     status.message()));
  }
  const std::vector<std::string> outputs(
      forward.request().output_names().begin(),
      forward.request().output_names().end());
  const absl::flat_hash_set<std::string> output_set(outputs.begin(),
                                                    outputs.end());
  std::vector<InputSource> sources;
  absl::flat_hash_set<std::string> inputs;
  for (int i = 0; i < forward.input_sources_size(); ++i) {
    const v1::InputSource& wire = forward.input_sources(i);
    const std::string label = absl::StrCat("forward.input_sources[", i, "]");
    if (wire.input().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(label, ": input is missing"));
    }
    if (!inputs.insert(wire.input()).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          label, ": input \"", wire.input(), "\" repeats an earlier source"));
    }
    if (!output_set.contains(wire.forward_output())) {
      return absl::InvalidArgumentError(
          absl::StrCat(label, ": forward_output \"", wire.forward_output(),
                       "\" is not one of forward.request.output_names"));
    }
    sources.push_back(InputSource{wire.input(), wire.forward_output()});
  }
  ForwardGraphState state;
  state.problem = *std::move(problem);
  state.plan = *std::move(plan);
  state.timeline = WholeGraphTimeline(state.problem, &program, &lines);
  state.outputs = outputs;
  state.sources = std::move(sources);
  return state;
}

absl::StatusOr<ResolvedRequest> ResolveRequest(
    const v1::PlanMemoryRequest& request) {
  ResolvedRequest resolved;
  absl::StatusOr<Problem> problem =
      RequestToProblem(request, &resolved.lines, &resolved.program);
  if (!problem.ok()) return problem.status();
  std::optional<ForwardGraphState> forward;
  if (request.has_forward()) {
    absl::StatusOr<ForwardGraphState> state = ForwardEntryState(request);
    if (!state.ok()) return state.status();
    forward = *std::move(state);
    google::protobuf::io::StringOutputStream stream(&resolved.forward_key);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    request.forward().SerializeToCodedStream(&coded);
  }
  absl::StatusOr<std::string> strategy =
      StrategyName(request.options().strategy());
  if (!strategy.ok()) return strategy.status();
  absl::StatusOr<absl::Duration> budget = TimeBudget(request.options());
  if (!budget.ok()) return budget.status();
  resolved.problem = *std::move(problem);
  resolved.strategy = *std::move(strategy);
  resolved.time_budget = *budget;
  resolved.events = request.events_size() > 0;
  const bool lines = !resolved.program.lines.empty();
  if (!forward) {
    resolved.timeline = WholeGraphTimeline(resolved.problem,
                                           lines ? &resolved.program : nullptr,
                                           lines ? &resolved.lines : nullptr);
    return resolved;
  }
  // The measured step's state: a training loop's steady state, the step
  // replayed from the forward's own start until the segments it leaves the
  // next step repeat (core/entry_state.h SteadyTrainingStep); the forward
  // replayed from there gives the backward's entry.
  const std::vector<std::string> backward_outputs(
      request.output_names().begin(), request.output_names().end());
  std::optional<std::vector<ReuseDecision>> reuse;
  if (lines) {
    reuse =
        ReuseDecisionsOf(resolved.problem, resolved.program, resolved.lines);
  }
  SteadyStep steady = SteadyTrainingStep(
      forward->problem, forward->plan, forward->timeline, forward->outputs,
      forward->sources, resolved.problem, &resolved.program, &resolved.lines,
      backward_outputs, reuse.has_value() ? &*reuse : nullptr);
  resolved.timeline =
      steady.backward_timeline
          ? *std::move(steady.backward_timeline)
          : WholeGraphTimeline(resolved.problem, &resolved.program,
                               &resolved.lines, &steady.entry);
  auto step = std::make_shared<TrainingStep>();
  step->forward = std::move(forward->problem);
  step->forward_plan = std::move(forward->plan);
  step->forward_timeline = std::move(steady.forward_timeline);
  step->forward_outputs = std::move(forward->outputs);
  step->sources = std::move(forward->sources);
  step->backward_outputs = backward_outputs;
  step->backward_reuse = std::move(reuse);
  resolved.step = std::move(step);
  return resolved;
}

PlanContext WithWrapperLines(const ResolvedRequest& resolved,
                             PlanContext context) {
  if (!resolved.program.lines.empty()) {
    context.wrapper_program = &resolved.program;
    context.wrapper_lines = &resolved.lines;
  }
  context.timeline = &resolved.timeline;
  context.step = resolved.step.get();
  return context;
}

v1::PlanMemoryRequest ProblemToRequest(const Problem& problem,
                                       v1::Strategy strategy) {
  v1::PlanMemoryRequest request;
  request.mutable_buffers()->Reserve(static_cast<int>(problem.buffers.size()));
  for (const Buffer& buffer : problem.buffers) {
    v1::Buffer* wire = request.add_buffers();
    for (const std::string& name : buffer.names) wire->add_names(name);
    wire->set_size_bytes(buffer.size);
    wire->set_symbolic_size(buffer.symbolic_size);
    wire->mutable_live_range()->set_begin(buffer.live_range.begin);
    wire->mutable_live_range()->set_end(buffer.live_range.end);
    wire->set_is_output(buffer.is_output);
    wire->set_device(buffer.device);
    wire->set_dtype(buffer.dtype);
    wire->set_size_is_data_dependent(buffer.size_is_data_dependent);
    wire->set_alignment(buffer.alignment);
    if (buffer.fixed_offset) wire->set_fixed_offset(*buffer.fixed_offset);
  }
  v1::PlanOptions* options = request.mutable_options();
  options->set_strategy(strategy);
  options->set_pool_mode(PoolModeToProto(problem.pool_mode));
  options->set_alignment(problem.alignment);
  options->set_capacity_bytes(problem.capacity);
  options->set_outputs_released_together(problem.outputs_released_together);
  options->set_reserve_segments(problem.reserve_segments);
  options->set_private_pool(problem.private_pool);
  // Release groups, in order of their numbers, each by its outputs' first
  // names (a nameless buffer cannot be named: it goes without).
  std::map<int32_t, v1::ReleaseGroup*> groups;
  for (const Buffer& buffer : problem.buffers) {
    if (buffer.release_group >= 0 && !buffer.names.empty()) {
      groups.try_emplace(buffer.release_group, nullptr);
    }
  }
  for (auto& [number, group] : groups) group = request.add_release_groups();
  for (const Buffer& buffer : problem.buffers) {
    if (buffer.release_group >= 0 && !buffer.names.empty()) {
      groups[buffer.release_group]->add_outputs(buffer.names.front());
    }
  }
  return request;
}

absl::StatusOr<v1::PlanMemoryResponse> PlanToResponse(
    const Problem& problem, const Plan& plan, const ResponseInfo& info) {
  if (plan.assignments.size() != problem.buffers.size()) {
    return absl::InternalError(
        absl::StrCat("plan has ", plan.assignments.size(), " assignments for ",
                     problem.buffers.size(), " buffers"));
  }
  v1::PlanMemoryResponse response;
  response.set_graph_hash(info.graph_hash);
  response.mutable_pools()->Reserve(static_cast<int>(plan.pools.size()));
  for (const Pool& pool : plan.pools) {
    v1::Pool* wire = response.add_pools();
    wire->set_name(pool.name);
    wire->set_device(pool.device);
    wire->set_size_bytes(pool.size);
    wire->set_symbolic_size(pool.symbolic_size);
  }
  response.mutable_assignments()->Reserve(
      static_cast<int>(plan.assignments.size()));
  for (size_t i = 0; i < plan.assignments.size(); ++i) {
    const Assignment& assignment = plan.assignments[i];
    if (assignment.pool < 0 ||
        static_cast<size_t>(assignment.pool) >= plan.pools.size()) {
      return absl::InternalError(absl::StrCat("plan assigns buffers[", i,
                                              "] to pool #", assignment.pool,
                                              " of ", plan.pools.size()));
    }
    v1::Assignment* wire = response.add_assignments();
    wire->set_pool(plan.pools[assignment.pool].name);
    wire->set_offset(assignment.offset);
    if (i < plan.symbolic_offsets.size()) {
      wire->set_symbolic_offset(plan.symbolic_offsets[i]);
    }
  }
  if (info.lines != nullptr) {
    const PoolLines& lines = *info.lines;
    for (size_t i = 0; i < lines.group_of_line.size(); ++i) {
      const int32_t group = lines.group_of_line[i];
      if (group >= 0 && lines.allocates[i] &&
          group < response.assignments_size()) {
        response.mutable_assignments(group)->set_allocation_event(
            static_cast<int64_t>(i));
      }
    }
    const std::vector<PoolUsage> usage = MarkFirstLastUsage(lines, plan);
    for (size_t p = 0; p < usage.size(); ++p) {
      v1::Pool* wire = response.mutable_pools(static_cast<int>(p));
      if (usage[p].first_allocation_line >= 0) {
        wire->set_first_allocation_event(usage[p].first_allocation_line);
      }
      if (usage[p].last_free_line >= 0) {
        wire->set_last_free_event(usage[p].last_free_line);
      }
    }
  }
  if (plan.decisions != nullptr) {
    AddDecisions(*plan.decisions, info.lines != nullptr, response);
  }
  for (const SegmentReservation& reservation : plan.reservations) {
    v1::SegmentReservation* wire = response.add_segment_reservations();
    wire->set_device(reservation.device);
    wire->set_size_bytes(reservation.size);
  }
  for (const SegmentReservation& reservation : plan.forward_reservations) {
    v1::SegmentReservation* wire = response.add_forward_segment_reservations();
    wire->set_device(reservation.device);
    wire->set_size_bytes(reservation.size);
  }
  v1::PlanStats* stats = response.mutable_stats();
  const LowerBounds bounds = ComputeLowerBounds(problem);
  stats->set_lower_bound_bytes(bounds.plain);
  stats->set_total_pool_bytes(TotalPoolBytes(plan));
  stats->set_peak_bytes(PeakPoolBytes(problem, plan));
  stats->set_planner(plan.planner.empty() ? info.planner : plan.planner);
  stats->set_planning_micros(absl::ToInt64Microseconds(info.planning_time));
  stats->set_proven_optimal(plan.proven_optimal);
  stats->set_mode_lower_bound_bytes(bounds.mode);
  stats->set_retained_bytes(RetainedBytes(problem, plan));
  std::optional<GraphTimeline> own;
  const GraphTimeline* timeline = info.timeline;
  if (timeline == nullptr) {
    own = TimelineOfBuffers(problem);
    timeline = &*own;
  }
  for (const DevicePeaks& peaks : WholeGraphPeaks(problem, plan, *timeline)) {
    v1::DeviceStats* device = stats->add_devices();
    device->set_device(peaks.device);
    device->set_predicted_peak_bytes(peaks.predicted);
    device->set_baseline_peak_bytes(peaks.baseline);
    device->set_predicted_peak_lower_bound_bytes(peaks.lower_bound);
    device->set_predicted_reserved_bytes(peaks.predicted_reserved);
    device->set_baseline_reserved_bytes(peaks.baseline_reserved);
    stats->set_predicted_reserved_bytes(stats->predicted_reserved_bytes() +
                                        peaks.predicted_reserved);
    stats->set_baseline_reserved_bytes(stats->baseline_reserved_bytes() +
                                       peaks.baseline_reserved);
    device->set_predicted_allocations(peaks.predicted_allocations);
    device->set_baseline_allocations(peaks.baseline_allocations);
    stats->set_predicted_allocations(stats->predicted_allocations() +
                                     peaks.predicted_allocations);
    stats->set_baseline_allocations(stats->baseline_allocations() +
                                    peaks.baseline_allocations);
    stats->set_predicted_peak_bytes(stats->predicted_peak_bytes() +
                                    peaks.predicted);
    stats->set_baseline_peak_bytes(stats->baseline_peak_bytes() +
                                   peaks.baseline);
    stats->set_predicted_peak_lower_bound_bytes(
        stats->predicted_peak_lower_bound_bytes() + peaks.lower_bound);
  }
  response.set_cache(info.cache);
  return response;
}

absl::StatusOr<Plan> ResponseToPlan(const v1::PlanMemoryResponse& response) {
  Plan plan;
  plan.planner = response.stats().planner();
  plan.proven_optimal = response.stats().proven_optimal();
  absl::flat_hash_map<std::string, int32_t> pool_index;
  for (int i = 0; i < response.pools_size(); ++i) {
    const v1::Pool& wire = response.pools(i);
    if (!pool_index.emplace(wire.name(), i).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("pools[", i, "]: name \"", wire.name(), "\" repeats"));
    }
    plan.pools.push_back(Pool{wire.name(), wire.device(), wire.size_bytes(),
                              wire.symbolic_size()});
  }
  plan.assignments.reserve(response.assignments_size());
  for (int i = 0; i < response.assignments_size(); ++i) {
    const v1::Assignment& wire = response.assignments(i);
    const auto it = pool_index.find(wire.pool());
    if (it == pool_index.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "assignments[", i, "]: pool \"", wire.pool(), "\" is not a pool"));
    }
    plan.assignments.push_back(Assignment{it->second, wire.offset()});
    if (!wire.symbolic_offset().empty()) {
      plan.symbolic_offsets.resize(response.assignments_size());
      plan.symbolic_offsets[i] = wire.symbolic_offset();
    }
  }
  for (const v1::SegmentReservation& wire : response.segment_reservations()) {
    plan.reservations.push_back(
        SegmentReservation{wire.device(), wire.size_bytes()});
  }
  for (const v1::SegmentReservation& wire :
       response.forward_segment_reservations()) {
    plan.forward_reservations.push_back(
        SegmentReservation{wire.device(), wire.size_bytes()});
  }
  return plan;
}

}  // namespace memplan
