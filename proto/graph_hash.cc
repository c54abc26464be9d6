#include "proto/graph_hash.h"

#include <xxhash.h>

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/strategies.h"
#include "core/symbolic/symbolic_plan.h"
#include "proto/convert.h"

namespace memplan {
namespace {

// Appends integers little-endian and strings length-prefixed.
class Encoder {
 public:
  void U8(uint8_t value) { bytes_.push_back(static_cast<char>(value)); }
  void U32(uint32_t value) { LittleEndian(value, 4); }
  void U64(uint64_t value) { LittleEndian(value, 8); }
  void I64(int64_t value) { LittleEndian(static_cast<uint64_t>(value), 8); }
  void String(absl::string_view value) {
    U64(value.size());
    bytes_.append(value.data(), value.size());
  }

  std::string Take() { return std::move(bytes_); }

 private:
  void LittleEndian(uint64_t value, int width) {
    for (int i = 0; i < width; ++i) {
      bytes_.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
    }
  }

  std::string bytes_;
};

// Whether plans of `strategy` depend on names, dtypes, symbolic sizes and
// every wrapper line (core/inductor/reuse_planner.h, core/nnc/nnc_planner.h).
bool FollowsLabels(absl::string_view strategy) {
  const Planner* planner = FindPlanner(strategy);
  return planner != nullptr && planner->capabilities().follows_wrapper_lines;
}

// Appends the labels section (proto/graph_hash.h).
void EncodeLabels(const Problem& problem, const WrapperProgram* program,
                  Encoder& encoder) {
  for (const Buffer& buffer : problem.buffers) {
    encoder.U64(buffer.names.size());
    for (const std::string& name : buffer.names) encoder.String(name);
    encoder.String(buffer.dtype);
    encoder.String(buffer.symbolic_size);
  }
  const size_t num_lines = program == nullptr ? 0 : program->lines.size();
  encoder.U64(num_lines);
  for (size_t i = 0; i < num_lines; ++i) {
    const WrapperLine& line = program->lines[i];
    encoder.U8(static_cast<uint8_t>(line.kind));
    encoder.String(line.name);
    encoder.String(line.reused_as);
    encoder.I64(line.allocation.size);
    encoder.String(line.allocation.symbolic_size);
    encoder.String(line.allocation.device);
    encoder.String(line.allocation.dtype);
    encoder.U8(line.allocation.size_is_data_dependent ? 1 : 0);
    encoder.U8(line.has_allocation ? 1 : 0);
    encoder.I64(line.scheduler_node);
    encoder.U64(line.output_bytes.size());
    for (const Bytes bytes : line.output_bytes) encoder.I64(bytes);
    encoder.I64(line.output_index);
    encoder.U8(line.reuses_input ? 1 : 0);
  }
  const auto strings = [&encoder](const std::vector<std::string>& values) {
    encoder.U64(values.size());
    for (const std::string& value : values) encoder.String(value);
  };
  strings(program == nullptr ? std::vector<std::string>()
                             : program->output_names);
  strings(program == nullptr ? std::vector<std::string>()
                             : program->removed_buffers);
  const size_t num_nodes =
      program == nullptr ? 0 : program->scheduler_node_bytes.size();
  encoder.U64(num_nodes);
  for (size_t i = 0; i < num_nodes; ++i) {
    encoder.I64(program->scheduler_node_bytes[i]);
  }
}

}  // namespace

std::string GraphHashInput(const Problem& problem, absl::string_view strategy,
                           absl::Duration time_budget, const PoolLines* lines,
                           const WrapperProgram* program) {
  const bool dynamic = IsDynamic(problem);
  Encoder encoder;
  encoder.U32(dynamic ? kDynamicGraphHashFormatVersion
                      : kGraphHashFormatVersion);
  encoder.U32(kPlannerVersion);
  encoder.String(strategy);
  encoder.U8(static_cast<uint8_t>(PoolModeToProto(problem.pool_mode)));
  encoder.I64(problem.alignment);
  encoder.I64(problem.capacity);
  encoder.I64(absl::ToInt64Nanoseconds(time_budget));
  encoder.I64(problem.allocator_block);
  encoder.U8((problem.outputs_released_together ? 1 : 0) |
             (problem.reserve_segments ? 2 : 0) |
             (problem.private_pool ? 4 : 0));
  encoder.U64(problem.buffers.size());
  for (size_t i = 0; i < problem.buffers.size(); ++i) {
    const Buffer& buffer = problem.buffers[i];
    encoder.I64(buffer.size);
    encoder.I64(buffer.live_range.begin);
    encoder.I64(buffer.live_range.end);
    encoder.U8(buffer.is_output ? 1 : 0);
    encoder.U8(buffer.size_is_data_dependent ? 1 : 0);
    encoder.String(buffer.device);
    encoder.I64(problem.AlignmentOf(i));
    encoder.I64(buffer.fixed_offset.value_or(-1));  // -1: free
    encoder.I64(buffer.release_group);              // -1: released apart
  }
  const size_t num_events = lines == nullptr ? 0 : lines->group_of_line.size();
  encoder.U64(num_events);
  for (size_t i = 0; i < num_events; ++i) {
    encoder.I64(lines->group_of_line[i]);
    encoder.U8(lines->allocates[i] ? 1 : 0);
    encoder.I64(lines->timestep_of_line[i]);
  }
  encoder.U64(problem.unplanned.size());
  for (const UnplannedBuffer& buffer : problem.unplanned) {
    encoder.I64(buffer.size);
    encoder.I64(buffer.live_range.begin);
    encoder.I64(buffer.live_range.end);
    encoder.U8(buffer.is_input ? 1 : 0);
    encoder.String(buffer.device);
  }
  if (dynamic) {
    for (const Buffer& buffer : problem.buffers) {
      encoder.String(buffer.symbolic_size);
    }
  }
  // The baseline peak of a request with lines follows Inductor's reuse
  // pass, which follows them all, as strategies reuse and nnc do.
  if (FollowsLabels(strategy) || program != nullptr) {
    EncodeLabels(problem, program, encoder);
  }
  // Last, and only when there are some, so that a request without them
  // keeps the encoding (and hash) it had before they existed.
  size_t num_workspaces = 0;
  size_t num_calls = 0;
  if (program != nullptr) {
    for (const WrapperLine& line : program->lines) {
      num_workspaces += line.workspace > 0;
      num_calls += !line.call.empty();
    }
  }
  if (!problem.cached_blocks.empty() || num_workspaces > 0 || num_calls > 0) {
    encoder.U64(problem.cached_blocks.size());
    for (const CachedBlock& block : problem.cached_blocks) {
      encoder.String(block.device);
      encoder.I64(block.size);
      encoder.U8(block.small_pool ? 1 : 0);
    }
  }
  // Then, only when some extern line has one or some call allocations,
  // the workspaces.
  if (num_workspaces > 0 || num_calls > 0) {
    encoder.U64(num_workspaces);
    for (size_t i = 0; i < program->lines.size(); ++i) {
      if (program->lines[i].workspace <= 0) continue;
      encoder.U64(i);
      encoder.I64(program->lines[i].workspace);
    }
  }
  // Then, only when some extern line has them, the call allocations.
  if (num_calls > 0) {
    encoder.U64(num_calls);
    for (size_t i = 0; i < program->lines.size(); ++i) {
      const std::vector<CallAllocation>& calls = program->lines[i].call;
      if (calls.empty()) continue;
      encoder.U64(i);
      encoder.U64(calls.size());
      for (const CallAllocation& call : calls) {
        encoder.I64(call.output);
        encoder.I64(call.scratch);
        encoder.I64(call.freed_before);
      }
    }
  }
  return encoder.Take();
}

absl::uint128 GraphHashDigest(const Problem& problem,
                              absl::string_view strategy,
                              absl::Duration time_budget,
                              const PoolLines* lines,
                              const WrapperProgram* program) {
  const std::string input =
      GraphHashInput(problem, strategy, time_budget, lines, program);
  const XXH128_hash_t hash = XXH3_128bits(input.data(), input.size());
  return absl::MakeUint128(hash.high64, hash.low64);
}

absl::uint128 GraphHashDigest(const ResolvedRequest& resolved) {
  const PoolLines* lines = resolved.events ? &resolved.lines : nullptr;
  const WrapperProgram* program =
      resolved.program.lines.empty() ? nullptr : &resolved.program;
  if (resolved.forward_key.empty()) {
    return GraphHashDigest(resolved.problem, resolved.strategy,
                           resolved.time_budget, lines, program);
  }
  // A backward with its forward: the forward decides the whole-graph stats
  // and, for strategy auto, the plan.
  std::string input = GraphHashInput(resolved.problem, resolved.strategy,
                                     resolved.time_budget, lines, program);
  absl::StrAppend(&input, "\nforward ", resolved.forward_key.size(), " ",
                  resolved.forward_key);
  const XXH128_hash_t hash = XXH3_128bits(input.data(), input.size());
  return absl::MakeUint128(hash.high64, hash.low64);
}

std::string GraphHashHex(absl::uint128 digest) {
  return absl::StrFormat("%016x%016x", absl::Uint128High64(digest),
                         absl::Uint128Low64(digest));
}

std::string GraphHash(const Problem& problem, absl::string_view strategy,
                      absl::Duration time_budget, const PoolLines* lines,
                      const WrapperProgram* program) {
  return GraphHashHex(
      GraphHashDigest(problem, strategy, time_budget, lines, program));
}

std::string GraphHash(const ResolvedRequest& resolved) {
  return GraphHashHex(GraphHashDigest(resolved));
}

absl::StatusOr<std::string> RequestGraphHash(
    const v1::PlanMemoryRequest& request) {
  absl::StatusOr<ResolvedRequest> resolved = ResolveRequest(request);
  if (!resolved.ok()) return resolved.status();
  return GraphHash(*resolved);
}

}  // namespace memplan
