// Maps a problem's pool mode onto one single-pool placement problem per
// device (core/placement/placement.h), and placements back onto pools, so
// that every search strategy (best-fit, exact search) respects the mode's
// sharing rules without knowing them.
//
// The trick is one virtual address space per device, cut into regions that
// become pools, with a pinned "barrier" item between regions that is live
// over the whole schedule, so that no item straddles two regions:
//
//   offset ^
//          |  intermediates pool (grows)     <- the top region
//          |####### barrier ##############
//          |  output o1's pool: o1 pinned at its base while live; free
//          |  before o1 begins, so intermediates may use it then
//          |####### barrier ##############
//          |  output o0's pool
//          +------------------------------> timestep
//
//   combined:      one region, every buffer.
//   intermediates: one fixed region per output, its size exactly the
//                  output's, the output pinned at its base; then the top
//                  region for intermediates.
//   outputs:       two stages: first the outputs alone in one region; then
//                  that region with the outputs pinned where stage one put
//                  them, and the top region for intermediates.
//   none:          not expressible (pools are fixed by their first buffer):
//                  callers use Inductor's planner.
//
// A buffer whose size depends on data (Buffer::size_is_data_dependent) is
// in no placement problem: it gets a pool of its own, so that no pool is
// in use before such a buffer's size is known (torch 2.11's
// Allocation.earliest_available, strictest form).
#ifndef MEMPLAN_CORE_PLACEMENT_POOL_LAYOUT_H_
#define MEMPLAN_CORE_PLACEMENT_POOL_LAYOUT_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/placement/placement.h"
#include "core/types.h"

namespace memplan {

// One device's placement problem and how to read its placement as pools.
struct DeviceLayout {
  std::string device;
  // The placement problem: first one item per entry of `buffers`, then the
  // barriers (pinned, live over the whole schedule).
  PlacementProblem placement;
  std::vector<int32_t> buffers;  // Problem::buffers index of items[i]

  // A region of the virtual space that becomes a pool when it holds a
  // buffer. Regions are in increasing base order; the last one may grow.
  struct Region {
    Bytes base = 0;  // virtual offset of the pool's byte 0
    // The fixed pool size in bytes; nullopt for the top region, whose pool
    // grows to the height of its items.
    std::optional<Bytes> size;
  };
  std::vector<Region> regions;
};

// Returns the layouts of `problem`, one per device in order of first
// appearance, for pool mode combined or intermediates. For outputs mode,
// returns the stage-one layouts (outputs only; devices without outputs
// have no items); pass their placements to OutputsStageTwo. Returns
// INVALID_ARGUMENT for pool mode none, or for an output pinned at a
// nonzero offset in intermediates mode (an output is alone at offset 0 of
// its pool there). problem.capacity becomes each placement's capacity.
absl::StatusOr<std::vector<DeviceLayout>> BuildLayouts(const Problem& problem);

// Returns the outputs-mode layouts for the intermediates, given stage one's
// layouts and placements (parallel): the outputs' pool is one fixed region
// of stage one's height with the outputs pinned where stage one put them.
std::vector<DeviceLayout> OutputsStageTwo(
    const Problem& problem, const std::vector<DeviceLayout>& stage_one,
    const std::vector<Placement>& placements);

// Returns the plan that `placements` (parallel to `layouts`, each valid for
// its layout) describe: one pool per region holding a buffer, named pool0,
// pool1, ... in device order then region order, then per device one pool
// per buffer whose size depends on data (in buffer order; the buffer at
// offset 0, or its fixed_offset); a fixed region's pool has the region's
// size, the top region's pool its items' height above its base.
Plan PlanFromPlacements(const Problem& problem,
                        const std::vector<DeviceLayout>& layouts,
                        const std::vector<Placement>& placements);

}  // namespace memplan

#endif  // MEMPLAN_CORE_PLACEMENT_POOL_LAYOUT_H_
