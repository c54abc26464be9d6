// Property tests: every planner, in every pool mode, on thousands of random
// problems from fixed seeds. Each plan must pass the independent validator,
// need at least the lower bound, and be the same when planned twice.
#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/bounds.h"
#include "core/graph_memory.h"
#include "core/planner.h"
#include "core/problem.h"
#include "core/strategies.h"
#include "core/types.h"
#include "core/validator.h"
#include "gtest/gtest.h"
#include "tests/core/random_problems.h"

namespace memplan {
namespace {

using PropertyParam = std::tuple<const Planner*, PoolMode>;

class PropertyTest : public ::testing::TestWithParam<PropertyParam> {
 protected:
  const Planner& planner() const { return *std::get<0>(GetParam()); }
  PoolMode pool_mode() const { return std::get<1>(GetParam()); }

  // The context of one plan: search strategies get a small deterministic
  // work budget (the clock, loose, only guards against a hang), so that a
  // loaded machine cannot end a search at another point the second time.
  PlanContext Context() {
    work_left_ = 20;
    PlanContext context;
    context.search_deadline = absl::Now() + absl::Seconds(10);
    context.work_left = &work_left_;
    return context;
  }
  int64_t work_left_ = 0;

  // Plans `count` problems of seeds first_seed.. and checks each one; the
  // search strategies (which may spend their whole budget on a problem)
  // check one problem in 20.
  void CheckRandomProblems(uint64_t first_seed, int count,
                           RandomProblemOptions options) {
    options.pool_mode = pool_mode();
    if (planner().capabilities().searches_until_budget) {
      count = std::max(1, count / 20);
    }
    int planned = 0;
    for (uint64_t seed = first_seed; seed < first_seed + count; ++seed) {
      const Problem problem = RandomProblem(seed, options);
      ASSERT_TRUE(ValidateProblem(problem).ok())
          << "seed " << seed << ": " << ValidateProblem(problem);
      const absl::StatusOr<Plan> plan =
          planner().PlanProblem(problem, Context());
      ASSERT_TRUE(plan.ok()) << "seed " << seed << ": " << plan.status();
      const absl::Status valid = ValidatePlan(problem, *plan);
      ASSERT_TRUE(valid.ok()) << "seed " << seed << ": " << valid << "\n"
                              << *plan;
      EXPECT_GE(TotalPoolBytes(*plan), LowerBound(problem))
          << "seed " << seed << "\n"
          << *plan;
      EXPECT_GE(TotalPoolBytes(*plan), ModeLowerBound(problem))
          << "seed " << seed << "\n"
          << *plan;
      const LowerBounds bounds = ComputeLowerBounds(problem);
      EXPECT_EQ(bounds.plain, LowerBound(problem)) << "seed " << seed;
      EXPECT_EQ(bounds.mode, ModeLowerBound(problem)) << "seed " << seed;
      EXPECT_GE(PeakPoolBytes(problem, *plan), LowerBound(problem))
          << "seed " << seed << "\n"
          << *plan;
      // The whole graph: no plan below the lower bound of its peak; the
      // planners that minimize it never above one pool per buffer.
      const bool minimizes_peak = planner().capabilities().minimizes_peak &&
                                  problem.whole_graph &&
                                  problem.pool_mode == PoolMode::kIntermediates;
      for (const DevicePeaks& peaks :
           WholeGraphPeaks(problem, *plan, TimelineOfBuffers(problem))) {
        EXPECT_GE(peaks.predicted, peaks.lower_bound) << "seed " << seed;
        EXPECT_GE(peaks.baseline, peaks.lower_bound) << "seed " << seed;
        if (minimizes_peak) {
          EXPECT_LE(peaks.predicted, peaks.baseline)
              << "seed " << seed << " on " << peaks.device << "\n"
              << *plan;
        }
      }
      const absl::StatusOr<Plan> again =
          planner().PlanProblem(problem, Context());
      ASSERT_TRUE(again.ok()) << "seed " << seed << ": " << again.status();
      EXPECT_EQ(*plan, *again) << "seed " << seed;
      ++planned;
    }
    EXPECT_EQ(planned, count);
  }
};

TEST_P(PropertyTest, SmallProblemsOneDevice) {
  RandomProblemOptions options;
  options.min_buffers = 1;
  options.max_buffers = 12;
  options.horizon = 10;
  CheckRandomProblems(/*first_seed=*/1000, /*count=*/20000, options);
}

TEST_P(PropertyTest, MediumProblemsSeveralDevices) {
  RandomProblemOptions options;
  options.min_buffers = 10;
  options.max_buffers = 60;
  options.num_devices = 3;
  options.horizon = 40;
  CheckRandomProblems(/*first_seed=*/2000000, /*count=*/4000, options);
}

TEST_P(PropertyTest, ManyOutputsAndEmptyRanges) {
  RandomProblemOptions options;
  options.min_buffers = 5;
  options.max_buffers = 40;
  options.num_devices = 2;
  options.output_fraction = 0.5;
  options.empty_range_fraction = 0.2;
  options.zero_size_fraction = 0.2;
  options.horizon = 20;
  CheckRandomProblems(/*first_seed=*/3000000, /*count=*/5000, options);
}

TEST_P(PropertyTest, OutputsNotLivingToTheEndAndOtherAlignments) {
  RandomProblemOptions options;
  options.min_buffers = 2;
  options.max_buffers = 30;
  options.outputs_live_to_end = false;
  options.output_fraction = 0.3;
  options.horizon = 15;
  uint64_t first_seed = 4000000;
  for (Bytes alignment : {Bytes{1}, Bytes{8}, Bytes{256}}) {
    options.alignment = alignment;
    CheckRandomProblems(first_seed, /*count=*/2000, options);
    first_seed += 100000;
  }
}

// Memory outside the plan: the strategies that minimize the whole graph's
// peak never raise it above one pool per buffer's (the baseline of plain
// buffers, which hands no storage on) in intermediates mode.
TEST_P(PropertyTest, WholeGraphProblems) {
  RandomProblemOptions options;
  options.min_buffers = 5;
  options.max_buffers = 60;
  options.num_devices = 2;
  options.horizon = 40;
  options.max_unplanned = 8;
  CheckRandomProblems(/*first_seed=*/6000000, /*count=*/3000, options);
}

TEST_P(PropertyTest, LongHorizonLargerProblems) {
  RandomProblemOptions options;
  options.min_buffers = 100;
  options.max_buffers = 300;
  options.num_devices = 2;
  options.horizon = 400;
  CheckRandomProblems(/*first_seed=*/5000000, /*count=*/300, options);
}

std::string ParamName(const ::testing::TestParamInfo<PropertyParam>& info) {
  return absl::StrCat(std::string(std::get<0>(info.param)->name()), "_",
                      PoolModeName(std::get<1>(info.param)));
}

INSTANTIATE_TEST_SUITE_P(
    AllPlannersAllModes, PropertyTest,
    ::testing::Combine(::testing::ValuesIn(AllPlanners()),
                       ::testing::Values(PoolMode::kNone,
                                         PoolMode::kIntermediates,
                                         PoolMode::kOutputs,
                                         PoolMode::kCombined)),
    ParamName);

}  // namespace
}  // namespace memplan
