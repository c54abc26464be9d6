// Tests of the registry of strategies (core/strategies.h): every strategy
// listed once, in its fixed order, each found by its name and only by it.
#include "core/strategies.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/random_problems.h"

namespace memplan {
namespace {

using ::testing::ElementsAre;

std::vector<std::string> Names(const std::vector<const Planner*>& planners) {
  std::vector<std::string> names;
  for (const Planner* planner : planners) {
    names.emplace_back(planner->name());
  }
  return names;
}

TEST(AllPlannersTest, ListsEveryStrategyInItsOrder) {
  EXPECT_THAT(Names(AllPlanners()),
              ElementsAre("inductor", "best_fit", "optimal", "auto", "reuse",
                          "nnc", "partition"));
}

TEST(AllPlannersTest, IsTheSameListOfTheSamePlannersEveryTime) {
  const std::vector<const Planner*>& first = AllPlanners();
  const std::vector<const Planner*>& second = AllPlanners();
  EXPECT_EQ(&first, &second);
  EXPECT_EQ(first, second);
}

TEST(FindPlannerTest, FindsEachStrategyByItsName) {
  for (const Planner* planner : AllPlanners()) {
    EXPECT_EQ(FindPlanner(planner->name()), planner) << planner->name();
  }
}

TEST(FindPlannerTest, UnknownNamesFindNothing) {
  for (const char* name :
       {"", "Inductor", "best-fit", "best_fit(size)", "inductor ", "greedy"}) {
    EXPECT_EQ(FindPlanner(name), nullptr) << "'" << name << "'";
  }
}

// Every strategy the registry hands out plans: a small problem in pool mode
// combined, the plan accepted by the validator.
TEST(AllPlannersTest, EveryStrategyPlans) {
  Problem problem;
  problem.buffers = {MakeBuffer("a", 256, 0, 2), MakeBuffer("b", 128, 1, 3),
                     MakeBuffer("c", 256, 2, 4, /*is_output=*/true)};
  problem.pool_mode = PoolMode::kCombined;
  for (const Planner* planner : AllPlanners()) {
    SCOPED_TRACE(planner->name());
    const Plan plan = PlanAndValidate(*planner, problem);
    EXPECT_EQ(plan.assignments.size(), 3u);
  }
}

}  // namespace
}  // namespace memplan
