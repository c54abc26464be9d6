// BestFitPortfolio on several threads. Built in every configuration, the
// ThreadSanitizer build included, unlike the single-threaded core tests.
#include <atomic>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "core/best_fit.h"
#include "gtest/gtest.h"
#include "tests/placement/random_placement.h"

namespace memplan {
namespace {

// The portfolio on several threads keeps what it keeps on one: the same
// placement and winner, whichever order finishes first.
TEST(BestFitPortfolioThreadsTest, ThreadsNeverChangeThePortfolio) {
  for (uint64_t seed = 0; seed < 300; ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    const PlacementProblem problem =
        RandomPlacementProblem(seed, VariedPlacementOptions(seed));
    BestFitOrder one_winner;
    absl::StatusOr<Placement> one = BestFitPortfolio(
        problem, PlanContext(), &one_winner, absl::InfiniteFuture(), 1);
    ASSERT_TRUE(one.ok()) << one.status();
    for (const int threads : {2, 3, 6}) {
      BestFitOrder winner;
      absl::StatusOr<Placement> many = BestFitPortfolio(
          problem, PlanContext(), &winner, absl::InfiniteFuture(), threads);
      ASSERT_TRUE(many.ok()) << many.status();
      EXPECT_EQ(*many, *one) << threads << " threads";
      EXPECT_EQ(winner, one_winner) << threads << " threads";
    }
  }
}

// From 5,000 items the automatic choice runs on threads; the result is
// still the one-thread portfolio's.
TEST(BestFitPortfolioThreadsTest, LargeProblemsOnAutomaticThreads) {
  RandomPlacementOptions options;
  options.num_items = 25000;
  options.horizon = 25000;
  options.max_length_log2 = 6;
  const PlacementProblem problem = RandomPlacementProblem(3, options);
  BestFitOrder one_winner;
  absl::StatusOr<Placement> one = BestFitPortfolio(
      problem, PlanContext(), &one_winner, absl::InfiniteFuture(), 1);
  ASSERT_TRUE(one.ok()) << one.status();
  BestFitOrder winner;
  absl::StatusOr<Placement> automatic =
      BestFitPortfolio(problem, PlanContext(), &winner);
  ASSERT_TRUE(automatic.ok()) << automatic.status();
  EXPECT_EQ(*automatic, *one);
  EXPECT_EQ(winner, one_winner);
  EXPECT_TRUE(ValidatePlacement(problem, *automatic).ok());
}

// As an anytime step past its time, the portfolio keeps the first order's
// placement, though the other thread's orders stop at once, before the
// first has finished.
TEST(BestFitPortfolioThreadsTest, PastStopAfterKeepsTheFirstOrder) {
  RandomPlacementOptions options;
  options.num_items = 30000;
  options.horizon = 30000;
  const PlacementProblem problem = RandomPlacementProblem(9, options);
  BestFitOrder winner;
  absl::StatusOr<Placement> placement = BestFitPortfolio(
      problem, PlanContext(), &winner, absl::InfinitePast(), 2);
  ASSERT_TRUE(placement.ok()) << placement.status();
  EXPECT_EQ(winner, kAllBestFitOrders[0]);
  absl::StatusOr<Placement> first =
      BestFitPlace(problem, kAllBestFitOrders[0], PlanContext());
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*placement, *first);
}

TEST(BestFitPortfolioThreadsTest, StopsWhenCancelled) {
  RandomPlacementOptions options;
  options.num_items = 30000;
  options.horizon = 30000;
  const PlacementProblem problem = RandomPlacementProblem(7, options);
  const std::atomic<bool> cancelled{true};
  PlanContext context;
  context.cancelled = &cancelled;
  EXPECT_EQ(BestFitPortfolio(problem, context, nullptr, absl::InfiniteFuture(),
                             2)
                .status()
                .code(),
            absl::StatusCode::kCancelled);
}

TEST(BestFitPortfolioThreadsTest, StopsAtThePassedDeadline) {
  RandomPlacementOptions options;
  options.num_items = 30000;
  options.horizon = 30000;
  const PlacementProblem problem = RandomPlacementProblem(8, options);
  PlanContext context;
  context.deadline = absl::InfinitePast();
  EXPECT_EQ(BestFitPortfolio(problem, context, nullptr, absl::InfiniteFuture(),
                             2)
                .status()
                .code(),
            absl::StatusCode::kDeadlineExceeded);
}

}  // namespace
}  // namespace memplan
