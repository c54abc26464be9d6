#include "core/caching_allocator.h"

#include <algorithm>
#include <limits>
#include <utility>

namespace memplan {

Bytes CachingAllocatorModel::RoundSize(Bytes size) {
  return AlignUp(std::max<Bytes>(size, 1), kMinBlockSize);
}

Bytes CachingAllocatorModel::SegmentSize(Bytes rounded) {
  if (rounded <= kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return kLargeBuffer;
  return AlignUp(rounded, kRoundLarge);
}

void CachingAllocatorModel::Insert(int32_t b) {
  const Block& block = blocks_[b];
  PoolOf(block).emplace(block.size, block.address, b);
}

void CachingAllocatorModel::Erase(int32_t b) {
  const Block& block = blocks_[b];
  PoolOf(block).erase({block.size, block.address, b});
}

int32_t CachingAllocatorModel::NewSegment(Bytes size, bool small) {
  Block block;
  block.address = next_address_;
  block.size = size;
  block.small = small;
  next_address_ += size;
  blocks_.push_back(block);
  return static_cast<int32_t>(blocks_.size()) - 1;
}

int32_t CachingAllocatorModel::Adopt(Bytes size) {
  const Bytes rounded = RoundSize(size);
  const int32_t b = NewSegment(rounded, rounded <= kSmallSize);
  blocks_[b].in_use = true;
  blocks_[b].adopted = true;
  return b;
}

void CachingAllocatorModel::Cache(Bytes size, bool small) {
  const int32_t b = NewSegment(size, small);
  blocks_[b].pinned = true;
  Insert(b);
}

int32_t CachingAllocatorModel::Malloc(Bytes size) {
  ++stats_.allocations;
  const Bytes rounded = RoundSize(size);
  const bool small = rounded <= kSmallSize;
  FreeSet& pool = small ? small_ : large_;
  int32_t b = -1;
  auto it = pool.lower_bound({rounded, std::numeric_limits<Bytes>::min(),
                              std::numeric_limits<int32_t>::min()});
  created_segment_ = it == pool.end();
  if (created_segment_) {
    const Bytes segment = SegmentSize(rounded);
    b = NewSegment(segment, small);
    stats_.reserved += segment;
    ++stats_.segments;
  } else {
    b = std::get<2>(*it);
    pool.erase(it);
  }
  // Split off the rest when it is worth keeping (should_split).
  const Bytes rest = blocks_[b].size - rounded;
  if (small ? rest >= kMinBlockSize : rest > kSmallSize) {
    Block remainder;
    remainder.address = blocks_[b].address + rounded;
    remainder.size = rest;
    remainder.small = small;
    remainder.pinned = blocks_[b].pinned;
    remainder.adopted = blocks_[b].adopted;
    remainder.prev = b;
    remainder.next = blocks_[b].next;
    blocks_.push_back(remainder);
    const auto r = static_cast<int32_t>(blocks_.size()) - 1;
    if (blocks_[r].next >= 0) blocks_[blocks_[r].next].prev = r;
    blocks_[b].next = r;
    blocks_[b].size = rounded;
    Insert(r);
  }
  blocks_[b].in_use = true;
  stats_.allocated += blocks_[b].size;
  stats_.peak_allocated = std::max(stats_.peak_allocated, stats_.allocated);
  return b;
}

void CachingAllocatorModel::Free(int32_t handle) {
  Block& block = blocks_[handle];
  block.in_use = false;
  stats_.allocated -= block.size;
  // Merge with free neighbours (try_merge_blocks): the block absorbs them.
  const int32_t prev = block.prev;
  if (prev >= 0 && !blocks_[prev].in_use) {
    Erase(prev);
    block.address = blocks_[prev].address;
    block.size += blocks_[prev].size;
    block.prev = blocks_[prev].prev;
    if (block.prev >= 0) blocks_[block.prev].next = handle;
    blocks_[prev] = Block{};
  }
  const int32_t next = block.next;
  if (next >= 0 && !blocks_[next].in_use) {
    Erase(next);
    block.size += blocks_[next].size;
    block.next = blocks_[next].next;
    if (block.next >= 0) blocks_[block.next].prev = handle;
    blocks_[next] = Block{};
  }
  Insert(handle);
}

void CachingAllocatorModel::EmptyCache() {
  for (FreeSet* pool : {&small_, &large_}) {
    for (auto it = pool->begin(); it != pool->end();) {
      const int32_t b = std::get<2>(*it);
      if (blocks_[b].prev < 0 && blocks_[b].next < 0 && !blocks_[b].pinned) {
        blocks_[b] = Block{};
        it = pool->erase(it);
      } else {
        ++it;
      }
    }
  }
}

Bytes CachingAllocatorModel::CachedBytes() const {
  Bytes bytes = 0;
  for (const FreeSet* pool : {&small_, &large_}) {
    for (const auto& [size, address, block] : *pool) bytes += size;
  }
  return bytes;
}

std::pair<std::vector<Bytes>, std::vector<Bytes>>
CachingAllocatorModel::FreeBlockSizes() const {
  const auto in_address_order = [](const FreeSet& pool) {
    std::vector<std::pair<Bytes, Bytes>> blocks;  // (address, size)
    blocks.reserve(pool.size());
    for (const auto& [size, address, block] : pool) {
      blocks.emplace_back(address, size);
    }
    std::sort(blocks.begin(), blocks.end());
    std::vector<Bytes> sizes;
    sizes.reserve(blocks.size());
    for (const auto& [address, size] : blocks) sizes.push_back(size);
    return sizes;
  };
  return {in_address_order(small_), in_address_order(large_)};
}

template <typename F>
void CachingAllocatorModel::ForEachPoolSegment(F f) const {
  std::vector<std::pair<Bytes, int32_t>> heads;  // (address, block)
  for (size_t b = 0; b < blocks_.size(); ++b) {
    const Block& block = blocks_[b];
    if (block.size > 0 && block.prev < 0 && !block.adopted) {
      heads.emplace_back(block.address, static_cast<int32_t>(b));
    }
  }
  std::sort(heads.begin(), heads.end());
  for (const auto& [address, head] : heads) {
    Bytes size = 0;
    for (int32_t b = head; b >= 0; b = blocks_[b].next) size += blocks_[b].size;
    f(size, blocks_[head].small);
  }
}

CachingAllocatorModel CachingAllocatorModel::PoolNextStep() const {
  CachingAllocatorModel next;
  ForEachPoolSegment([&](Bytes size, bool small) { next.Cache(size, small); });
  return next;
}

Bytes CachingAllocatorModel::PoolSegmentBytes() const {
  Bytes bytes = 0;
  ForEachPoolSegment([&](Bytes size, bool) { bytes += size; });
  return bytes;
}

std::vector<int32_t> CachingAllocatorModel::InUse() const {
  std::vector<int32_t> in_use;
  for (size_t b = 0; b < blocks_.size(); ++b) {
    if (blocks_[b].in_use) in_use.push_back(static_cast<int32_t>(b));
  }
  return in_use;
}

AllocatorReplay ReplayCachingAllocator(const std::vector<MemoryBlock>& blocks,
                                       const std::vector<CachedBlock>& cached,
                                       const CachingAllocatorModel* start,
                                       CachingAllocatorModel* end) {
  AllocatorReplay replay;
  replay.created_segment.assign(blocks.size(), false);
  CachingAllocatorModel model;
  if (start != nullptr) {
    model = *start;
    model.ResetStats();
  }
  for (const CachedBlock& block : cached) {
    if (block.size > 0) model.Cache(block.size, block.small_pool);
  }
  // (position, step, 0 = free / 1 = allocate, block index).
  std::vector<std::tuple<int64_t, int32_t, int, size_t>> events;
  events.reserve(2 * blocks.size());
  std::vector<int32_t>& handles = replay.handles;
  handles.assign(blocks.size(), -1);
  for (size_t i = 0; i < blocks.size(); ++i) {
    const MemoryBlock& b = blocks[i];
    if (b.begin >= b.end) continue;
    if (b.freed_input && b.start_block >= 0) {
      if (start == nullptr || !model.in_use(b.start_block)) continue;
      handles[i] = b.start_block;
      events.emplace_back(b.begin, b.step, 0, i);
      continue;
    }
    if (b.size <= 0) continue;
    if (b.freed_input) {
      handles[i] = model.Adopt(b.size);
      events.emplace_back(b.begin, b.step, 0, i);
      continue;
    }
    events.emplace_back(b.begin, b.step, 1, i);
    if (const auto [position, step] = b.FreedAt(); position != kNeverFreed) {
      events.emplace_back(position, step, 0, i);
    }
  }
  std::sort(events.begin(), events.end());
  for (const auto& [position, step, allocate, i] : events) {
    if (allocate == 1) {
      handles[i] = model.Malloc(blocks[i].size);
      replay.created_segment[i] = model.created_segment();
    } else {
      model.Free(handles[i]);
    }
  }
  replay.stats = model.stats();
  if (end != nullptr) *end = std::move(model);
  return replay;
}

AllocatorReplay ReplayCachingAllocator(const DeviceMemory& memory) {
  return ReplayCachingAllocator(memory.blocks, memory.cached,
                                memory.start.get());
}

}  // namespace memplan
