#include "core/planner.h"

#include <atomic>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace memplan {
namespace {

TEST(PlanContextTest, DefaultContextIsOk) {
  EXPECT_TRUE(PlanContext{}.Check().ok());
}

TEST(PlanContextTest, FutureDeadlineIsOk) {
  PlanContext context;
  context.deadline = absl::Now() + absl::Hours(1);
  EXPECT_TRUE(context.Check().ok());
}

TEST(PlanContextTest, PastDeadlineIsDeadlineExceeded) {
  PlanContext context;
  context.deadline = absl::Now() - absl::Seconds(1);
  const absl::Status status = context.Check();
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_FALSE(status.message().empty());
}

TEST(PlanContextTest, CancelledFlagIsCancelled) {
  std::atomic<bool> cancelled{false};
  PlanContext context;
  context.cancelled = &cancelled;
  EXPECT_TRUE(context.Check().ok());
  cancelled = true;
  const absl::Status status = context.Check();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
  EXPECT_FALSE(status.message().empty());
}

}  // namespace
}  // namespace memplan
