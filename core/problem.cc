#include "core/problem.h"

#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/caching_allocator.h"
#include "core/symbolic/symbolic_plan.h"

namespace memplan {
namespace {

bool IsPowerOfTwo(Bytes value) {
  return value > 0 && (value & (value - 1)) == 0;
}

absl::Status CheckBuffer(const Problem& problem, size_t i,
                         SymbolicSizeChecker& symbolic_sizes) {
  const Buffer& buffer = problem.buffers[i];
  if (buffer.names.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(BufferLabel(problem, i), ": names is empty"));
  }
  for (size_t j = 0; j < buffer.names.size(); ++j) {
    if (buffer.names[j].empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(BufferLabel(problem, i), ": names[", j, "] is empty"));
    }
  }
  if (buffer.size < 0 || buffer.size > kMaxBufferBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(BufferLabel(problem, i), ": size_bytes must be in [0, ",
                     kMaxBufferBytes, "], got ", buffer.size));
  }
  const LiveRange& range = buffer.live_range;
  if (range.begin < 0 || range.begin > kMaxTimestep) {
    return absl::InvalidArgumentError(absl::StrCat(
        BufferLabel(problem, i), ": live_range.begin must be in [0, ",
        kMaxTimestep, "], got ", range.begin));
  }
  if (range.end < 0 || range.end > kMaxTimestep) {
    return absl::InvalidArgumentError(absl::StrCat(
        BufferLabel(problem, i), ": live_range.end must be in [0, ",
        kMaxTimestep, "], got ", range.end));
  }
  if (range.begin > range.end) {
    return absl::InvalidArgumentError(
        absl::StrCat(BufferLabel(problem, i), ": live_range.begin (",
                     range.begin, ") > live_range.end (", range.end, ")"));
  }
  if (buffer.alignment != 0 &&
      (!IsPowerOfTwo(buffer.alignment) || buffer.alignment > kMaxAlignment)) {
    return absl::InvalidArgumentError(
        absl::StrCat(BufferLabel(problem, i),
                     ": alignment must be 0 or a power of two in [1, ",
                     kMaxAlignment, "], got ", buffer.alignment));
  }
  if (absl::Status symbolic =
          symbolic_sizes.Check(buffer.symbolic_size, buffer.size);
      !symbolic.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(BufferLabel(problem, i), ": ", symbolic.message()));
  }
  if (!buffer.fixed_offset) return absl::OkStatus();
  const Bytes fixed_offset = *buffer.fixed_offset;
  if (fixed_offset < 0 || fixed_offset > kMaxBufferBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(BufferLabel(problem, i), ": fixed_offset must be in [0, ",
                     kMaxBufferBytes, "], got ", fixed_offset));
  }
  if (fixed_offset % problem.AlignmentOf(i) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(BufferLabel(problem, i), ": fixed_offset ", fixed_offset,
                     " is not a multiple of the buffer's alignment ",
                     problem.AlignmentOf(i)));
  }
  return absl::OkStatus();
}

// Checks unplanned buffer i: its size and live range.
absl::Status CheckUnplanned(const Problem& problem, size_t i) {
  const UnplannedBuffer& buffer = problem.unplanned[i];
  const std::string label =
      buffer.name.empty()
          ? absl::StrCat("unplanned[", i, "]")
          : absl::StrCat("unplanned[", i, "] (\"", buffer.name, "\")");
  if (buffer.size < 0 || buffer.size > kMaxBufferBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(label, ": size_bytes must be in [0, ", kMaxBufferBytes,
                     "], got ", buffer.size));
  }
  const LiveRange& range = buffer.live_range;
  if (range.begin < 0 || range.end > kMaxTimestep || range.begin > range.end) {
    return absl::InvalidArgumentError(absl::StrCat(
        label, ": live_range must satisfy 0 <= begin <= end <= ", kMaxTimestep,
        ", got [", range.begin, ", ", range.end, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateCachedBlocks(const Problem& problem) {
  for (size_t i = 0; i < problem.cached_blocks.size(); ++i) {
    const CachedBlock& block = problem.cached_blocks[i];
    if (block.device.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cached_blocks[", i, "]: device is required"));
    }
    if (block.size <= 0 || block.size > kMaxBufferBytes ||
        block.size % CachingAllocatorModel::kMinBlockSize != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cached_blocks[", i, "]: size_bytes must be a multiple of ",
          CachingAllocatorModel::kMinBlockSize, " in (0, ", kMaxBufferBytes,
          "] (the caching allocator's blocks), got ", block.size));
    }
    if (block.small_pool && block.size > CachingAllocatorModel::kSmallBuffer) {
      return absl::InvalidArgumentError(
          absl::StrCat("cached_blocks[", i, "]: a small-pool block is at most ",
                       CachingAllocatorModel::kSmallBuffer,
                       " bytes (its segment), got ", block.size));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateProblem(const Problem& problem) {
  if (problem.buffers.empty()) {
    return absl::InvalidArgumentError(
        "buffers: empty (a request needs at least one buffer)");
  }
  if (!IsPowerOfTwo(problem.alignment) || problem.alignment > kMaxAlignment) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.alignment must be a power of two in [1, ",
                     kMaxAlignment, "], got ", problem.alignment));
  }
  if (problem.capacity < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.capacity_bytes must be >= 0 (0: no limit), got ",
                     problem.capacity));
  }
  if (!IsPowerOfTwo(problem.allocator_block) ||
      problem.allocator_block > kMaxAlignment) {
    return absl::InvalidArgumentError(absl::StrCat(
        "options.allocator_block_bytes must be a power of two in [1, ",
        kMaxAlignment, "] (0: 512), got ", problem.allocator_block));
  }
  for (size_t i = 0; i < problem.unplanned.size(); ++i) {
    absl::Status status = CheckUnplanned(problem, i);
    if (!status.ok()) return status;
  }
  if (absl::Status status = ValidateCachedBlocks(problem); !status.ok()) {
    return status;
  }
  // Each name, to the index of the first buffer that carries it.
  absl::flat_hash_map<absl::string_view, size_t> owner;
  SymbolicSizeChecker symbolic_sizes;
  for (size_t i = 0; i < problem.buffers.size(); ++i) {
    absl::Status status = CheckBuffer(problem, i, symbolic_sizes);
    if (!status.ok()) return status;
    for (const std::string& name : problem.buffers[i].names) {
      const auto [it, inserted] = owner.emplace(absl::string_view(name), i);
      if (!inserted) {
        return absl::InvalidArgumentError(absl::StrCat(
            BufferLabel(problem, i), ": name \"", name, "\" is also a name of ",
            BufferLabel(problem, it->second)));
      }
    }
  }
  return absl::OkStatus();
}

std::string BufferLabel(const Problem& problem, size_t i) {
  const Buffer& buffer = problem.buffers[i];
  if (buffer.names.empty()) return absl::StrCat("buffers[", i, "]");
  return absl::StrCat("buffers[", i, "] (\"", buffer.names[0], "\")");
}

}  // namespace memplan
