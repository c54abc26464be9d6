// Strategies best_fit, optimal and auto: pool-mode rules, pinned offsets,
// per-buffer alignment, capacity, and auto never above Inductor.
#include "core/placement/placement_planners.h"

#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "core/bounds.h"
#include "core/inductor/pool_planner.h"
#include "core/problem.h"
#include "core/strategies.h"
#include "core/validator.h"
#include "gtest/gtest.h"
#include "tests/core/random_problems.h"

namespace memplan {
namespace {

PlanContext Budget(absl::Duration budget) {
  PlanContext context;
  context.search_deadline = absl::Now() + budget;
  return context;
}

class SearchPlannersTest : public testing::TestWithParam<std::string> {
 protected:
  const Planner& planner() const { return *FindPlanner(GetParam()); }

  Plan PlanOrDie(const Problem& problem) {
    return PlanAndValidate(planner(), problem, Budget(absl::Milliseconds(50)));
  }
};

// offset
//  256 +----+----+
//      | b0 | b2 |        combined: b0 and b2 share bytes, b1 above;
//      +----+----+----+   the plan meets the lower bound.
//      |      b1      |
//    0 +--------------+-> timestep
//      0    2    4    6
TEST_P(SearchPlannersTest, CombinedModeMeetsTheLowerBound) {
  Problem problem;
  problem.pool_mode = PoolMode::kCombined;
  problem.buffers = {MakeBuffer("b0", 128, 0, 2), MakeBuffer("b1", 128, 0, 6),
                     MakeBuffer("b2", 128, 2, 4, true)};
  Plan plan = PlanOrDie(problem);
  EXPECT_EQ(plan.pools.size(), 1u);
  EXPECT_EQ(TotalPoolBytes(plan), LowerBound(problem));
}

// offset
//  512 +------+-------------+
//      |  b   |      o      |   intermediates: b [0,3) lives in output o's
//    0 +------+-------------+   pool before o begins; no other pool.
//      0      3            10
TEST_P(SearchPlannersTest, IntermediatesUseAnOutputPoolBeforeTheOutput) {
  Problem problem;
  problem.pool_mode = PoolMode::kIntermediates;
  problem.buffers = {MakeBuffer("o", 512, 3, 10, true),
                     MakeBuffer("b", 256, 0, 3)};
  Plan plan = PlanOrDie(problem);
  EXPECT_EQ(plan.pools.size(), 1u);
  EXPECT_EQ(TotalPoolBytes(plan), 512);
  EXPECT_EQ(RetainedBytes(problem, plan), 512);
}

TEST_P(SearchPlannersTest, IntermediatesModeGivesEachOutputItsOwnPool) {
  Problem problem;
  problem.pool_mode = PoolMode::kIntermediates;
  problem.buffers = {MakeBuffer("o0", 100, 0, 10, true),
                     MakeBuffer("o1", 200, 5, 10, true),
                     MakeBuffer("b", 300, 0, 5)};
  Plan plan = PlanOrDie(problem);
  EXPECT_NE(plan.assignments[0].pool, plan.assignments[1].pool);
  EXPECT_GE(TotalPoolBytes(plan), ModeLowerBound(problem));
}

TEST_P(SearchPlannersTest, OutputsModeKeepsOutputsTogether) {
  Problem problem;
  problem.pool_mode = PoolMode::kOutputs;
  problem.buffers = {MakeBuffer("o0", 128, 4, 10, true),
                     MakeBuffer("o1", 128, 6, 10, true),
                     MakeBuffer("b0", 128, 0, 4), MakeBuffer("b1", 512, 0, 6)};
  Plan plan = PlanOrDie(problem);
  EXPECT_EQ(plan.assignments[0].pool, plan.assignments[1].pool);
}

TEST_P(SearchPlannersTest, PinnedOffsetsAndAlignmentsAreRespected) {
  for (PoolMode mode :
       {PoolMode::kCombined, PoolMode::kIntermediates, PoolMode::kOutputs}) {
    Problem problem;
    problem.pool_mode = mode;
    problem.alignment = 1;
    problem.buffers = {MakeBuffer("a", 10, 0, 4), MakeBuffer("b", 10, 2, 6),
                       MakeBuffer("c", 7, 1, 3),
                       MakeBuffer("o", 5, 3, 8, true)};
    problem.buffers[1].fixed_offset = 40;
    problem.buffers[2].alignment = 16;
    Plan plan = PlanOrDie(problem);
    EXPECT_EQ(plan.assignments[1].offset, 40) << mode;
    EXPECT_EQ(plan.assignments[2].offset % 16, 0) << mode;
  }
}

TEST_P(SearchPlannersTest, CapacityBelowTheLowerBoundIsExhausted) {
  Problem problem;
  problem.pool_mode = PoolMode::kCombined;
  problem.buffers = {MakeBuffer("a", 64, 0, 4), MakeBuffer("b", 64, 2, 6)};
  problem.capacity = 100;
  absl::StatusOr<Plan> plan =
      planner().PlanProblem(problem, Budget(absl::Milliseconds(50)));
  ASSERT_EQ(plan.status().code(), absl::StatusCode::kResourceExhausted)
      << plan.status();
  EXPECT_NE(plan.status().message().find("28 bytes more"), std::string::npos)
      << plan.status();
  problem.capacity = 128;
  EXPECT_TRUE(PlanOrDie(problem).pools.size() == 1);
}

INSTANTIATE_TEST_SUITE_P(Strategies, SearchPlannersTest,
                         testing::Values("best_fit", "optimal", "auto"));

TEST(AutoPlannerTest, NamesTheWinner) {
  Problem problem;
  problem.pool_mode = PoolMode::kCombined;
  problem.buffers = {MakeBuffer("a", 64, 0, 4), MakeBuffer("b", 64, 2, 6)};
  absl::StatusOr<Plan> plan =
      FindPlanner("auto")->PlanProblem(problem, Budget(absl::Milliseconds(50)));
  ASSERT_TRUE(plan.ok());
  // Inductor meets the bound here, and ties go to Inductor.
  EXPECT_EQ(plan->planner, "inductor");
  EXPECT_TRUE(plan->proven_optimal);
}

TEST(AutoPlannerTest, RefusesNothingInductorCannotDo) {
  Problem problem;
  problem.pool_mode = PoolMode::kCombined;
  problem.buffers = {MakeBuffer("a", 64, 0, 4), MakeBuffer("b", 64, 2, 6)};
  problem.buffers[0].fixed_offset = 64;
  EXPECT_EQ(InductorPlanner().PlanProblem(problem, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<Plan> plan =
      FindPlanner("auto")->PlanProblem(problem, Budget(absl::Milliseconds(50)));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->assignments[0].offset, 64);
}

}  // namespace
}  // namespace memplan
