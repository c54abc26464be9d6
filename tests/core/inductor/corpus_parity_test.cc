// Strategy `inductor` on every corpus file, in the file's pool mode, gives
// exactly Inductor's own plan: same pool names, devices, sizes and offsets.
#include <filesystem>
#include <string>
#include <vector>

#include "client/graph_files.h"
#include "core/inductor/pool_planner.h"
#include "core/validator.h"
#include "gtest/gtest.h"
#include "proto/convert.h"
#include "tests/core/test_names.h"

namespace memplan {
namespace {

std::vector<std::string> CorpusFiles() {
  return FilesWithExtension(MEMPLAN_CORPUS_DIR, ".json");
}

TEST(CorpusParityTest, CorpusIsThere) {
  EXPECT_GE(CorpusFiles().size(), 31u)
      << "no corpus files in " << MEMPLAN_CORPUS_DIR;
}

class CorpusParityTest : public testing::TestWithParam<std::string> {};

TEST_P(CorpusParityTest, InductorStrategyGivesInductorsPlan) {
  absl::StatusOr<CorpusGraph> graph = ReadCorpusFile(GetParam());
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<Problem> problem = RequestToProblem(graph->request);
  ASSERT_TRUE(problem.ok()) << problem.status();
  absl::StatusOr<Plan> plan = InductorPlanner().PlanProblem(*problem, {});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(ValidatePlan(*problem, *plan).ok());
  // Symbolic pool sizes (dynamic shapes) are compared by value in
  // symbolic_plan_test; here the pools' names, devices and bytes.
  std::vector<Pool> pools = plan->pools;
  for (Pool& pool : pools) pool.symbolic_size.clear();
  EXPECT_EQ(pools, graph->expected_plan.pools);
  ASSERT_EQ(plan->assignments.size(), graph->expected_plan.assignments.size());
  for (size_t i = 0; i < plan->assignments.size(); ++i) {
    const Assignment& expected = graph->expected_plan.assignments[i];
    EXPECT_EQ(plan->assignments[i].pool, expected.pool) << "buffer " << i;
    // Under dynamic shapes Inductor may know only a symbolic offset; the
    // file then records no integer offset and only the pool is compared.
    if (expected.offset != kUnknownOffset) {
      EXPECT_EQ(plan->assignments[i].offset, expected.offset) << "buffer " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, CorpusParityTest,
                         testing::ValuesIn(CorpusFiles()), CorpusFileTestName);

}  // namespace
}  // namespace memplan
