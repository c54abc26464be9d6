// Tests of BestFitPortfolio (core/placement/best_fit_portfolio.h): the
// lowest order kept and named, on one thread and on several. Built in every
// configuration, the ThreadSanitizer build included, unlike the
// single-threaded core tests: the portfolio is where core/ starts threads.
#include "core/placement/best_fit_portfolio.h"

#include <atomic>
#include <cstdint>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/placement/best_fit.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/placement/random_placement.h"

namespace memplan {
namespace {

using ::testing::ElementsAre;

//   by size: a, b, d, c (12)          by length: b, c, a, d (10)
//
//   12 |      +-------+                 10 | +---+
//      |      |   c   |                    | | a |   +-------+
//   10 | +----+--+----+                  7 | +---+   |   c   |
//      | |   b   |                         | |   +---+---+---+
//    5 | +---+---+                       5 | |   b   |   |
//      | | a |   +----+                    | |       | d |
//      | |   |   | d  |                    | |       |   |
//    0 +-+---+---+----+-->               0 +-+---+---+---+-->
//        0   1   2    3                      0   1   2   3
//
// By size, d takes 0 once b has ended and c finds only a 1-byte gap; by
// length, c goes above b and d fits under it. The contention and area
// orders also reach 10, and contention is listed first.
TEST(BestFitPortfolioTest, KeepsTheLowestAndNamesTheWinner) {
  PlacementProblem problem;
  problem.items = {Item(0, 1, 5), Item(0, 2, 5), Item(1, 3, 2), Item(2, 3, 4)};
  absl::StatusOr<Placement> by_size =
      BestFitPlace(problem, BestFitOrder::kSizeDescending, PlanContext());
  absl::StatusOr<Placement> by_length =
      BestFitPlace(problem, BestFitOrder::kLengthDescending, PlanContext());
  ASSERT_TRUE(by_size.ok());
  ASSERT_TRUE(by_length.ok());
  EXPECT_THAT(by_size->offsets, ElementsAre(0, 5, 10, 0));
  EXPECT_EQ(by_size->height, 12);
  EXPECT_THAT(by_length->offsets, ElementsAre(5, 0, 5, 0));
  EXPECT_EQ(by_length->height, 10);
  BestFitOrder winner = BestFitOrder::kProgramOrder;
  absl::StatusOr<Placement> best =
      BestFitPortfolio(problem, PlanContext(), &winner);
  ASSERT_TRUE(best.ok()) << best.status();
  EXPECT_EQ(winner, BestFitOrder::kContentionDescending);
  EXPECT_EQ(best->height, by_length->height);
  EXPECT_EQ(*best, *BestFitPlace(problem, BestFitOrder::kContentionDescending,
                                 PlanContext()));
}

TEST(BestFitPortfolioTest, IsTheFirstLowestOrder) {
  for (uint64_t seed = 0; seed < 1000; ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    const PlacementProblem problem =
        RandomPlacementProblem(seed, VariedPlacementOptions(seed));
    Bytes lowest = std::numeric_limits<Bytes>::max();
    BestFitOrder first_lowest = kAllBestFitOrders[0];
    for (const BestFitOrder order : kAllBestFitOrders) {
      absl::StatusOr<Placement> placement =
          BestFitPlace(problem, order, PlanContext());
      ASSERT_TRUE(placement.ok());
      if (placement->height < lowest) {
        lowest = placement->height;
        first_lowest = order;
      }
    }
    BestFitOrder winner;
    absl::StatusOr<Placement> best =
        BestFitPortfolio(problem, PlanContext(), &winner);
    ASSERT_TRUE(best.ok()) << best.status();
    EXPECT_EQ(best->height, lowest);
    EXPECT_EQ(winner, first_lowest);
    EXPECT_TRUE(ValidatePlacement(problem, *best).ok());
  }
}

TEST(BestFitPortfolioTest, StopsAtTheDeadline) {
  RandomPlacementOptions options;
  options.num_items = 10000;
  const PlacementProblem problem = RandomPlacementProblem(1, options);
  PlanContext context;
  context.deadline = absl::Now() - absl::Seconds(1);
  EXPECT_EQ(BestFitPortfolio(problem, context).status().code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST(BestFitPortfolioTest, StopsWhenCancelled) {
  RandomPlacementOptions options;
  options.num_items = 10000;
  const PlacementProblem problem = RandomPlacementProblem(1, options);
  std::atomic<bool> cancelled(true);
  PlanContext context;
  context.cancelled = &cancelled;
  EXPECT_EQ(BestFitPortfolio(problem, context).status().code(),
            absl::StatusCode::kCancelled);
}

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
  EXPECT_EQ(
      BestFitPortfolio(problem, context, nullptr, absl::InfiniteFuture(), 2)
          .status()
          .code(),
      absl::StatusCode::kCancelled);
}

TEST(BestFitPortfolioThreadsTest, StopsAtThePassedDeadline) {
  const PlacementProblem problem = LargeProblem(8, 30000);
  PlanContext context;
  context.deadline = absl::InfinitePast();
  EXPECT_EQ(
      BestFitPortfolio(problem, context, nullptr, absl::InfiniteFuture(), 2)
          .status()
          .code(),
      absl::StatusCode::kDeadlineExceeded);
}

}  // namespace
}  // namespace memplan
