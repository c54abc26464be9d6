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

// Small problems of every flavour, so that orders often tie at the lower
// bound and the tie rule decides the winner.
RandomPlacementOptions OptionsForSeed(uint64_t seed) {
  RandomPlacementOptions options;
  options.num_items = 1 + static_cast<int64_t>(seed % 60);
  options.horizon = 1 + static_cast<Timestep>((seed / 7) % 40);
  options.max_length_log2 = static_cast<int>((seed / 3) % 7);
  options.max_size = seed % 5 == 0 ? 16 : Bytes{1} << 20;
  options.pinned_fraction = seed % 3 == 0 ? 0.1 : 0.0;
  options.max_alignment_log2 = seed % 2 == 0 ? 6 : 0;
  return options;
}

// The portfolio on several threads keeps what it keeps on one: the same
// placement and winner, whichever order finishes first.
TEST(BestFitPortfolioThreadsTest, ThreadsNeverChangeThePortfolio) {
  for (uint64_t seed = 0; seed < 300; ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    const PlacementProblem problem =
        RandomPlacementProblem(seed, OptionsForSeed(seed));
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
