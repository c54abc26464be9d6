// BestFitPortfolio on several threads. Built in every configuration, the
// ThreadSanitizer build included, unlike the single-threaded core tests.
#include <atomic>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "core/placement/best_fit_portfolio.h"
#include "gtest/gtest.h"
#include "tests/placement/random_placement.h"

namespace memplan {
namespace {

// Returns a random problem of `items` items over as many timesteps: large
// enough that every order runs for a while.
PlacementProblem LargeProblem(uint64_t seed, int64_t items,
                              int max_length_log2 = 4) {
  RandomPlacementOptions options;
  options.num_items = items;
  options.horizon = items;
  options.max_length_log2 = max_length_log2;
  return RandomPlacementProblem(seed, options);
}

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
  const PlacementProblem problem = LargeProblem(3, 25000, 6);
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
  const PlacementProblem problem = LargeProblem(9, 30000);
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
  const PlacementProblem problem = LargeProblem(7, 30000);
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
  const PlacementProblem problem = LargeProblem(8, 30000);
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
