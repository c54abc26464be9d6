// Strategy optimal on a trace too large for the exact search as a whole:
// the search then packs windows around the trace's peak exactly and places
// the rest around them by best fit (core/placement/optimal_search.cc,
// ImproveAroundPeak). Under a work budget, so that the plan is the same on
// every machine and under the sanitizers.
#include <string>

#include "client/graph_files.h"
#include "core/bounds.h"
#include "core/placement/placement_planners.h"
#include "core/strategies.h"
#include "core/validator.h"
#include "gtest/gtest.h"
#include "proto/convert.h"

namespace memplan {
namespace {

// Search work units for the test (PlanContext::work_left): what half a
// second of time budget buys at kSearchChecksPerSecond
// (core/placement/placement_planners.cc), spent alike on every machine.
constexpr int64_t kWork = 750;

// Plans `problem` with strategy optimal and `work` search work units.
absl::StatusOr<Plan> PlanOptimal(const Problem& problem, int64_t work) {
  PlanContext context;
  context.work_left = &work;
  return FindPlanner("optimal")->PlanProblem(problem, context);
}

TEST(LargeTraceTest, PeakWindowsBringPanguToItsLowerBound) {
  // 18,692 buffers: 12.2 million overlapping pairs, past the search's cap.
  absl::StatusOr<v1::PlanMemoryRequest> request = RequestFromFile(
      MEMPLAN_BENCHMARKS_DIR "/idealloc/somas_tensors_pangu_2.6B.csv");
  ASSERT_TRUE(request.ok()) << request.status();
  absl::StatusOr<Problem> problem = RequestToProblem(*request);
  ASSERT_TRUE(problem.ok()) << problem.status();
  // As memplan-quality-bench: the trace's sizes are bytes, unaligned.
  problem->alignment = 1;
  const Bytes bound = ModeLowerBound(*problem);

  // Every best-fit order alone stays above the bound (0.76% at best).
  absl::StatusOr<Plan> best_fit =
      FindPlanner("best_fit")->PlanProblem(*problem, {});
  ASSERT_TRUE(best_fit.ok()) << best_fit.status();
  EXPECT_GT(TotalPoolBytes(*best_fit), bound);

  absl::StatusOr<Plan> plan = PlanOptimal(*problem, kWork);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(ValidatePlan(*problem, *plan).ok());
  EXPECT_EQ(TotalPoolBytes(*plan), bound);
  EXPECT_TRUE(plan->proven_optimal);

  absl::StatusOr<Plan> again = PlanOptimal(*problem, kWork);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->assignments, plan->assignments);
}

}  // namespace
}  // namespace memplan
