#include "core/inductor/wrapper_lines.h"

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace memplan {
namespace {

// Whether the line names a buffer it plans: ALLOCATE, FREE_IF_NOT_REUSED,
// REUSE.
bool PlansABuffer(const WrapperLine& line) {
  return line.kind == WrapperLineKind::kAllocate ||
         line.kind == WrapperLineKind::kFreeIfNotReused ||
         line.kind == WrapperLineKind::kReuse;
}

absl::Status LineError(absl::string_view label, size_t index,
                       absl::string_view field, absl::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat(label, "[", index, "].", field, ": ", message));
}

}  // namespace

bool IsMemoryPlanningLine(const WrapperLine& line) {
  return PlansABuffer(line) || line.kind == WrapperLineKind::kPlanningNoOp;
}

absl::StatusOr<PoolLines> GroupWrapperLines(const WrapperProgram& program,
                                            absl::string_view label) {
  const std::vector<WrapperLine>& lines = program.lines;
  // drop_removed_buffers: such lines become NullLines.
  const absl::flat_hash_set<std::string> removed(
      program.removed_buffers.begin(), program.removed_buffers.end());
  std::vector<bool> dropped(lines.size(), false);
  for (size_t i = 0; i < lines.size(); ++i) {
    dropped[i] = PlansABuffer(lines[i]) && removed.contains(lines[i].name);
  }

  // compute_buffer_groups.
  PoolLines result;
  absl::flat_hash_map<std::string, int32_t> group_of_name;
  // Every name an earlier line freed, reused or bound to an extern
  // kernel's storage (grouped or not), and that line (allocated names are
  // in group_of_name): a buffer's name is unique in a graph, and an
  // ALLOCATE of such a name would give the group the earlier lines' frees
  // (a live range that starts before its allocation).
  absl::flat_hash_map<std::string, size_t> named_at;
  const auto note_name = [&](const std::string& name, size_t i) {
    if (!name.empty()) named_at.try_emplace(name, i);
  };
  for (size_t i = 0; i < lines.size(); ++i) {
    const WrapperLine& line = lines[i];
    if (PlansABuffer(line) && line.name.empty()) {
      return LineError(label, i, "name", "is empty");
    }
    if (dropped[i]) continue;
    if (line.kind == WrapperLineKind::kAllocate) {
      if (line.allocation.size < 0) {
        return LineError(
            label, i, "size_bytes",
            absl::StrCat("buffer \"", line.name, "\" has a negative size ",
                         line.allocation.size));
      }
      if (const auto earlier = named_at.find(line.name);
          earlier != named_at.end() && !group_of_name.contains(line.name)) {
        return LineError(
            label, i, "name",
            absl::StrCat("buffer \"", line.name, "\" is allocated after ",
                         label, "[", earlier->second,
                         "] named it (a graph's buffer names are unique)"));
      }
      const auto [it, inserted] = group_of_name.try_emplace(
          line.name, static_cast<int32_t>(result.buffers.size()));
      if (!inserted) {
        return LineError(label, i, "name",
                         absl::StrCat("buffer \"", line.name,
                                      "\" is allocated twice (or allocated "
                                      "after a REUSE named it)"));
      }
      Buffer buffer;
      buffer.names = {line.name};
      const AllocationInfo& allocation = line.allocation;
      buffer.size = allocation.size;
      buffer.symbolic_size = allocation.symbolic_size;
      buffer.device = allocation.device;
      buffer.dtype = allocation.dtype;
      buffer.size_is_data_dependent = allocation.size_is_data_dependent;
      result.buffers.push_back(std::move(buffer));
    } else if (line.kind == WrapperLineKind::kReuse) {
      if (line.reused_as.empty()) {
        return LineError(label, i, "reused_as", "is empty");
      }
      if (group_of_name.contains(line.reused_as)) {
        return LineError(label, i, "reused_as",
                         absl::StrCat("buffer \"", line.reused_as,
                                      "\" already has storage"));
      }
      note_name(line.name, i);
      note_name(line.reused_as, i);
      // Inductor leaves buffers that reuse storage it did not allocate
      // (e.g. an extern kernel's) out of every group.
      const auto old = group_of_name.find(line.name);
      if (old == group_of_name.end()) continue;
      const int32_t group = old->second;
      result.buffers[group].names.push_back(line.reused_as);
      group_of_name.emplace(line.reused_as, group);
    } else if (line.kind == WrapperLineKind::kFreeIfNotReused ||
               line.kind == WrapperLineKind::kExternAllocate) {
      note_name(line.name, i);
    } else if (line.kind == WrapperLineKind::kMultiOutput) {
      note_name(line.reused_as, i);
    }
  }

  // convert_to_pool_lines and compute_live_ranges.
  const size_t num_groups = result.buffers.size();
  std::vector<Timestep> first(num_groups, 0);
  std::vector<Timestep> last(num_groups, 0);
  result.group_of_line.assign(lines.size(), -1);
  result.timestep_of_line.assign(lines.size(), 0);
  result.allocates.assign(lines.size(), false);
  Timestep timestep = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    const WrapperLine& line = lines[i];
    if (!IsMemoryPlanningLine(line)) continue;
    if (i == 0 || !IsMemoryPlanningLine(lines[i - 1])) ++timestep;
    result.timestep_of_line[i] = timestep;
    if (dropped[i] || !PlansABuffer(line) ||
        line.kind == WrapperLineKind::kReuse) {
      continue;
    }
    const auto group = group_of_name.find(line.name);
    if (group == group_of_name.end()) continue;  // not a pool line
    const int32_t g = group->second;
    const bool allocates = line.kind == WrapperLineKind::kAllocate;
    // BufferGroup.update_usage; timesteps start at 1, so 0 is "unset".
    first[g] = first[g] == 0 ? timestep : std::min(first[g], timestep);
    last[g] = std::max(last[g], timestep);
    result.group_of_line[i] = g;
    result.allocates[i] = allocates;
  }
  const absl::flat_hash_set<std::string> outputs(program.output_names.begin(),
                                                 program.output_names.end());
  for (size_t g = 0; g < num_groups; ++g) {
    Buffer& buffer = result.buffers[g];
    buffer.is_output = std::any_of(
        buffer.names.begin(), buffer.names.end(),
        [&](const std::string& name) { return outputs.contains(name); });
    buffer.live_range.begin = first[g];
    buffer.live_range.end =
        buffer.is_output ? std::max(last[g], timestep + 1) : last[g];
  }
  return result;
}

std::vector<PoolUsage> MarkFirstLastUsage(const PoolLines& lines,
                                          const Plan& plan) {
  const size_t num_pools = plan.pools.size();
  std::vector<PoolUsage> usage(num_pools);
  // The end of the latest live range in each pool.
  std::vector<Timestep> pool_end(num_pools, 0);
  for (size_t g = 0; g < lines.buffers.size(); ++g) {
    const int32_t pool = plan.assignments[g].pool;
    if (pool < 0) continue;
    pool_end[pool] = std::max(pool_end[pool], lines.buffers[g].live_range.end);
  }
  const size_t num_lines = lines.group_of_line.size();
  std::vector<bool> seen(num_pools, false);
  for (size_t i = 0; i < num_lines; ++i) {
    const int32_t g = lines.group_of_line[i];
    if (g < 0 || !lines.allocates[i]) continue;
    const int32_t pool = plan.assignments[g].pool;
    if (pool < 0 || seen[pool]) continue;
    seen[pool] = true;
    usage[pool].first_allocation_line = static_cast<int64_t>(i);
  }
  seen.assign(num_pools, false);
  for (size_t i = num_lines; i-- > 0;) {
    const int32_t g = lines.group_of_line[i];
    if (g < 0 || lines.allocates[i]) continue;
    const int32_t pool = plan.assignments[g].pool;
    if (pool < 0 || seen[pool]) continue;
    seen[pool] = true;
    if (pool_end[pool] <= lines.timestep_of_line[i]) {
      usage[pool].last_free_line = static_cast<int64_t>(i);
    }
  }
  return usage;
}

absl::StatusOr<WrapperProgram> WrapperLinesFromNodes(
    const std::vector<ScheduledNode>& nodes,
    const std::vector<std::string>& output_names) {
  const absl::flat_hash_set<std::string> outputs(output_names.begin(),
                                                 output_names.end());
  // The buffers written so far: name -> (writing node, write index).
  absl::flat_hash_map<std::string, std::pair<size_t, size_t>> writer;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const ScheduledNode& node = nodes[i];
    for (size_t j = 0; j < node.writes.size(); ++j) {
      const NodeWrite& write = node.writes[j];
      const std::string label = absl::StrCat("nodes[", i, "].writes[", j, "]");
      if (write.name.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat(label, ".name: is empty"));
      }
      if (!writer.try_emplace(write.name, i, j).second) {
        return absl::InvalidArgumentError(absl::StrCat(
            label, ".name: buffer \"", write.name, "\" is written by nodes[",
            writer.at(write.name).first, "] too"));
      }
      if (!write.in_place_of.empty() &&
          std::find(node.reads.begin(), node.reads.end(), write.in_place_of) ==
              node.reads.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat(label, ".in_place_of: buffer \"", write.in_place_of,
                         "\" is not read by the node"));
      }
    }
  }

  // compute_last_usage: walk backwards; outputs are used "after" the graph.
  std::vector<std::vector<std::string>> last_usage(nodes.size());
  absl::flat_hash_set<std::string> used_later(outputs.begin(), outputs.end());
  for (size_t i = nodes.size(); i-- > 0;) {
    const ScheduledNode& node = nodes[i];
    const auto use = [&](const std::string& name) {
      if (used_later.insert(name).second) last_usage[i].push_back(name);
    };
    for (const NodeWrite& write : node.writes) use(write.name);
    for (const std::string& read : node.reads) use(read);
  }

  WrapperProgram program;
  program.output_names = output_names;
  absl::flat_hash_set<std::string> reused;  // names whose storage moved on
  for (size_t i = 0; i < nodes.size(); ++i) {
    const ScheduledNode& node = nodes[i];
    const absl::flat_hash_set<std::string> last_here(last_usage[i].begin(),
                                                     last_usage[i].end());
    for (const NodeWrite& write : node.writes) {
      WrapperLine line;
      const auto old = writer.find(write.in_place_of);
      const bool in_place = !write.in_place_of.empty() &&
                            last_here.contains(write.in_place_of) &&
                            old != writer.end() && old->second.first < i &&
                            !reused.contains(write.in_place_of);
      const NodeWrite* old_write =
          in_place ? &nodes[old->second.first].writes[old->second.second]
                   : nullptr;
      if (old_write != nullptr &&
          old_write->allocation.device == write.allocation.device &&
          old_write->allocation.size >= write.allocation.size) {
        line.kind = WrapperLineKind::kReuse;
        line.name = write.in_place_of;
        line.reused_as = write.name;
        reused.insert(write.in_place_of);
      } else {
        line.kind = WrapperLineKind::kAllocate;
        line.name = write.name;
        line.allocation = write.allocation;
      }
      program.lines.push_back(std::move(line));
    }
    WrapperLine kernel;
    kernel.kind = WrapperLineKind::kOther;
    kernel.name = node.name;
    program.lines.push_back(std::move(kernel));
    for (const std::string& name : last_usage[i]) {
      // Graph inputs (never written) are not planned; a buffer whose
      // storage a later name took over is freed under that name.
      if (!writer.contains(name) || reused.contains(name)) continue;
      WrapperLine free;
      free.kind = WrapperLineKind::kFreeIfNotReused;
      free.name = name;
      program.lines.push_back(std::move(free));
    }
  }
  return program;
}

}  // namespace memplan
