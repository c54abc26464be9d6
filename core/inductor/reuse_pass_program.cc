#include "core/inductor/reuse_pass_program.h"

#include <algorithm>
#include <cstddef>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace memplan {
namespace reuse_internal {
namespace {

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
        lines.buffers.size(), " groups) do not describe the ", source.size(),
        " lines and ", problem.buffers.size(), " buffers given"));
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
      case WrapperLineKind::kPlanningNoOp:
        continue;  // their plan() leaves the planning state alone
      case WrapperLineKind::kOther:
      case WrapperLineKind::kExternAllocate:
      case WrapperLineKind::kMultiOutput:
      case WrapperLineKind::kFreeInput:
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
// (reuse_pass_program.h): per timestep, FREEs of the non-empty ranges
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

}  // namespace

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
    if (buffer.fixed_offset.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "buffers[", i, "] (\"", buffer.names[0],
          "\"): fixed_offset is set, which strategy ", strategy,
          " cannot honour (the compiler pass it restates places every "
          "storage itself); use best_fit, optimal or auto"));
    }
  }
  return absl::OkStatus();
}

// Whether a size is known at compile time: no symbols, no data dependence.
bool IsStaticSize(const std::string& symbolic_size, bool data_dependent) {
  if (data_dependent) return false;
  return std::all_of(symbolic_size.begin(), symbolic_size.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace reuse_internal
}  // namespace memplan
