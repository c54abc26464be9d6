#include "proto/graph_hash.h"

#include <xxhash.h>

#include <cstddef>

#include "absl/strings/escaping.h"
#include "core/symbolic_plan.h"
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

// Whether the request is dynamic: its plan depends on more than format 4
// encodes (data-dependent sizes, symbolic sizes naming symbols).
bool IsDynamic(const Problem& problem) {
  if (MayHaveSymbols(problem)) return true;
  for (const Buffer& buffer : problem.buffers) {
    if (buffer.size_is_data_dependent) return true;
  }
  return false;
}

}  // namespace

std::string GraphHashInput(const Problem& problem, absl::string_view strategy,
                           absl::Duration time_budget, const PoolLines* lines) {
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
    encoder.I64(buffer.fixed_offset);
  }
  const size_t num_events = lines == nullptr ? 0 : lines->group_of_line.size();
  encoder.U64(num_events);
  for (size_t i = 0; i < num_events; ++i) {
    encoder.I64(lines->group_of_line[i]);
    encoder.U8(lines->allocates[i] ? 1 : 0);
    encoder.I64(lines->timestep_of_line[i]);
  }
  if (dynamic) {
    for (const Buffer& buffer : problem.buffers) {
      encoder.String(buffer.symbolic_size);
    }
  }
  return encoder.Take();
}

std::string GraphHash(const Problem& problem, absl::string_view strategy,
                      absl::Duration time_budget, const PoolLines* lines) {
  const std::string input =
      GraphHashInput(problem, strategy, time_budget, lines);
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, XXH3_128bits(input.data(), input.size()));
  return absl::BytesToHexString(absl::string_view(
      reinterpret_cast<const char*>(canonical.digest), sizeof(canonical)));
}

absl::StatusOr<std::string> RequestGraphHash(
    const v1::PlanMemoryRequest& request) {
  absl::StatusOr<ResolvedRequest> resolved = ResolveRequest(request);
  if (!resolved.ok()) return resolved.status();
  return GraphHash(*resolved);
}

std::string GraphHash(const ResolvedRequest& resolved) {
  return GraphHash(resolved.problem, resolved.strategy, resolved.time_budget,
                   resolved.events ? &resolved.lines : nullptr);
}

}  // namespace memplan
