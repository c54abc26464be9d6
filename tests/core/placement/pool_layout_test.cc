// Tests of core/placement/pool_layout.h: each pool mode as one placement
// problem per device (regions, pinned outputs, barriers between regions),
// and placements read back as pools, on small hand-made problems.
//
// Offsets and pool sizes are asserted exactly where the header fixes them:
// a fixed region is as large as its output (or, in outputs mode, as stage
// one's height) with the outputs pinned where they must be; a plan's pools
// are the regions holding a buffer, a fixed region's pool its region's
// size, the top region's pool its items' height above its base, and offsets
// are relative to the region's base.
#include "core/placement/pool_layout.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "core/placement/placement.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/random_problems.h"

namespace memplan {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Problem MakeProblem(std::vector<Buffer> buffers, PoolMode mode) {
  Problem problem;
  problem.buffers = std::move(buffers);
  problem.pool_mode = mode;
  problem.alignment = 64;
  return problem;
}

// Returns the placement of `layout` with its buffers' items at `offsets`
// (in the order of layout.buffers) and every other item (the barriers,
// pinned) at its fixed offset; expects it to be valid.
Placement PlaceAt(const DeviceLayout& layout, std::vector<Bytes> offsets) {
  EXPECT_EQ(offsets.size(), layout.buffers.size());
  Placement placement;
  placement.offsets = std::move(offsets);
  for (size_t k = placement.offsets.size(); k < layout.placement.items.size();
       ++k) {
    placement.offsets.push_back(layout.placement.items[k].fixed_offset);
  }
  placement.height = PlacementHeight(layout.placement, placement.offsets);
  EXPECT_TRUE(ValidatePlacement(layout.placement, placement).ok())
      << ValidatePlacement(layout.placement, placement);
  return placement;
}

// The items of `layout` that are not its buffers': the barriers.
std::vector<PlacementItem> Barriers(const DeviceLayout& layout) {
  return std::vector<PlacementItem>(
      layout.placement.items.begin() + layout.buffers.size(),
      layout.placement.items.end());
}

TEST(BuildLayoutsTest, NoneModeIsLeftToInductorsPlanner) {
  const Problem problem =
      MakeProblem({MakeBuffer("a", 64, 0, 1)}, PoolMode::kNone);
  EXPECT_EQ(BuildLayouts(problem).status().code(),
            absl::StatusCode::kInvalidArgument);
}

//   combined, two devices: one growing region each, the buffers free.
//
//   cuda:0   offset ^                      cuda:1   offset ^
//               178 |        +------+                  200 |  +---------+
//               128 |        |  c   |                      |  |    b    |
//               100 |  +-----+-+----+                      |  |         |
//                   |  |   a   |                           |  |         |
//                 0 +--+-------+----->                   0 +--+---------+-->
//                      0   1   2   3                          0         3
TEST(BuildLayoutsTest, CombinedIsOneGrowingRegionPerDevice) {
  const Problem problem = MakeProblem(
      {MakeBuffer("a", 100, 0, 2), MakeBuffer("b", 200, 0, 3, false, "cuda:1"),
       MakeBuffer("c", 50, 1, 3)},
      PoolMode::kCombined);
  absl::StatusOr<std::vector<DeviceLayout>> layouts = BuildLayouts(problem);
  ASSERT_TRUE(layouts.ok()) << layouts.status();
  ASSERT_EQ(layouts->size(), 2u);
  const DeviceLayout& cuda0 = (*layouts)[0];
  const DeviceLayout& cuda1 = (*layouts)[1];
  EXPECT_EQ(cuda0.device, "cuda:0");
  EXPECT_EQ(cuda1.device, "cuda:1");
  EXPECT_THAT(cuda0.buffers, ElementsAre(0, 2));
  EXPECT_THAT(cuda1.buffers, ElementsAre(1));
  ASSERT_EQ(cuda0.regions.size(), 1u);
  EXPECT_EQ(cuda0.regions[0].base, 0);
  EXPECT_EQ(cuda0.regions[0].size, std::nullopt);
  ASSERT_EQ(cuda0.placement.items.size(), 2u);  // no barrier
  for (const PlacementItem& item : cuda0.placement.items) {
    EXPECT_FALSE(item.pinned());
    EXPECT_EQ(item.alignment, 64);
  }
  EXPECT_EQ(cuda0.placement.items[1].live_range, (LiveRange{1, 3}));
  EXPECT_EQ(cuda0.placement.capacity, kUnboundedCapacity);

  const Plan plan = PlanFromPlacements(
      problem, *layouts, {PlaceAt(cuda0, {0, 128}), PlaceAt(cuda1, {0})});
  EXPECT_THAT(plan.pools, ElementsAre(Pool("pool0", "cuda:0", 178),
                                      Pool("pool1", "cuda:1", 200)));
  EXPECT_THAT(plan.assignments, ElementsAre(Assignment{0, 0}, Assignment{1, 0},
                                            Assignment{0, 128}));
}

TEST(BuildLayoutsTest, TheCapacityBoundsTheCombinedRegion) {
  Problem problem =
      MakeProblem({MakeBuffer("a", 100, 0, 2)}, PoolMode::kCombined);
  problem.capacity = 1000;
  absl::StatusOr<std::vector<DeviceLayout>> layouts = BuildLayouts(problem);
  ASSERT_TRUE(layouts.ok()) << layouts.status();
  EXPECT_EQ((*layouts)[0].placement.capacity, 1000);
}

//   intermediates: the output alone in a fixed region of its own size,
//   pinned at its base; a barrier above it, live all the time; the
//   intermediates in the top region above the barrier.
//
//   offset ^
//          |  a [0,2)   | b [2,4)       <- top region (grows), base B
//       B  |###### barrier ##########
//     100  +-------------------------
//          |  out [0,4), pinned at 0    <- fixed region [0, 100)
//       0  +-------------------------> timestep
TEST(BuildLayoutsTest, IntermediatesGiveEachOutputAFixedRegion) {
  std::vector<Buffer> buffers = {MakeBuffer("out", 100, 0, 4, true),
                                 MakeBuffer("a", 64, 0, 2),
                                 MakeBuffer("b", 32, 2, 4)};
  buffers[2].alignment = 256;
  const Problem problem = MakeProblem(buffers, PoolMode::kIntermediates);
  absl::StatusOr<std::vector<DeviceLayout>> layouts = BuildLayouts(problem);
  ASSERT_TRUE(layouts.ok()) << layouts.status();
  ASSERT_EQ(layouts->size(), 1u);
  const DeviceLayout& layout = (*layouts)[0];
  EXPECT_THAT(layout.buffers, ElementsAre(0, 1, 2));
  ASSERT_EQ(layout.regions.size(), 2u);
  EXPECT_EQ(layout.regions[0].base, 0);
  EXPECT_EQ(layout.regions[0].size, 100);  // exactly the output's
  const Bytes top = layout.regions[1].base;
  EXPECT_EQ(layout.regions[1].size, std::nullopt);
  EXPECT_GT(top, 100);
  EXPECT_EQ(top % 256, 0);  // keeps the largest alignment within the pool
  EXPECT_EQ(layout.placement.items[0].fixed_offset, 0);  // the output
  EXPECT_FALSE(layout.placement.items[1].pinned());
  EXPECT_FALSE(layout.placement.items[2].pinned());
  const std::vector<PlacementItem> barriers = Barriers(layout);
  ASSERT_EQ(barriers.size(), 1u);
  EXPECT_EQ(barriers[0].fixed_offset, 100);
  EXPECT_EQ(barriers[0].fixed_offset + barriers[0].size, top);
  EXPECT_EQ(barriers[0].live_range, (LiveRange{0, 4}));

  const Plan plan =
      PlanFromPlacements(problem, *layouts, {PlaceAt(layout, {0, top, top})});
  EXPECT_THAT(plan.pools, ElementsAre(Pool("pool0", "cuda:0", 100),
                                      Pool("pool1", "cuda:0", 64)));
  EXPECT_THAT(plan.assignments, ElementsAre(Assignment{0, 0}, Assignment{1, 0},
                                            Assignment{1, 0}));
}

//   An intermediate may use an output's pool while the output is not live:
//   a [0,1) sits in out's region before out [2,4) begins. Only regions
//   holding a buffer become pools, so the plan has one pool.
TEST(PlanFromPlacementsTest, IntermediatesShareAnOutputsPoolBeforeItBegins) {
  const Problem problem = MakeProblem(
      {MakeBuffer("out", 100, 2, 4, true), MakeBuffer("a", 64, 0, 1)},
      PoolMode::kIntermediates);
  absl::StatusOr<std::vector<DeviceLayout>> layouts = BuildLayouts(problem);
  ASSERT_TRUE(layouts.ok()) << layouts.status();
  const Plan plan =
      PlanFromPlacements(problem, *layouts, {PlaceAt((*layouts)[0], {0, 0})});
  EXPECT_THAT(plan.pools, ElementsAre(Pool("pool0", "cuda:0", 100)));
  EXPECT_THAT(plan.assignments,
              ElementsAre(Assignment{0, 0}, Assignment{0, 0}));
}

TEST(BuildLayoutsTest, IntermediatesRefuseAnOutputPinnedAboveZero) {
  std::vector<Buffer> buffers = {MakeBuffer("a", 64, 0, 1),
                                 MakeBuffer("out", 64, 0, 2, true)};
  buffers[1].fixed_offset = 64;
  absl::StatusOr<std::vector<DeviceLayout>> layouts =
      BuildLayouts(MakeProblem(buffers, PoolMode::kIntermediates));
  EXPECT_EQ(layouts.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(layouts.status().message(),
              HasSubstr("buffers[1] (\"out\"): fixed_offset must be 0"));
}

//   outputs, in two stages. Stage one places the outputs alone; stage two
//   pins them where stage one put them, in a fixed region of stage one's
//   height, and places the intermediates above it.
//
//   stage two   offset ^
//                      |     b [1,3)     <- top region, base B
//                      |  a [0,2)
//                   B  |#### barrier ####
//                 178  +-----------------
//                      |      o2 [2,4)   <- fixed region [0, 178):
//                 128  |  o1 [0,4)          stage one's placement
//                   0  +-----------------> timestep
TEST(OutputsStageTwoTest, PinsTheOutputsWhereStageOnePutThem) {
  const Problem problem = MakeProblem(
      {MakeBuffer("o1", 100, 0, 4, true), MakeBuffer("o2", 50, 2, 4, true),
       MakeBuffer("a", 64, 0, 2), MakeBuffer("b", 32, 1, 3)},
      PoolMode::kOutputs);
  absl::StatusOr<std::vector<DeviceLayout>> stage_one = BuildLayouts(problem);
  ASSERT_TRUE(stage_one.ok()) << stage_one.status();
  ASSERT_EQ(stage_one->size(), 1u);
  EXPECT_THAT((*stage_one)[0].buffers, ElementsAre(0, 1));  // outputs only
  ASSERT_EQ((*stage_one)[0].regions.size(), 1u);
  EXPECT_EQ((*stage_one)[0].regions[0].size, std::nullopt);
  const Placement outputs = PlaceAt((*stage_one)[0], {0, 128});
  ASSERT_EQ(outputs.height, 178);

  const std::vector<DeviceLayout> stage_two =
      OutputsStageTwo(problem, *stage_one, {outputs});
  ASSERT_EQ(stage_two.size(), 1u);
  const DeviceLayout& layout = stage_two[0];
  EXPECT_THAT(layout.buffers, ElementsAre(0, 1, 2, 3));
  ASSERT_EQ(layout.regions.size(), 2u);
  EXPECT_EQ(layout.regions[0].base, 0);
  EXPECT_EQ(layout.regions[0].size, 178);
  EXPECT_EQ(layout.placement.items[0].fixed_offset, 0);
  EXPECT_EQ(layout.placement.items[1].fixed_offset, 128);
  EXPECT_FALSE(layout.placement.items[2].pinned());
  EXPECT_FALSE(layout.placement.items[3].pinned());
  const Bytes top = layout.regions[1].base;
  EXPECT_GT(top, 178);
  EXPECT_EQ(top % 64, 0);

  const Plan plan = PlanFromPlacements(
      problem, stage_two, {PlaceAt(layout, {0, 128, top, top + 64})});
  EXPECT_THAT(plan.pools, ElementsAre(Pool("pool0", "cuda:0", 178),
                                      Pool("pool1", "cuda:0", 96)));
  EXPECT_THAT(plan.assignments,
              ElementsAre(Assignment{0, 0}, Assignment{0, 128},
                          Assignment{1, 0}, Assignment{1, 64}));
}

//   Buffers whose size depends on data are in no placement problem: each
//   gets a pool of its own, after its device's region pools (a device that
//   has only such buffers still has a layout, with no items).
TEST(PlanFromPlacementsTest, DataDependentBuffersGetPoolsOfTheirOwn) {
  std::vector<Buffer> buffers = {MakeBuffer("a", 100, 0, 2),
                                 MakeBuffer("d", 40, 1, 3),
                                 MakeBuffer("e", 10, 0, 1, false, "cuda:1")};
  buffers[1].size_is_data_dependent = true;
  buffers[2].size_is_data_dependent = true;
  const Problem problem = MakeProblem(buffers, PoolMode::kCombined);
  absl::StatusOr<std::vector<DeviceLayout>> layouts = BuildLayouts(problem);
  ASSERT_TRUE(layouts.ok()) << layouts.status();
  ASSERT_EQ(layouts->size(), 2u);
  EXPECT_THAT((*layouts)[0].buffers, ElementsAre(0));
  EXPECT_TRUE((*layouts)[1].buffers.empty());
  EXPECT_TRUE((*layouts)[1].placement.items.empty());

  const Plan plan = PlanFromPlacements(
      problem, *layouts,
      {PlaceAt((*layouts)[0], {0}), PlaceAt((*layouts)[1], {})});
  EXPECT_THAT(plan.pools, ElementsAre(Pool("pool0", "cuda:0", 100),
                                      Pool("pool1", "cuda:0", 40),
                                      Pool("pool2", "cuda:1", 10)));
  EXPECT_THAT(plan.assignments, ElementsAre(Assignment{0, 0}, Assignment{1, 0},
                                            Assignment{2, 0}));
}

// A buffer of size 0 conflicts with nothing: wherever its item was placed,
// it sits at offset 0 of its pool.
TEST(PlanFromPlacementsTest, ZeroSizeBuffersSitAtTheStartOfTheirPool) {
  const Problem problem =
      MakeProblem({MakeBuffer("a", 100, 0, 2), MakeBuffer("z", 0, 0, 1)},
                  PoolMode::kCombined);
  absl::StatusOr<std::vector<DeviceLayout>> layouts = BuildLayouts(problem);
  ASSERT_TRUE(layouts.ok()) << layouts.status();
  const Plan plan =
      PlanFromPlacements(problem, *layouts, {PlaceAt((*layouts)[0], {0, 512})});
  EXPECT_THAT(plan.pools, ElementsAre(Pool("pool0", "cuda:0", 100)));
  EXPECT_THAT(plan.assignments,
              ElementsAre(Assignment{0, 0}, Assignment{0, 0}));
}

}  // namespace
}  // namespace memplan
