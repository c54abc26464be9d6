#include "core/graph_memory.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "core/caching_allocator.h"

namespace memplan {

std::ostream& operator<<(std::ostream& os, const MemoryBlock& block) {
  os << "[" << block.begin << ",";
  if (block.end == kNeverFreed) {
    os << "never";
  } else {
    os << block.end;
  }
  os << ")" << (block.freed_input ? "-" : "+") << block.size;
  if (block.step != 0 || block.free_step != 0) {
    os << "@" << block.step;
    if (block.free_step > block.step) os << "-" << block.free_step;
  }
  return os;
}

Bytes AllocatorBytes(Bytes size, Bytes block) {
  if (size <= 0) return 0;
  return AlignUp(size, block);
}

Bytes PeakAboveEntry(const std::vector<MemoryBlock>& blocks, Bytes block) {
  // ((position, step), change in bytes): the changes at one step of a
  // position all apply before the total there is read.
  std::vector<std::pair<std::pair<int64_t, int32_t>, Bytes>> changes;
  changes.reserve(2 * blocks.size());
  for (const MemoryBlock& b : blocks) {
    if (b.begin >= b.end) continue;
    const Bytes bytes = AllocatorBytes(b.size, block);
    if (bytes == 0) continue;
    const Bytes signed_bytes = b.freed_input ? -bytes : bytes;
    changes.push_back({{b.begin, b.step}, signed_bytes});
    if (const auto freed = b.FreedAt(); freed.first != kNeverFreed) {
      changes.push_back({freed, -signed_bytes});
    }
  }
  std::sort(changes.begin(), changes.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  Bytes total = 0;
  Bytes peak = 0;
  for (size_t i = 0; i < changes.size();) {
    const std::pair<int64_t, int32_t> at = changes[i].first;
    for (; i < changes.size() && changes[i].first == at; ++i) {
      total += changes[i].second;
    }
    peak = std::max(peak, total);
  }
  return peak;
}

namespace {

// The devices of `problem` in the order of their first buffer, then of
// their first unplanned buffer.
DeviceOrder DevicesOf(const Problem& problem) {
  DeviceOrder devices;
  for (const Buffer& buffer : problem.buffers) devices.Add(buffer.device);
  for (const UnplannedBuffer& buffer : problem.unplanned) {
    devices.Add(buffer.device);
  }
  return devices;
}

// The block of an unplanned buffer: an extern output over its live range,
// an input counting negative from its free on.
MemoryBlock BlockOf(const UnplannedBuffer& buffer) {
  if (buffer.is_input) {
    return MemoryBlock{buffer.live_range.end, kNeverFreed, buffer.size,
                       /*freed_input=*/true};
  }
  return MemoryBlock{buffer.live_range.begin, buffer.live_range.end,
                     buffer.size};
}

// The allocated peak of `blocks`: with the CUDA caching allocator's block
// (512 bytes), the model's (`replay`: a block whose rest the allocator
// does not split off counts whole), else PeakAboveEntry's.
Bytes AllocatedPeak(const std::vector<MemoryBlock>& blocks, Bytes block,
                    const CachingAllocatorStats& replay) {
  if (block == CachingAllocatorModel::kMinBlockSize) {
    return replay.peak_allocated;
  }
  return PeakAboveEntry(blocks, block);
}

}  // namespace

void AddCachedBlocks(const Problem& problem, GraphTimeline& timeline) {
  for (const CachedBlock& block : problem.cached_blocks) {
    for (std::vector<DeviceMemory>* memory :
         {&timeline.unplanned, &timeline.baseline}) {
      for (DeviceMemory& device : *memory) {
        if (device.device == block.device) device.cached.push_back(block);
      }
    }
  }
}

GraphTimeline TimelineOfBuffers(const Problem& problem) {
  const DeviceOrder devices = DevicesOf(problem);
  GraphTimeline timeline;
  timeline.unplanned = devices.Empty();
  timeline.baseline = devices.Empty();
  timeline.spans.reserve(problem.buffers.size());
  for (const Buffer& buffer : problem.buffers) {
    const LiveRange& range = buffer.live_range;
    timeline.spans.push_back(GraphTimeline::Span{range.begin, range.end});
    if (buffer.size > 0 && range.begin < range.end) {
      timeline.baseline[devices[buffer.device]].blocks.push_back(
          MemoryBlock{range.begin, range.end, buffer.size});
    }
  }
  for (const UnplannedBuffer& buffer : problem.unplanned) {
    const size_t device = devices[buffer.device];
    timeline.unplanned[device].blocks.push_back(BlockOf(buffer));
    timeline.baseline[device].blocks.push_back(BlockOf(buffer));
  }
  AddCachedBlocks(problem, timeline);
  return timeline;
}

std::vector<DeviceMemory> PlanMemory(const Problem& problem, const Plan& plan,
                                     const GraphTimeline& timeline,
                                     std::vector<int32_t>* pool_blocks) {
  if (pool_blocks != nullptr) pool_blocks->assign(plan.pools.size(), -1);
  std::vector<DeviceMemory> memory = timeline.unplanned;
  absl::flat_hash_map<std::string, size_t> index;
  for (size_t d = 0; d < memory.size(); ++d) index[memory[d].device] = d;
  // Each pool over the hull of its buffers' spans.
  std::vector<GraphTimeline::Span> hulls(plan.pools.size());
  std::vector<bool> used(plan.pools.size(), false);
  for (size_t i = 0; i < problem.buffers.size(); ++i) {
    const GraphTimeline::Span& span = timeline.spans[i];
    if (problem.buffers[i].size == 0 || span.begin >= span.end) continue;
    const int32_t pool = plan.assignments[i].pool;
    if (!used[pool]) {
      hulls[pool] = span;
      used[pool] = true;
    } else {
      hulls[pool].begin = std::min(hulls[pool].begin, span.begin);
      hulls[pool].end = std::max(hulls[pool].end, span.end);
    }
  }
  for (size_t p = 0; p < plan.pools.size(); ++p) {
    if (!used[p]) continue;
    auto [it, added] = index.try_emplace(plan.pools[p].device, memory.size());
    if (added) {
      DeviceMemory device;
      device.device = plan.pools[p].device;
      memory.push_back(std::move(device));
    }
    if (pool_blocks != nullptr) {
      (*pool_blocks)[p] =
          static_cast<int32_t>(memory[it->second].blocks.size());
    }
    memory[it->second].blocks.push_back(
        MemoryBlock{hulls[p].begin, hulls[p].end, plan.pools[p].size});
  }
  for (const SegmentReservation& reservation : plan.reservations) {
    auto it = index.find(reservation.device);
    if (it == index.end()) continue;  // a device the graph allocates nothing on
    std::vector<MemoryBlock>& blocks = memory[it->second].blocks;
    blocks.push_back(ReservationBlock(blocks, reservation.size));
  }
  return memory;
}

std::vector<MemoryBlock> LoopBlocks(const std::vector<MemoryBlock>& blocks,
                                    int calls) {
  if (blocks.empty() || calls <= 1) return blocks;
  int64_t first = std::numeric_limits<int64_t>::max();
  int64_t last = std::numeric_limits<int64_t>::min();
  for (const MemoryBlock& block : blocks) {
    first = std::min(first, block.begin);
    last = std::max(last, block.begin);
    if (block.end != kNeverFreed) last = std::max(last, block.end);
  }
  // Call i's positions are [first + i * span, last + i * span]; its held
  // blocks end at the next call's last position plus one.
  const int64_t span = last - first + 2;
  std::vector<MemoryBlock> loop;
  loop.reserve(blocks.size() * static_cast<size_t>(calls));
  for (int i = 0; i < calls; ++i) {
    const int64_t shift = i * span;
    for (MemoryBlock block : blocks) {
      const bool held = block.end == kNeverFreed && !block.freed_input;
      block.begin += shift;
      if (block.end != kNeverFreed) {
        block.end += shift;
      } else if (held && i + 1 < calls) {
        block.end = last + shift + span + 1;
      }
      loop.push_back(block);
    }
  }
  return loop;
}

MemoryBlock ReservationBlock(const std::vector<MemoryBlock>& blocks,
                             Bytes size) {
  int64_t first = 0;
  if (!blocks.empty()) {
    first = std::numeric_limits<int64_t>::max();
    for (const MemoryBlock& block : blocks)
      first = std::min(first, block.begin);
  }
  return MemoryBlock{first - 1, first, size};
}

std::vector<DevicePeaks> WholeGraphPeaks(const Problem& problem,
                                         const Plan& plan,
                                         const GraphTimeline& timeline) {
  const Bytes block = problem.allocator_block;
  const std::vector<DeviceMemory> predicted =
      PlanMemory(problem, plan, timeline);
  // The lower bound's blocks: the unplanned ones rounded, the buffers' as
  // they are (counted with a block of one byte).
  std::vector<DeviceMemory> bound = timeline.unplanned;
  for (DeviceMemory& device : bound) {
    for (MemoryBlock& b : device.blocks) b.size = AllocatorBytes(b.size, block);
  }
  absl::flat_hash_map<std::string, size_t> index;
  for (size_t d = 0; d < bound.size(); ++d) index[bound[d].device] = d;
  for (size_t i = 0; i < problem.buffers.size(); ++i) {
    const Buffer& buffer = problem.buffers[i];
    const GraphTimeline::Span& span =
        timeline.held.empty() ? timeline.spans[i] : timeline.held[i];
    // A buffer that is no output yet is never freed (wrapper lines cut
    // short) stays allocated to the end without pools, but a plan needs
    // its bytes only over its live range, which ends at its last line (as
    // Inductor's compute_live_ranges): later buffers may share its offset,
    // so its span bounds nothing.
    if (!buffer.is_output && span.end == kNeverFreed) continue;
    auto [it, added] = index.try_emplace(buffer.device, bound.size());
    if (added) {
      DeviceMemory device;
      device.device = buffer.device;
      bound.push_back(std::move(device));
    }
    bound[it->second].blocks.push_back(
        MemoryBlock{span.begin, span.end, buffer.size});
  }
  std::vector<DevicePeaks> peaks;
  for (const DeviceMemory& device : predicted) {
    DevicePeaks peak;
    peak.device = device.device;
    const CachingAllocatorStats with_pools =
        ReplayCachingAllocator(device).stats;
    peak.predicted = AllocatedPeak(device.blocks, block, with_pools);
    peak.predicted_reserved = with_pools.reserved;
    peak.predicted_allocations = with_pools.allocations;
    for (const DeviceMemory& other : timeline.baseline) {
      if (other.device == device.device) {
        const CachingAllocatorStats without =
            ReplayCachingAllocator(other).stats;
        peak.baseline = AllocatedPeak(other.blocks, block, without);
        peak.baseline_reserved = without.reserved;
        peak.baseline_allocations = without.allocations;
      }
    }
    for (const DeviceMemory& other : bound) {
      if (other.device == device.device) {
        peak.lower_bound = PeakAboveEntry(other.blocks, 1);
      }
    }
    peaks.push_back(std::move(peak));
  }
  return peaks;
}

}  // namespace memplan
