// Strategy auto on every corpus graph, in every pool mode: never above
// Inductor (a hard rule), valid, and at least the mode's lower bound.
#include <algorithm>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "absl/time/clock.h"
#include "client/graph_files.h"
#include "core/bounds.h"
#include "core/inductor/pool_planner.h"
#include "core/placement/placement_planners.h"
#include "core/strategies.h"
#include "core/validator.h"
#include "gtest/gtest.h"
#include "proto/convert.h"
#include "tests/core/test_names.h"

namespace memplan {
namespace {

std::vector<std::string> CorpusFiles() {
  return FilesWithExtension(MEMPLAN_CORPUS_DIR, ".json");
}

class CorpusAutoTest
    : public testing::TestWithParam<std::tuple<std::string, PoolMode>> {};

TEST_P(CorpusAutoTest, AutoIsNeverAboveInductor) {
  const auto& [file, mode] = GetParam();
  absl::StatusOr<CorpusGraph> graph = ReadCorpusFile(file);
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<Problem> problem = RequestToProblem(graph->request);
  ASSERT_TRUE(problem.ok()) << problem.status();
  problem->pool_mode = mode;
  absl::StatusOr<Plan> inductor = InductorPlanner().PlanProblem(*problem, {});
  ASSERT_TRUE(inductor.ok()) << inductor.status();
  PlanContext context;
  context.search_deadline = absl::Now() + absl::Milliseconds(20);
  absl::StatusOr<Plan> plan =
      FindPlanner("auto")->PlanProblem(*problem, context);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(ValidatePlan(*problem, *plan).ok());
  EXPECT_LE(TotalPoolBytes(*plan), TotalPoolBytes(*inductor));
  EXPECT_GE(TotalPoolBytes(*plan), ModeLowerBound(*problem));
  EXPECT_GE(TotalPoolBytes(*inductor), ModeLowerBound(*problem));
}

INSTANTIATE_TEST_SUITE_P(
    Corpus, CorpusAutoTest,
    testing::Combine(testing::ValuesIn(CorpusFiles()),
                     testing::Values(PoolMode::kIntermediates,
                                     PoolMode::kCombined, PoolMode::kOutputs,
                                     PoolMode::kNone)),
    [](const auto& info) {
      return TestNameOf(
          std::filesystem::path(std::get<0>(info.param)).stem().string() + "_" +
          PoolModeName(std::get<1>(info.param)));
    });

}  // namespace
}  // namespace memplan
