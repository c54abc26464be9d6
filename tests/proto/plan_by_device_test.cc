// Tests of the grouping of a plan by device and pool
// (proto/plan_by_device.h).
#include "proto/plan_by_device.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memplan {
namespace {

using ::testing::ElementsAre;

// cpu's buffer first, so devices come in the order cpu, cuda:0; pools in
// plan order: pool0 (cuda:0: a, c), pool1 (cpu: b), pool2 (cuda:0: d).
Problem TwoDevices() {
  Problem problem;
  problem.buffers.resize(4);
  const char* devices[] = {"cpu", "cuda:0", "cuda:0", "cuda:0"};
  const Bytes sizes[] = {64, 128, 256, 64};
  for (int i = 0; i < 4; ++i) {
    problem.buffers[i].names = {std::string(1, static_cast<char>('b' + i))};
    problem.buffers[i].device = devices[i];
    problem.buffers[i].size = sizes[i];
    problem.buffers[i].live_range = {0, 2};
  }
  return problem;
}

Plan TwoDevicesPlan() {
  Plan plan;
  plan.pools = {
      {"pool0", "cuda:0", 384}, {"pool1", "cpu", 64}, {"pool2", "cuda:0", 64}};
  plan.assignments = {{1, 0}, {0, 0}, {0, 128}, {2, 0}};
  return plan;
}

TEST(PlanByDeviceTest, GroupsPoolsByDeviceAndBuffersByPool) {
  const absl::StatusOr<PlanByDevice> grouped =
      GroupPlanByDevice(TwoDevices(), TwoDevicesPlan());
  ASSERT_TRUE(grouped.ok()) << grouped.status();
  ASSERT_EQ(grouped->devices.size(), 2u);
  EXPECT_EQ(grouped->devices[0].device, "cpu");
  EXPECT_EQ(grouped->devices[0].lower_bound, 64);
  EXPECT_EQ(grouped->devices[0].pool_bytes, 64);
  EXPECT_THAT(grouped->devices[0].pools, ElementsAre(1));
  EXPECT_EQ(grouped->devices[1].device, "cuda:0");
  EXPECT_EQ(grouped->devices[1].lower_bound, 448);
  EXPECT_EQ(grouped->devices[1].pool_bytes, 448);
  EXPECT_THAT(grouped->devices[1].pools, ElementsAre(0, 2));
  EXPECT_THAT(grouped->pool_device, ElementsAre(1, 0, 1));
  EXPECT_THAT(grouped->pool_buffers[0], ElementsAre(1, 2));
  EXPECT_THAT(grouped->pool_buffers[1], ElementsAre(0));
  EXPECT_THAT(grouped->pool_buffers[2], ElementsAre(3));
}

TEST(PlanByDeviceTest, PlanThatDoesNotFitIsInvalidArgument) {
  Plan plan = TwoDevicesPlan();
  plan.assignments.pop_back();
  EXPECT_EQ(GroupPlanByDevice(TwoDevices(), plan).status().code(),
            absl::StatusCode::kInvalidArgument);
  plan = TwoDevicesPlan();
  plan.assignments[2].pool = 3;
  EXPECT_EQ(GroupPlanByDevice(TwoDevices(), plan).status().code(),
            absl::StatusCode::kInvalidArgument);
  plan = TwoDevicesPlan();
  plan.pools[2].device = "tpu";
  const absl::Status status = GroupPlanByDevice(TwoDevices(), plan).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr("pool2"));
}

}  // namespace
}  // namespace memplan
