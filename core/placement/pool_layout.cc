#include "core/placement/pool_layout.h"

#include <algorithm>
#include <limits>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace memplan {
namespace {

// The buffers of each device, devices in order of first appearance.
struct DeviceMembers {
  std::string device;
  std::vector<int32_t> buffers;
};

// The buffers of each device that the placement problems hold: all but
// those whose size depends on data, which get pools of their own
// (PlanFromPlacements). Devices in order of first appearance, also those
// with only such buffers.
std::vector<DeviceMembers> GroupByDevice(const Problem& problem) {
  std::vector<DeviceMembers> groups;
  absl::flat_hash_map<absl::string_view, size_t> index;
  for (size_t i = 0; i < problem.buffers.size(); ++i) {
    const std::string& device = problem.buffers[i].device;
    auto [it, inserted] = index.try_emplace(device, groups.size());
    if (inserted) groups.push_back({device, {}});
    if (problem.buffers[i].size_is_data_dependent) continue;
    groups[it->second].buffers.push_back(static_cast<int32_t>(i));
  }
  return groups;
}

// Builds one device's layout: `fixed` regions at the bottom (each with the
// items pinned in it: buffer index and offset within the region), then the
// top region holding `free_buffers`. Buffers' own fixed offsets pin them in
// the top region.
class LayoutBuilder {
 public:
  LayoutBuilder(const Problem& problem, const std::vector<int32_t>& members)
      : problem_(problem) {
    // Every offset is a multiple of the largest alignment, so that a
    // region's base keeps its items' offsets aligned within the pool.
    for (int32_t i : members) {
      step_ = std::max(step_, problem.AlignmentOf(i));
      const LiveRange& range = ItemRange(i);
      horizon_.begin = std::min(horizon_.begin, range.begin);
      horizon_.end = std::max(horizon_.end, range.end);
    }
  }

  // Adds a fixed region of `size` bytes holding `pinned` (buffer, offset in
  // the region) pairs.
  void AddFixedRegion(Bytes size,
                      const std::vector<std::pair<int32_t, Bytes>>& pinned) {
    layout_.regions.push_back({next_base_, size});
    for (const auto& [buffer, offset] : pinned) {
      AddItem(buffer, next_base_ + offset);
    }
    fixed_bytes_ += size;
    // A barrier of at least one byte up to the next aligned base.
    const Bytes top = next_base_ + size;
    const Bytes next = AlignUp(top + 1, step_);
    PlacementItem barrier;
    barrier.live_range = horizon_;
    barrier.size = next - top;
    barrier.fixed_offset = top;
    barriers_.push_back(barrier);
    next_base_ = next;
  }

  // Adds the top region with `buffers` placed freely (or at base + their
  // fixed offset), and returns the layout.
  DeviceLayout Finish(std::string device, const std::vector<int32_t>& buffers) {
    layout_.device = std::move(device);
    layout_.regions.push_back({next_base_, std::nullopt});
    for (int32_t i : buffers) {
      const Buffer& buffer = problem_.buffers[i];
      AddItem(i, buffer.fixed_offset ? next_base_ + *buffer.fixed_offset : -1);
    }
    layout_.placement.items.insert(layout_.placement.items.end(),
                                   barriers_.begin(), barriers_.end());
    if (problem_.capacity > 0) {
      layout_.placement.capacity =
          next_base_ + std::max<Bytes>(0, problem_.capacity - fixed_bytes_);
    }
    return std::move(layout_);
  }

 private:
  // The range an item occupies: the buffer's, or [t, t+1) for an empty
  // [t, t), which can then never straddle a barrier.
  LiveRange ItemRange(int32_t i) const {
    LiveRange range = problem_.buffers[i].live_range;
    if (range.begin == range.end) range.end = range.begin + 1;
    return range;
  }
  void AddItem(int32_t buffer, Bytes fixed_offset) {
    PlacementItem item;
    item.live_range = ItemRange(buffer);
    item.size = problem_.buffers[buffer].size;
    item.alignment = problem_.AlignmentOf(buffer);
    item.fixed_offset = fixed_offset;
    layout_.placement.items.push_back(item);
    layout_.buffers.push_back(buffer);
  }

  const Problem& problem_;
  Bytes step_ = 1;
  LiveRange horizon_{std::numeric_limits<Timestep>::max(),
                     std::numeric_limits<Timestep>::min()};
  Bytes next_base_ = 0;
  Bytes fixed_bytes_ = 0;
  std::vector<PlacementItem> barriers_;
  DeviceLayout layout_;
};

}  // namespace

absl::StatusOr<std::vector<DeviceLayout>> BuildLayouts(const Problem& problem) {
  if (problem.pool_mode == PoolMode::kNone) {
    return absl::InvalidArgumentError(
        "pool_mode none fixes each pool at its first buffer: only strategy "
        "inductor plans it");
  }
  std::vector<DeviceLayout> layouts;
  for (const DeviceMembers& group : GroupByDevice(problem)) {
    LayoutBuilder builder(problem, group.buffers);
    std::vector<int32_t> free_buffers;
    for (int32_t i : group.buffers) {
      const Buffer& buffer = problem.buffers[i];
      switch (problem.pool_mode) {
        case PoolMode::kCombined:
          free_buffers.push_back(i);
          break;
        case PoolMode::kOutputs:
          if (buffer.is_output) free_buffers.push_back(i);
          break;
        case PoolMode::kIntermediates:
          if (!buffer.is_output) {
            free_buffers.push_back(i);
          } else if (buffer.fixed_offset.value_or(0) != 0) {
            return absl::InvalidArgumentError(absl::StrCat(
                "buffers[", i, "] (\"", buffer.names[0],
                "\"): fixed_offset must be 0 for an output in pool_mode "
                "intermediates (an output is alone at the start of its "
                "pool), got ",
                *buffer.fixed_offset));
          } else {
            builder.AddFixedRegion(buffer.size, {{i, 0}});
          }
          break;
        case PoolMode::kNone:
          break;
      }
    }
    layouts.push_back(builder.Finish(group.device, free_buffers));
  }
  return layouts;
}

std::vector<DeviceLayout> OutputsStageTwo(
    const Problem& problem, const std::vector<DeviceLayout>& stage_one,
    const std::vector<Placement>& placements) {
  std::vector<DeviceLayout> layouts;
  std::vector<DeviceMembers> groups = GroupByDevice(problem);
  for (size_t d = 0; d < groups.size(); ++d) {
    LayoutBuilder builder(problem, groups[d].buffers);
    const DeviceLayout& outputs = stage_one[d];
    if (!outputs.buffers.empty()) {
      std::vector<std::pair<int32_t, Bytes>> pinned;
      for (size_t k = 0; k < outputs.buffers.size(); ++k) {
        pinned.push_back({outputs.buffers[k], placements[d].offsets[k]});
      }
      builder.AddFixedRegion(placements[d].height, pinned);
    }
    std::vector<int32_t> intermediates;
    for (int32_t i : groups[d].buffers) {
      if (!problem.buffers[i].is_output) intermediates.push_back(i);
    }
    layouts.push_back(builder.Finish(groups[d].device, intermediates));
  }
  return layouts;
}

Plan PlanFromPlacements(const Problem& problem,
                        const std::vector<DeviceLayout>& layouts,
                        const std::vector<Placement>& placements) {
  Plan plan;
  plan.assignments.resize(problem.buffers.size());
  for (size_t d = 0; d < layouts.size(); ++d) {
    const DeviceLayout& layout = layouts[d];
    const Placement& placement = placements[d];
    const size_t region_count = layout.regions.size();
    std::vector<int32_t> pool_of_region(region_count, -1);
    // Region of each item, then pools in region order.
    std::vector<size_t> region_of(layout.buffers.size());
    for (size_t k = 0; k < layout.buffers.size(); ++k) {
      const Bytes offset = placement.offsets[k];
      size_t r =
          std::upper_bound(layout.regions.begin(), layout.regions.end(), offset,
                           [](Bytes value, const DeviceLayout::Region& region) {
                             return value < region.base;
                           }) -
          layout.regions.begin() - 1;
      region_of[k] = r;
    }
    for (size_t k = 0; k < layout.buffers.size(); ++k) {
      pool_of_region[region_of[k]] = 0;  // marks regions in use
    }
    for (size_t r = 0; r < region_count; ++r) {
      if (pool_of_region[r] < 0) continue;
      pool_of_region[r] = static_cast<int32_t>(plan.pools.size());
      plan.pools.push_back(Pool{absl::StrCat("pool", plan.pools.size()),
                                layout.device,
                                layout.regions[r].size.value_or(0)});
    }
    for (size_t k = 0; k < layout.buffers.size(); ++k) {
      const int32_t buffer = layout.buffers[k];
      const DeviceLayout::Region& region = layout.regions[region_of[k]];
      Bytes offset = placement.offsets[k] - region.base;
      const Bytes size = problem.buffers[buffer].size;
      // A zero-size buffer conflicts with nothing; keep it inside its pool.
      if (size == 0 && !problem.buffers[buffer].fixed_offset) offset = 0;
      const int32_t pool = pool_of_region[region_of[k]];
      plan.assignments[buffer] = Assignment{pool, offset};
      if (!region.size) {  // the top region grows to its items
        plan.pools[pool].size = std::max(plan.pools[pool].size, offset + size);
      }
    }
    // Buffers whose size depends on data, in buffer order: a pool each, so
    // that no pool holding one is in use before the buffer begins (when its
    // size becomes known), the strictest form of torch 2.11's
    // Allocation.earliest_available rule.
    for (size_t i = 0; i < problem.buffers.size(); ++i) {
      const Buffer& buffer = problem.buffers[i];
      if (!buffer.size_is_data_dependent || buffer.device != layout.device) {
        continue;
      }
      const Bytes offset = buffer.fixed_offset.value_or(0);
      plan.assignments[i] =
          Assignment{static_cast<int32_t>(plan.pools.size()), offset};
      plan.pools.push_back(Pool{absl::StrCat("pool", plan.pools.size()),
                                layout.device, offset + buffer.size});
    }
  }
  return plan;
}

}  // namespace memplan
