// Tests of server/stored_plan.h: a plan's summary, made from the response
// when the plan is stored or from bytes read back (Redis).
#include "server/stored_plan.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"

namespace memplan {
namespace {

// Two pools on one device, one on another; three assignments.
v1::PlanMemoryResponse TwoDeviceResponse() {
  v1::PlanMemoryResponse response;
  response.set_graph_hash("0123456789abcdef0123456789abcdef");
  for (const char* device : {"cuda:0", "cuda:1", "cuda:0"}) {
    response.add_pools()->set_device(device);
  }
  for (int i = 0; i < 3; ++i) response.add_assignments()->set_offset(64 * i);
  response.mutable_stats()->set_planner("best_fit(size)");
  response.mutable_stats()->set_total_pool_bytes(4096);
  response.mutable_stats()->set_lower_bound_bytes(2048);
  return response;
}

TEST(StoredPlanTest, SummaryCountsAssignmentsAndDistinctDevices) {
  PlanSummary expected;
  expected.graph_hash = "0123456789abcdef0123456789abcdef";
  expected.planner = "best_fit(size)";
  expected.total_pool_bytes = 4096;
  expected.lower_bound_bytes = 2048;
  expected.buffers = 3;
  expected.devices = 2;
  EXPECT_EQ(SummaryOf(TwoDeviceResponse()), expected);
  EXPECT_EQ(SummaryOf(v1::PlanMemoryResponse()), PlanSummary());
}

TEST(StoredPlanTest, StoredBytesAreTheSerializedResponse) {
  const v1::PlanMemoryResponse response = TwoDeviceResponse();
  const std::shared_ptr<const StoredPlan> plan = StorePlan(response);
  EXPECT_EQ(plan->response, response.SerializeAsString());
  EXPECT_EQ(plan->summary, SummaryOf(response));
}

TEST(StoredPlanTest, BytesReadBackAreParsedOnceForTheSummary) {
  const v1::PlanMemoryResponse response = TwoDeviceResponse();
  const absl::StatusOr<std::shared_ptr<const StoredPlan>> plan =
      StoredPlanFromBytes(response.SerializeAsString());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ((*plan)->response, response.SerializeAsString());
  EXPECT_EQ((*plan)->summary, SummaryOf(response));

  const absl::StatusOr<std::shared_ptr<const StoredPlan>> garbage =
      StoredPlanFromBytes("\xff\xff\xff not a response");
  EXPECT_EQ(garbage.status().code(), absl::StatusCode::kDataLoss)
      << garbage.status();
}

}  // namespace
}  // namespace memplan
