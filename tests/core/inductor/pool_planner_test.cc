#include "core/inductor/pool_planner.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "core/problem.h"
#include "core/validator.h"
#include "gtest/gtest.h"
#include "tests/core/random_problems.h"

namespace memplan {
namespace {

Plan PlanOrDie(const Problem& problem) {
  return PlanAndValidate(InductorPlanner(), problem);
}

// offset
//  384 +--------------------+
//      |         b2         |   [1,5): overlaps both, goes on top
//  256 +---------+----------+
//      |   b0    |    b1    |   [0,3) and [3,6) share bytes
//    0 +---------+----------+-> timestep
//      0         3          6
TEST(InductorPlannerTest, BuffersDisjointInTimeShareBytes) {
  Problem problem;
  problem.buffers = {MakeBuffer("b0", 256, 0, 3), MakeBuffer("b1", 256, 3, 6),
                     MakeBuffer("b2", 128, 1, 5)};
  Plan plan = PlanOrDie(problem);
  EXPECT_EQ(plan.pools, (std::vector<Pool>{{"pool0", "cuda:0", 384}}));
  EXPECT_EQ(plan.assignments,
            (std::vector<Assignment>{{0, 0}, {0, 0}, {0, 256}}));
}

// offset
//  512 +--------+
//      |        |     +-----+
//  256 |   b0   |     |  b2 |  [5,7): above b1, in b1's spare half
//      |        +-----+-----+
//      |        |     b1    |  [4,8): under b0's slot, 256 spare
//    0 +--------+-----------+-> timestep
//      0        4           8
TEST(InductorPlannerTest, SmallerBufferSplitsASlotSpatially) {
  Problem problem;
  problem.buffers = {MakeBuffer("b0", 512, 0, 4), MakeBuffer("b1", 256, 4, 8),
                     MakeBuffer("b2", 128, 5, 7)};
  Plan plan = PlanOrDie(problem);
  EXPECT_EQ(plan.pools, (std::vector<Pool>{{"pool0", "cuda:0", 512}}));
  EXPECT_EQ(plan.assignments,
            (std::vector<Assignment>{{0, 0}, {0, 0}, {0, 256}}));
}

// b1 (384) leaves 128 spare in b0's slot; b2 (256) needs more, and the
// spare half is on the last pool's right edge, so it grows to 384 + 256.
TEST(InductorPlannerTest, LastPoolGrowsAtItsRightEdge) {
  Problem problem;
  problem.buffers = {MakeBuffer("b0", 512, 0, 4), MakeBuffer("b1", 384, 4, 8),
                     MakeBuffer("b2", 256, 5, 7)};
  Plan plan = PlanOrDie(problem);
  EXPECT_EQ(plan.pools, (std::vector<Pool>{{"pool0", "cuda:0", 640}}));
  EXPECT_EQ(plan.assignments,
            (std::vector<Assignment>{{0, 0}, {0, 0}, {0, 384}}));
}

// Before finalize, b1's split reserves align(30) + 30 = 94 bytes, more than
// b0's 60; finalize drops the empty half, so b2 goes at align(60) = 64, not
// at align(94) = 128.
TEST(InductorPlannerTest, OffsetsFollowSizesAfterFinalize) {
  Problem problem;
  problem.buffers = {MakeBuffer("b0", 60, 0, 2), MakeBuffer("b1", 30, 2, 4),
                     MakeBuffer("b2", 20, 1, 3)};
  Plan plan = PlanOrDie(problem);
  EXPECT_EQ(plan.pools, (std::vector<Pool>{{"pool0", "cuda:0", 84}}));
  EXPECT_EQ(plan.assignments,
            (std::vector<Assignment>{{0, 0}, {0, 0}, {0, 64}}));
}

TEST(InductorPlannerTest, TiesKeepBufferOrder) {
  Problem problem;
  problem.buffers = {MakeBuffer("b0", 64, 0, 2), MakeBuffer("b1", 64, 0, 2),
                     MakeBuffer("b2", 64, 0, 2)};
  Plan plan = PlanOrDie(problem);
  EXPECT_EQ(plan.assignments,
            (std::vector<Assignment>{{0, 0}, {0, 64}, {0, 128}}));
}

// outputs: o1 (smaller) first, o0 appended to its pool; the intermediate
// does not fit the outputs' pool, which may not grow, so it gets pool1.
TEST(InductorPlannerTest, OutputsModePutsOutputsInOnePool) {
  Problem problem;
  problem.pool_mode = PoolMode::kOutputs;
  problem.buffers = {MakeBuffer("o0", 100, 2, 10, true),
                     MakeBuffer("o1", 64, 5, 10, true),
                     MakeBuffer("b", 256, 0, 2)};
  Plan plan = PlanOrDie(problem);
  EXPECT_EQ(plan.pools, (std::vector<Pool>{{"pool0", "cuda:0", 164},
                                           {"pool1", "cuda:0", 256}}));
  EXPECT_EQ(plan.assignments,
            (std::vector<Assignment>{{0, 64}, {0, 0}, {1, 0}}));
}

// offset
//  512 +---+---------------+
//      | b |      o        |   the intermediate b [0,3) lives in the
//  256 +---+               |   output's pool before the output [3,10)
//    0 +---+---------------+-> timestep
//      0   3              10
TEST(InductorPlannerTest, IntermediatesUseAnOutputPoolBeforeTheOutput) {
  Problem problem;
  problem.pool_mode = PoolMode::kIntermediates;
  problem.buffers = {MakeBuffer("o", 512, 3, 10, true),
                     MakeBuffer("b", 256, 0, 3)};
  Plan plan = PlanOrDie(problem);
  EXPECT_EQ(plan.pools, (std::vector<Pool>{{"pool0", "cuda:0", 512}}));
  EXPECT_EQ(plan.assignments, (std::vector<Assignment>{{0, 0}, {0, 0}}));
}

TEST(InductorPlannerTest, NoneModeNeverGrowsAPool) {
  Problem problem;
  problem.pool_mode = PoolMode::kNone;
  problem.buffers = {MakeBuffer("b0", 256, 0, 2), MakeBuffer("b1", 512, 1, 3),
                     MakeBuffer("b2", 128, 2, 4)};
  Plan plan = PlanOrDie(problem);
  EXPECT_EQ(plan.pools, (std::vector<Pool>{{"pool0", "cuda:0", 512},
                                           {"pool1", "cuda:0", 256}}));
  EXPECT_EQ(plan.assignments,
            (std::vector<Assignment>{{1, 0}, {0, 0}, {1, 0}}));
}

// Pools are named in device order of first pool, then creation order.
TEST(InductorPlannerTest, CombinedModeGrowsOnePoolPerDevice) {
  Problem problem;
  problem.pool_mode = PoolMode::kCombined;
  problem.buffers = {MakeBuffer("b0", 1000, 0, 5, false, "cuda:1"),
                     MakeBuffer("b1", 500, 0, 5, true, "cuda:0"),
                     MakeBuffer("b2", 100, 0, 5, false, "cuda:1")};
  Plan plan = PlanOrDie(problem);
  EXPECT_EQ(plan.pools, (std::vector<Pool>{{"pool0", "cuda:1", 1124},
                                           {"pool1", "cuda:0", 500}}));
  EXPECT_EQ(plan.assignments,
            (std::vector<Assignment>{{0, 0}, {1, 0}, {0, 1024}}));
}

// A buffer whose size depends on data may not join a pool already in use
// before it begins (torch 2.11's earliest_available).
TEST(InductorPlannerTest, DataDependentBufferAvoidsAnEarlierPool) {
  Problem problem;
  problem.buffers = {MakeBuffer("b0", 256, 1, 4), MakeBuffer("b1", 128, 5, 8)};
  problem.buffers[1].size_is_data_dependent = true;
  Plan plan = PlanOrDie(problem);
  EXPECT_EQ(plan.pools, (std::vector<Pool>{{"pool0", "cuda:0", 256},
                                           {"pool1", "cuda:0", 128}}));
  problem.buffers[1].size_is_data_dependent = false;
  EXPECT_EQ(PlanOrDie(problem).pools.size(), 1u);
}

TEST(InductorPlannerTest, HonoursTheRequestAlignment) {
  Problem problem;
  problem.alignment = 256;
  problem.buffers = {MakeBuffer("b0", 100, 0, 2), MakeBuffer("b1", 50, 0, 2)};
  Plan plan = PlanOrDie(problem);
  EXPECT_EQ(plan.assignments, (std::vector<Assignment>{{0, 0}, {0, 256}}));
}

TEST(InductorPlannerTest, StopsAtAnExpiredDeadline) {
  Problem problem =
      RandomProblem(1, {.min_buffers = 5000, .max_buffers = 5000});
  PlanContext context;
  context.deadline = absl::Now() - absl::Seconds(1);
  absl::StatusOr<Plan> plan = InductorPlanner().PlanProblem(problem, context);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kDeadlineExceeded);
}

TEST(InductorPlannerTest, StopsWhenCancelled) {
  Problem problem =
      RandomProblem(2, {.min_buffers = 5000, .max_buffers = 5000});
  std::atomic<bool> cancelled{true};
  PlanContext context;
  context.cancelled = &cancelled;
  absl::StatusOr<Plan> plan = InductorPlanner().PlanProblem(problem, context);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kCancelled);
}

// Pruning skips only subtrees where Inductor's walk fails anyway, and the
// walk passes down chains of pool roots, spines of filled slots and wide
// splits' children without visiting what it would only pass: plans are
// identical with and without it, in every mode.
TEST(InductorPlannerTest, PruningNeverChangesThePlan) {
  const InductorPlanner pruned;
  const InductorPlanner unpruned(
      InductorPlanner::Options{/*prune_full_subtrees=*/false});
  for (PoolMode mode : {PoolMode::kNone, PoolMode::kIntermediates,
                        PoolMode::kOutputs, PoolMode::kCombined}) {
    for (uint64_t seed = 0; seed < 1500; ++seed) {
      RandomProblemOptions options;
      options.pool_mode = mode;
      options.max_buffers = seed % 3 == 0 ? 150 : 30;
      options.num_devices = 1 + static_cast<int>(seed % 2);
      options.horizon = seed % 5 == 0 ? 300 : 30;
      Problem problem = RandomProblem(seed, options);
      absl::StatusOr<Plan> a = pruned.PlanProblem(problem, {});
      absl::StatusOr<Plan> b = unpruned.PlanProblem(problem, {});
      ASSERT_TRUE(a.ok() && b.ok());
      ASSERT_EQ(*a, *b) << "mode " << mode << " seed " << seed;
    }
  }
}

// Long graphs build long chains of pool roots (AllocateAtEnd), which the
// walk skips down by binary search: plans are identical without it, also
// where chains run hundreds of levels deep and break as splits take second
// children.
TEST(InductorPlannerTest, ChainSkippingNeverChangesThePlanOnLongGraphs) {
  const InductorPlanner skipping;
  const InductorPlanner walking(
      InductorPlanner::Options{/*prune_full_subtrees=*/false});
  for (uint64_t seed = 0; seed < 24; ++seed) {
    RandomProblemOptions options;
    options.pool_mode =
        seed % 2 == 0 ? PoolMode::kIntermediates : PoolMode::kCombined;
    options.min_buffers = 600;
    options.max_buffers = 1500;
    options.horizon = seed % 3 == 0 ? 400 : 3000;
    options.output_fraction = seed % 4 == 0 ? 0.02 : 0.1;
    Problem problem = RandomProblem(seed, options);
    absl::StatusOr<Plan> a = skipping.PlanProblem(problem, {});
    absl::StatusOr<Plan> b = walking.PlanProblem(problem, {});
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ(*a, *b) << "seed " << seed;
  }
}

// Many short live ranges over a long graph, most buffers of a few sizes:
// slots take dozens of children one after the other in time (the shape of
// several graphs planned as one), which the walk passes by their hulls.
// Plans are identical without it, also with empty live ranges and zero
// sizes among them.
TEST(InductorPlannerTest, WideSplitsNeverChangeThePlan) {
  const InductorPlanner pruned;
  const InductorPlanner walking(
      InductorPlanner::Options{/*prune_full_subtrees=*/false});
  const Bytes kSizes[] = {1 << 20, 1 << 19, 1 << 18, 1 << 16, 4096};
  for (uint64_t seed = 0; seed < 40; ++seed) {
    SplitMix64 rng(seed);
    Problem problem;
    problem.pool_mode = static_cast<PoolMode>(seed % 4);
    const int count = static_cast<int>(rng.Uniform(300, 1200));
    const Timestep horizon = 3 * count;
    for (int i = 0; i < count; ++i) {
      const Timestep begin = rng.Uniform(0, horizon);
      const Timestep length = rng.Uniform(0, 9) == 0 ? 0 : rng.Uniform(1, 12);
      const int64_t kind = rng.Uniform(0, 9);
      const Bytes size = kind < 5   ? kSizes[kind]
                         : kind < 8 ? rng.Uniform(1, 1 << 20)
                         : kind < 9 ? 0
                                    : rng.Uniform(1, 256);
      problem.buffers.push_back(
          MakeBuffer("buf" + std::to_string(i), size, begin, begin + length,
                     /*is_output=*/rng.Uniform(0, 19) == 0));
    }
    absl::StatusOr<Plan> a = pruned.PlanProblem(problem, {});
    absl::StatusOr<Plan> b = walking.PlanProblem(problem, {});
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ(*a, *b) << "seed " << seed;
  }
}

// The graph shape that makes Inductor's tree deepest: in `combined` mode,
// N outputs that all live to the end never share bytes, so each one is
// appended at the pool's end: sorted by size (descending, stable), buffer
// k sits at align(offset of k-1 + size of k-1). Inductor itself dies with
// RecursionError here; we plan it without growing the stack.
Problem DeepCombinedProblem(int count) {
  Problem problem;
  problem.pool_mode = PoolMode::kCombined;
  SplitMix64 rng(20000);
  for (int i = 0; i < count; ++i) {
    problem.buffers.push_back(MakeBuffer("buf" + std::to_string(i),
                                         rng.Uniform(1, 1 << 20), i, count + 1,
                                         /*is_output=*/true));
  }
  return problem;
}

TEST(InductorPlannerTest, TwentyThousandOutputsLivingToTheEnd) {
  const int kCount = 20000;
  Problem problem = DeepCombinedProblem(kCount);
  absl::Time start = absl::Now();
  absl::StatusOr<Plan> plan = InductorPlanner().PlanProblem(problem, {});
  absl::Duration took = absl::Now() - start;
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::printf("planned %d outputs in %s\n", kCount,
              absl::FormatDuration(took).c_str());
  ASSERT_TRUE(ValidatePlan(problem, *plan).ok());

  std::vector<int> order(kCount);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const Buffer& x = problem.buffers[a];
    const Buffer& y = problem.buffers[b];
    if (x.size != y.size) return x.size > y.size;
    return x.live_range.length() > y.live_range.length();
  });
  Bytes offset = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    if (k > 0) {
      offset = AlignUp(offset + problem.buffers[order[k - 1]].size, 64);
    }
    ASSERT_EQ(plan->assignments[order[k]], (Assignment{0, offset})) << k;
  }
  ASSERT_EQ(plan->pools.size(), 1u);
  EXPECT_EQ(plan->pools[0].size, offset + problem.buffers[order.back()].size);
}

TEST(InductorPlannerTest, DeepTreeIsPlannedTheSameWithoutPruning) {
  Problem problem = DeepCombinedProblem(2000);
  absl::StatusOr<Plan> pruned = InductorPlanner().PlanProblem(problem, {});
  absl::StatusOr<Plan> unpruned =
      InductorPlanner(InductorPlanner::Options{false}).PlanProblem(problem, {});
  ASSERT_TRUE(pruned.ok() && unpruned.ok());
  EXPECT_EQ(*pruned, *unpruned);
}

}  // namespace
}  // namespace memplan
